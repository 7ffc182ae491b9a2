#include "serving/http_client.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

namespace weft {
namespace {

// Bounds on what a response may send before its body: an upstream we trust, but a bound keeps a
// broken one from growing our memory without end.
constexpr size_t kMaxLineBytes = 64 * 1024;
constexpr size_t kMaxHeaders = 200;

int millis(std::chrono::milliseconds timeout) {
  return static_cast<int>(std::min<int64_t>(timeout.count(), 1 << 30));
}

}  // namespace

std::string HttpResponseHead::header(std::string_view name) const {
  for (const auto& [key, value] : headers) {
    if (key == name) return value;
  }
  return "";
}

absl::StatusOr<std::unique_ptr<HttpClientConnection>> HttpClientConnection::connect(
    const std::string& host, int port, std::chrono::milliseconds timeout) {
  const std::string address = absl::StrCat(host, ":", port);
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  const std::string service = std::to_string(port);
  if (int rc = getaddrinfo(host.c_str(), service.c_str(), &hints, &found); rc != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("cannot resolve ", address, ": ", gai_strerror(rc)));
  }
  std::unique_ptr<addrinfo, decltype(&freeaddrinfo)> guard(found, freeaddrinfo);
  std::string last_error = "no address";
  for (addrinfo* a = found; a != nullptr; a = a->ai_next) {
    int fd = socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) {
      last_error = std::strerror(errno);
      continue;
    }
    int rc = ::connect(fd, a->ai_addr, a->ai_addrlen);
    if (rc != 0 && errno == EINPROGRESS) {
      pollfd p{fd, POLLOUT, 0};
      rc = poll(&p, 1, millis(timeout));
      if (rc == 0) {
        last_error = "timed out";
        ::close(fd);
        continue;
      }
      int err = 0;
      socklen_t len = sizeof(err);
      getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
      rc = err == 0 ? 0 : -1;
      errno = err;
    }
    if (rc != 0) {
      last_error = std::strerror(errno);
      ::close(fd);
      continue;
    }
    const int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    return std::unique_ptr<HttpClientConnection>(new HttpClientConnection(fd));
  }
  return absl::UnavailableError(absl::StrCat("cannot connect to ", address, ": ", last_error));
}

HttpClientConnection::~HttpClientConnection() { ::close(fd_); }

void HttpClientConnection::interrupt() {
  interrupted_.store(true);
  ::shutdown(fd_, SHUT_RDWR);
}

absl::Status HttpClientConnection::send(
    std::string_view method, std::string_view target,
    const std::vector<std::pair<std::string, std::string>>& headers, std::string_view body,
    std::chrono::milliseconds timeout) {
  std::string out = absl::StrCat(absl::string_view(method.data(), method.size()), " ",
                                 absl::string_view(target.data(), target.size()),
                                 " HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n");
  for (const auto& [name, value] : headers) absl::StrAppend(&out, name, ": ", value, "\r\n");
  absl::StrAppend(&out, "Content-Length: ", body.size(), "\r\n\r\n");
  out.append(body);
  head_is_bodyless_ = method == "HEAD";
  size_t sent = 0;
  while (sent < out.size()) {
    if (interrupted_.load()) return absl::CancelledError("the request was interrupted");
    ssize_t n = ::send(fd_, out.data() + sent, out.size() - sent, MSG_NOSIGNAL);
    if (n > 0) {
      sent += static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      pollfd p{fd_, POLLOUT, 0};
      if (poll(&p, 1, millis(timeout)) == 0)
        return absl::DeadlineExceededError("sending the request timed out");
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    return absl::UnavailableError(
        absl::StrCat("sending the request failed: ", std::strerror(errno)));
  }
  return absl::OkStatus();
}

absl::StatusOr<bool> HttpClientConnection::fill(std::chrono::milliseconds timeout) {
  char chunk[16384];
  for (;;) {
    if (interrupted_.load()) return absl::CancelledError("the request was interrupted");
    ssize_t n = ::recv(fd_, chunk, sizeof(chunk), 0);
    if (n > 0) {
      buffer_.append(chunk, static_cast<size_t>(n));
      return true;
    }
    if (n == 0) return false;
    if (errno == EINTR) continue;
    if (errno != EAGAIN && errno != EWOULDBLOCK) {
      if (interrupted_.load()) return absl::CancelledError("the request was interrupted");
      return absl::UnavailableError(
          absl::StrCat("reading the response failed: ", std::strerror(errno)));
    }
    pollfd p{fd_, POLLIN, 0};
    int rc = poll(&p, 1, millis(timeout));
    if (rc == 0) return absl::DeadlineExceededError("the upstream sent nothing in time");
  }
}

absl::StatusOr<std::string> HttpClientConnection::read_line(std::chrono::milliseconds timeout) {
  for (;;) {
    const size_t end = buffer_.find("\r\n");
    if (end != std::string::npos) {
      std::string line = buffer_.substr(0, end);
      buffer_.erase(0, end + 2);
      return line;
    }
    if (buffer_.size() > kMaxLineBytes) return absl::DataLossError("a response line is too long");
    auto more = fill(timeout);
    if (!more.ok()) return more.status();
    if (!*more) return absl::UnavailableError("the upstream closed the connection mid-response");
  }
}

absl::StatusOr<HttpResponseHead> HttpClientConnection::read_head(
    std::chrono::milliseconds timeout) {
  for (;;) {
    auto status_line = read_line(timeout);
    if (!status_line.ok()) return status_line.status();
    // "HTTP/1.1 200 OK"
    HttpResponseHead head;
    if (status_line->size() < 12 || status_line->compare(0, 5, "HTTP/") != 0 ||
        !absl::SimpleAtoi(absl::string_view(status_line->data() + 9, 3), &head.status)) {
      return absl::DataLossError(absl::StrCat("malformed status line '", *status_line, "'"));
    }
    for (;;) {
      auto line = read_line(timeout);
      if (!line.ok()) return line.status();
      if (line->empty()) break;
      if (head.headers.size() >= kMaxHeaders)
        return absl::DataLossError("too many response headers");
      const size_t colon = line->find(':');
      if (colon == std::string::npos)
        return absl::DataLossError(absl::StrCat("malformed header '", *line, "'"));
      std::string name = absl::AsciiStrToLower(absl::string_view(line->data(), colon));
      std::string value(absl::StripAsciiWhitespace(absl::string_view(*line).substr(colon + 1)));
      head.headers.emplace_back(std::move(name), std::move(value));
    }
    if (head.status >= 100 && head.status < 200) continue;  // 100 Continue and friends
    body_done_ = head_is_bodyless_ || head.status == 204 || head.status == 304;
    if (absl::AsciiStrToLower(head.header("transfer-encoding")).find("chunked") !=
        std::string::npos) {
      framing_ = Framing::kChunked;
    } else if (std::string length = head.header("content-length"); !length.empty()) {
      framing_ = Framing::kLength;
      if (!absl::SimpleAtoi(length, &remaining_)) {
        return absl::DataLossError(absl::StrCat("malformed Content-Length '", length, "'"));
      }
      if (remaining_ == 0) body_done_ = true;
    } else {
      framing_ = Framing::kClose;
    }
    return head;
  }
}

absl::StatusOr<std::string> HttpClientConnection::take_counted(std::chrono::milliseconds timeout) {
  if (buffer_.empty()) {
    auto more = fill(timeout);
    if (!more.ok()) return more.status();
    if (!*more) return absl::UnavailableError("the upstream closed the connection mid-response");
  }
  const size_t take = static_cast<size_t>(std::min<uint64_t>(remaining_, buffer_.size()));
  std::string out = buffer_.substr(0, take);
  buffer_.erase(0, take);
  remaining_ -= take;
  return out;
}

absl::StatusOr<std::string> HttpClientConnection::next_chunked_part(
    std::chrono::milliseconds timeout) {
  for (;;) {
    if (chunk_open_) {
      auto out = take_counted(timeout);
      if (!out.ok()) return out.status();
      if (remaining_ == 0) {
        chunk_open_ = false;
        auto crlf = read_line(timeout);
        if (!crlf.ok()) return crlf.status();
        if (!crlf->empty()) return absl::DataLossError("chunk data is not followed by CRLF");
      }
      return out;
    }
    auto size_line = read_line(timeout);
    if (!size_line.ok()) return size_line.status();
    const std::string hex = size_line->substr(0, size_line->find(';'));
    uint64_t size = 0;
    if (hex.empty() || hex.size() > 15 || !absl::SimpleHexAtoi(hex, &size)) {
      return absl::DataLossError(absl::StrCat("malformed chunk size line '", *size_line, "'"));
    }
    if (size == 0) {
      for (;;) {  // trailer fields, then the empty line
        auto trailer = read_line(timeout);
        if (!trailer.ok()) return trailer.status();
        if (trailer->empty()) break;
      }
      body_done_ = true;
      return std::string();
    }
    remaining_ = size;
    chunk_open_ = true;
  }
}

absl::StatusOr<std::string> HttpClientConnection::read_body_part(
    std::chrono::milliseconds timeout) {
  if (body_done_) return std::string();
  switch (framing_) {
    case Framing::kChunked:
      return next_chunked_part(timeout);
    case Framing::kLength: {
      auto out = take_counted(timeout);
      if (out.ok() && remaining_ == 0) body_done_ = true;
      return out;
    }
    case Framing::kClose: {
      if (buffer_.empty()) {
        auto more = fill(timeout);
        if (!more.ok()) return more.status();
        if (!*more) {
          body_done_ = true;
          return std::string();
        }
      }
      return std::exchange(buffer_, std::string());
    }
  }
  return std::string();
}

absl::StatusOr<std::string> HttpClientConnection::read_body(std::chrono::milliseconds timeout) {
  std::string body;
  for (;;) {
    auto part = read_body_part(timeout);
    if (!part.ok()) return part.status();
    if (part->empty() && body_done_) return body;
    body += *part;
  }
}

}  // namespace weft
