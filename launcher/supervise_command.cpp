// weft supervise: keeps an engine job up behind a front end that outlives it (supervisor.h).
//
//   weft supervise --port 8000 --engine-port 8100 -- mpirun -n 4 weft serve --tp 2 --pp 2 --port
//   8100 ...
//
// SIGTERM / SIGINT: the engine job gets SIGTERM (it drains), then the supervisor exits 0. Exit 1
// when it gave up on the engine (restarts exhausted, or the command cannot run).
#include <pthread.h>
#include <signal.h>

#include <algorithm>
#include <atomic>
#include <iostream>
#include <thread>

#include "launcher/command_specs.h"
#include "launcher/commands.h"
#include "launcher/termination_signals.h"
#include "supervisor/supervisor.h"

namespace weft {
namespace {

int fail(const absl::Status& status) {
  std::cerr << "weft supervise: " << status.message() << "\n";
  return status.code() == absl::StatusCode::kInvalidArgument ? 2 : 1;
}

}  // namespace

int run_supervise(const std::vector<std::string>& args) {
  const auto dashes = std::find(args.begin(), args.end(), "--");
  const std::vector<std::string> flags(args.begin(), dashes);
  auto parsed = parse_command(command_spec("supervise"), flags, fail);
  if (const int* done = std::get_if<int>(&parsed)) return *done;
  const CliArgs& cli = std::get<CliArgs>(parsed);
  if (dashes == args.end() || dashes + 1 == args.end()) {
    return fail(absl::InvalidArgumentError("no engine command: give it after '--'"));
  }
  SupervisorOptions options;
  options.engine_command.assign(dashes + 1, args.end());
  options.http.host = cli.get_or("host", "127.0.0.1");
  auto port = cli.get_int("port", 8000);
  auto engine_port = cli.get_int("engine-port", 0);
  auto max_restarts = cli.get_int("max-restarts", options.max_restarts);
  auto window = cli.get_int("restart-window", options.restart_window.count());
  auto backoff = cli.get_int("restart-backoff-ms", options.restart_backoff.count());
  auto start_timeout = cli.get_int("engine-start-timeout", options.engine_start_timeout.count());
  auto attempts = cli.get_int("max-attempts", options.max_attempts_per_request);
  auto grpc_port = cli.get_int("grpc-port", -1);
  auto engine_grpc_port = cli.get_int("engine-grpc-port", 0);
  for (const auto* v : {&port, &engine_port, &max_restarts, &window, &backoff, &start_timeout,
                        &attempts, &grpc_port, &engine_grpc_port}) {
    if (!v->ok()) return fail(v->status());
  }
  if (*port < 0 || *port > 65535)
    return fail(absl::InvalidArgumentError("--port: must be in [0, 65535]"));
  if (*engine_port <= 0 || *engine_port > 65535) {
    return fail(
        absl::InvalidArgumentError("--engine-port: required, in [1, 65535]: the port the engine "
                                   "command's `weft serve --port` listens on"));
  }
  if (*max_restarts < 0 || *window <= 0 || *backoff < 0 || *start_timeout <= 0 || *attempts < 1) {
    return fail(
        absl::InvalidArgumentError("--max-restarts, --restart-backoff-ms must be >= 0; "
                                   "--restart-window, --engine-start-timeout, "
                                   "--max-attempts >= 1"));
  }
  if (cli.has("grpc-port") != cli.has("engine-grpc-port") || *grpc_port < -1 ||
      *grpc_port > 65535 ||
      (cli.has("engine-grpc-port") && (*engine_grpc_port <= 0 || *engine_grpc_port > 65535))) {
    return fail(absl::InvalidArgumentError(
        "--grpc-port and --engine-grpc-port go together (the engine command's `weft serve "
        "--grpc-port`)"));
  }
  options.grpc_port = static_cast<int>(*grpc_port);
  options.engine_grpc_port = static_cast<int>(*engine_grpc_port);
  options.http.port = static_cast<int>(*port);
  options.engine_port = static_cast<int>(*engine_port);
  options.max_restarts = static_cast<int>(*max_restarts);
  options.restart_window = std::chrono::seconds(*window);
  options.restart_backoff = std::chrono::milliseconds(*backoff);
  options.engine_start_timeout = std::chrono::seconds(*start_timeout);
  options.max_attempts_per_request = static_cast<int>(*attempts);

  // Signals go to the watcher thread only (the engine command gets the defaults back).
  const sigset_t signals = block_termination_signals();

  Supervisor supervisor(options);
  if (absl::Status s = supervisor.listen(); !s.ok()) return fail(s);
  std::cerr << "weft supervise: listening on http://" << options.http.host << ":"
            << supervisor.port() << ", engine on port " << options.engine_port;
  if (supervisor.grpc_port() >= 0) std::cerr << "; gRPC on port " << supervisor.grpc_port();
  std::cerr << std::endl;
  std::atomic<bool> finished{false};
  std::thread watcher([&] {
    int sig = 0;
    sigwait(&signals, &sig);
    if (finished.load()) return;  // the wake-up below
    std::cerr << "weft supervise: " << strsignal(sig) << ": stopping the engine" << std::endl;
    supervisor.stop();
  });
  const absl::Status result = supervisor.run();
  finished.store(true);
  pthread_kill(watcher.native_handle(), SIGTERM);  // ends a sigwait that is still waiting
  watcher.join();
  if (!result.ok()) return fail(result);
  return 0;
}

}  // namespace weft
