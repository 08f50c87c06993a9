// Reading the input HLO text so that bad input is refused with one short
// line (the file, the line number, the instruction, what is wrong) and never
// reaches code that would CHECK-fail on it.
#ifndef HLO_REMAT_INPUT_CHECK_H_
#define HLO_REMAT_INPUT_CHECK_H_

#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "cli_args.h"
#include "xla/hlo/ir/hlo_module.h"

namespace hlo_remat {

struct InputModule {
  std::unique_ptr<xla::HloModule> module;
  // A one-line caution about the kind of module given (empty if none).
  std::string warning;
};

// Reads, parses and verifies `path`, and checks that the module is the kind
// `platform` takes (scheduled XLA:CPU output for cpu, pre-optimization HLO
// for gpu). InvalidArgument with a short message for anything wrong.
absl::StatusOr<InputModule> ReadInputModule(const std::string& path,
                                            Platform platform);

// Checks XLA's parser would CHECK-fail on instead of returning an error:
// InvalidArgument naming the line, or OK.
absl::Status PrecheckHloText(absl::string_view text);

// A name (instruction, computation, module) as a one-line message shows it:
// printable, and cut in the middle when long, as TF's names differ at their
// ends ("a_inference_train_step_1050__Xl...63_.23").
std::string ShownName(absl::string_view name);

// XLA's message about `text` cut to what a user needs: at most about 200
// characters on one line, metadata and backend configs removed, bytes that
// are not printable escaped, and the line of the instruction it names.
std::string ShortHloMessage(absl::string_view text, absl::string_view message);

}  // namespace hlo_remat

#endif  // HLO_REMAT_INPUT_CHECK_H_
