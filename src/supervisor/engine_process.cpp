#include "supervisor/engine_process.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace weft {

EngineProcess::~EngineProcess() { stop(std::chrono::milliseconds(5000)); }

std::string EngineProcess::command_line() const { return absl::StrJoin(command_, " "); }

absl::Status EngineProcess::start() {
  if (command_.empty()) return absl::InvalidArgumentError("no engine command given");
  if (pid_ > 0) return absl::FailedPreconditionError("the engine is already running");
  std::vector<char*> argv;
  for (std::string& arg : command_) argv.push_back(arg.data());
  argv.push_back(nullptr);
  const pid_t parent = getpid();
  // Reports exec's errno to the parent; close-on-exec, so a successful exec just closes it.
  int report[2];
  if (pipe2(report, O_CLOEXEC) != 0)
    return absl::InternalError(absl::StrCat("pipe: ", std::strerror(errno)));
  const pid_t pid = fork();
  if (pid < 0) {
    close(report[0]);
    close(report[1]);
    return absl::InternalError(absl::StrCat("fork: ", std::strerror(errno)));
  }
  if (pid == 0) {
    // The child: only async-signal-safe calls until exec.
    setpgid(0, 0);
    // The supervisor blocks and ignores signals for its own threads; the engine job must get the
    // defaults back, or SIGTERM could never stop mpirun.
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    signal(SIGPIPE, SIG_DFL);
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (getppid() != parent) _exit(127);  // the supervisor died before prctl took effect
    execvp(argv[0], argv.data());
    const int err = errno;
    (void)!write(report[1], &err, sizeof(err));
    _exit(127);
  }
  close(report[1]);
  setpgid(pid, pid);  // also here, so the group exists before we could signal it
  int exec_errno = 0;
  ssize_t n;
  do {
    n = read(report[0], &exec_errno, sizeof(exec_errno));
  } while (n < 0 && errno == EINTR);
  close(report[0]);
  if (n == sizeof(exec_errno)) {
    int status = 0;
    waitpid(pid, &status, 0);
    return absl::InvalidArgumentError(absl::StrCat("cannot run the engine command '", command_[0],
                                                   "': ", std::strerror(exec_errno)));
  }
  pid_ = pid;
  exit_description_.clear();
  return absl::OkStatus();
}

void EngineProcess::reaped(int wait_status) {
  if (WIFEXITED(wait_status)) {
    exit_description_ = absl::StrCat("exited with status ", WEXITSTATUS(wait_status));
  } else if (WIFSIGNALED(wait_status)) {
    exit_description_ = absl::StrCat("killed by signal ", WTERMSIG(wait_status), " (",
                                     strsignal(WTERMSIG(wait_status)), ")");
  } else {
    exit_description_ = "ended";
  }
  pid_ = -1;
}

bool EngineProcess::running() {
  if (pid_ <= 0) return false;
  int status = 0;
  const pid_t r = waitpid(pid_, &status, WNOHANG);
  if (r == 0) return true;
  if (r == pid_) {
    reaped(status);
  } else {
    exit_description_ = absl::StrCat("lost (waitpid: ", std::strerror(errno), ")");
    pid_ = -1;
  }
  return false;
}

void EngineProcess::stop(std::chrono::milliseconds grace) {
  if (!running()) return;
  const pid_t group = pid_;
  kill(-group, SIGTERM);
  const auto deadline = std::chrono::steady_clock::now() + grace;
  while (running() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  // SIGKILL the whole group even when the leader (mpirun) is gone: its ranks may linger.
  kill(-group, SIGKILL);
  if (pid_ > 0) {
    int status = 0;
    if (waitpid(pid_, &status, 0) == pid_) reaped(status);
  }
}

}  // namespace weft
