#include "serving/http_parser.h"

#include <algorithm>

namespace weft {
namespace {

using State = HttpParseResult::State;

HttpParseResult reject(int status, std::string message) {
  HttpParseResult r;
  r.state = State::kError;
  r.error_status = status;
  r.error = std::move(message);
  return r;
}

// RFC 9110 tchar.
bool is_tchar(unsigned char c) {
  if (c >= '0' && c <= '9') return true;
  if ((c | 0x20) >= 'a' && (c | 0x20) <= 'z') return true;
  switch (c) {
    case '!': case '#': case '$': case '%': case '&': case '\'': case '*': case '+': case '-':
    case '.': case '^': case '_': case '`': case '|': case '~':
      return true;
    default:
      return false;
  }
}

bool is_token(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return is_tchar(c); });
}

// Field values: visible ASCII, obs-text (>= 0x80), space and tab.
bool is_field_value(std::string_view s) {
  for (unsigned char c : s) {
    if (c == '\t' || c == ' ') continue;
    if (c < 0x21 || c == 0x7f) return false;
  }
  return true;
}

bool is_target(std::string_view s) {
  if (s.empty()) return false;
  if (s != "*" && s.front() != '/') return false;
  for (unsigned char c : s) {
    if (c < 0x21 || c >= 0x7f) return false;
  }
  return true;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return out;
}

// Content-Length: 1*DIGIT, no sign, no overflow past `max`. nullopt when malformed.
std::optional<uint64_t> parse_length(std::string_view s, uint64_t max, bool& too_large) {
  if (s.empty() || s.size() > 19) {
    too_large = s.size() > 19 && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
    return std::nullopt;
  }
  uint64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return std::nullopt;
    v = v * 10 + static_cast<uint64_t>(c - '0');
  }
  if (v > max) too_large = true;
  return v;
}

// A CR must be followed by LF and every LF preceded by CR, in `head`.
bool line_endings_ok(std::string_view head) {
  for (size_t i = 0; i < head.size(); ++i) {
    if (head[i] == '\r' && (i + 1 >= head.size() || head[i + 1] != '\n')) {
      return i + 1 >= head.size();  // a trailing CR may still get its LF
    }
    if (head[i] == '\n' && (i == 0 || head[i - 1] != '\r')) return false;
    if (head[i] == '\0') return false;
  }
  return true;
}

std::optional<HttpParseResult> parse_request_line(std::string_view line, const HttpLimits& limits,
                                                  HttpRequest& req) {
  const size_t sp1 = line.find(' ');
  if (sp1 == std::string_view::npos) return reject(400, "malformed request line");
  const size_t sp2 = line.find(' ', sp1 + 1);
  if (sp2 == std::string_view::npos) return reject(400, "malformed request line");
  const std::string_view method = line.substr(0, sp1);
  const std::string_view target = line.substr(sp1 + 1, sp2 - sp1 - 1);
  const std::string_view version = line.substr(sp2 + 1);
  if (!is_token(method)) return reject(400, "malformed request line: invalid method");
  if (target.size() > limits.max_target_bytes) {
    return reject(414, "request target longer than " + std::to_string(limits.max_target_bytes) + " bytes");
  }
  if (!is_target(target)) return reject(400, "malformed request line: invalid request target");
  // HTTP-version = "HTTP/" DIGIT "." DIGIT (RFC 9112 2.3). Anything else, extra tokens after it
  // included, is a malformed request line; only a well-formed other version is a 505.
  auto digit = [](char c) { return c >= '0' && c <= '9'; };
  if (version.size() != 8 || version.substr(0, 5) != "HTTP/" || !digit(version[5]) || version[6] != '.' ||
      !digit(version[7])) {
    return reject(400, "malformed request line: expected METHOD SP target SP HTTP/x.y");
  }
  if (version[5] != '1' || (version[7] != '0' && version[7] != '1')) {
    return reject(505, "only HTTP/1.0 and HTTP/1.1 are supported");
  }
  req.method = std::string(method);
  req.target = std::string(target);
  const size_t q = target.find('?');
  req.path = std::string(target.substr(0, q));
  if (q != std::string_view::npos) req.query = std::string(target.substr(q + 1));
  req.version_minor = version[7] - '0';
  return std::nullopt;
}

constexpr size_t kMaxChunkLine = 1024;  // chunk-size [chunk-ext] of one chunk

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if ((c | 0x20) >= 'a' && (c | 0x20) <= 'f') return (c | 0x20) - 'a' + 10;
  return -1;
}

enum class LineEnd { kFound, kIncomplete, kBad };

// Looks for the CRLF ending the line that starts at data[pos]; `eol` gets the CR's index. kBad:
// a bare LF or a CR not followed by LF (known at once, so no waiting for a CRLF that never
// comes); kIncomplete: no line end in data[pos, pos + max_len + 2) yet.
LineEnd find_crlf(std::string_view data, size_t pos, size_t max_len, size_t& eol) {
  const size_t end = std::min(data.size(), pos + max_len + 2);
  for (size_t i = pos; i < end; ++i) {
    if (data[i] == '\n') return LineEnd::kBad;
    if (data[i] != '\r') continue;
    if (i + 1 >= data.size()) return LineEnd::kIncomplete;
    if (data[i + 1] != '\n') return LineEnd::kBad;
    eol = i;
    return LineEnd::kFound;
  }
  return LineEnd::kIncomplete;
}

// A chunked body (RFC 9112 7.1) starting at data[0]: chunks of `hex-size [;ext] CRLF data CRLF`,
// a last chunk `0 [;ext] CRLF`, trailer fields (read and dropped) and an empty line. The encoded
// body may be at most limits.max_body_bytes (so the decoded one is too); the trailer section
// (its fields and the empty line) at most limits.max_header_bytes and limits.max_headers fields.
// On success, `body` gets the data and `consumed` the encoded length; incomplete input returns
// kIncomplete.
HttpParseResult parse_chunked_body(std::string_view data, const HttpLimits& limits, std::string& body,
                                   size_t& consumed) {
  const std::string too_large = "request body larger than " + std::to_string(limits.max_body_bytes) + " bytes";
  auto need_more = [&]() -> HttpParseResult {
    if (data.size() > limits.max_body_bytes) return reject(413, too_large);
    return {};
  };
  const HttpParseResult bad_line = reject(400, "malformed chunked body: lines must end in CRLF");
  size_t pos = 0;
  for (;;) {
    size_t eol = 0;
    const LineEnd end = find_crlf(data, pos, kMaxChunkLine, eol);
    if (end == LineEnd::kBad) return bad_line;
    if (end == LineEnd::kIncomplete) {
      if (data.size() - pos > kMaxChunkLine) return reject(400, "malformed chunked body: chunk size line too long");
      return need_more();
    }
    const std::string_view line = data.substr(pos, eol - pos);
    if (line.size() > kMaxChunkLine) return reject(400, "malformed chunked body: chunk size line too long");
    size_t digits = 0;
    uint64_t size = 0;
    while (digits < line.size() && hex_value(line[digits]) >= 0) {
      size = size * 16 + static_cast<uint64_t>(hex_value(line[digits]));
      // Checked each digit (leading zeros are allowed), so the value never overflows.
      if (size > limits.max_body_bytes) return reject(413, too_large);
      ++digits;
    }
    const std::string_view ext = trim(line.substr(digits));
    if (digits == 0 || (!ext.empty() && (ext.front() != ';' || !is_field_value(ext)))) {
      return reject(400, "malformed chunked body: invalid chunk size line");
    }
    pos = eol + 2;
    if (size == 0) break;
    if (body.size() + size > limits.max_body_bytes) return reject(413, too_large);
    // The CRLF after the data is judged byte by byte, as soon as each arrives.
    const std::string_view after = data.substr(std::min(data.size(), pos + size), 2);
    if ((!after.empty() && after[0] != '\r') || (after.size() == 2 && after[1] != '\n')) {
      return reject(400, "malformed chunked body: chunk data not followed by CRLF");
    }
    if (after.size() < 2) return need_more();
    body.append(data.substr(pos, size));
    pos += size + 2;
  }
  // Trailer fields, up to the empty line, bounded like the header section.
  const size_t trailer_start = pos;
  const HttpParseResult too_long = reject(
      431, "trailer section longer than " + std::to_string(limits.max_header_bytes) + " bytes");
  size_t fields = 0;
  for (;;) {
    size_t eol = 0;
    const size_t room = limits.max_header_bytes - std::min(limits.max_header_bytes, pos - trailer_start);
    const LineEnd end = find_crlf(data, pos, room, eol);
    if (end == LineEnd::kBad) return bad_line;
    if (end == LineEnd::kIncomplete) {
      if (data.size() - trailer_start > limits.max_header_bytes) return too_long;
      return need_more();
    }
    const std::string_view line = data.substr(pos, eol - pos);
    pos = eol + 2;
    if (pos - trailer_start > limits.max_header_bytes) return too_long;
    if (line.empty()) break;
    if (++fields > limits.max_headers) {
      return reject(431, "more than " + std::to_string(limits.max_headers) + " trailer fields");
    }
    const size_t colon = line.find(':');
    if (colon == std::string_view::npos || !is_token(line.substr(0, colon)) ||
        !is_field_value(line.substr(colon + 1))) {
      return reject(400, "malformed chunked body: invalid trailer field");
    }
  }
  if (pos > limits.max_body_bytes) return reject(413, too_large);
  HttpParseResult done;
  done.state = State::kComplete;
  consumed = pos;
  return done;
}

}  // namespace

std::optional<std::string_view> HttpRequest::header(std::string_view name) const {
  for (const auto& [k, v] : headers) {
    if (k == name) return std::string_view(v);
  }
  return std::nullopt;
}

HttpParseResult parse_http_request(std::string_view bytes, const HttpLimits& limits) {
  // RFC 9112 2.2: ignore at least one empty line before the request line.
  size_t start = 0;
  while (start + 1 < bytes.size() && bytes[start] == '\r' && bytes[start + 1] == '\n' && start < 4) start += 2;
  const std::string_view data = bytes.substr(start);

  const size_t head_end = data.find("\r\n\r\n");
  const std::string_view seen =
      data.substr(0, head_end == std::string_view::npos ? std::min(data.size(), limits.max_header_bytes + 1)
                                                        : head_end + 2);
  if (!line_endings_ok(seen)) return reject(400, "malformed header section: lines must end in CRLF");
  if (head_end == std::string_view::npos) {
    // Reject a bad request line as soon as it is complete rather than waiting for the headers.
    const size_t eol = data.find("\r\n");
    if (eol != std::string_view::npos && eol <= limits.max_header_bytes) {
      HttpRequest probe;
      if (auto err = parse_request_line(data.substr(0, eol), limits, probe)) return *err;
    } else if (data.size() > limits.max_target_bytes + 64 && eol == std::string_view::npos) {
      const size_t sp1 = data.find(' ');
      if (sp1 != std::string_view::npos && data.size() - sp1 > limits.max_target_bytes + 1 &&
          data.find(' ', sp1 + 1) == std::string_view::npos) {
        return reject(414, "request target longer than " + std::to_string(limits.max_target_bytes) + " bytes");
      }
    }
    if (data.size() > limits.max_header_bytes) {
      return reject(431, "header section longer than " + std::to_string(limits.max_header_bytes) + " bytes");
    }
    return {};
  }
  if (head_end + 4 > limits.max_header_bytes) {
    return reject(431, "header section longer than " + std::to_string(limits.max_header_bytes) + " bytes");
  }

  HttpParseResult result;
  HttpRequest& req = result.request;
  const std::string_view head = data.substr(0, head_end);
  size_t pos = head.find("\r\n");
  if (auto err = parse_request_line(head.substr(0, pos), limits, req)) return *err;

  std::optional<uint64_t> content_length;
  std::optional<std::string> transfer_encoding;
  std::optional<std::string> connection;
  while (pos != std::string_view::npos) {
    const size_t line_start = pos + 2;
    const size_t next = head.find("\r\n", line_start);
    const std::string_view line =
        head.substr(line_start, next == std::string_view::npos ? std::string_view::npos : next - line_start);
    pos = next;
    if (line.empty()) return reject(400, "malformed header section: empty header line");
    if (line.front() == ' ' || line.front() == '\t') {
      return reject(400, "malformed header section: obsolete line folding");
    }
    const size_t colon = line.find(':');
    if (colon == std::string_view::npos) return reject(400, "malformed header line: missing ':'");
    const std::string_view name = line.substr(0, colon);
    if (!is_token(name)) return reject(400, "malformed header line: invalid header name");
    const std::string_view value = trim(line.substr(colon + 1));
    if (!is_field_value(value)) return reject(400, "malformed header line: invalid byte in the value");
    if (req.headers.size() >= limits.max_headers) {
      return reject(431, "more than " + std::to_string(limits.max_headers) + " header fields");
    }
    std::string lname = lower(name);
    if (lname == "content-length") {
      bool too_large = false;
      const auto len = parse_length(value, limits.max_body_bytes, too_large);
      if (too_large) {
        return reject(413, "request body larger than " + std::to_string(limits.max_body_bytes) + " bytes");
      }
      if (!len) return reject(400, "invalid Content-Length");
      if (content_length && *content_length != *len) return reject(400, "conflicting Content-Length headers");
      content_length = len;
    } else if (lname == "transfer-encoding") {
      if (transfer_encoding) return reject(400, "more than one Transfer-Encoding header");
      transfer_encoding = lower(value);
    } else if (lname == "connection") {
      connection = lower(value);
    }
    req.headers.emplace_back(std::move(lname), std::string(value));
  }
  if (transfer_encoding) {
    // Only "chunked" alone: a coding such as gzip would need decompression, and a message with
    // both framings is a request-smuggling vector (RFC 9112 6.3), so it is refused.
    if (*transfer_encoding != "chunked") {
      return reject(501, "Transfer-Encoding other than chunked is not supported");
    }
    if (content_length) return reject(400, "both Content-Length and Transfer-Encoding");
    if (req.version_minor == 0) return reject(400, "Transfer-Encoding in an HTTP/1.0 request");
  }
  if (req.version_minor == 1 && !req.header("host")) return reject(400, "HTTP/1.1 request without a Host header");
  // Expect (RFC 9110 10.1.1): 100-continue asks for an interim response before the body is sent;
  // no other expectation can be met. An HTTP/1.0 request's Expect is ignored, as required.
  bool expect_continue = false;
  if (req.version_minor == 1) {
    for (const auto& [name, value] : req.headers) {
      if (name != "expect") continue;
      if (lower(value) != "100-continue") return reject(417, "the only supported Expect is 100-continue");
      expect_continue = true;
    }
  }

  if (req.version_minor == 1) {
    req.keep_alive = !(connection && connection->find("close") != std::string::npos);
  } else {
    req.keep_alive = connection && connection->find("keep-alive") != std::string::npos;
  }

  const size_t body_start = start + head_end + 4;
  const bool no_body_yet = bytes.size() == body_start;
  if (transfer_encoding) {
    size_t encoded = 0;
    HttpParseResult body = parse_chunked_body(bytes.substr(body_start), limits, req.body, encoded);
    if (body.state == State::kIncomplete) body.expects_continue = expect_continue && no_body_yet;
    if (body.state != State::kComplete) return body;
    result.state = State::kComplete;
    result.consumed = body_start + encoded;
    return result;
  }
  const uint64_t body_len = content_length.value_or(0);
  if (bytes.size() - body_start < body_len) {
    HttpParseResult more;
    more.expects_continue = expect_continue && no_body_yet;
    return more;
  }
  req.body = std::string(bytes.substr(body_start, body_len));
  result.state = State::kComplete;
  result.consumed = body_start + body_len;
  return result;
}

}  // namespace weft
