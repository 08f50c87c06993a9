// The part of HiGHS's C API (highs/interfaces/highs_c_api.h of HiGHS 1.15.1)
// that milp_solver_highs.cc calls, declared here so that the out-of-tree
// build needs no HiGHS headers: it links the libhighs.so.1 that the pinned
// highspy==1.15.1 wheel ships (pyproject.toml). That build uses 32-bit
// HighsInt (highspy's kHighsIInf is 2**31 - 1); tests/test_highs_wheel.py
// checks the installed wheel is this version.
#ifndef XLA_SERVICE_REMAT_HIGHS_C_API_1_15_1_H_
#define XLA_SERVICE_REMAT_HIGHS_C_API_1_15_1_H_

#include <cstdint>

extern "C" {

typedef int32_t HighsInt;

void* Highs_create(void);
void Highs_destroy(void* highs);
const char* Highs_version(void);
HighsInt Highs_passMip(void* highs, HighsInt num_col, HighsInt num_row,
                       HighsInt num_nz, HighsInt a_format, HighsInt sense,
                       double offset, const double* col_cost,
                       const double* col_lower, const double* col_upper,
                       const double* row_lower, const double* row_upper,
                       const HighsInt* a_start, const HighsInt* a_index,
                       const double* a_value, const HighsInt* integrality);
HighsInt Highs_setBoolOptionValue(void* highs, const char* option,
                                  HighsInt value);
HighsInt Highs_setIntOptionValue(void* highs, const char* option,
                                 HighsInt value);
HighsInt Highs_setDoubleOptionValue(void* highs, const char* option,
                                    double value);
HighsInt Highs_setSolution(void* highs, const double* col_value,
                           const double* row_value, const double* col_dual,
                           const double* row_dual);
HighsInt Highs_run(void* highs);
HighsInt Highs_getModelStatus(const void* highs);
HighsInt Highs_getIntInfoValue(const void* highs, const char* info,
                               HighsInt* value);
HighsInt Highs_getSolution(const void* highs, double* col_value,
                           double* col_dual, double* row_value,
                           double* row_dual);
double Highs_getObjectiveValue(const void* highs);

}  // extern "C"

namespace xla {
namespace remat {
namespace highs {

inline constexpr char kVersion[] = "1.15.1";
inline constexpr HighsInt kStatusError = -1;
inline constexpr HighsInt kVarTypeInteger = 1;
inline constexpr HighsInt kObjSenseMinimize = 1;
inline constexpr HighsInt kMatrixFormatRowwise = 2;
inline constexpr HighsInt kModelStatusOptimal = 7;
inline constexpr HighsInt kModelStatusInfeasible = 8;
// "primal_solution_status": a feasible point exists.
inline constexpr HighsInt kSolutionStatusFeasible = 2;

}  // namespace highs
}  // namespace remat
}  // namespace xla

#endif  // XLA_SERVICE_REMAT_HIGHS_C_API_1_15_1_H_
