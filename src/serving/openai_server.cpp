#include "serving/openai_server.h"

#include <chrono>
#include <functional>
#include <vector>

#include "absl/strings/str_cat.h"
#include "debug_report/inspect_html.h"
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

// %XX escapes decoded; a malformed escape stays as it is.
std::string percent_decoded(std::string_view s) {
  auto hex = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%' && i + 2 < s.size() && hex(s[i + 1]) >= 0 && hex(s[i + 2]) >= 0) {
      out += static_cast<char>(hex(s[i + 1]) * 16 + hex(s[i + 2]));
      i += 2;
    } else {
      out += s[i];
    }
  }
  return out;
}

}  // namespace

json OpenAiServer::model_card() const {
  return {{"id", model_.name},   {"object", "model"}, {"created", 0}, {"owned_by", "weft"},
          {"root", model_.name}, {"max_model_len", model_.max_model_len}};
}

// One HTTP generation request: an engine request per prompt (none for an echo-only reply), each
// with its latency record; their choices are numbered prompt_index * n + index.
struct OpenAiServer::Active {
  struct Part {
    std::shared_ptr<RequestStream> stream;
    std::unique_ptr<RequestLatency> latency;
    bool finished = false;
  };
  std::vector<Part> parts;
  int n = 1;
  std::unique_ptr<ResponseBuilder> builder;
  std::shared_ptr<std::atomic<bool>> pump_scheduled = std::make_shared<std::atomic<bool>>(false);
  bool stream_mode = false;
  bool include_usage = false;
  bool headers_sent = false;
  bool echo_only = false;  // nothing was submitted: the reply is the echo
  std::unique_ptr<ServedDebugReport> debug;  // "weft_debug": true
};

OpenAiServer::OpenAiServer(OpenAiServerOptions options, AsyncEngine& engine, ServedModel model,
                           ServingMetrics& metrics)
    : options_(std::move(options)),
      engine_(engine),
      model_(std::move(model)),
      metrics_(metrics),
      debug_reports_(options_.debug_report_capacity),
      http_(options_.http, [this](ConnectionId conn, HttpRequest request) { handle(conn, std::move(request)); }),
      workers_(std::make_unique<TaskQueue>(options_.num_workers)) {}

OpenAiServer::~OpenAiServer() {
  workers_.reset();  // no worker posts to http_ from here on
  for (auto& [conn, a] : active_) {
    for (auto& part : a->parts) part.stream->set_notify(nullptr);
  }
}

void OpenAiServer::abort_all() {
  http_.post([this] {
    for (auto& [conn, a] : active_) {
      for (auto& part : a->parts) engine_.abort(part.stream->key());
    }
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
    send_json(conn, 200, dump({{"object", "list"}, {"data", json::array({model_card()})}}));
  } else if (path.rfind("/v1/models/", 0) == 0) {
    if (!get) return method_not_allowed();
    // The id may hold '/' ("org/name") and arrive percent-encoded.
    const std::string id = percent_decoded(std::string_view(path).substr(std::string_view("/v1/models/").size()));
    if (auto e = check_model(json{{"model", id}}, model_)) return send_error(conn, *e);
    send_json(conn, 200, dump(model_card()));
  } else if (path == "/v1/completions" || path == "/v1/chat/completions") {
    if (!post) return method_not_allowed();
    const ApiKind kind = path == "/v1/completions" ? ApiKind::kCompletion : ApiKind::kChat;
    handle_generation(conn, std::move(request), kind);
  } else if (path.rfind("/v1/debug/reports/", 0) == 0) {
    if (!get) return method_not_allowed();
    handle_debug_report_route(conn, request);
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

void OpenAiServer::handle_debug_report_route(ConnectionId conn, const HttpRequest& request) {
  ApiError e;
  e.status = 404;
  e.type = "not_found_error";
  if (!options_.enable_debug_reports) {
    e.message = "debugging reports are off on this server (start weft serve with --enable-debug-reports)";
    return send_error(conn, e);
  }
  std::string id = percent_decoded(std::string_view(request.path).substr(std::string_view("/v1/debug/reports/").size()));
  const bool as_json = id.size() > 5 && id.substr(id.size() - 5) == ".json";
  if (as_json) id.resize(id.size() - 5);
  const auto report = debug_reports_.get(id);
  if (!report) {
    e.message = absl::StrCat("no debugging report for '", id, "' (the server keeps the last ",
                             debug_reports_.capacity(), ")");
    return send_error(conn, e);
  }
  if (as_json) return send_json(conn, 200, report->json);
  http_.respond(conn, 200, {{"Content-Type", "text/html; charset=utf-8"}}, report->html);
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
      const auto tools = tools_in_order(shared->body);
      auto ids = tokenize_request(std::get<json>(parsed), model_, tools ? &*tools : nullptr);
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
    auto debug_sampling = std::make_shared<std::optional<ReportJson>>();
    auto body = parse_json_body(shared->body);
    if (auto* e = std::get_if<ApiError>(&body)) {
      *result = std::move(*e);
    } else {
      json& fields = std::get<json>(body);
      auto debug = take_weft_debug_field(fields, options_.enable_debug_reports, model_);
      if (auto* e = std::get_if<ApiError>(&debug)) {
        *result = std::move(*e);
      } else {
        const auto tools = tools_in_order(shared->body);
        *result = parse_generation_request(fields, kind, model_, tools ? &*tools : nullptr);
        auto* req = std::get_if<GenerationRequest>(&*result);
        const auto& attention = std::get<std::optional<AttentionSelection>>(debug);
        if (req != nullptr && attention) {
          if (auto refused = prepare_debug_request(*req, *attention)) {
            *result = std::move(*refused);
          } else {
            *debug_sampling = served_sampling_json(fields, kind, req->prompts.front().engine_request.params, model_);
          }
        }
      }
    }
    shared.reset();  // the body is no longer needed; free it on this thread
    http_.post([this, conn, kind, result, debug_sampling] {
      start_generation(conn, kind, std::move(*result), std::move(*debug_sampling));
    });
  });
}

void OpenAiServer::start_generation(ConnectionId conn, ApiKind kind,
                                    std::variant<GenerationRequest, ApiError> parsed,
                                    std::optional<ReportJson> debug_sampling) {
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
  auto a = std::make_unique<Active>();
  a->n = req.n();
  a->stream_mode = req.stream;
  a->include_usage = req.include_usage;
  a->echo_only = !req.generate;
  int64_t prompt_tokens = 0;
  std::vector<std::string> echo;
  for (GenerationPrompt& p : req.prompts) {
    prompt_tokens += static_cast<int64_t>(p.engine_request.prompt_ids.size());
    for (int i = 0; i < a->n; ++i) echo.push_back(p.echo);
  }
  if (debug_sampling) {
    a->debug = std::make_unique<ServedDebugReport>(model_, req.prompts.front().engine_request,
                                                   *std::move(debug_sampling));
  }
  if (req.generate) {
    for (GenerationPrompt& p : req.prompts) {
      auto stream = engine_.submit(std::move(p.engine_request));
      if (!stream.ok()) {
        // All of the request or none of it: the prompts already queued are withdrawn.
        for (auto& part : a->parts) engine_.abort(part.stream->key());
        return refuse(api_error_from_status(stream.status()));
      }
      Active::Part part;
      part.stream = *stream;
      part.latency = std::make_unique<RequestLatency>(metrics_, part.stream->submitted_at(), a->n);
      a->parts.push_back(std::move(part));
    }
    metrics_.add_prompt_tokens(prompt_tokens);
  }
  a->builder = std::make_unique<ResponseBuilder>(kind, model_.name, std::move(echo), req.logprobs, model_.tokenizer,
                                                 prompt_tokens, req.role);
  a->builder->set_prompt_logprobs(req.echo_logprobs, req.top_logprobs, req.prompt_logprobs);
  if (req.tool_calls) a->builder->set_tool_calls(*req.tool_calls, req.parallel_tool_calls);
  // One pump task in flight per request at most, however many steps the engine runs meanwhile.
  for (auto& part : a->parts) {
    part.stream->set_notify([this, conn, flag = a->pump_scheduled] {
      if (!flag->exchange(true)) {
        http_.post([this, conn, flag] {
          flag->store(false);
          pump(conn);
        });
      }
    });
  }
  http_.on_close(conn, [this, conn] {
    auto it = active_.find(conn);
    if (it == active_.end()) return;
    for (auto& part : it->second->parts) engine_.abort(part.stream->key());
    finish(conn, "abort");
  });
  active_[conn] = std::move(a);
  pump(conn);
}

void OpenAiServer::finish(ConnectionId conn, std::string_view reason) {
  auto it = active_.find(conn);
  if (it == active_.end()) return;
  for (auto& part : it->second->parts) {
    part.stream->set_notify(nullptr);
    part.latency->on_finish(reason);
  }
  active_.erase(it);
  --in_flight_;
}

void OpenAiServer::add_debug_events(Active& a, const std::vector<StreamEvent>& events) {
  const EngineGauges gauges = engine_.gauges();
  for (const StreamEvent& e : events) a.debug->add(e, gauges);
}

json OpenAiServer::finish_debug_report(Active& a) {
  // The report rides in the response (or its stream) and stays fetchable (its page too) by the
  // response id.
  const ReportJson report = a.debug->finish(a.builder->id(), engine_.gauges());
  // Bytes that are not UTF-8 (a piece may be part of a character) replaced, never thrown on.
  const std::string report_text = report.dump(-1, ' ', false, json::error_handler_t::replace);
  debug_reports_.put(a.builder->id(), {report_text, render_inspect_html(ReportJson::parse(report_text))});
  return json::parse(report_text);
}

void OpenAiServer::pump(ConnectionId conn) {
  auto it = active_.find(conn);
  if (it == active_.end()) return;
  Active& a = *it->second;
  // Every part's news, with its choices' indices offset to the request's numbering.
  std::vector<StreamEvent> events;
  absl::Status failure;
  bool admitted = a.echo_only;
  bool finished = true;
  if (a.echo_only) events = a.builder->finish_all_events();
  for (size_t p = 0; p < a.parts.size(); ++p) {
    Active::Part& part = a.parts[p];
    if (part.finished) continue;
    RequestStream::Batch batch = part.stream->take();
    for (StreamEvent& e : batch.events) {
      part.latency->on_event(e);
      e.output.index += static_cast<int>(p) * a.n;
      events.push_back(std::move(e));
    }
    admitted = admitted || batch.admitted;
    if (!batch.status.ok() && failure.ok()) failure = batch.status;
    part.finished = batch.finished;
    finished = finished && batch.finished;
  }
  if (!failure.ok()) {
    for (auto& part : a.parts) {
      if (!part.finished) engine_.abort(part.stream->key());
    }
    ApiError error = api_error_from_status(failure);
    if (admitted) {
      // Failed after admission: the engine failed (a step error) or stopped, not the request.
      error.status = 503;
      error.type = "service_unavailable";
      error.param.clear();
      error.code.clear();
    }
    if (a.stream_mode && admitted && !a.headers_sent) {
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
    if (!a.headers_sent && (admitted || !events.empty())) {
      a.headers_sent = true;
      http_.start_stream(conn, 200, {{"Content-Type", "text/event-stream"}, {"Cache-Control", "no-cache"}});
    }
    std::string data = a.builder->stream_events(events, a.include_usage);
    if (a.debug) add_debug_events(a, events);
    if (finished && a.debug) data += a.builder->stream_member_chunk("weft_debug", finish_debug_report(a));
    if (finished) data += a.builder->stream_end(a.include_usage);
    if (!data.empty()) http_.write_chunk(conn, data);
    if (finished) {
      http_.end_stream(conn);
      finish(conn, a.builder->finish_reason());
    }
    return;
  }
  a.builder->add_events(events);
  if (a.debug) add_debug_events(a, events);
  if (finished && a.debug) {
    json response = json::parse(a.builder->full_response());
    response["weft_debug"] = finish_debug_report(a);
    send_json(conn, 200, dump(response));
    finish(conn, a.builder->finish_reason());
  } else if (finished) {
    send_json(conn, 200, a.builder->full_response());
    finish(conn, a.builder->finish_reason());
  }
}

}  // namespace weft
