// JSON text for the engine's reports and exports: one way to quote a string
// and print a number, so every file the engine writes parses the same way.
#ifndef XLA_SERVICE_REMAT_JSON_TEXT_H_
#define XLA_SERVICE_REMAT_JSON_TEXT_H_

#include <string>

#include "absl/strings/string_view.h"

namespace xla {
namespace remat {

// `text` as a JSON string literal, control characters escaped.
std::string JsonQuote(absl::string_view text);

// `value` with full precision; null when it is not finite.
std::string JsonNumber(double value);

}  // namespace remat
}  // namespace xla

#endif  // XLA_SERVICE_REMAT_JSON_TEXT_H_
