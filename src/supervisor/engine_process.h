// The engine job the supervisor runs: one child process (typically `mpirun ... weft serve`) in a
// process group of its own, so that stopping it reaches every process it started on this host.
//
// The child gets PR_SET_PDEATHSIG=SIGTERM: if the supervisor dies, the job is told to end instead
// of serving on without a front end. start() must therefore be called from a thread that lives as
// long as the child (the kernel sends the signal when the *thread* that forked exits).
#pragma once

#include <sys/types.h>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"

namespace weft {

class EngineProcess {
 public:
  explicit EngineProcess(std::vector<std::string> command) : command_(std::move(command)) {}
  ~EngineProcess();  // stop() if running
  EngineProcess(const EngineProcess&) = delete;
  EngineProcess& operator=(const EngineProcess&) = delete;

  // Starts the command (searched on PATH). Errors name the command.
  absl::Status start();
  // Whether the child still runs; when it has exited, reaps it and sets exit_description().
  bool running();
  // SIGTERM to the group, then SIGKILL after `grace`; reaps the child. A no-op when not running.
  void stop(std::chrono::milliseconds grace);

  pid_t pid() const { return pid_; }
  // "exited with status 1", "killed by signal 9" for the last child that ended.
  const std::string& exit_description() const { return exit_description_; }
  std::string command_line() const;

 private:
  void reaped(int wait_status);

  std::vector<std::string> command_;
  pid_t pid_ = -1;
  std::string exit_description_;
};

}  // namespace weft
