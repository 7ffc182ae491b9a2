// The OpenAI-compatible HTTP frontend: routes of HttpServer requests to the AsyncEngine.
//
//   POST /v1/completions, /v1/chat/completions   (stream true: SSE; false: one JSON body)
//   GET  /v1/models
//   POST /tokenize, /detokenize
//   GET  /health    200 while the engine works (500 after an engine failure)
//   GET  /ready     200 when the model is loaded, the engine healthy and not draining; else 503
//   GET  /metrics   Prometheus text (metrics.h)
// With an api key, /v1/* and /tokenize, /detokenize need "Authorization: Bearer <key>" (401).
// Full waiting queue: 429 with Retry-After; draining or a stopped engine: 503 with Retry-After.
// A client that disconnects before its response ends has its request aborted (KV freed).
//
// Threading: everything runs on the HTTP loop thread (run()); the engine thread only posts
// "stream has news" tasks to it. begin_drain(), num_in_flight(), abort_all() and stop() are
// thread-safe.
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <unordered_map>

#include "absl/status/status.h"
#include "engine/async_engine.h"
#include "serving/http_server.h"
#include "serving/metrics.h"
#include "serving/openai_request.h"

namespace weft {

struct OpenAiServerOptions {
  HttpServerOptions http;
  std::string api_key;  // empty: no authentication
  int retry_after_seconds = 1;
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
  // Generation requests not yet answered in full.
  int num_in_flight() const { return in_flight_.load(); }
  // Aborts every in-flight request (their responses end with finish_reason "abort").
  void abort_all();

 private:
  struct Active;
  void handle(ConnectionId conn, HttpRequest request);
  void handle_generation(ConnectionId conn, const HttpRequest& request, ApiKind kind);
  void pump(ConnectionId conn);
  void finish(ConnectionId conn, std::string_view reason);
  void send_error(ConnectionId conn, const ApiError& error);
  void send_json(ConnectionId conn, int status, const std::string& body);
  bool authorized(const HttpRequest& request) const;

  OpenAiServerOptions options_;
  AsyncEngine& engine_;
  ServedModel model_;
  ServingMetrics& metrics_;
  HttpServer http_;
  std::atomic<bool> draining_{false};
  std::atomic<int> in_flight_{0};
  std::unordered_map<ConnectionId, std::unique_ptr<Active>> active_;  // loop thread only
};

}  // namespace weft
