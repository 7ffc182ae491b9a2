#include "supervisor/supervisor.h"

#include <iostream>
#include <optional>
#include <random>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "absl/strings/strip.h"
#include "core/bounded_json.h"
#include "nlohmann/json.hpp"
#include "serving/http_client.h"
#include "supervisor/stream_replay.h"
#ifdef WEFT_HAVE_GRPC
#include "supervisor/grpc_proxy.h"
#endif

namespace weft {

using json = nlohmann::json;
using std::chrono::milliseconds;
using Clock = std::chrono::steady_clock;

namespace {

constexpr milliseconds kConnectTimeout{2000};
constexpr milliseconds kSendTimeout{30000};
// How long an engine may send nothing on a proxied response. An engine that dies closes the
// socket at once and one that stalls fails its step (its deadline) or its health checks, so this
// only bounds an engine that is alive, healthy and silent.
constexpr milliseconds kUpstreamIdle{3600 * 1000};
constexpr milliseconds kHealthTimeout{5000};
constexpr milliseconds kHealthInterval{1000};
constexpr int kHealthFailuresToRestart = 3;
constexpr milliseconds kPoll{50};

bool is_hop_by_hop(absl::string_view name) {
  for (absl::string_view h : {"host", "connection", "content-length", "transfer-encoding", "expect",
                              "keep-alive", "te", "trailer", "upgrade", "proxy-connection"}) {
    if (name == h) return true;
  }
  return false;
}

std::vector<std::pair<std::string, std::string>> forwarded_headers(const HttpRequest& request) {
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& [name, value] : request.headers) {
    if (!is_hop_by_hop(name)) out.emplace_back(name, value);
  }
  return out;
}

std::string error_json(const std::string& message) {
  return json{{"error",
               {{"message", message},
                {"type", "service_unavailable"},
                {"param", nullptr},
                {"code", nullptr}}}}
      .dump();
}

// The engine reports its own failure (a failed step, a stopping engine) as service_unavailable.
bool is_engine_failure(const json& body) {
  const auto error = body.is_object() ? body.find("error") : body.end();
  if (error == body.end() || !error->is_object()) return false;
  const auto type = error->find("type");
  return type != error->end() && type->is_string() && *type == "service_unavailable";
}

// Pins a seed into a generation request that has none, so that a replay samples what the
// replaced attempt sampled. Bodies that are not a JSON object pass unchanged (the engine answers
// them with its own 400).
std::string with_pinned_seed(const std::string& body, bool* stream) {
  auto parsed = parse_json_bounded<json>(body, "request body", request_json_limits());
  if (!parsed.ok() || !parsed->is_object()) return body;
  auto s = parsed->find("stream");
  *stream = s != parsed->end() && s->is_boolean() && s->get<bool>();
  if (parsed->contains("seed")) return body;
  static thread_local std::mt19937_64 random(std::random_device{}());
  (*parsed)["seed"] = static_cast<int64_t>(random() >> 2);
  return parsed->dump();
}

}  // namespace

struct Supervisor::Call {
  ConnectionId conn = 0;
  HttpRequest request;
  std::atomic<bool> client_gone{false};
  std::mutex mu;
  HttpClientConnection* upstream = nullptr;  // guarded by mu; what interrupt() shuts down

  void client_closed() {
    client_gone.store(true);
    std::lock_guard<std::mutex> lock(mu);
    if (upstream != nullptr) upstream->interrupt();
  }
  void attach(HttpClientConnection* c) {
    std::lock_guard<std::mutex> lock(mu);
    upstream = c;
    if (c != nullptr && client_gone.load()) c->interrupt();
  }
};

Supervisor::Supervisor(SupervisorOptions options)
    : options_(std::move(options)),
      http_(options_.http,
            [this](ConnectionId conn, HttpRequest request) { handle(conn, std::move(request)); }),
      engine_(options_.engine_command) {}

Supervisor::~Supervisor() {
  stop();
  if (keeper_.joinable()) keeper_.join();
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [&] { return active_calls_.load() == 0; });
}

absl::Status Supervisor::listen() {
  if (absl::Status s = http_.listen(); !s.ok()) return s;
  if (options_.grpc_port < 0) return absl::OkStatus();
#ifdef WEFT_HAVE_GRPC
  GrpcProxyHooks hooks;
  hooks.wait_ready = [this](int64_t after) { return wait_ready(after); };
  hooks.report_failure = [this](int64_t generation, const std::string& reason) {
    report_failure(generation, reason);
  };
  hooks.count_replay = [this] { ++replays_total_; };
  hooks.count_abandoned = [this] { ++abandoned_total_; };
  auto proxy = GrpcProxy::start(absl::StrCat(options_.http.host, ":", options_.grpc_port),
                                absl::StrCat(options_.engine_host, ":", options_.engine_grpc_port),
                                options_.max_attempts_per_request, std::move(hooks));
  if (!proxy.ok()) return proxy.status();
  grpc_ = std::shared_ptr<GrpcProxy>(std::move(*proxy));
  return absl::OkStatus();
#else
  return absl::InvalidArgumentError("--grpc-port: this weft was built without gRPC");
#endif
}

int Supervisor::grpc_port() const {
#ifdef WEFT_HAVE_GRPC
  if (grpc_) return static_cast<GrpcProxy*>(grpc_.get())->port();
#endif
  return -1;
}

void Supervisor::stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (state_ == EngineState::kStopping) return;
    if (state_ != EngineState::kGaveUp) state_ = EngineState::kStopping;
  }
  cv_.notify_all();
}

absl::Status Supervisor::run() {
  keeper_ = std::thread([this] { keep_engine(); });
  http_.run();
  if (keeper_.joinable()) keeper_.join();
#ifdef WEFT_HAVE_GRPC
  // Calls still waiting for an engine see the state and end; the rest are cancelled.
  if (grpc_) static_cast<GrpcProxy*>(grpc_.get())->shutdown(std::chrono::milliseconds(1000));
#endif
  std::lock_guard<std::mutex> lock(mu_);
  if (state_ == EngineState::kGaveUp) return absl::UnavailableError(give_up_reason_);
  return absl::OkStatus();
}

bool Supervisor::engine_answers_200(const char* path) {
  auto conn =
      HttpClientConnection::connect(options_.engine_host, options_.engine_port, kConnectTimeout);
  if (!conn.ok()) return false;
  if (!(*conn)->send("GET", path, {}, "", kHealthTimeout).ok()) return false;
  auto head = (*conn)->read_head(kHealthTimeout);
  return head.ok() && head->status == 200;
}

bool Supervisor::start_and_wait_ready() {
  const auto started = Clock::now();
  if (absl::Status s = engine_.start(); !s.ok()) {
    std::lock_guard<std::mutex> lock(mu_);
    failure_reason_ = std::string(s.message());
    give_up_reason_ = failure_reason_;  // exec failed: no restart can help
    state_ = EngineState::kGaveUp;
    return false;
  }
  std::cerr << "weft supervise: started the engine (pid " << engine_.pid()
            << "): " << engine_.command_line() << "\n";
  while (Clock::now() - started < options_.engine_start_timeout) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (state_ == EngineState::kStopping) return false;
    }
    if (!engine_.running()) {
      std::lock_guard<std::mutex> lock(mu_);
      failure_reason_ =
          absl::StrCat("the engine ", engine_.exit_description(), " before it was ready");
      return false;
    }
    if (engine_answers_200("/ready")) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  std::lock_guard<std::mutex> lock(mu_);
  failure_reason_ =
      absl::StrCat("the engine was not ready within ", options_.engine_start_timeout.count(), " s");
  return false;
}

void Supervisor::keep_engine() {
  int failed_starts = 0;  // consecutive starts that never became ready
  std::optional<Clock::time_point> failed_at;
  for (;;) {
    const bool ready = start_and_wait_ready();
    if (ready) {
      failed_starts = 0;
      {
        std::lock_guard<std::mutex> lock(mu_);
        if (state_ != EngineState::kStopping) {
          state_ = EngineState::kReady;
          ++generation_;
          if (failed_at) {
            const auto recovery =
                std::chrono::duration_cast<milliseconds>(Clock::now() - *failed_at);
            last_recovery_ms_.store(recovery.count());
            std::cerr << "weft supervise: the engine is ready again after "
                      << recovery.count() / 1000.0 << " s (engine " << generation_ << ")\n";
          } else {
            std::cerr << "weft supervise: the engine is ready\n";
          }
        }
      }
      cv_.notify_all();
      // Watch it: its exit, a failure a call saw, or failing health checks.
      int health_failures = 0;
      auto next_health = Clock::now() + kHealthInterval;
      for (;;) {
        {
          std::unique_lock<std::mutex> lock(mu_);
          cv_.wait_for(lock, kPoll);
          if (state_ == EngineState::kStopping) break;
          if (failed_generation_ == generation_) break;
        }
        if (!engine_.running()) {
          std::lock_guard<std::mutex> lock(mu_);
          failure_reason_ = absl::StrCat("the engine ", engine_.exit_description());
          break;
        }
        if (Clock::now() >= next_health) {
          health_failures = engine_answers_200("/health") ? 0 : health_failures + 1;
          if (health_failures >= kHealthFailuresToRestart) {
            std::lock_guard<std::mutex> lock(mu_);
            failure_reason_ =
                absl::StrCat("the engine failed ", health_failures, " health checks in a row");
            break;
          }
          next_health = Clock::now() + kHealthInterval;
        }
      }
    } else {
      ++failed_starts;
      std::lock_guard<std::mutex> lock(mu_);
      if (generation_ == 0 && state_ != EngineState::kStopping) {
        // Never up at all: a wrong command or model, which restarting cannot mend.
        give_up_reason_ = absl::StrCat("the engine never became ready: ", failure_reason_);
        state_ = EngineState::kGaveUp;
      }
    }
    {
      std::unique_lock<std::mutex> lock(mu_);
      if (state_ == EngineState::kStopping || state_ == EngineState::kGaveUp) {
        lock.unlock();
        engine_.stop(options_.stop_grace);
        break;
      }
      state_ = EngineState::kRestarting;
    }
    failed_at = Clock::now();
    std::cerr << "weft supervise: " << failure_reason_
              << "; stopping what is left of the engine job\n";
    engine_.stop(std::chrono::milliseconds(3000));
    const auto now = Clock::now();
    std::unique_lock<std::mutex> lock(mu_);
    restarts_.push_back(now);
    while (!restarts_.empty() && now - restarts_.front() > options_.restart_window)
      restarts_.pop_front();
    if (static_cast<int>(restarts_.size()) > options_.max_restarts) {
      give_up_reason_ =
          absl::StrCat("the engine failed ", restarts_.size(), " times within ",
                       options_.restart_window.count(), " s (last: ", failure_reason_, ")");
      state_ = EngineState::kGaveUp;
      break;
    }
    ++restarts_total_;
    const milliseconds backoff =
        std::min(options_.max_restart_backoff,
                 options_.restart_backoff * (1 << std::min(failed_starts, 16)));
    std::cerr << "weft supervise: restarting the engine in " << backoff.count() / 1000.0
              << " s (restart " << restarts_.size() << " of at most " << options_.max_restarts
              << " per " << options_.restart_window.count() << " s)\n";
    cv_.wait_for(lock, backoff, [&] { return state_ == EngineState::kStopping; });
    if (state_ == EngineState::kStopping) break;
    state_ = EngineState::kStarting;
  }
  cv_.notify_all();
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (state_ == EngineState::kGaveUp)
      std::cerr << "weft supervise: giving up: " << give_up_reason_ << "\n";
  }
  // Let the calls answer their clients (they see the state and end), then close the front end.
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait_for(lock, std::chrono::seconds(10), [&] { return active_calls_.load() == 0; });
  lock.unlock();
  std::this_thread::sleep_for(std::chrono::milliseconds(200));  // the loop writes what was posted
  http_.stop();
}

int64_t Supervisor::wait_ready(int64_t after_generation) {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [&] {
    return (state_ == EngineState::kReady && generation_ > after_generation) ||
           state_ == EngineState::kGaveUp || state_ == EngineState::kStopping;
  });
  return state_ == EngineState::kReady ? generation_ : -1;
}

void Supervisor::report_failure(int64_t generation, const std::string& reason) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (generation != generation_ || failed_generation_ == generation) return;
    failed_generation_ = generation;
    failure_reason_ = reason;
  }
  cv_.notify_all();
}

void Supervisor::handle(ConnectionId conn, HttpRequest request) {
  if (request.path == "/health" || request.path == "/ready") {
    std::unique_lock<std::mutex> lock(mu_);
    const EngineState state = state_;
    lock.unlock();
    const char* engine = state == EngineState::kReady    ? "ready"
                         : state == EngineState::kGaveUp ? "failed"
                                                         : "restarting";
    int status = 200;
    if (request.path == "/ready" && state != EngineState::kReady) status = 503;
    if (request.path == "/health" && state == EngineState::kGaveUp) status = 503;
    http_.respond(
        conn, status, {{"Content-Type", "application/json"}},
        json{{"status", status == 200 ? (request.path == "/ready" ? "ready" : "ok") : engine},
             {"engine", engine}}
            .dump());
    return;
  }
  auto call = std::make_shared<Call>();
  call->conn = conn;
  call->request = std::move(request);
  http_.on_close(conn, [call] { call->client_closed(); });
  const std::string& path = call->request.path;
  if (call->request.method == "POST" &&
      (path == "/v1/completions" || path == "/v1/chat/completions")) {
    spawn(std::move(call), &Supervisor::proxy_generation);
  } else if (path == "/metrics") {
    spawn(std::move(call), &Supervisor::proxy_metrics);
  } else {
    spawn(std::move(call), &Supervisor::proxy_once);
  }
}

void Supervisor::spawn(std::shared_ptr<Call> call, void (Supervisor::*work)(Call&)) {
  ++active_calls_;
  std::thread([this, call = std::move(call), work] {
    (this->*work)(*call);
    if (--active_calls_ == 0) {
      std::lock_guard<std::mutex> lock(mu_);
      cv_.notify_all();
    }
  }).detach();
}

void Supervisor::respond(Call& call, int status, std::string content_type, std::string body) {
  http_.post([this, conn = call.conn, status, content_type = std::move(content_type),
              body = std::move(body)] {
    if (http_.is_open(conn)) http_.respond(conn, status, {{"Content-Type", content_type}}, body);
  });
}

void Supervisor::respond_error(Call& call, bool stream_started, const std::string& message) {
  if (!stream_started) return respond(call, 503, "application/json", error_json(message));
  http_.post([this, conn = call.conn,
              event = absl::StrCat("data: ", error_json(message), "\n\ndata: [DONE]\n\n")] {
    if (!http_.is_open(conn)) return;
    http_.write_chunk(conn, event);
    http_.end_stream(conn);
  });
}

void Supervisor::proxy_generation(Call& call) {
  bool stream = false;
  const std::string body = with_pinned_seed(call.request.body, &stream);
  const auto headers = forwarded_headers(call.request);
  StreamReplay replay;
  bool stream_started = false;
  std::string last_failure;
  int64_t generation = 0;
  for (int attempt = 1; attempt <= options_.max_attempts_per_request; ++attempt) {
    if (attempt > 1) {
      replay.begin_attempt();
      ++replays_total_;
    }
    generation = wait_ready(attempt == 1 ? 0 : generation);
    if (generation < 0) break;
    if (call.client_gone.load()) return;
    auto fail = [&](const std::string& reason) {
      last_failure = reason;
      report_failure(generation, absl::StrCat("a request saw the engine fail: ", reason));
    };
    auto conn =
        HttpClientConnection::connect(options_.engine_host, options_.engine_port, kConnectTimeout);
    if (!conn.ok()) {
      fail(std::string(conn.status().message()));
      continue;
    }
    call.attach(conn->get());
    struct Detach {
      Call& c;
      ~Detach() { c.attach(nullptr); }
    } detach{call};
    if (absl::Status s =
            (*conn)->send(call.request.method, call.request.target, headers, body, kSendTimeout);
        !s.ok()) {
      if (call.client_gone.load()) return;
      fail(std::string(s.message()));
      continue;
    }
    auto head = (*conn)->read_head(kUpstreamIdle);
    if (!head.ok()) {
      if (call.client_gone.load()) return;
      fail(std::string(head.status().message()));
      continue;
    }
    const bool event_stream =
        head->header("content-type").find("text/event-stream") != std::string::npos;
    if (!event_stream) {
      auto answer = (*conn)->read_body(kUpstreamIdle);
      if (!answer.ok()) {
        if (call.client_gone.load()) return;
        fail(std::string(answer.status().message()));
        continue;
      }
      auto parsed = parse_json_bounded<json>(*answer, "engine response", JsonLimits{});
      if (head->status == 503 && parsed.ok() && is_engine_failure(*parsed)) {
        fail(absl::StrCat("503: ", parsed->dump()));
        continue;
      }
      if (stream_started) {
        return respond_error(
            call, true,
            absl::StrCat("the restarted engine answered ", head->status, ": ", *answer));
      }
      return respond(call, head->status, head->header("content-type"), std::move(*answer));
    }
    if (!stream_started) {
      stream_started = true;
      http_.post([this, conn = call.conn] {
        if (http_.is_open(conn)) {
          http_.start_stream(
              conn, 200, {{"Content-Type", "text/event-stream"}, {"Cache-Control", "no-cache"}});
        }
      });
    }
    // Server-sent events: "data: ...\n\n" each.
    std::string pending;
    bool retry = false;
    for (;;) {
      auto part = (*conn)->read_body_part(kUpstreamIdle);
      if (!part.ok() || part->empty()) {
        if (call.client_gone.load()) return;
        fail(part.ok() ? "the engine ended the stream without [DONE]"
                       : std::string(part.status().message()));
        retry = true;
        break;
      }
      pending += *part;
      size_t end;
      while ((end = pending.find("\n\n")) != std::string::npos) {
        std::string event = pending.substr(0, end);
        pending.erase(0, end + 2);
        std::string data;
        for (absl::string_view line : absl::StrSplit(event, '\n')) {
          if (absl::ConsumePrefix(&line, "data:")) {
            absl::ConsumePrefix(&line, " ");
            if (!data.empty()) data += "\n";
            data.append(line.data(), line.size());
          }
        }
        if (data.empty()) continue;
        if (data == "[DONE]") {
          http_.post([this, conn = call.conn] {
            if (!http_.is_open(conn)) return;
            http_.write_chunk(conn, "data: [DONE]\n\n");
            http_.end_stream(conn);
          });
          return;
        }
        // Only an event that may be an error is parsed here: the key "error" with its quotes
        // cannot appear inside a JSON string (its quotes would be escaped).
        if (data.find("\"error\"") != std::string::npos) {
          auto chunk = parse_json_bounded<json>(data, "engine stream event", JsonLimits{});
          if (chunk.ok() && is_engine_failure(*chunk)) {
            fail(absl::StrCat("error event: ", data));
            retry = true;
            break;
          }
          if (chunk.ok() && chunk->is_object() && chunk->contains("error")) {
            // The request's own error: the engine ends the stream next.
            http_.post([this, conn = call.conn, line = absl::StrCat("data: ", data, "\n\n")] {
              if (http_.is_open(conn)) http_.write_chunk(conn, line);
            });
            continue;
          }
        }
        auto out = replay.on_event(std::move(data));
        if (!out.ok()) return respond_error(call, true, std::string(out.status().message()));
        if (!out->has_value()) continue;
        http_.post([this, conn = call.conn, line = absl::StrCat("data: ", **out, "\n\n")] {
          if (http_.is_open(conn)) http_.write_chunk(conn, line);
        });
      }
      if (retry) break;
    }
  }
  if (call.client_gone.load()) return;
  ++abandoned_total_;
  std::string message;
  {
    std::lock_guard<std::mutex> lock(mu_);
    message = state_ == EngineState::kGaveUp
                  ? absl::StrCat("the engine is down and the supervisor gave up: ", give_up_reason_)
              : state_ == EngineState::kStopping
                  ? std::string("the server is shutting down")
                  : absl::StrCat("the engine failed ", options_.max_attempts_per_request,
                                 " times while serving this request (last: ", last_failure, ")");
  }
  respond_error(call, stream_started, message);
}

void Supervisor::proxy_once(Call& call) {
  const int64_t generation = wait_ready(0);
  if (generation < 0) return respond_error(call, false, "the engine is not running");
  auto conn =
      HttpClientConnection::connect(options_.engine_host, options_.engine_port, kConnectTimeout);
  absl::Status status = conn.status();
  if (status.ok()) {
    call.attach(conn->get());
    status = (*conn)->send(call.request.method, call.request.target,
                           forwarded_headers(call.request), call.request.body, kSendTimeout);
  }
  if (status.ok()) {
    auto head = (*conn)->read_head(kUpstreamIdle);
    if (head.ok()) {
      auto body = (*conn)->read_body(kUpstreamIdle);
      if (body.ok()) {
        call.attach(nullptr);
        return respond(call, head->status, head->header("content-type"), std::move(*body));
      }
      status = body.status();
    } else {
      status = head.status();
    }
  }
  call.attach(nullptr);
  if (!call.client_gone.load())
    respond_error(call, false, absl::StrCat("the engine did not answer: ", status.message()));
}

std::string Supervisor::supervisor_metrics() {
  bool up;
  {
    std::lock_guard<std::mutex> lock(mu_);
    up = state_ == EngineState::kReady;
  }
  std::string out;
  auto metric = [&](const char* name, const char* type, const char* help, auto value) {
    absl::StrAppend(&out, "# HELP ", name, " ", help, "\n# TYPE ", name, " ", type, "\n", name, " ",
                    value, "\n");
  };
  metric("weft:supervisor_engine_up", "gauge", "1 while the supervised engine is ready.",
         up ? 1 : 0);
  metric("weft:supervisor_engine_restarts_total", "counter",
         "Engine jobs the supervisor restarted.", restarts_total_.load());
  metric("weft:supervisor_replays_total", "counter",
         "Request attempts replayed on a restarted engine.", replays_total_.load());
  metric("weft:supervisor_requests_abandoned_total", "counter",
         "Requests answered with an error after every attempt met a failed engine.",
         abandoned_total_.load());
  metric("weft:supervisor_last_recovery_seconds", "gauge",
         "From the last engine failure until the restarted engine was ready.",
         last_recovery_ms_.load() / 1000.0);
  return out;
}

void Supervisor::proxy_metrics(Call& call) {
  std::string engine_metrics;
  bool ready;
  {
    std::lock_guard<std::mutex> lock(mu_);
    ready = state_ == EngineState::kReady;
  }
  if (ready) {
    auto conn =
        HttpClientConnection::connect(options_.engine_host, options_.engine_port, kConnectTimeout);
    if (conn.ok() &&
        (*conn)->send("GET", "/metrics", forwarded_headers(call.request), "", kSendTimeout).ok()) {
      auto head = (*conn)->read_head(kHealthTimeout);
      if (head.ok() && head->status == 200) {
        auto body = (*conn)->read_body(kHealthTimeout);
        if (body.ok()) engine_metrics = std::move(*body);
      }
    }
  }
  respond(call, 200, "text/plain; version=0.0.4; charset=utf-8",
          engine_metrics + supervisor_metrics());
}

}  // namespace weft
