// Compiles and runs HLO modules on XLA:CPU through a LocalClient (the PJRT
// headers need MLIR, which the wheel lacks). Shared by the numerics check and
// the step-time measurement, so both run a module the same way.
#ifndef HLO_REMAT_CPU_RUNNER_H_
#define HLO_REMAT_CPU_RUNNER_H_

#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "xla/client/local_client.h"
#include "xla/hlo/ir/hlo_module.h"
#include "xla/literal.h"
#include "xla/service/shaped_buffer.h"

namespace hlo_remat {

// The process-wide client of the host platform.
absl::StatusOr<xla::LocalClient*> HostClient();

// One random literal per entry parameter of `module`, in a small range
// (labels and indices stay valid-ish, floats finite); the same seed gives the
// same values.
std::vector<xla::Literal> RandomArguments(const xla::HloModule& module,
                                          unsigned seed);

// A module compiled once, with its arguments already on the device.
class CompiledModule {
 public:
  // Compiles `module` as given (its schedule and its clones kept: no HLO
  // passes run) and transfers `arguments`.
  static absl::StatusOr<CompiledModule> Compile(
      xla::LocalClient& client, const xla::HloModule& module,
      const std::vector<xla::Literal>& arguments);

  // Runs once and waits for the result.
  absl::StatusOr<xla::ScopedShapedBuffer> Run();

  // Runs once and copies the result to the host.
  absl::StatusOr<xla::Literal> RunToLiteral();

 private:
  CompiledModule(xla::LocalClient* client,
                 std::unique_ptr<xla::LocalExecutable> executable,
                 std::vector<xla::ScopedShapedBuffer> arguments)
      : client_(client),
        executable_(std::move(executable)),
        arguments_(std::move(arguments)) {}

  xla::LocalClient* client_;  // not owned
  std::unique_ptr<xla::LocalExecutable> executable_;
  std::vector<xla::ScopedShapedBuffer> arguments_;
};

}  // namespace hlo_remat

#endif  // HLO_REMAT_CPU_RUNNER_H_
