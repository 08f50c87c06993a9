// Out-of-tree stand-in for XLA's xla/hlo/testlib/pattern_matcher_gmock.h,
// which the tensorflow wheel does not ship. In-tree the engine's tests
// include XLA's own header at this path; here they get this one, so both
// builds read EXPECT_THAT(instruction, GmockMatch(m::Add(...))) and a failure
// prints the pattern and why the instruction did not match it.
// Only instructions are matched: that is all the engine's tests match.
#ifndef XLA_HLO_TESTLIB_PATTERN_MATCHER_GMOCK_H_
#define XLA_HLO_TESTLIB_PATTERN_MATCHER_GMOCK_H_

#include <gmock/gmock.h>

#include <ostream>
#include <type_traits>
#include <utility>

#include "xla/hlo/ir/hlo_instruction.h"
#include "xla/service/pattern_matcher.h"

namespace xla {
namespace remat_test_shim {

template <typename Pattern>
class InstructionMatcher {
 public:
  explicit InstructionMatcher(Pattern pattern) : pattern_(std::move(pattern)) {}

  // HloInstruction* and const HloInstruction* alike; captures are written.
  template <typename Instruction>
  bool MatchAndExplain(Instruction* instruction,
                       ::testing::MatchResultListener* listener) const {
    if (instruction == nullptr) {
      *listener << "is null";
      return false;
    }
    MatchOption option{/*capture=*/true, /*single_user_only=*/false,
                       /*explain_os=*/listener->stream()};
    return Match(instruction, pattern_, option);
  }

  void DescribeTo(std::ostream* os) const { pattern_.DescribeTo(os); }
  void DescribeNegationTo(std::ostream* os) const {
    *os << "is not: ";
    DescribeTo(os);
  }

 private:
  Pattern pattern_;
};

}  // namespace remat_test_shim

template <typename Pattern>
::testing::PolymorphicMatcher<
    remat_test_shim::InstructionMatcher<std::decay_t<Pattern>>>
GmockMatch(Pattern&& pattern) {
  return ::testing::MakePolymorphicMatcher(
      remat_test_shim::InstructionMatcher<std::decay_t<Pattern>>(
          std::forward<Pattern>(pattern)));
}

}  // namespace xla

#endif  // XLA_HLO_TESTLIB_PATTERN_MATCHER_GMOCK_H_
