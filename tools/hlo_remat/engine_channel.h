// How hlo-remat (the launcher, launcher_main.cc) and hlo-remat-engine talk:
// the engine's own messages go to a file descriptor of their own, so that the
// launcher can hide what TensorFlow and XLA print on stderr; and the engine
// says on stderr when it has accepted its input, so that an abort before that
// is a refused input (exit 2) and one after it an internal failure (exit 1).
// Header-only and free of TensorFlow: the launcher includes it too.
#ifndef HLO_REMAT_ENGINE_CHANNEL_H_
#define HLO_REMAT_ENGINE_CHANNEL_H_

#include <unistd.h>

#include <cstdlib>
#include <string>

namespace hlo_remat {

inline constexpr int kUserFd = 3;
// Set by the launcher when kUserFd is open for the engine's messages.
inline constexpr char kUserFdEnv[] = "HLO_REMAT_USER_FD";
inline constexpr char kStageMarker[] = "hlo-remat-stage: ";
inline constexpr char kInputAccepted[] = "input-accepted";
// Followed by the input's path: the launcher names it if the engine aborts
// (so that it need not know which options take a value).
inline constexpr char kInputIs[] = "input ";

// Writes the engine's own message (errors, the summary line, --explain-peak)
// where the user sees it: fd 3 under the launcher, stderr when run directly.
inline void WriteUserMessage(const std::string& text) {
  const int fd = std::getenv(kUserFdEnv) != nullptr ? kUserFd : STDERR_FILENO;
  const char* data = text.data();
  size_t left = text.size();
  while (left > 0) {
    ssize_t n = write(fd, data, left);
    if (n <= 0) return;
    data += n;
    left -= static_cast<size_t>(n);
  }
}

// Tells the launcher which file the engine reads (stderr, which it reads).
inline void MarkInput(const std::string& path) {
  const std::string line = std::string(kStageMarker) + kInputIs + path + "\n";
  (void)!write(STDERR_FILENO, line.data(), line.size());
}

// Tells the launcher the input parsed and verified (stderr, which it reads).
inline void MarkInputAccepted() {
  const std::string line = std::string(kStageMarker) + kInputAccepted + "\n";
  (void)!write(STDERR_FILENO, line.data(), line.size());
}

}  // namespace hlo_remat

#endif  // HLO_REMAT_ENGINE_CHANNEL_H_
