#include "serving/openai_server.h"

#include <chrono>
#include <functional>
#include <vector>

#include "absl/strings/str_cat.h"
#include "serving/openai_response.h"

namespace weft {
namespace {

using nlohmann::json;

std::string dump(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

// Constant-time in the key's length: no early exit on the first differing byte.
bool same_secret(std::string_view a, std::string_view b) {
  unsigned char diff = a.size() == b.size() ? 0 : 1;
  for (size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned char>(a[i] ^ (i < b.size() ? b[i] : 0));
  return diff == 0;
}

}  // namespace

struct OpenAiServer::Active {
  std::shared_ptr<RequestStream> stream;
  std::unique_ptr<ResponseBuilder> builder;
  std::unique_ptr<RequestLatency> latency;
  std::shared_ptr<std::atomic<bool>> pump_scheduled = std::make_shared<std::atomic<bool>>(false);
  bool stream_mode = false;
  bool include_usage = false;
  bool headers_sent = false;
};

OpenAiServer::OpenAiServer(OpenAiServerOptions options, AsyncEngine& engine, ServedModel model,
                           ServingMetrics& metrics)
    : options_(std::move(options)),
      engine_(engine),
      model_(std::move(model)),
      metrics_(metrics),
      http_(options_.http, [this](ConnectionId conn, HttpRequest request) { handle(conn, std::move(request)); }),
      workers_(std::make_unique<TaskQueue>(options_.num_workers)) {}

OpenAiServer::~OpenAiServer() {
  workers_.reset();  // no worker posts to http_ from here on
  for (auto& [conn, a] : active_) a->stream->set_notify(nullptr);
}

void OpenAiServer::abort_all() {
  http_.post([this] {
    for (auto& [conn, a] : active_) engine_.abort(a->stream->key());
  });
}

void OpenAiServer::send_json(ConnectionId conn, int status, const std::string& body) {
  http_.respond(conn, status, {{"Content-Type", "application/json"}}, body);
}

void OpenAiServer::send_error(ConnectionId conn, const ApiError& error) {
  HttpHeaders headers = {{"Content-Type", "application/json"}};
  if (error.status == 429 || error.status == 503) {
    headers.emplace_back("Retry-After", std::to_string(options_.retry_after_seconds));
  }
  if (error.status == 401) headers.emplace_back("WWW-Authenticate", "Bearer");
  http_.respond(conn, error.status, headers, api_error_json(error));
}

bool OpenAiServer::authorized(const HttpRequest& request) const {
  if (options_.api_key.empty()) return true;
  const auto auth = request.header("authorization");
  if (!auth || auth->size() < 7 || auth->substr(0, 7) != "Bearer ") return false;
  return same_secret(auth->substr(7), options_.api_key);
}

void OpenAiServer::handle(ConnectionId conn, HttpRequest request) {
  const std::string& path = request.path;
  const bool get = request.method == "GET" || request.method == "HEAD";
  const bool post = request.method == "POST";
  auto method_not_allowed = [&] {
    ApiError e;
    e.status = 405;
    e.message = absl::StrCat("method ", request.method, " is not allowed on ", path);
    send_error(conn, e);
  };
  const bool needs_key = path.rfind("/v1/", 0) == 0 || path == "/tokenize" || path == "/detokenize";
  if (needs_key && !authorized(request)) {
    ApiError e;
    e.status = 401;
    e.type = "authentication_error";
    e.code = "invalid_api_key";
    e.message = "missing or invalid API key: send the header 'Authorization: Bearer <key>'";
    send_error(conn, e);
    return;
  }
  if (path == "/health") {
    if (!get) return method_not_allowed();
    const bool ok = engine_.gauges().healthy;
    send_json(conn, ok ? 200 : 500, ok ? R"({"status":"ok"})" : R"({"status":"engine failed"})");
  } else if (path == "/ready") {
    if (!get) return method_not_allowed();
    const bool ok = engine_.gauges().healthy && !draining_.load();
    send_json(conn, ok ? 200 : 503, ok ? R"({"status":"ready"})"
                                       : (draining_.load() ? R"({"status":"draining"})" : R"({"status":"engine failed"})"));
  } else if (path == "/metrics") {
    if (!get) return method_not_allowed();
    http_.respond(conn, 200, {{"Content-Type", "text/plain; version=0.0.4; charset=utf-8"}},
                  metrics_.render(engine_.gauges()));
  } else if (path == "/v1/models") {
    if (!get) return method_not_allowed();
    json card = {{"id", model_.name}, {"object", "model"}, {"created", 0}, {"owned_by", "weft"},
                 {"root", model_.name}, {"max_model_len", model_.max_model_len}};
    send_json(conn, 200, dump({{"object", "list"}, {"data", json::array({card})}}));
  } else if (path == "/v1/completions" || path == "/v1/chat/completions") {
    if (!post) return method_not_allowed();
    const ApiKind kind = path == "/v1/completions" ? ApiKind::kCompletion : ApiKind::kChat;
    handle_generation(conn, std::move(request), kind);
  } else if (path == "/tokenize" || path == "/detokenize") {
    if (!post) return method_not_allowed();
    handle_tokenizer_route(conn, std::move(request));
  } else {
    ApiError e;
    e.status = 404;
    e.type = "not_found_error";
    e.message = absl::StrCat("no route for ", request.method, " ", path);
    send_error(conn, e);
  }
}

void OpenAiServer::handle_tokenizer_route(ConnectionId conn, HttpRequest request) {
  // Counted in flight while a worker has it, so that a drain waits for its answer.
  ++in_flight_;
  auto shared = std::make_shared<HttpRequest>(std::move(request));
  workers_->run([this, conn, shared] {
    int status = 200;
    std::string body;
    auto reply = [&](const ApiError& e) {
      status = e.status;
      body = api_error_json(e);
    };
    auto parsed = parse_json_body(shared->body);
    if (auto* e = std::get_if<ApiError>(&parsed)) {
      reply(*e);
    } else if (shared->path == "/tokenize") {
      auto ids = tokenize_request(std::get<json>(parsed), model_);
      if (auto* e = std::get_if<ApiError>(&ids)) {
        reply(*e);
      } else {
        const auto& v = std::get<std::vector<int32_t>>(ids);
        body = dump({{"tokens", v}, {"count", v.size()}, {"max_model_len", model_.max_model_len}});
      }
    } else {
      auto text = detokenize_request(std::get<json>(parsed), model_);
      if (auto* e = std::get_if<ApiError>(&text)) {
        reply(*e);
      } else {
        body = dump({{"prompt", std::get<std::string>(text)}});
      }
    }
    http_.post([this, conn, status, body = std::move(body)] {
      --in_flight_;
      send_json(conn, status, body);  // a no-op when the connection closed meanwhile
    });
  });
}

void OpenAiServer::handle_generation(ConnectionId conn, HttpRequest request, ApiKind kind) {
  if (draining_.load()) {
    ApiError e;
    e.status = 503;
    e.type = "service_unavailable";
    e.message = "the server is shutting down and accepts no new requests";
    return send_error(conn, e);
  }
  // In flight from here: a drain that begins while a worker parses this request waits for it.
  ++in_flight_;
  auto shared = std::make_shared<HttpRequest>(std::move(request));
  workers_->run([this, conn, kind, shared]() mutable {
    auto result = std::make_shared<std::variant<GenerationRequest, ApiError>>(ApiError{});
    auto body = parse_json_body(shared->body);
    if (auto* e = std::get_if<ApiError>(&body)) {
      *result = std::move(*e);
    } else {
      *result = parse_generation_request(std::get<json>(body), kind, model_);
    }
    shared.reset();  // the body is no longer needed; free it on this thread
    http_.post([this, conn, kind, result] { start_generation(conn, kind, std::move(*result)); });
  });
}

void OpenAiServer::start_generation(ConnectionId conn, ApiKind kind,
                                    std::variant<GenerationRequest, ApiError> parsed) {
  auto refuse = [&](const ApiError& e) {
    --in_flight_;
    send_error(conn, e);
  };
  if (!http_.is_open(conn)) {
    --in_flight_;  // the client left while its request was parsed
    return;
  }
  if (auto* e = std::get_if<ApiError>(&parsed)) return refuse(*e);
  GenerationRequest& req = std::get<GenerationRequest>(parsed);
  const int n = req.engine_request.params.n;
  const int64_t prompt_tokens = static_cast<int64_t>(req.engine_request.prompt_ids.size());
  auto stream = engine_.submit(std::move(req.engine_request));
  if (!stream.ok()) return refuse(api_error_from_status(stream.status()));

  metrics_.add_prompt_tokens(prompt_tokens);
  auto a = std::make_unique<Active>();
  a->stream = *stream;
  a->builder = std::make_unique<ResponseBuilder>(kind, model_.name, n, req.logprobs, model_.tokenizer, prompt_tokens);
  a->latency = std::make_unique<RequestLatency>(metrics_, a->stream->submitted_at(), n);
  a->stream_mode = req.stream;
  a->include_usage = req.include_usage;
  // One pump task in flight per request at most, however many steps the engine runs meanwhile.
  a->stream->set_notify([this, conn, flag = a->pump_scheduled] {
    if (!flag->exchange(true)) {
      http_.post([this, conn, flag] {
        flag->store(false);
        pump(conn);
      });
    }
  });
  http_.on_close(conn, [this, conn] {
    auto it = active_.find(conn);
    if (it == active_.end()) return;
    engine_.abort(it->second->stream->key());
    finish(conn, "abort");
  });
  active_[conn] = std::move(a);
  pump(conn);
}

void OpenAiServer::finish(ConnectionId conn, std::string_view reason) {
  auto it = active_.find(conn);
  if (it == active_.end()) return;
  it->second->stream->set_notify(nullptr);
  it->second->latency->on_finish(reason);
  active_.erase(it);
  --in_flight_;
}

void OpenAiServer::pump(ConnectionId conn) {
  auto it = active_.find(conn);
  if (it == active_.end()) return;
  Active& a = *it->second;
  RequestStream::Batch batch = a.stream->take();
  for (const StreamEvent& e : batch.events) a.latency->on_event(e);
  if (!batch.status.ok()) {
    ApiError error = api_error_from_status(batch.status);
    if (batch.admitted) {
      // Failed after admission: the engine failed (a step error) or stopped, not the request.
      error.status = 503;
      error.type = "service_unavailable";
      error.param.clear();
      error.code.clear();
    }
    if (a.stream_mode && batch.admitted && !a.headers_sent) {
      // A streaming client reads the failure as an event, whether or not a token went out.
      a.headers_sent = true;
      http_.start_stream(conn, 200, {{"Content-Type", "text/event-stream"}, {"Cache-Control", "no-cache"}});
    }
    if (a.headers_sent) {
      http_.write_chunk(conn, ResponseBuilder::stream_error(error));
      http_.end_stream(conn);
    } else {
      send_error(conn, error);
    }
    return finish(conn, "error");
  }
  if (a.stream_mode) {
    if (!a.headers_sent && (batch.admitted || !batch.events.empty())) {
      a.headers_sent = true;
      http_.start_stream(conn, 200, {{"Content-Type", "text/event-stream"}, {"Cache-Control", "no-cache"}});
    }
    std::string data = a.builder->stream_events(batch.events, a.include_usage);
    if (batch.finished) data += a.builder->stream_end(a.include_usage);
    http_.write_chunk(conn, data);
    if (batch.finished) {
      http_.end_stream(conn);
      finish(conn, a.builder->finish_reason());
    }
    return;
  }
  a.builder->add_events(batch.events);
  if (batch.finished) {
    send_json(conn, 200, a.builder->full_response());
    finish(conn, a.builder->finish_reason());
  }
}

}  // namespace weft
