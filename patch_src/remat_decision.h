// One decision an algorithm took, for the report and the memory log.
#ifndef XLA_SERVICE_REMAT_REMAT_DECISION_H_
#define XLA_SERVICE_REMAT_REMAT_DECISION_H_

#include <cstdint>
#include <string>
#include <vector>

namespace xla {
namespace remat {

struct RematDecision {
  std::string action;  // "recompute", "compress", "undo path"
  std::string value;   // the instruction whose value moves
  std::string result;  // the instruction that now provides it
  std::string at;      // the over-budget instruction that prompted it
  std::string before;  // the first later use it now serves
  // Instructions the decision added (a chain has several; compress has the
  // compact copy and the copy back); for "undo path", the ones it removed.
  std::vector<std::string> instructions;
  int64_t bytes_saved = 0;
  double cost = 0;  // element operations: FLOPs plus one per 4 bytes moved
};

}  // namespace remat
}  // namespace xla

#endif  // XLA_SERVICE_REMAT_REMAT_DECISION_H_
