// A blocking HTTP/1.1 client for one request per connection to a trusted upstream on this host
// (the supervisor's engine server, tests). Not a general client: no TLS, no redirects, no
// keep-alive (every request sends `Connection: close`).
//
// Use: connect(), send(), read_head(), then read_body_part() until it returns an empty string
// (the end of the body). Bodies framed by Content-Length, by chunked transfer coding (decoded
// here; trailers are read and dropped) or by the connection's close are all handled; a body that
// ends early (the peer died mid-response) is an Unavailable error, never a short success.
//
// Every read waits at most its timeout for the peer (DeadlineExceeded). interrupt() may be called
// from another thread: it shuts the socket down so that a blocked read returns (Cancelled) and
// the peer sees the connection close.
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace weft {

struct HttpResponseHead {
  int status = 0;
  std::vector<std::pair<std::string, std::string>> headers;  // names lower-cased, in order

  // The first value of header `name` (lower-case), or "".
  std::string header(std::string_view name) const;
};

class HttpClientConnection {
 public:
  // Connects to host:port (a numeric address or "localhost") within `timeout`.
  static absl::StatusOr<std::unique_ptr<HttpClientConnection>> connect(
      const std::string& host, int port, std::chrono::milliseconds timeout);
  ~HttpClientConnection();
  HttpClientConnection(const HttpClientConnection&) = delete;
  HttpClientConnection& operator=(const HttpClientConnection&) = delete;

  // Sends the request line, `headers` (Host, Content-Length and Connection are added) and `body`.
  absl::Status send(std::string_view method, std::string_view target,
                    const std::vector<std::pair<std::string, std::string>>& headers,
                    std::string_view body, std::chrono::milliseconds timeout);
  // Reads the status line and headers (a 1xx interim response is skipped).
  absl::StatusOr<HttpResponseHead> read_head(std::chrono::milliseconds timeout);
  // The next decoded body bytes as they arrive; "" once the whole body has been read.
  absl::StatusOr<std::string> read_body_part(std::chrono::milliseconds timeout);
  // The rest of the body (for small, non-streaming responses).
  absl::StatusOr<std::string> read_body(std::chrono::milliseconds timeout);

  // Thread-safe: makes a blocked or later read fail with Cancelled and closes our side.
  void interrupt();

 private:
  explicit HttpClientConnection(int fd) : fd_(fd) {}
  // Appends what the socket has to buffer_ (waiting up to `timeout`); false at the peer's close.
  absl::StatusOr<bool> fill(std::chrono::milliseconds timeout);
  absl::StatusOr<std::string> read_line(std::chrono::milliseconds timeout);
  absl::StatusOr<std::string> next_chunked_part(std::chrono::milliseconds timeout);
  // Up to remaining_ bytes of a counted body or chunk (waiting for the first), remaining_ reduced.
  absl::StatusOr<std::string> take_counted(std::chrono::milliseconds timeout);

  enum class Framing { kLength, kChunked, kClose };
  int fd_;
  std::atomic<bool> interrupted_{false};
  std::string buffer_;  // received, not yet consumed
  Framing framing_ = Framing::kClose;
  uint64_t remaining_ = 0;   // kLength: body bytes still to come; kChunked: of the current chunk
  bool chunk_open_ = false;  // kChunked: inside a chunk's data
  bool body_done_ = false;
  bool head_is_bodyless_ = false;
};

}  // namespace weft
