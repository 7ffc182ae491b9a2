// An event-driven HTTP/1.1 server: one thread, one epoll set, non-blocking sockets. Holds any
// number of idle or streaming connections without a thread each (bounded by max_connections and
// the process's file descriptors).
//
// Threading: run() is the event loop and runs on the caller's thread. Every method except
// listen(), post(), stop() and port() must be called on the loop thread (i.e. from the handler or
// from a function given to post()). post() is how other threads (the engine thread) hand work to
// the loop: the function runs on the loop thread, soon, in posting order.
//
// Per connection: requests are parsed by parse_http_request (http_parser.h) under `limits`;
// one request is handled at a time (pipelined requests wait in the buffer); the handler answers
// with respond() (a whole response), or start_stream() + write_chunk()... + end_stream()
// (Transfer-Encoding: chunked; for HTTP/1.0 clients the body is written raw and the connection
// closes at the end). A HEAD request's response carries the headers GET would get (Content-Length
// included) and no body bytes: respond()'s body and write_chunk()'s data are dropped. A request
// with `Expect: 100-continue` whose headers pass the parser gets `HTTP/1.1 100 Continue` before
// its body arrives. A malformed request gets its 4xx/5xx (JSON error, "code": null) and the
// connection closes.
// Half-close: a peer that shuts its write side after sending requests still gets their answers;
// the connection closes after the last one (an incomplete request left over is not answered).
// Since TCP cannot tell a half-close from a close, a peer that closed outright is noticed only
// when a write fails (streaming responses: at the next chunk).
// Timeouts: a request must arrive whole within request_timeout of its first byte; an idle
// keep-alive connection closes after idle_timeout; a streaming response has no timeout.
// A connection closed by the peer (a reset, or a write error) while a response is pending calls
// the close callback set with on_close(), on the loop thread, exactly once.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "serving/http_parser.h"

namespace weft {

using ConnectionId = uint64_t;
using HttpHeaders = std::vector<std::pair<std::string, std::string>>;

struct HttpServerOptions {
  std::string host = "127.0.0.1";
  int port = 8000;  // 0: any free port (see port())
  HttpLimits limits;
  size_t max_connections = 10000;
  std::chrono::milliseconds request_timeout{30000};
  std::chrono::milliseconds idle_timeout{60000};
  // A connection whose unsent output exceeds this is closed (a client that stopped reading).
  size_t max_pending_output = 64 * 1024 * 1024;
};

class HttpServer {
 public:
  // Called on the loop thread for each complete request. The handler must eventually answer
  // (respond / start_stream ... end_stream) unless the connection closes first.
  using Handler = std::function<void(ConnectionId, HttpRequest)>;

  HttpServer(HttpServerOptions options, Handler handler);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Binds and listens. Errors name the address.
  absl::Status listen();
  int port() const { return bound_port_; }

  // Runs the loop until stop(). Open connections are closed when it returns.
  void run();
  // Thread-safe: makes run() return soon.
  void stop();
  // Thread-safe: runs `fn` on the loop thread.
  void post(std::function<void()> fn);

  // --- loop thread only ---
  void respond(ConnectionId id, int status, const HttpHeaders& headers, std::string_view body);
  void start_stream(ConnectionId id, int status, const HttpHeaders& headers);
  void write_chunk(ConnectionId id, std::string_view data);
  void end_stream(ConnectionId id);
  bool is_open(ConnectionId id) const { return connections_.count(id) != 0; }
  void on_close(ConnectionId id, std::function<void()> callback);
  // Stops accepting new connections (existing ones keep being served).
  void stop_accepting();
  size_t num_connections() const { return connections_.size(); }

 private:
  struct Connection;
  void accept_all();
  void on_readable(Connection& c);
  void on_writable(Connection& c);
  void process_input(Connection& c);
  void queue_output(Connection& c, std::string_view data);
  void flush(Connection& c);
  void update_events(Connection& c);
  void close(ConnectionId id);
  void sweep_timeouts();
  void run_posted();
  void finish_response(Connection& c);
  void close_if_drained(Connection& c);

  HttpServerOptions options_;
  Handler handler_;
  int listen_fd_ = -1;
  int epoll_fd_ = -1;
  int wake_fd_ = -1;  // eventfd: post() and stop() wake the loop
  int bound_port_ = 0;
  bool accepting_ = true;
  std::atomic<bool> stopping_{false};
  ConnectionId next_id_ = 1;
  std::unordered_map<ConnectionId, std::unique_ptr<Connection>> connections_;
  std::mutex posted_mu_;
  std::vector<std::function<void()>> posted_;
};

// "OK", "Not Found", ... for the status codes this server uses.
std::string_view http_reason(int status);

}  // namespace weft
