// The OpenAI-compatible HTTP frontend: routes of HttpServer requests to the AsyncEngine.
//
//   POST /v1/completions, /v1/chat/completions   (stream true: SSE; false: one JSON body)
//   GET  /v1/models, /v1/models/{id}   (an id other than the served model's: 404, OpenAI error shape)
//   POST /tokenize, /detokenize
//   GET  /health    200 while the engine works (500 after an engine failure)
//   GET  /ready     200 when the model is loaded, the engine healthy and not draining; else 503
//   GET  /metrics   Prometheus text (metrics.h)
//   GET  /v1/debug/reports/{response id}        the HTML page of a "weft_debug" request's report
//   GET  /v1/debug/reports/{response id}.json   its JSON (as the response's "weft_debug" member)
//        (with enable_debug_reports; the last `debug_report_capacity` reports; else 404)
// "weft_debug" (served_debug_report.h): the response carries the report as its "weft_debug"
// member (a stream: in a last chunk with no choices); refused (400) unless enable_debug_reports.
// With an api key, /v1/* and /tokenize, /detokenize need "Authorization: Bearer <key>" (401).
// Full waiting queue: 429 with Retry-After; draining or a stopped engine: 503 with Retry-After.
// An engine failure after a request was admitted (a step error: say, a rank died) ends it with a
// 503 service_unavailable error naming the failure: a JSON body, or for a stream (which then
// starts if it had not) a final `data: {"error": ...}` event and `data: [DONE]`.
// A client that disconnects before its response ends has its request aborted (KV freed).
//
// Threading: routing, responses and engine submission run on the HTTP loop thread (run()); the
// request work that grows with the body (JSON parsing, chat template rendering, tokenization,
// building the engine request) runs on `num_workers` worker threads, whose results are posted
// back to the loop, so a large prompt does not stall other connections. A connection has one
// request in flight at a time (HttpServer), so its responses keep their order. The engine thread
// only posts "stream has news" tasks to the loop. begin_drain(), num_in_flight(), abort_all() and
// stop() are thread-safe.
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <variant>

#include "absl/status/status.h"
#include "engine/async_engine.h"
#include "serving/http_server.h"
#include "serving/metrics.h"
#include "debug_report/report_store.h"
#include "serving/openai_request.h"
#include "serving/served_debug_report.h"
#include "serving/task_queue.h"

namespace weft {

struct OpenAiServerOptions {
  HttpServerOptions http;
  std::string api_key;  // empty: no authentication
  int retry_after_seconds = 1;
  int num_workers = 2;  // threads for body parsing and tokenization (at least 1)
  bool enable_debug_reports = false;  // accept "weft_debug": true (--enable-debug-reports)
  size_t debug_report_capacity = 64;  // reports kept for GET /v1/debug/reports/{id}
};

class OpenAiServer {
 public:
  OpenAiServer(OpenAiServerOptions options, AsyncEngine& engine, ServedModel model, ServingMetrics& metrics);
  ~OpenAiServer();

  absl::Status listen() { return http_.listen(); }
  int port() const { return http_.port(); }
  void run() { http_.run(); }
  void stop() { http_.stop(); }

  // /ready turns 503 and new generation requests get 503; running ones continue.
  void begin_drain() { draining_.store(true); }
  bool draining() const { return draining_.load(); }
  // Requests not yet answered in full: generation requests, and /tokenize and /detokenize while
  // a worker handles them.
  int num_in_flight() const { return in_flight_.load(); }
  // Aborts every in-flight request (their responses end with finish_reason "abort").
  void abort_all();

 private:
  struct Active;
  void handle(ConnectionId conn, HttpRequest request);
  // Loop thread: hands the body to a worker, which parses it and posts start_generation().
  void handle_generation(ConnectionId conn, HttpRequest request, ApiKind kind);
  // `debug_sampling`: the report's sampling section when the request asks for a "weft_debug" report.
  void start_generation(ConnectionId conn, ApiKind kind, std::variant<GenerationRequest, ApiError> parsed,
                        std::optional<ReportJson> debug_sampling);
  void handle_debug_report_route(ConnectionId conn, const HttpRequest& request);
  void handle_tokenizer_route(ConnectionId conn, HttpRequest request);
  void pump(ConnectionId conn);
  // A "weft_debug" request: its stream's events into the report; the finished report (kept in
  // the store by response id).
  void add_debug_events(Active& a, const std::vector<StreamEvent>& events);
  nlohmann::json finish_debug_report(Active& a);
  void finish(ConnectionId conn, std::string_view reason);
  void send_error(ConnectionId conn, const ApiError& error);
  void send_json(ConnectionId conn, int status, const std::string& body);
  bool authorized(const HttpRequest& request) const;
  nlohmann::json model_card() const;

  OpenAiServerOptions options_;
  AsyncEngine& engine_;
  ServedModel model_;
  ServingMetrics& metrics_;
  DebugReportStore debug_reports_;  // "weft_debug" reports by response id
  HttpServer http_;
  std::atomic<bool> draining_{false};
  std::atomic<int> in_flight_{0};
  std::unordered_map<ConnectionId, std::unique_ptr<Active>> active_;  // loop thread only
  std::unique_ptr<TaskQueue> workers_;  // last: its threads are joined before the rest goes
};

}  // namespace weft
