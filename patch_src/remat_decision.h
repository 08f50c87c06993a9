// One decision an algorithm took, for the report and the memory log.
#ifndef XLA_SERVICE_REMAT_REMAT_DECISION_H_
#define XLA_SERVICE_REMAT_REMAT_DECISION_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"

namespace xla {
namespace remat {

enum class RematAction {
  kRecompute,  // a clone (or a chain of clones) serves the later uses
  kCompress,   // a compact copy is kept and copied back
  kTakeBack,   // an earlier move taken back: the peak holds without it
};

// The action as reports and dumps spell it: the one place the text lives.
inline absl::string_view RematActionName(RematAction action) {
  switch (action) {
    case RematAction::kRecompute:
      return "recompute";
    case RematAction::kCompress:
      return "compress";
    case RematAction::kTakeBack:
      return "take back";
  }
  return "unknown";
}

struct RematDecision {
  RematAction action = RematAction::kRecompute;
  std::string value;   // the instruction whose value moves
  std::string result;  // the instruction that now provides it
  std::string at;      // the over-budget instruction that prompted it
  std::string before;  // the first later use it now serves
  // Instructions the decision added (a chain has several; compress has the
  // compact copy and the copy back); for kTakeBack, the ones it removed.
  std::vector<std::string> instructions;
  int64_t bytes_saved = 0;
  double cost = 0;  // element operations: FLOPs plus one per 4 bytes moved
};

}  // namespace remat
}  // namespace xla

#endif  // XLA_SERVICE_REMAT_REMAT_DECISION_H_
