#include "input_check.h"

#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "absl/strings/strip.h"
#include "xla/hlo/ir/hlo_module.h"
#include "xla/hlo/ir/hlo_opcode.h"
#include "xla/hlo/parser/hlo_parser.h"
#include "xla/service/hlo_verifier.h"
#include "xla/shape_util.h"
#include "xla/tsl/platform/statusor.h"

namespace hlo_remat {
namespace {

// A rejection fits one line of about 200 characters: "line N, instruction
// NAME: DETAIL" with the name and the detail cut to these.
constexpr size_t kDetailLimit = 120;
constexpr size_t kNameLimit = 40;

bool IsNameChar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' ||
         c == '-';
}

// "  ROOT %t.1 = f32[4]{0} tuple(p)" -> {"t.1", "f32[4]{0}", "tuple"}.
struct InstructionLine {
  std::string name;
  std::string shape;
  std::string opcode;
  int operands = 0;  // at the top level of the opcode's parentheses
};

// Operand counts XLA's parser or verifier dereferences before checking them
// (a dot with one operand crashes it).
int FixedArity(absl::string_view opcode) {
  static constexpr absl::string_view kBinary[] = {"add",
                                                  "subtract",
                                                  "multiply",
                                                  "divide",
                                                  "maximum",
                                                  "minimum",
                                                  "power",
                                                  "remainder",
                                                  "atan2",
                                                  "and",
                                                  "or",
                                                  "xor",
                                                  "compare",
                                                  "dot",
                                                  "convolution",
                                                  "shift-left",
                                                  "shift-right-logical",
                                                  "shift-right-arithmetic",
                                                  "complex"};
  static constexpr absl::string_view kUnary[] = {"abs",
                                                 "negate",
                                                 "exponential",
                                                 "exponential-minus-one",
                                                 "log",
                                                 "log-plus-one",
                                                 "tanh",
                                                 "logistic",
                                                 "sqrt",
                                                 "rsqrt",
                                                 "cbrt",
                                                 "sine",
                                                 "cosine",
                                                 "tan",
                                                 "floor",
                                                 "ceil",
                                                 "round-nearest-afz",
                                                 "round-nearest-even",
                                                 "sign",
                                                 "not",
                                                 "is-finite",
                                                 "copy",
                                                 "convert",
                                                 "bitcast-convert",
                                                 "bitcast",
                                                 "reshape",
                                                 "broadcast",
                                                 "transpose",
                                                 "slice",
                                                 "reverse",
                                                 "get-tuple-element",
                                                 "real",
                                                 "imag",
                                                 "erf",
                                                 "popcnt",
                                                 "clz",
                                                 "reduce-precision",
                                                 "copy-start",
                                                 "copy-done"};
  static constexpr absl::string_view kTernary[] = {"select", "clamp"};
  for (absl::string_view op : kBinary)
    if (op == opcode) return 2;
  for (absl::string_view op : kUnary)
    if (op == opcode) return 1;
  for (absl::string_view op : kTernary)
    if (op == opcode) return 3;
  return -1;
}

int CountTopLevelOperands(absl::string_view args) {
  int depth = 0;
  int commas = 0;
  bool any = false;
  for (char c : args) {
    if (c == '(' || c == '[' || c == '{') ++depth;
    if (c == ')' || c == ']' || c == '}') {
      if (depth == 0) break;  // the opcode's closing parenthesis
      --depth;
    }
    if (c == ',' && depth == 0) ++commas;
    if (c != ' ') any = true;
  }
  return any ? commas + 1 : 0;
}

bool SplitInstructionLine(absl::string_view line, InstructionLine& out) {
  line = absl::StripLeadingAsciiWhitespace(line);
  absl::ConsumePrefix(&line, "ROOT ");
  line = absl::StripLeadingAsciiWhitespace(line);
  absl::ConsumePrefix(&line, "%");
  size_t name_end = 0;
  while (name_end < line.size() && IsNameChar(line[name_end])) ++name_end;
  if (name_end == 0) return false;
  out.name = std::string(line.substr(0, name_end));
  absl::string_view rest =
      absl::StripLeadingAsciiWhitespace(line.substr(name_end));
  if (!absl::ConsumePrefix(&rest, "=")) return false;
  rest = absl::StripLeadingAsciiWhitespace(rest);
  // The shape ends at the first space outside brackets (tuple shapes nest).
  int depth = 0;
  size_t shape_end = 0;
  for (; shape_end < rest.size(); ++shape_end) {
    char c = rest[shape_end];
    if (c == '(' || c == '[' || c == '{') ++depth;
    if (c == ')' || c == ']' || c == '}') --depth;
    if (c == ' ' && depth <= 0) break;
  }
  out.shape = std::string(rest.substr(0, shape_end));
  absl::string_view after = absl::StripLeadingAsciiWhitespace(
      rest.substr(std::min(shape_end, rest.size())));
  size_t paren = after.find('(');
  out.opcode = std::string(after.substr(0, paren));
  out.operands = paren == absl::string_view::npos
                     ? 0
                     : CountTopLevelOperands(after.substr(paren + 1));
  return true;
}

std::string Printable(absl::string_view text) {
  std::string out;
  bool last_space = false;
  for (char c : text) {
    const unsigned char u = static_cast<unsigned char>(c);
    if (c == '\n' || c == '\t' || c == '\r' || c == ' ') {
      if (!last_space) out += ' ';
      last_space = true;
      continue;
    }
    last_space = false;
    if (u < 0x20 || u >= 0x7f) {
      char escaped[8];
      std::snprintf(escaped, sizeof(escaped), "\\x%02x", u);
      out += escaped;
    } else {
      out += c;
    }
  }
  return std::string(absl::StripAsciiWhitespace(out));
}

std::string Truncated(std::string text, size_t limit) {
  if (text.size() > limit) text = text.substr(0, limit - 3) + "...";
  return text;
}

// The 1-based line where instruction `name` is defined, or 0.
int LineOfInstruction(absl::string_view text, absl::string_view name) {
  int number = 0;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    ++number;
    InstructionLine parsed;
    if (SplitInstructionLine(line, parsed) && parsed.name == name) {
      return number;
    }
  }
  return 0;
}

// The first "NAME = " in an XLA message: the instruction it is about.
std::string InstructionNamed(absl::string_view message) {
  for (size_t eq = message.find(" = "); eq != absl::string_view::npos;
       eq = message.find(" = ", eq + 1)) {
    size_t begin = eq;
    while (begin > 0 && IsNameChar(message[begin - 1])) --begin;
    if (begin < eq) return std::string(message.substr(begin, eq - begin));
  }
  return "";
}

// The parser's "LINE:COL: error: WHAT" (its message also repeats the line).
bool ParserLocation(absl::string_view message, int& line,
                    absl::string_view& what) {
  size_t marker = message.find(": error: ");
  if (marker == absl::string_view::npos) return false;
  size_t colon = message.rfind(':', marker - 1);
  size_t begin = colon;
  while (begin > 0 &&
         std::isdigit(static_cast<unsigned char>(message[begin - 1]))) {
    --begin;
  }
  if (colon == absl::string_view::npos || begin == colon ||
      !absl::SimpleAtoi(message.substr(begin, colon - begin), &line)) {
    return false;
  }
  what = message.substr(marker + 9);
  what = what.substr(0, what.find('\n'));
  return true;
}

// End of the balanced (...) or {...} or "..." starting at `pos`.
size_t SkipBalanced(absl::string_view text, size_t pos) {
  if (pos >= text.size()) return pos;
  if (text[pos] == '"') {
    size_t close = text.find('"', pos + 1);
    return close == absl::string_view::npos ? text.size() : close + 1;
  }
  const char open = text[pos];
  const char close = open == '(' ? ')' : '}';
  int depth = 0;
  for (; pos < text.size(); ++pos) {
    if (text[pos] == open) ++depth;
    if (text[pos] == close && --depth == 0) return pos + 1;
  }
  return pos;
}

// Drops `key={...}` / `key="..."` / `key=word` attributes that bury the
// message, with the ", " before them.
std::string WithoutAttribute(std::string text, absl::string_view key) {
  const std::string head = absl::StrCat(key, "=");
  for (size_t start = text.find(head); start != std::string::npos;
       start = text.find(head)) {
    size_t end = start + head.size();
    if (end < text.size() && (text[end] == '{' || text[end] == '"')) {
      end = SkipBalanced(text, end);
    } else {
      while (end < text.size() && text[end] != ',' && text[end] != ' ') ++end;
    }
    size_t cut = start;
    if (cut >= 2 && text.compare(cut - 2, 2, ", ") == 0) cut -= 2;
    text.erase(cut, end - cut);
  }
  return text;
}

// XLA's messages quote the whole instruction ("%b = f32[4,3] broadcast(%p),
// dimensions={1}, metadata={...}"); the message names it instead, so the
// quote is dropped and what XLA says around it kept.
std::string WithoutQuotedInstruction(std::string message,
                                     absl::string_view name) {
  for (const std::string& head :
       {absl::StrCat("%", name, " = "), absl::StrCat(name, " = ")}) {
    size_t start = message.find(head);
    if (start == std::string::npos) continue;
    size_t pos = message.find('(', start);
    if (pos == std::string::npos) return message;
    pos = SkipBalanced(message, pos);
    // Attributes: ", key=value" where value may be braced or quoted.
    while (message.compare(pos, 2, ", ") == 0) {
      size_t eq = message.find('=', pos + 2);
      if (eq == std::string::npos) break;
      size_t value = eq + 1;
      if (value < message.size() &&
          (message[value] == '{' || message[value] == '"' ||
           message[value] == '(')) {
        pos = SkipBalanced(message, value);
      } else {
        pos = value;
        while (pos < message.size() && message[pos] != ',' &&
               message[pos] != ' ') {
          ++pos;
        }
      }
    }
    message.replace(start, pos - start, "(the instruction)");
    return message;
  }
  return message;
}

// "RET_CHECK failure (external/xla/xla/service/hlo_verifier.cc:1443) COND"
// -> "XLA check failed (hlo_verifier.cc:1443)": the condition is XLA's code,
// not something the user can act on.
std::string WithoutCheckCondition(std::string message) {
  absl::string_view kRetCheck = "RET_CHECK failure (";
  size_t start = message.find(kRetCheck);
  if (start == std::string::npos) return message;
  size_t close = message.find(')', start);
  size_t quoted = message.find("(the instruction)", start);
  if (close == std::string::npos) return message;
  std::string where = message.substr(start + kRetCheck.size(),
                                     close - start - kRetCheck.size());
  where = where.substr(
      where.rfind('/') == std::string::npos ? 0 : where.rfind('/') + 1);
  size_t end = quoted != std::string::npos && quoted > close
                   ? quoted + std::string("(the instruction)").size()
                   : close + 1;
  message.replace(start, end - start,
                  absl::StrCat("XLA check failed (", where, "):"));
  return message;
}

std::string LineOf(absl::string_view text, int number) {
  int index = 0;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    if (++index == number) return std::string(line);
  }
  return "";
}

}  // namespace

std::string ShownName(absl::string_view name) {
  std::string shown = Printable(name);
  if (shown.size() <= kNameLimit) return shown;
  const size_t tail = kNameLimit / 3;
  return absl::StrCat(shown.substr(0, kNameLimit - tail - 3), "...",
                      shown.substr(shown.size() - tail));
}

std::string ShortHloMessage(absl::string_view text, absl::string_view message) {
  int line = 0;
  absl::string_view parser_what;
  std::string where;
  std::string what;
  if (ParserLocation(message, line, parser_what)) {
    InstructionLine parsed;
    where = absl::StrCat("line ", line);
    if (SplitInstructionLine(LineOf(text, line), parsed)) {
      absl::StrAppend(&where, ", instruction ", ShownName(parsed.name));
    }
    what = std::string(parser_what);
  } else {
    std::string name = InstructionNamed(message);
    what = std::string(message);
    if (!name.empty()) {
      line = LineOfInstruction(text, name);
      where = line > 0 ? absl::StrCat("line ", line, ", instruction ",
                                      ShownName(name))
                       : absl::StrCat("instruction ", ShownName(name));
      what = WithoutCheckCondition(WithoutQuotedInstruction(what, name));
    }
    size_t context = what.find("during context [");
    if (context != std::string::npos) {
      size_t after = what.find("]: ", context);
      if (after != std::string::npos) what.erase(context, after + 3 - context);
    }
  }
  for (absl::string_view key :
       {"metadata", "backend_config", "frontend_attributes", "sharding",
        "statistics", "origin"}) {
    what = WithoutAttribute(std::move(what), key);
  }
  // The parser lists every attribute the opcode allows: noise, not the fix.
  if (size_t list = what.find(". Allowed attributes:");
      list != std::string::npos) {
    what.erase(list);
  }
  what = Truncated(Printable(what), kDetailLimit);
  return where.empty() ? what : absl::StrCat(where, ": ", what);
}

namespace {

// A computation's parameters must be numbered 0..n-1, each once: the parser
// CHECK-fails on a number out of that range.
struct ParameterNumbers {
  std::vector<std::pair<int64_t, int>> seen;  // (number, line)
  std::vector<std::string> names;

  absl::Status Check() const {
    std::vector<bool> taken(seen.size(), false);
    for (size_t i = 0; i < seen.size(); ++i) {
      const auto [param, line] = seen[i];
      if (param < 0 || param >= static_cast<int64_t>(seen.size()) ||
          taken[param]) {
        return absl::InvalidArgumentError(absl::StrCat(
            "line ", line, ", instruction ", ShownName(names[i]),
            ": parameter(", param, ") in a computation of ", seen.size(),
            " parameters (numbers run 0..n-1, once each)"));
      }
      taken[param] = true;
    }
    return absl::OkStatus();
  }
};

// True when `line` closes a brace it did not open, outside its quoted
// strings, and text follows: the computation would end inside the
// instruction. (A computation's own '}' after its ROOT, with nothing after
// it, is valid HLO text.)
bool ExtraClosingBraces(absl::string_view line) {
  int depth = 0;
  bool quoted = false;
  for (size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quoted) {
      if (c == '\\') ++i;  // the escaped character
      if (c == '"') quoted = false;
    } else if (c == '"') {
      quoted = true;
    } else if (c == '{') {
      ++depth;
    } else if (c == '}' && --depth < 0) {
      return !absl::StripAsciiWhitespace(line.substr(i + 1)).empty();
    }
  }
  return false;
}

}  // namespace

absl::Status PrecheckHloText(absl::string_view text) {
  int number = 0;
  ParameterNumbers parameters;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    ++number;
    InstructionLine parsed;
    if (!SplitInstructionLine(line, parsed)) {
      // A computation ends (or another starts without one ending).
      absl::string_view stripped = absl::StripAsciiWhitespace(line);
      if (stripped == "}" || absl::EndsWith(stripped, "{")) {
        if (absl::Status s = parameters.Check(); !s.ok()) return s;
        parameters = ParameterNumbers();
      }
      continue;
    }
    const int arity = FixedArity(parsed.opcode);
    if (arity >= 0 && parsed.operands != arity) {
      return absl::InvalidArgumentError(
          absl::StrCat("line ", number, ", instruction ",
                       Printable(parsed.name), ": ", parsed.opcode, " takes ",
                       arity, " operand(s), has ", parsed.operands));
    }
    if (parsed.opcode == "parameter") {
      absl::string_view rest = line.substr(line.find("parameter(") + 10);
      int64_t param = -1;
      if (absl::SimpleAtoi(rest.substr(0, rest.find(')')), &param)) {
        parameters.seen.emplace_back(param, number);
        parameters.names.push_back(parsed.name);
      }
    }
    // An instruction line that closes more braces than it opens ends its
    // computation inside the instruction; XLA's parser can then CHECK-fail
    // building the cut computation (fuzz: mutant 558 of seed 10).
    if (ExtraClosingBraces(line)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "line ", number, ", instruction ", ShownName(parsed.name),
          ": '}' closes more than the line opens, and text follows"));
    }
    // XLA's parser CHECK-fails (aborts) on a tuple without a tuple shape.
    if (parsed.opcode == "tuple" && !absl::StartsWith(parsed.shape, "(")) {
      return absl::InvalidArgumentError(absl::StrCat(
          "line ", number, ", instruction ", ShownName(parsed.name),
          ": opcode tuple needs a tuple shape, has ",
          Truncated(Printable(parsed.shape), 40)));
    }
  }
  return parameters.Check();
}

// What XLA's verifier does not check and its passes trust, in one walk: a
// valid layout (one naming a dimension twice makes WhileLoopSimplifier abort)
// and a fusion's or call's operands counted against the called computation's
// parameters (XLA's alias analyses CHECK on an extra one).
absl::Status CheckStructure(const xla::HloModule& module,
                            absl::string_view text) {
  for (const xla::HloComputation* computation : module.computations()) {
    for (const xla::HloInstruction* instruction : computation->instructions()) {
      // Only on failure: finding the line scans the text.
      auto where = [&] {
        return absl::StrCat(
            "line ", LineOfInstruction(text, instruction->name()),
            ", instruction ", ShownName(instruction->name()), ": ");
      };
      absl::Status shape_ok =
          xla::ShapeUtil::ValidateShapeWithOptionalLayout(instruction->shape());
      if (!shape_ok.ok()) {
        return absl::InvalidArgumentError(absl::StrCat(
            where(), Truncated(Printable(shape_ok.message()), kDetailLimit)));
      }
      const bool calls_one =
          (instruction->opcode() == xla::HloOpcode::kFusion ||
           instruction->opcode() == xla::HloOpcode::kCall) &&
          instruction->called_computations().size() == 1;
      if (!calls_one) continue;
      const xla::HloComputation* called =
          instruction->called_computations().front();
      if (called->num_parameters() != instruction->operand_count()) {
        return absl::InvalidArgumentError(
            absl::StrCat(where(), instruction->operand_count(),
                         " operands for the ", called->num_parameters(),
                         " parameters of ", ShownName(called->name())));
      }
    }
  }
  return absl::OkStatus();
}

namespace {

constexpr char kExpectedHlo[] =
    "expected HLO text (*.cpu_after_optimizations.txt or, for --platform "
    "gpu, *.before_optimizations.txt)";

// The input's text, or why it cannot be HLO text at all (missing, a folder,
// empty, binary, JSON), said before the parser's "expects name" would.
absl::StatusOr<std::string> ReadHloText(const std::string& path) {
  std::error_code error;
  const std::filesystem::file_status status =
      std::filesystem::status(path, error);
  if (error) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": cannot read: ", error.message()));
  }
  if (std::filesystem::is_directory(status)) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": a folder; ", kExpectedHlo));
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": cannot read: ", std::strerror(errno)));
  }
  std::stringstream buffer;
  buffer << in.rdbuf();
  std::string text = buffer.str();
  const absl::string_view stripped = absl::StripAsciiWhitespace(text);
  if (stripped.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": empty; ", kExpectedHlo));
  }
  if (text.find('\0') != std::string::npos) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": a binary file; ", kExpectedHlo));
  }
  if (stripped.front() == '{' || stripped.front() == '[') {
    return absl::InvalidArgumentError(absl::StrCat(
        path, ": JSON (a report or an exported graph?); ", kExpectedHlo));
  }
  return text;
}

}  // namespace

absl::StatusOr<InputModule> ReadInputModule(const std::string& path,
                                            Platform platform) {
  TF_ASSIGN_OR_RETURN(const std::string text, ReadHloText(path));
  if (absl::Status precheck = PrecheckHloText(text); !precheck.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": malformed HLO: ", precheck.message()));
  }
  absl::StatusOr<std::unique_ptr<xla::HloModule>> module =
      xla::ParseAndReturnUnverifiedModule(text);
  if (!module.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(
        path,
        ": malformed HLO: ", ShortHloMessage(text, module.status().message())));
  }
  if (absl::Status structure = CheckStructure(**module, text);
      !structure.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": invalid HLO: ", structure.message()));
  }
  // Parsing checks syntax only; reject what XLA would reject before any
  // pass touches it, so bad input is an error and never a crash.
  xla::HloVerifier verifier(/*layout_sensitive=*/false,
                            /*allow_mixed_precision=*/true);
  absl::Status verified = verifier.Run(module->get()).status();
  if (verified.ok() && (*module)->has_schedule()) {
    verified = (*module)->schedule().Verify();
  }
  if (!verified.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(
        path, ": invalid HLO: ", ShortHloMessage(text, verified.message())));
  }
  InputModule input{std::move(*module), ""};
  const bool scheduled = input.module->has_schedule();
  if (platform == Platform::kGpu && scheduled) {
    // The GPU pipeline runs XLA's optimizations again on an already
    // optimized module, which XLA does not support (it aborts).
    return absl::InvalidArgumentError(
        absl::StrCat(path,
                     ": a scheduled module (an after-optimizations dump); "
                     "--platform gpu takes pre-optimization HLO: the dump's "
                     "*.before_optimizations.txt"));
  }
  if (platform == Platform::kCpu && !scheduled &&
      absl::StrContains(path, "before_optimizations")) {
    input.warning = absl::StrCat(
        path,
        ": pre-optimization HLO: the CPU figures are for XLA:CPU's "
        "optimized module (*.cpu_after_optimizations.txt); "
        "--platform gpu takes this file");
  }
  return input;
}

}  // namespace hlo_remat
