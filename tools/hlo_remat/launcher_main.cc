// hlo-remat: the command users run. It starts the engine (hlo-remat-engine,
// installed beside it) as a child and keeps what TensorFlow and XLA print out
// of the user's way.
//
// Why a separate process: the engine links TensorFlow, whose libraries log at
// load time (before main can silence them), whose RET_CHECKs log stack traces,
// and whose parser and compiler CHECK-fail (abort) on some malformed input.
// None of that can be reliably caught inside the process that runs it. Here:
//   - the engine's own messages go to fd 3, which is this process's stderr;
//   - the engine's stderr (library noise) is captured and shown only with -v;
//   - an engine killed by a signal becomes one short line and exit code 2
//     (while it was reading the input: the input was refused) or 1 (later: an
//     internal failure), never a core dump or a stack trace on the terminal.
// This file links nothing of TensorFlow, so it starts instantly.
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "engine_channel.h"

namespace {

// What the engine wrote to its stderr; kept for the crash summary. Bounded:
// a runaway log must not exhaust memory.
constexpr size_t kMaxCapturedBytes = 1 << 20;

std::string EngineBesideMe() {
  char self[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
  if (n <= 0) return "hlo-remat-engine";
  self[n] = '\0';
  std::string path(self);
  size_t slash = path.rfind('/');
  return path.substr(0, slash + 1) + "hlo-remat-engine";
}

// A line of the engine's stderr that says why it aborted: an absl/TSL fatal
// log line ("F1122 ... ] Check failed: ...") or a bare "Check failed".
bool IsFatalLine(const std::string& line) {
  if (line.find("Check failed") != std::string::npos) return true;
  return line.size() > 1 && line[0] == 'F' && line[1] >= '0' && line[1] <= '9';
}

// "F1122 10:00:00.000000  123 file.cc:45] Check failed: COND" -> "COND".
std::string WithoutLogPrefix(std::string line) {
  size_t bracket = line.find("] ");
  if (bracket != std::string::npos && line[0] == 'F') {
    line = line.substr(bracket + 2);
  }
  const std::string check = "Check failed: ";
  if (line.rfind(check, 0) == 0) line = line.substr(check.size());
  return line;
}

std::string Shortened(std::string text, size_t limit) {
  for (char& c : text) {
    if (static_cast<unsigned char>(c) < 0x20) c = ' ';
  }
  if (text.size() > limit) text = text.substr(0, limit - 3) + "...";
  return text;
}

void WriteAll(int fd, const char* data, size_t size) {
  while (size > 0) {
    ssize_t n = write(fd, data, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    data += n;
    size -= static_cast<size_t>(n);
  }
}

struct Captured {
  std::string text;  // the engine's stderr, without stage markers
  std::string input = "hlo-remat";  // the file the engine said it reads
  bool input_accepted = false;
};

// Reads the engine's stderr until it closes; with `verbose`, passes it on.
Captured Drain(int fd, bool verbose) {
  Captured captured;
  std::string pending;
  char buffer[8192];
  for (;;) {
    ssize_t n = read(fd, buffer, sizeof(buffer));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    pending.append(buffer, static_cast<size_t>(n));
    size_t newline;
    while ((newline = pending.find('\n')) != std::string::npos) {
      std::string line = pending.substr(0, newline + 1);
      pending.erase(0, newline + 1);
      if (line.rfind(hlo_remat::kStageMarker, 0) == 0) {
        const std::string stage =
            line.substr(std::strlen(hlo_remat::kStageMarker));
        const size_t input = std::strlen(hlo_remat::kInputIs);
        if (stage.compare(0, input, hlo_remat::kInputIs) == 0) {
          captured.input = stage.substr(input, stage.size() - input - 1);
        }
        captured.input_accepted |=
            stage.rfind(hlo_remat::kInputAccepted, 0) == 0;
        continue;
      }
      if (verbose) WriteAll(STDERR_FILENO, line.data(), line.size());
      if (captured.text.size() < kMaxCapturedBytes) captured.text += line;
    }
  }
  if (!pending.empty()) {
    if (verbose) WriteAll(STDERR_FILENO, pending.data(), pending.size());
    captured.text += pending;
  }
  return captured;
}

std::string FatalReason(const std::string& log) {
  size_t start = 0;
  std::string reason;
  while (start < log.size()) {
    size_t end = log.find('\n', start);
    if (end == std::string::npos) end = log.size();
    std::string line = log.substr(start, end - start);
    if (IsFatalLine(line)) {
      reason = WithoutLogPrefix(line);
      break;  // the first fatal line is the cause; the rest is the trace
    }
    start = end + 1;
  }
  return reason;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args;
  bool verbose = std::getenv("HLO_REMAT_VERBOSE") != nullptr;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "-v" || a == "--verbose") {
      verbose = true;
    } else {
      args.push_back(a);
    }
  }
  const std::string engine = EngineBesideMe();

  int log_pipe[2];
  if (pipe2(log_pipe, O_CLOEXEC) != 0) {
    std::perror("hlo-remat: pipe");
    return 1;
  }
  pid_t child = fork();
  if (child < 0) {
    std::perror("hlo-remat: fork");
    return 1;
  }
  if (child == 0) {
    // A killed launcher (a sweep's timeout) must not leave the engine running.
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    // The engine's own messages go straight to the user; with -v they share
    // the log's pipe instead, so they keep their place after what XLA printed
    // before them (two streams would reach the terminal in any order).
    dup2(verbose ? log_pipe[1] : STDERR_FILENO, hlo_remat::kUserFd);
    dup2(log_pipe[1], STDERR_FILENO);  // everything else
    if (!verbose) setenv("TF_CPP_MIN_LOG_LEVEL", "2", /*overwrite=*/0);
    setenv(hlo_remat::kUserFdEnv, "1", 1);
    std::vector<char*> child_argv;
    child_argv.push_back(const_cast<char*>(engine.c_str()));
    for (std::string& a : args) child_argv.push_back(a.data());
    child_argv.push_back(nullptr);
    execv(engine.c_str(), child_argv.data());
    dprintf(hlo_remat::kUserFd, "hlo-remat: cannot start %s: %s\n",
            engine.c_str(), std::strerror(errno));
    _exit(1);
  }
  close(log_pipe[1]);
  // Ctrl-C reaches the engine through the process group; the launcher waits
  // for it instead of dying first.
  signal(SIGINT, SIG_IGN);
  Captured captured = Drain(log_pipe[0], verbose);
  close(log_pipe[0]);
  int status = 0;
  while (waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFEXITED(status)) return WEXITSTATUS(status);

  const int sig = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
  if (sig == SIGINT) return 130;
  std::string reason = FatalReason(captured.text);
  if (reason.empty()) reason = std::string("killed by ") + strsignal(sig);
  const std::string& input = captured.input;
  const std::string hint = verbose ? "" : "; -v shows XLA's log";
  if (!captured.input_accepted) {
    std::fprintf(stderr,
                 "hlo-remat: %s: malformed HLO: XLA aborted reading it "
                 "(CHECK %s)%s\n",
                 Shortened(input, 80).c_str(), Shortened(reason, 120).c_str(),
                 hint.c_str());
    return 2;
  }
  std::fprintf(stderr,
               "hlo-remat: %s: internal error: XLA aborted (CHECK %s)%s\n",
               Shortened(input, 80).c_str(), Shortened(reason, 120).c_str(),
               hint.c_str());
  return 1;
}
