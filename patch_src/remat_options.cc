#include "xla/service/remat/remat_options.h"

#include <algorithm>
#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/string_view.h"

namespace xla {
namespace remat {
namespace {

constexpr std::pair<absl::string_view, RematAlgorithm> kAlgorithms[] = {
    {"standard", RematAlgorithm::kStandard},
    {"compress", RematAlgorithm::kCompress},
    {"standardcompress", RematAlgorithm::kStandardCompress},
    {"path", RematAlgorithm::kPath},
    {"optimal", RematAlgorithm::kOptimal},
    {"xla", RematAlgorithm::kXla},
};
constexpr std::pair<absl::string_view, RematScheduler> kSchedulers[] = {
    {"default", RematScheduler::kDefault},
    {"given", RematScheduler::kGiven},
    {"postorder", RematScheduler::kPostorder},
    {"DFS", RematScheduler::kDfs},
    {"list", RematScheduler::kList},
};

template <typename Table>
std::vector<absl::string_view> Names(const Table& table) {
  std::vector<absl::string_view> names;
  for (const auto& [name, unused] : table) names.push_back(name);
  return names;
}

}  // namespace

absl::string_view MemoryFigureName(MemoryFigure figure) {
  switch (figure) {
    case MemoryFigure::kHeapSimulator:
      return "heap_simulator";
    case MemoryFigure::kBufferAssignment:
      return "buffer_assignment";
  }
  return "unknown";
}

absl::string_view AlgorithmName(RematAlgorithm algorithm) {
  for (const auto& [name, value] : kAlgorithms) {
    if (value == algorithm) return name;
  }
  return "unknown";
}

absl::string_view SchedulerName(RematScheduler scheduler) {
  for (const auto& [name, value] : kSchedulers) {
    if (value == scheduler) return name;
  }
  return "unknown";
}

std::vector<absl::string_view> AlgorithmNames() { return Names(kAlgorithms); }
std::vector<absl::string_view> SchedulerNames() { return Names(kSchedulers); }

std::optional<RematAlgorithm> AlgorithmNamed(absl::string_view name) {
  for (const auto& [spelling, value] : kAlgorithms) {
    if (name == spelling) return value;
  }
  return std::nullopt;
}

std::optional<RematScheduler> SchedulerNamed(absl::string_view name) {
  for (const auto& [spelling, value] : kSchedulers) {
    if (absl::EqualsIgnoreCase(name, spelling)) return value;
  }
  return std::nullopt;
}

int64_t ResolvedBudgetBytes(const RematOptions& options,
                            int64_t memory_before) {
  if (options.memory_limit_fraction <= 0) return options.memory_limit_bytes;
  return std::max<int64_t>(
      1, static_cast<int64_t>(options.memory_limit_fraction *
                              static_cast<double>(memory_before)));
}

RematOptions OptionsAfterCopyInsertion(RematOptions options) {
  if (options.scheduler == RematScheduler::kDefault) {
    options.scheduler = RematScheduler::kGiven;
  }
  options.check_live_ranges = true;
  return options;
}

}  // namespace remat
}  // namespace xla
