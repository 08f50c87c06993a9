// Stand-in for "mlir/IR/MLIRContext.h", the one MLIR header the GPU pipeline
// needs here.
//
// Why: the tensorflow wheel ships XLA's GPU headers but no LLVM headers, and
// MLIR's real MLIRContext.h includes llvm/ADT/*. XLA's headers we use
// (gpu_hlo_schedule.h, fusion_dispatch_pipeline.h) only pass MLIRContext by
// pointer, so a declaration is enough for them. CMakeLists.txt exposes this
// file under that include path in the build tree.
//
// Declarations only: every function named here is defined in the wheel's
// shared libraries (checked with `nm -DC`). MLIRContext is declared with its
// constructor and destructor and no data members, so its sizeof here is NOT
// the real one: never create it by value or with `new`; gpu_pipeline.cc
// constructs it in storage of its own (MlirContextHolder) and says how large.
#ifndef HLO_REMAT_GPU_MLIR_STANDIN_H_
#define HLO_REMAT_GPU_MLIR_STANDIN_H_

namespace mlir {

class MLIRContext {
 public:
  enum class Threading { DISABLED, ENABLED };
  explicit MLIRContext(Threading multithreading);
  ~MLIRContext();
  MLIRContext(const MLIRContext&) = delete;
  MLIRContext& operator=(const MLIRContext&) = delete;
};

}  // namespace mlir

namespace xla {
// What GpuCompiler's constructor does to its own context (gpu_compiler.cc at
// openxla 7420bd5453); its real header includes MLIR.
void RegisterSymbolicExprStorage(mlir::MLIRContext* mlir_context);
}  // namespace xla

#endif  // HLO_REMAT_GPU_MLIR_STANDIN_H_
