#include "cpu_runner.h"

#include <cstdint>
#include <memory>
#include <random>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "xla/client/client_library.h"
#include "xla/client/executable_build_options.h"
#include "xla/client/local_client.h"
#include "xla/executable_run_options.h"
#include "xla/hlo/builder/xla_computation.h"
#include "xla/literal.h"
#include "xla/service/platform_util.h"
#include "xla/service/shaped_buffer.h"
#include "xla/shape_util.h"
#include "xla/tsl/platform/errors.h"
#include "xla/tsl/platform/statusor.h"

namespace hlo_remat {
namespace {

void FillRandom(xla::Literal& literal, std::mt19937& rng) {
  xla::ShapeUtil::ForEachSubshape(
      literal.shape(),
      [&](const xla::Shape& shape, const xla::ShapeIndex& index) {
        if (!shape.IsArray()) return;
        const int64_t n = xla::ShapeUtil::ElementsIn(shape);
        void* data = literal.untyped_data(index);
        switch (shape.element_type()) {
          case xla::F32: {
            std::uniform_real_distribution<float> d(-1, 1);
            float* p = static_cast<float*>(data);
            for (int64_t i = 0; i < n; ++i) p[i] = d(rng);
            break;
          }
          case xla::F64: {
            std::uniform_real_distribution<double> d(-1, 1);
            double* p = static_cast<double*>(data);
            for (int64_t i = 0; i < n; ++i) p[i] = d(rng);
            break;
          }
          case xla::S32: {
            std::uniform_int_distribution<int32_t> d(0, 9);
            int32_t* p = static_cast<int32_t*>(data);
            for (int64_t i = 0; i < n; ++i) p[i] = d(rng);
            break;
          }
          case xla::S64: {
            std::uniform_int_distribution<int64_t> d(0, 9);
            int64_t* p = static_cast<int64_t*>(data);
            for (int64_t i = 0; i < n; ++i) p[i] = d(rng);
            break;
          }
          case xla::PRED: {
            std::uniform_int_distribution<int> d(0, 1);
            bool* p = static_cast<bool*>(data);
            for (int64_t i = 0; i < n; ++i) p[i] = d(rng) == 1;
            break;
          }
          default: {
            // Other types: small random bytes in the low bits of each byte.
            std::uniform_int_distribution<int> d(0, 3);
            uint8_t* p = static_cast<uint8_t*>(data);
            const int64_t bytes = literal.size_bytes(index);
            for (int64_t i = 0; i < bytes; ++i) p[i] = d(rng);
            break;
          }
        }
      });
}

}  // namespace

absl::StatusOr<xla::LocalClient*> HostClient() {
  TF_ASSIGN_OR_RETURN(stream_executor::Platform * platform,
                      xla::PlatformUtil::GetPlatform("Host"));
  return xla::ClientLibrary::GetOrCreateLocalClient(platform);
}

std::vector<xla::Literal> RandomArguments(const xla::HloModule& module,
                                          unsigned seed) {
  std::mt19937 rng(seed);
  std::vector<xla::Literal> arguments;
  for (const xla::HloInstruction* parameter :
       module.entry_computation()->parameter_instructions()) {
    xla::Literal literal(parameter->shape());
    FillRandom(literal, rng);
    arguments.push_back(std::move(literal));
  }
  return arguments;
}

absl::StatusOr<CompiledModule> CompiledModule::Compile(
    xla::LocalClient& client, const xla::HloModule& module,
    const std::vector<xla::Literal>& arguments) {
  xla::XlaComputation computation(module.ToProto());
  xla::ExecutableBuildOptions build_options;
  // Keep the module exactly as given: its schedule and its clones.
  build_options.set_run_backend_only(true);
  std::vector<const xla::Shape*> argument_layouts;
  for (const xla::Literal& argument : arguments) {
    argument_layouts.push_back(&argument.shape());
  }
  TF_ASSIGN_OR_RETURN(
      std::vector<std::unique_ptr<xla::LocalExecutable>> executables,
      client.Compile(computation, argument_layouts, build_options));
  if (executables.size() != 1) {
    return absl::InternalError(absl::StrCat(
        "expected one executable, XLA:CPU made ", executables.size()));
  }
  std::vector<xla::ScopedShapedBuffer> buffers;
  buffers.reserve(arguments.size());
  for (const xla::Literal& argument : arguments) {
    TF_ASSIGN_OR_RETURN(xla::ScopedShapedBuffer buffer,
                        client.LiteralToShapedBuffer(argument, 0));
    buffers.push_back(std::move(buffer));
  }
  return CompiledModule(&client, std::move(executables[0]), std::move(buffers));
}

absl::StatusOr<xla::ScopedShapedBuffer> CompiledModule::Run() {
  std::vector<const xla::ShapedBuffer*> handles;
  handles.reserve(arguments_.size());
  for (const xla::ScopedShapedBuffer& buffer : arguments_) {
    handles.push_back(&buffer);
  }
  xla::ExecutableRunOptions run_options;
  run_options.set_allocator(client_->backend().memory_allocator());
  run_options.set_intra_op_thread_pool(
      client_->backend().eigen_intra_op_thread_pool_device());
  return executable_->Run(handles, run_options);
}

absl::StatusOr<xla::Literal> CompiledModule::RunToLiteral() {
  TF_ASSIGN_OR_RETURN(xla::ScopedShapedBuffer result, Run());
  return client_->ShapedBufferToLiteral(result);
}

}  // namespace hlo_remat
