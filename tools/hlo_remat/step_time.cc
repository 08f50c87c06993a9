#include "step_time.h"

#include <algorithm>
#include <chrono>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "cpu_runner.h"
#include "xla/client/local_client.h"
#include "xla/literal.h"
#include "xla/service/shaped_buffer.h"
#include "xla/tsl/platform/errors.h"
#include "xla/tsl/platform/statusor.h"

namespace hlo_remat {
namespace {

// Far more runs than this is a typo, not a measurement.
constexpr int kMaxRuns = 10000;

double Median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const size_t n = values.size();
  return n % 2 == 1 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

// Seconds of one execution; the result is freed after the clock stops.
absl::StatusOr<double> TimeOneRun(CompiledModule& module) {
  const auto start = std::chrono::steady_clock::now();
  TF_ASSIGN_OR_RETURN(xla::ScopedShapedBuffer result, module.Run());
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
      .count();
}

}  // namespace

absl::StatusOr<int> ParseRunCount(absl::string_view text) {
  int runs = 0;
  if (!absl::SimpleAtoi(text, &runs) || runs < 1 || runs > kMaxRuns) {
    return absl::InvalidArgumentError(
        absl::StrCat("--time ", text,
                     " is not valid; give the number of runs "
                     "per module, 1 to ",
                     kMaxRuns, ", e.g. --time 10"));
  }
  return runs;
}

absl::StatusOr<StepTimes> MeasureStepTimes(const xla::HloModule& before,
                                           const xla::HloModule& after,
                                           int runs) {
  if (runs < 1) {
    return absl::InvalidArgumentError("step time needs at least one run");
  }
  TF_ASSIGN_OR_RETURN(xla::LocalClient * client, HostClient());
  const std::vector<xla::Literal> arguments = RandomArguments(before, 42);
  TF_ASSIGN_OR_RETURN(CompiledModule first,
                      CompiledModule::Compile(*client, before, arguments));
  TF_ASSIGN_OR_RETURN(CompiledModule second,
                      CompiledModule::Compile(*client, after, arguments));
  TF_RETURN_IF_ERROR(TimeOneRun(first).status());  // warm-up
  TF_RETURN_IF_ERROR(TimeOneRun(second).status());
  std::vector<double> before_s, after_s;
  for (int i = 0; i < runs; ++i) {
    TF_ASSIGN_OR_RETURN(double a, TimeOneRun(first));
    TF_ASSIGN_OR_RETURN(double b, TimeOneRun(second));
    before_s.push_back(a);
    after_s.push_back(b);
  }
  StepTimes times;
  times.before_s = Median(std::move(before_s));
  times.after_s = Median(std::move(after_s));
  times.runs = runs;
  return times;
}

}  // namespace hlo_remat
