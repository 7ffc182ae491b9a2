#include "serving/http_server.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"

namespace weft {
namespace {

using Clock = std::chrono::steady_clock;
constexpr uint64_t kWakeTag = 0;
constexpr uint64_t kListenTag = ~uint64_t{0};
constexpr size_t kReadChunk = 64 * 1024;

// The OpenAI error shape ("code" is a string or null, as OpenAI sends it); `message` comes from
// the parser or this file and is plain ASCII.
std::string error_body(std::string_view message) {
  std::string escaped;
  for (char c : message) {
    if (c == '"' || c == '\\') escaped += '\\';
    escaped += c;
  }
  return absl::StrCat(R"({"error":{"message":")", escaped,
                      R"(","type":"invalid_request_error","param":null,"code":null}})");
}

uint32_t epoll_events(bool read, bool write) {
  return (read ? static_cast<uint32_t>(EPOLLIN | EPOLLRDHUP) : 0u) | (write ? static_cast<uint32_t>(EPOLLOUT) : 0u);
}

}  // namespace

std::string_view http_reason(int status) {
  switch (status) {
    case 100: return "Continue";
    case 200: return "OK";
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 408: return "Request Timeout";
    case 413: return "Content Too Large";
    case 414: return "URI Too Long";
    case 417: return "Expectation Failed";
    case 429: return "Too Many Requests";
    case 431: return "Request Header Fields Too Large";
    case 500: return "Internal Server Error";
    case 501: return "Not Implemented";
    case 503: return "Service Unavailable";
    case 505: return "HTTP Version Not Supported";
    default: return "Unknown";
  }
}

struct HttpServer::Connection {
  ConnectionId id = 0;
  int fd = -1;
  std::string in;
  std::string out;
  size_t out_offset = 0;
  bool busy = false;            // a request is being answered
  bool streaming = false;       // start_stream() was called
  bool chunked = false;         // the stream uses chunked encoding (HTTP/1.1)
  bool keep_alive = true;
  bool close_after_write = false;
  bool dead = false;            // closed; erased at the end of the loop iteration
  bool lingering = false;       // response sent, write side shut: discarding input until EOF
  bool read_closed = false;     // the peer shut its write side: answer what arrived, then close
  bool head_only = false;       // answering HEAD: the headers GET would get, no body bytes
  bool continue_sent = false;   // "100 Continue" sent for the request being received
  uint32_t events = EPOLLIN | EPOLLRDHUP;  // registered with epoll
  Clock::time_point request_started{};  // first byte of the request being received
  Clock::time_point last_activity{};
  std::function<void()> on_close;
};

HttpServer::HttpServer(HttpServerOptions options, Handler handler)
    : options_(std::move(options)), handler_(std::move(handler)) {}

HttpServer::~HttpServer() {
  for (auto& [id, c] : connections_) {
    if (c->fd >= 0) ::close(c->fd);
  }
  if (listen_fd_ >= 0) ::close(listen_fd_);
  if (epoll_fd_ >= 0) ::close(epoll_fd_);
  if (wake_fd_ >= 0) ::close(wake_fd_);
}

absl::Status HttpServer::listen() {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* res = nullptr;
  const std::string port = std::to_string(options_.port);
  const std::string where = absl::StrCat(options_.host, ":", options_.port);
  const int gai = ::getaddrinfo(options_.host.empty() ? nullptr : options_.host.c_str(), port.c_str(), &hints, &res);
  if (gai != 0) return absl::InvalidArgumentError(absl::StrCat("--host ", where, ": ", ::gai_strerror(gai)));
  int err = 0;
  for (addrinfo* ai = res; ai != nullptr; ai = ai->ai_next) {
    const int fd = ::socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, ai->ai_protocol);
    if (fd < 0) {
      err = errno;
      continue;
    }
    const int one = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (::bind(fd, ai->ai_addr, ai->ai_addrlen) == 0 && ::listen(fd, 4096) == 0) {
      listen_fd_ = fd;
      break;
    }
    err = errno;
    ::close(fd);
  }
  ::freeaddrinfo(res);
  if (listen_fd_ < 0) return absl::UnavailableError(absl::StrCat("cannot listen on ", where, ": ", std::strerror(err)));
  sockaddr_storage addr{};
  socklen_t len = sizeof(addr);
  ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len);
  bound_port_ = addr.ss_family == AF_INET6 ? ntohs(reinterpret_cast<sockaddr_in6*>(&addr)->sin6_port)
                                           : ntohs(reinterpret_cast<sockaddr_in*>(&addr)->sin_port);

  epoll_fd_ = ::epoll_create1(EPOLL_CLOEXEC);
  wake_fd_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (epoll_fd_ < 0 || wake_fd_ < 0) return absl::InternalError(absl::StrCat("epoll/eventfd: ", std::strerror(errno)));
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.u64 = kListenTag;
  ::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, listen_fd_, &ev);
  ev.data.u64 = kWakeTag;
  ::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, wake_fd_, &ev);
  return absl::OkStatus();
}

void HttpServer::stop() {
  stopping_.store(true);
  if (wake_fd_ >= 0) {
    const uint64_t one = 1;
    [[maybe_unused]] ssize_t n = ::write(wake_fd_, &one, sizeof(one));
  }
}

void HttpServer::post(std::function<void()> fn) {
  bool was_empty = false;
  {
    std::lock_guard<std::mutex> lock(posted_mu_);
    was_empty = posted_.empty();
    posted_.push_back(std::move(fn));
  }
  // One wake-up per batch: the loop drains the whole queue when it wakes.
  if (was_empty && wake_fd_ >= 0) {
    const uint64_t one = 1;
    [[maybe_unused]] ssize_t n = ::write(wake_fd_, &one, sizeof(one));
  }
}

void HttpServer::run_posted() {
  std::vector<std::function<void()>> batch;
  {
    std::lock_guard<std::mutex> lock(posted_mu_);
    batch.swap(posted_);
  }
  for (auto& fn : batch) fn();
}

void HttpServer::run() {
  std::vector<epoll_event> events(512);
  Clock::time_point last_sweep = Clock::now();
  while (!stopping_.load()) {
    const int n = ::epoll_wait(epoll_fd_, events.data(), static_cast<int>(events.size()), 1000);
    for (int i = 0; i < n; ++i) {
      const uint64_t tag = events[i].data.u64;
      if (tag == kWakeTag) {
        uint64_t value = 0;
        [[maybe_unused]] ssize_t r = ::read(wake_fd_, &value, sizeof(value));
        continue;
      }
      if (tag == kListenTag) {
        accept_all();
        continue;
      }
      auto it = connections_.find(tag);
      if (it == connections_.end() || it->second->dead) continue;
      Connection& c = *it->second;
      if (events[i].events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR)) on_readable(c);
      if (!c.dead && (events[i].events & EPOLLOUT)) on_writable(c);
    }
    run_posted();
    const Clock::time_point now = Clock::now();
    if (now - last_sweep >= std::chrono::milliseconds(500)) {
      sweep_timeouts();
      last_sweep = now;
    }
    // Close what died this iteration; references handed out above are no longer used.
    for (auto it = connections_.begin(); it != connections_.end();) {
      if (it->second->dead) {
        it = connections_.erase(it);
      } else {
        ++it;
      }
    }
  }
  for (auto& [id, c] : connections_) {
    if (!c->dead) close(id);
  }
  connections_.clear();
}

void HttpServer::stop_accepting() {
  if (!accepting_) return;
  accepting_ = false;
  ::epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, listen_fd_, nullptr);
}

void HttpServer::accept_all() {
  while (accepting_) {
    const int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      // EAGAIN: all taken. EMFILE/ENFILE: out of descriptors; retried on the next readiness.
      return;
    }
    if (connections_.size() >= options_.max_connections) {
      ::close(fd);
      continue;
    }
    const int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));  // SSE tokens go out at once
    auto c = std::make_unique<Connection>();
    c->id = next_id_++;
    c->fd = fd;
    c->last_activity = Clock::now();
    epoll_event ev{};
    ev.events = EPOLLIN | EPOLLRDHUP;
    ev.data.u64 = c->id;
    if (::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &ev) != 0) {
      ::close(fd);
      continue;
    }
    connections_.emplace(c->id, std::move(c));
  }
}

void HttpServer::on_readable(Connection& c) {
  if (c.read_closed) {
    // EPOLLIN is no longer registered: only EPOLLHUP / EPOLLERR (the peer reset) get here.
    close(c.id);
    return;
  }
  char buf[kReadChunk];
  // The socket is read even while a request is being answered (to see the peer close); input
  // beyond one maximal request is a misbehaving client: close. Input of a connection whose last
  // response closes it (a refused request, or a lingering close) is discarded: no request follows,
  // and closing with a large unread body would reset the connection before the client reads why.
  const size_t cap = options_.limits.max_header_bytes + options_.limits.max_body_bytes + kReadChunk;
  for (;;) {
    const ssize_t n = ::recv(c.fd, buf, sizeof(buf), 0);
    if (n > 0 && (c.lingering || c.close_after_write)) continue;
    if (n > 0) {
      if (c.in.empty() && !c.busy) c.request_started = Clock::now();
      c.in.append(buf, static_cast<size_t>(n));
      c.last_activity = Clock::now();
      if (c.in.size() > cap) {
        // The buffered bytes may already decide the answer (a 413 from the headers): give it
        // before judging the excess, then discard the rest of what the client sends.
        if (!c.busy && !c.lingering) process_input(c);
        if (c.dead) return;
        if (c.close_after_write || c.lingering) {
          c.in.clear();
          continue;
        }
        close(c.id);
        return;
      }
      continue;
    }
    if (n == 0) {
      if (c.lingering) {
        close(c.id);
        return;
      }
      // A half-close (shutdown(SHUT_WR)) after a whole request still wants the answer: stop
      // reading (EOF stays readable) and close once what arrived has been answered.
      c.read_closed = true;
      update_events(c);
      break;
    }
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) break;
    close(c.id);
    return;
  }
  if (!c.busy && !c.lingering) process_input(c);
}

void HttpServer::close_if_drained(Connection& c) {
  if (c.dead || !c.read_closed || c.busy) return;
  // Nothing more can arrive and nothing is being answered: close once the output is flushed.
  c.close_after_write = true;
  flush(c);
}

void HttpServer::process_input(Connection& c) {
  while (!c.dead && !c.busy && !c.in.empty()) {
    HttpParseResult r = parse_http_request(c.in, options_.limits);
    if (r.state == HttpParseResult::State::kIncomplete) {
      if (r.expects_continue && !c.continue_sent && !c.read_closed) {
        // The client waits for this before sending the body (RFC 9110 10.1.1).
        c.continue_sent = true;
        queue_output(c, "HTTP/1.1 100 Continue\r\n\r\n");
      }
      break;
    }
    c.busy = true;
    c.continue_sent = false;
    c.head_only = false;
    if (r.state == HttpParseResult::State::kError) {
      c.in.clear();
      c.keep_alive = false;
      respond(c.id, r.error_status, {{"Content-Type", "application/json"}}, error_body(r.error));
      return;
    }
    c.in.erase(0, r.consumed);
    c.keep_alive = r.request.keep_alive;
    c.streaming = false;
    c.chunked = r.request.version_minor >= 1;
    c.head_only = r.request.method == "HEAD";
    const ConnectionId id = c.id;
    handler_(id, std::move(r.request));
    // The handler may have answered (busy is false again) and more requests may be waiting.
    if (!c.in.empty() && !c.busy) c.request_started = Clock::now();
  }
  // After a half-close, what is left (nothing, or part of a request) is never answered.
  close_if_drained(c);
}

void HttpServer::on_writable(Connection& c) { flush(c); }

void HttpServer::queue_output(Connection& c, std::string_view data) {
  if (c.dead) return;
  c.out.append(data);
  if (c.out.size() - c.out_offset > options_.max_pending_output) {
    close(c.id);
    return;
  }
  flush(c);
}

void HttpServer::flush(Connection& c) {
  while (c.out_offset < c.out.size()) {
    const ssize_t n = ::send(c.fd, c.out.data() + c.out_offset, c.out.size() - c.out_offset, MSG_NOSIGNAL);
    if (n > 0) {
      c.out_offset += static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
    close(c.id);
    return;
  }
  if (c.out_offset == c.out.size()) {
    c.out.clear();
    c.out_offset = 0;
    if (c.close_after_write && c.read_closed) {
      close(c.id);  // the peer sends nothing more: no lingering needed
      return;
    }
    if (c.close_after_write) {
      // Lingering close: shut the write side and drain what the client still sends (say, the
      // body of a request refused from its headers), so that closing with unread input does not
      // reset the connection before the client reads the response.
      if (!c.lingering) {
        ::shutdown(c.fd, SHUT_WR);
        c.lingering = true;
        c.in.clear();
        c.last_activity = Clock::now();
      }
      update_events(c);
      return;
    }
  } else if (c.out_offset > (1 << 20)) {
    c.out.erase(0, c.out_offset);
    c.out_offset = 0;
  }
  update_events(c);
}

void HttpServer::update_events(Connection& c) {
  const uint32_t events = epoll_events(!c.read_closed, c.out_offset < c.out.size());
  if (events == c.events) return;
  c.events = events;
  epoll_event ev{};
  ev.events = events;
  ev.data.u64 = c.id;
  ::epoll_ctl(epoll_fd_, EPOLL_CTL_MOD, c.fd, &ev);
}

void HttpServer::close(ConnectionId id) {
  auto it = connections_.find(id);
  if (it == connections_.end() || it->second->dead) return;
  Connection& c = *it->second;
  c.dead = true;
  ::epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, c.fd, nullptr);
  ::close(c.fd);
  c.fd = -1;
  if (c.on_close) {
    auto cb = std::move(c.on_close);
    c.on_close = nullptr;
    cb();
  }
}

void HttpServer::on_close(ConnectionId id, std::function<void()> callback) {
  auto it = connections_.find(id);
  if (it == connections_.end() || it->second->dead) return;
  it->second->on_close = std::move(callback);
}

void HttpServer::finish_response(Connection& c) {
  c.busy = false;
  c.streaming = false;
  c.head_only = false;
  c.on_close = nullptr;
  if (!c.keep_alive || (c.read_closed && c.in.empty())) {
    c.close_after_write = true;
    flush(c);
    return;
  }
  // Pipelined requests already buffered: answer them now (posted responses come from outside
  // process_input's loop).
  if (!c.in.empty()) {
    const ConnectionId id = c.id;
    post([this, id] {
      auto it = connections_.find(id);
      if (it != connections_.end() && !it->second->dead && !it->second->busy) process_input(*it->second);
    });
  }
}

void HttpServer::respond(ConnectionId id, int status, const HttpHeaders& headers, std::string_view body) {
  auto it = connections_.find(id);
  if (it == connections_.end() || it->second->dead) return;
  Connection& c = *it->second;
  std::string head = absl::StrCat("HTTP/1.1 ", status, " ", std::string(http_reason(status)), "\r\n");
  for (const auto& [k, v] : headers) absl::StrAppend(&head, k, ": ", v, "\r\n");
  const bool last = !c.keep_alive || (c.read_closed && c.in.empty());
  // HEAD: the Content-Length GET would get, and no body (RFC 9110 9.3.2).
  absl::StrAppend(&head, "Content-Length: ", body.size(), "\r\n",
                  last ? "Connection: close\r\n" : "Connection: keep-alive\r\n", "\r\n");
  if (!c.head_only) head.append(body);
  c.last_activity = Clock::now();
  queue_output(c, head);
  if (!c.dead) finish_response(c);
}

void HttpServer::start_stream(ConnectionId id, int status, const HttpHeaders& headers) {
  auto it = connections_.find(id);
  if (it == connections_.end() || it->second->dead) return;
  Connection& c = *it->second;
  c.streaming = true;
  if (!c.chunked) c.keep_alive = false;  // HTTP/1.0: the end of the body is the close
  std::string head = absl::StrCat("HTTP/1.1 ", status, " ", std::string(http_reason(status)), "\r\n");
  for (const auto& [k, v] : headers) absl::StrAppend(&head, k, ": ", v, "\r\n");
  if (c.chunked) head += "Transfer-Encoding: chunked\r\n";
  const bool last = !c.keep_alive || (c.read_closed && c.in.empty());
  head += last ? "Connection: close\r\n\r\n" : "Connection: keep-alive\r\n\r\n";
  queue_output(c, head);
}

void HttpServer::write_chunk(ConnectionId id, std::string_view data) {
  auto it = connections_.find(id);
  if (it == connections_.end() || it->second->dead || data.empty()) return;
  Connection& c = *it->second;
  if (c.head_only) return;
  if (!c.chunked) {
    queue_output(c, data);
    return;
  }
  char size[32];
  const int len = std::snprintf(size, sizeof(size), "%zx\r\n", data.size());
  std::string frame;
  frame.reserve(static_cast<size_t>(len) + data.size() + 2);
  frame.append(size, static_cast<size_t>(len));
  frame.append(data);
  frame.append("\r\n");
  queue_output(c, frame);
}

void HttpServer::end_stream(ConnectionId id) {
  auto it = connections_.find(id);
  if (it == connections_.end() || it->second->dead) return;
  Connection& c = *it->second;
  c.last_activity = Clock::now();
  if (c.chunked && !c.head_only) queue_output(c, "0\r\n\r\n");
  if (!c.dead) finish_response(c);  // HTTP/1.0 streams are not keep-alive: closes once flushed
}

void HttpServer::sweep_timeouts() {
  const Clock::time_point now = Clock::now();
  for (auto& [id, cp] : connections_) {
    Connection& c = *cp;
    if (c.dead) continue;
    if (c.lingering) {
      if (now - c.last_activity > std::chrono::seconds(2)) close(id);
      continue;
    }
    if (c.busy) continue;
    if (!c.in.empty() && now - c.request_started > options_.request_timeout) {
      c.busy = true;
      c.keep_alive = false;
      c.in.clear();
      respond(id, 408, {{"Content-Type", "application/json"}}, error_body("the request did not arrive in time"));
    } else if (c.in.empty() && c.out_offset == c.out.size() && now - c.last_activity > options_.idle_timeout) {
      close(id);
    }
  }
  if (accepting_) accept_all();  // retry after running out of descriptors
}

}  // namespace weft
