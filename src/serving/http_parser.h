// An HTTP/1.x request parser for untrusted input: a pure function from the bytes received so far
// to "need more", "one complete request (and how many bytes it used)" or "reject with status S".
//
// Accepted: request line `METHOD SP request-target SP HTTP/1.0|HTTP/1.1 CRLF` (method a token,
// target in origin form starting with '/' or "*", visible ASCII only), header fields
// `name ":" OWS value OWS CRLF` (name a token, value without CR/LF/NUL or other control bytes
// except tab), an empty line, then a body of exactly Content-Length bytes (no Content-Length:
// empty body) or, with `Transfer-Encoding: chunked` (HTTP/1.1), a chunked body (chunk
// extensions and trailer fields are accepted and dropped). Header names are lower-cased; values
// keep their case, trimmed of spaces/tabs. `Expect: 100-continue` (HTTP/1.1) sets
// expects_continue on the kIncomplete results that have the whole, acceptable header section
// and no body byte yet: the server should then send `100 Continue`. HTTP/1.0 Expect is ignored.
//
// Rejected (with the status a server should answer), as soon as the bytes decide it:
//   400  malformed request line (extra tokens, a version not `HTTP/DIGIT.DIGIT`) / header line,
//        bare LF or CR (in the header section, chunk size lines, after chunk data and in the
//        trailer section), obsolete line folding, a header name that is not a token, an invalid
//        or conflicting Content-Length, a missing Host in HTTP/1.1, both Content-Length and
//        Transfer-Encoding, Transfer-Encoding in HTTP/1.0 or twice, a malformed chunk (size
//        line not hex or over 1 KiB, data not followed by CRLF, a bad trailer field);
//   413  Content-Length, or the encoded chunked body, above limits.max_body_bytes;
//   414  request target longer than limits.max_target_bytes;
//   417  an HTTP/1.1 Expect other than 100-continue;
//   431  header section longer than limits.max_header_bytes or with more than limits.max_headers
//        fields; the same two limits bound the chunked trailer section (fields + empty line);
//   501  a Transfer-Encoding other than chunked;
//   505  a well-formed HTTP version other than 1.0 and 1.1.
// Never reads past `bytes`, never allocates more than the limits allow, never throws.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace weft {

struct HttpLimits {
  size_t max_header_bytes = 16 * 1024;  // request line + headers + the blank line
  size_t max_headers = 100;
  size_t max_target_bytes = 8 * 1024;
  size_t max_body_bytes = 8 * 1024 * 1024;
};

struct HttpRequest {
  std::string method;   // "GET", "POST", ... (case-sensitive, as sent)
  std::string target;   // "/v1/completions?x=1"
  std::string path;     // target up to '?'
  std::string query;    // after '?', without it
  int version_minor = 1;  // HTTP/1.<minor>
  std::vector<std::pair<std::string, std::string>> headers;  // lower-case names, in order
  std::string body;
  bool keep_alive = true;  // from the version and the Connection header

  // The first value of header `name` (lower-case).
  std::optional<std::string_view> header(std::string_view name) const;
};

struct HttpParseResult {
  enum class State { kIncomplete, kComplete, kError };
  State state = State::kIncomplete;
  size_t consumed = 0;       // kComplete: bytes of `bytes` this request used
  HttpRequest request;       // kComplete
  int error_status = 0;      // kError: 400, 413, 414, 417, 431, 501 or 505
  // kIncomplete: the headers are complete and acceptable, they ask for 100-continue, and no
  // body byte has arrived.
  bool expects_continue = false;
  std::string error;         // kError: what was wrong, for the response body
};

HttpParseResult parse_http_request(std::string_view bytes, const HttpLimits& limits = {});

}  // namespace weft
