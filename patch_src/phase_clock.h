// Times one phase of the pass for the report's phase_seconds, from its
// construction to the end of its scope. The pass time is the sum of the
// phases, so measurements taken only for the report run outside any phase
// and need no clock resets.
#ifndef XLA_SERVICE_REMAT_PHASE_CLOCK_H_
#define XLA_SERVICE_REMAT_PHASE_CLOCK_H_

#include <chrono>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/string_view.h"
#include "xla/service/remat/remat_report.h"

namespace xla {
namespace remat {

// Seconds since `start` on the steady clock.
inline double SecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
      .count();
}

class ScopedPhase {
 public:
  ScopedPhase(RematReport* report, absl::string_view name)
      : report_(report),
        name_(name),
        start_(std::chrono::steady_clock::now()) {}
  ScopedPhase(const ScopedPhase&) = delete;
  ScopedPhase& operator=(const ScopedPhase&) = delete;

  ~ScopedPhase() {
    if (report_ == nullptr) return;
    double own = SecondsSince(start_);
    for (const auto& [name, seconds] : split_off_) own -= seconds;
    report_->AddPhase(name_, own > 0 ? own : 0);
    for (const auto& [name, seconds] : split_off_) {
      report_->AddPhase(name, seconds);
    }
  }

  // Part of this phase's time, measured inside it, reported as a phase of
  // its own right after this one (the judge inside planning).
  void SplitOff(absl::string_view name, double seconds) {
    split_off_.emplace_back(std::string(name), seconds);
  }

  // The scope ends without a phase: its time was not the pass's.
  void Discard() { report_ = nullptr; }

 private:
  RematReport* report_;
  std::string name_;
  std::chrono::steady_clock::time_point start_;
  std::vector<std::pair<std::string, double>> split_off_;
};

}  // namespace remat
}  // namespace xla

#endif  // XLA_SERVICE_REMAT_PHASE_CLOCK_H_
