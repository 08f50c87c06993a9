// A module's frontier kept on disk between compiles
// (--xla_rematerialization_frontier_cache=DIR, hlo-remat --frontier-cache).
//
// The frontier does not depend on the budget (plan_frontier.h), so the same
// module compiled again, at any budget, can answer from the points its first
// compile made: the pass then makes only the chosen point's plan, from the
// steps its search took (its recipe, plan_recipe.h: a few sweeps and one
// judgement), instead of every aim's search. What it assumes: planning is
// deterministic, so the chosen plan made again lands on its point. That is
// checked (the same figure, the same FLOPs); where the recipe misses, the
// aim's search is made, and where that misses too the file is stale: the
// whole frontier is searched again and kept in its place.
//
// One file per module (its fingerprint) and algorithm. The file names what
// else the points depend on (FrontierIdentity: the options that shape the
// search, the engine's revision); a file of another identity is a miss, and
// the next store replaces it.
#ifndef XLA_SERVICE_REMAT_FRONTIER_CACHE_H_
#define XLA_SERVICE_REMAT_FRONTIER_CACHE_H_

#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "xla/hlo/ir/hlo_module.h"
#include "xla/service/remat/plan_recipe.h"
#include "xla/service/remat/remat_options.h"

namespace xla {
namespace remat {

// The options the frontier's points depend on, and the engine's revision,
// as one line: never the budget (the lookup's alone), nor dumps, threads or
// checks (the points do not depend on them).
std::string FrontierIdentity(const RematOptions& options);

// The file's text, and the frontier read back from it: nullopt when the
// text is of another identity; an error, naming `where` and the line, when
// it is not a frontier file at all.
std::string FrontierFileText(const KnownFrontier& frontier,
                             absl::string_view identity);
absl::StatusOr<std::optional<KnownFrontier>> ParseFrontierFile(
    absl::string_view text, absl::string_view identity,
    absl::string_view where);

class FrontierCache {
 public:
  // The file of `module` (as the pass receives it) in `dir`.
  FrontierCache(absl::string_view dir, const HloModule& module,
                const RematOptions& options);

  const std::string& path() const { return path_; }
  // The frontier kept for this module and identity; nullopt when there is
  // none. An error when the file is there but cannot be read as one.
  absl::StatusOr<std::optional<KnownFrontier>> Load() const;
  // Writes the file whole or not at all (a temporary file renamed), so
  // compiles running at once never read half of one.
  absl::Status Store(const KnownFrontier& frontier) const;

 private:
  std::string dir_;
  std::string path_;
  std::string identity_;
};

}  // namespace remat
}  // namespace xla

#endif  // XLA_SERVICE_REMAT_FRONTIER_CACHE_H_
