// `weft supervise`: a front end that outlives the engine job behind it (issue 18).
//
// The supervisor listens on the public address and runs the engine command (typically
// `mpirun ... weft serve --port ENGINE_PORT`) as a child process group (engine_process.h). Every
// request is forwarded to the engine's HTTP server on this host. When the engine job dies (a
// rank killed: mpirun then ends the whole job), stalls (the engine's step deadline fails the step
// and its requests get 503 / an error event) or exits, the supervisor kills what is left of the
// job, restarts it and replays every in-flight generation request on the new engine:
//   - every request gets a pinned seed (a random one when the client sent none), so a replay
//     generates the same tokens as the attempt it replaces, sampled or greedy;
//   - non-streaming requests are simply sent again; the client sees one response;
//   - streams continue where they stopped: the replay's events that the client already has are
//     checked and dropped (stream_replay.h), the rest go out under the first attempt's id.
// A request whose attempts all end in engine failures (max_attempts_per_request: a "poison"
// request that kills the engine) gets a 503 / a final error event. Restarts are bounded: more
// than max_restarts within restart_window, or an engine that cannot be started, and the
// supervisor gives up: every waiting client gets an error and run() returns it. An engine that
// never became ready at all (a wrong command, model or flag) is given up on at once.
//
// /health answers for the supervisor itself (liveness); /ready is 200 only while an engine is up
// (false while one restarts); /metrics is the engine's plus weft:supervisor_* lines.
// gRPC's Generate is supervised the same way when both gRPC ports are given (grpc_proxy.h).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "serving/http_server.h"
#include "supervisor/engine_process.h"

namespace weft {

struct SupervisorOptions {
  HttpServerOptions http;  // the public address
  std::string engine_host = "127.0.0.1";
  int engine_port = 0;
  std::vector<std::string> engine_command;
  int max_restarts = 10;  // within any restart_window
  std::chrono::seconds restart_window{600};
  // Wait before restarting; doubled for each consecutive start that never became ready.
  std::chrono::milliseconds restart_backoff{200};
  std::chrono::milliseconds max_restart_backoff{30000};
  std::chrono::seconds engine_start_timeout{600};  // from start until the engine's /ready is 200
  int max_attempts_per_request = 3;
  std::chrono::milliseconds stop_grace{30000};  // SIGTERM to SIGKILL when shutting down
  // gRPC (grpc_proxy.h; builds with gRPC only): the public port (-1: none, 0: any free one) and
  // the engine's `weft serve --grpc-port`.
  int grpc_port = -1;
  int engine_grpc_port = 0;
};

class Supervisor {
 public:
  explicit Supervisor(SupervisorOptions options);
  ~Supervisor();
  Supervisor(const Supervisor&) = delete;
  Supervisor& operator=(const Supervisor&) = delete;

  // Binds the HTTP port (and starts the gRPC front when asked for).
  absl::Status listen();
  int port() const { return http_.port(); }
  int grpc_port() const;
  // Serves until stop() (OK) or until the supervisor gives up on the engine (the reason).
  absl::Status run();
  // Thread-safe (not async-signal-safe): ends run() after stopping the engine.
  void stop();

 private:
  struct Call;
  enum class EngineState { kStarting, kReady, kRestarting, kGaveUp, kStopping };

  void keep_engine();
  bool start_and_wait_ready();
  // Blocks until an engine newer than `after_generation` is ready; its generation, or -1 when
  // the supervisor gave up or stops.
  int64_t wait_ready(int64_t after_generation);
  void report_failure(int64_t generation, const std::string& reason);
  // Whether GET `path` on the engine answers 200 within the health timeout.
  bool engine_answers_200(const char* path);

  void handle(ConnectionId conn, HttpRequest request);
  void spawn(std::shared_ptr<Call> call, void (Supervisor::*work)(Call&));
  void proxy_generation(Call& call);
  void proxy_once(Call& call);
  void proxy_metrics(Call& call);
  std::string supervisor_metrics();
  void respond(Call& call, int status, std::string content_type, std::string body);
  void respond_error(Call& call, bool stream_started, const std::string& message);

  SupervisorOptions options_;
  HttpServer http_;
  std::shared_ptr<void> grpc_;  // the GrpcProxy, type-erased so this header needs no gRPC
  EngineProcess engine_;
  std::thread keeper_;

  std::mutex mu_;
  std::condition_variable cv_;
  EngineState state_ = EngineState::kStarting;
  int64_t generation_ = 0;         // of the engine now up (or last up)
  int64_t failed_generation_ = 0;  // a failure was reported for this generation
  std::string failure_reason_;
  std::string give_up_reason_;
  std::deque<std::chrono::steady_clock::time_point> restarts_;  // within restart_window

  std::atomic<int> active_calls_{0};
  std::atomic<int64_t> restarts_total_{0};
  std::atomic<int64_t> replays_total_{0};
  std::atomic<int64_t> last_recovery_ms_{0};
  std::atomic<int64_t> abandoned_total_{0};
};

}  // namespace weft
