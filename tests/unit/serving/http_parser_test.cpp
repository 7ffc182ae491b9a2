#include "serving/http_parser.h"

#include <random>
#include <string>

#include "gtest/gtest.h"

namespace weft {
namespace {

using State = HttpParseResult::State;

const std::string kPost =
    "POST /v1/completions?x=1 HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
    "Content-Length: 13\r\nX-Trim:  \t spaced \t\r\n\r\n{\"prompt\":\"\"}";

TEST(HttpParserTest, ParsesACompleteRequest) {
  const HttpParseResult r = parse_http_request(kPost + "GET / HTTP/1.1\r\n");
  ASSERT_EQ(r.state, State::kComplete) << r.error;
  EXPECT_EQ(r.consumed, kPost.size());
  EXPECT_EQ(r.request.method, "POST");
  EXPECT_EQ(r.request.path, "/v1/completions");
  EXPECT_EQ(r.request.query, "x=1");
  EXPECT_EQ(r.request.body, "{\"prompt\":\"\"}");
  EXPECT_EQ(r.request.header("content-type"), "application/json");
  EXPECT_EQ(r.request.header("x-trim"), "spaced");
  EXPECT_TRUE(r.request.keep_alive);
}

TEST(HttpParserTest, EveryPrefixIsIncomplete) {
  for (size_t n = 0; n < kPost.size(); ++n) {
    EXPECT_EQ(parse_http_request(kPost.substr(0, n)).state, State::kIncomplete) << n;
  }
}

TEST(HttpParserTest, KeepAliveFollowsVersionAndConnection) {
  EXPECT_FALSE(parse_http_request("GET / HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n").request.keep_alive);
  EXPECT_FALSE(parse_http_request("GET / HTTP/1.0\r\n\r\n").request.keep_alive);
  EXPECT_TRUE(parse_http_request("GET / HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n").request.keep_alive);
}

struct Bad {
  std::string bytes;
  int status;
};

TEST(HttpParserTest, RejectsMalformedRequestsWithTheRightStatus) {
  HttpLimits limits;
  limits.max_header_bytes = 1024;
  limits.max_headers = 10;
  limits.max_body_bytes = 100;
  limits.max_target_bytes = 200;
  const std::vector<Bad> cases = {
      {"GET / HTTP/1.1\nHost: a\n\n", 400},                          // bare LF
      {"GET / HTTP/1.1\r\nHost: a\r\n folded\r\n\r\n", 400},         // obs-fold
      {"GET / HTTP/1.1\r\nHo st: a\r\n\r\n", 400},                   // name not a token
      {"GET / HTTP/1.1\r\nHost a\r\n\r\n", 400},                     // no colon
      {"GET / HTTP/1.1\r\n\r\n", 400},                               // no Host in 1.1
      {"G(T / HTTP/1.1\r\nHost: a\r\n\r\n", 400},                    // bad method
      {"GET nopath HTTP/1.1\r\nHost: a\r\n\r\n", 400},               // bad target
      {"GET / HTTP/2.0\r\nHost: a\r\n\r\n", 505},
      {"GET / HTTP/1.1\r\nHost: a\r\nContent-Length: -1\r\n\r\n", 400},
      {"GET / HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n", 400},
      {"GET / HTTP/1.1\r\nHost: a\r\nContent-Length: 99999999999999999999999\r\n\r\n", 413},
      {"GET / HTTP/1.1\r\nHost: a\r\nContent-Length: 101\r\n\r\n", 413},
      {"GET / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip\r\n\r\n", 501},
      {"GET / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip, chunked\r\n\r\n", 501},
      {"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n0\r\n\r\n", 400},
      {"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n", 400},
      {"POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 400},
      {"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nab\r\n0\r\n\r\n", 400},
      {"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n2 x\r\nab\r\n0\r\n\r\n", 400},
      {"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nabc\r\n0\r\n\r\n", 400},
      {"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n0\r\nbad trailer\r\n\r\n", 400},
      {"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n" + std::string(2000, '1'), 400},
      {"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n65\r\n", 413},        // 101 > 100
      {"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\nffffffffffffffffff\r\n", 413},
      {"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n" + std::string(60, '1') + "\r\n", 413},
      // 40 chunks of 1 byte: 40 decoded bytes, but 240 encoded ones, over the 100-byte limit.
      {"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n" + [] {
         std::string s;
         for (int i = 0; i < 40; ++i) s += "1;e=1\r\nx\r\n";
         return s;
       }(), 413},
      {"GET / HTTP/1.1\r\nHost: a\r\nX: a\x01b\r\n\r\n", 400},
      {"GET /" + std::string(300, 'a') + " HTTP/1.1\r\n", 414},
      {"GET / HTTP/1.1\r\nHost: a\r\nX: " + std::string(2000, 'a'), 431},
      {"GET / HTTP/1.1\r\nHost: a\r\n" + std::string("X: 1\r\n") + "A: 1\r\nB: 1\r\nC: 1\r\nD: 1\r\n"
       "E: 1\r\nF: 1\r\nG: 1\r\nH: 1\r\nI: 1\r\nJ: 1\r\n\r\n", 431},
      {std::string("GET / HTTP/1.1\r\nHost: a\0\r\n\r\n", 25), 400},
  };
  for (const Bad& c : cases) {
    const HttpParseResult r = parse_http_request(c.bytes, limits);
    EXPECT_EQ(r.state, State::kError) << c.bytes;
    EXPECT_EQ(r.error_status, c.status) << c.bytes << " -> " << r.error;
    EXPECT_FALSE(r.error.empty());
  }
}

const std::string kChunked =
    "POST /v1/completions HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding: Chunked\r\n\r\n"
    "5\r\n{\"pro\r\n"
    "A;name=value\r\nmpt\":\"abc\"\r\n"
    "1 ; last\r\n}\r\n"
    "0\r\nX-Checksum: 1\r\n\r\n";

TEST(HttpParserTest, ChunkedBodiesAreDecoded) {
  const HttpParseResult r = parse_http_request(kChunked + "GET / HTTP/1.1\r\n");
  ASSERT_EQ(r.state, State::kComplete) << r.error;
  EXPECT_EQ(r.consumed, kChunked.size());
  EXPECT_EQ(r.request.body, "{\"prompt\":\"abc\"}");
  EXPECT_EQ(r.request.header("transfer-encoding"), "Chunked");
  for (size_t n = 0; n < kChunked.size(); ++n) {
    EXPECT_EQ(parse_http_request(kChunked.substr(0, n)).state, State::kIncomplete) << n;
  }
  // The smallest: no data at all.
  const HttpParseResult empty =
      parse_http_request("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n");
  ASSERT_EQ(empty.state, State::kComplete) << empty.error;
  EXPECT_EQ(empty.request.body, "");
  // Leading zeros in a chunk size are allowed.
  const HttpParseResult zeros = parse_http_request(
      "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n" + std::string(40, '0') + "2\r\nok\r\n0\r\n\r\n");
  ASSERT_EQ(zeros.state, State::kComplete) << zeros.error;
  EXPECT_EQ(zeros.request.body, "ok");
}

// Extra tokens or a version that is not HTTP/DIGIT.DIGIT make a malformed request line (400);
// only a well-formed version other than 1.0/1.1 is 505. Decided from the request line alone.
TEST(HttpParserTest, RequestLineVersionIs400WhenMalformedAnd505WhenUnsupported) {
  for (const char* line : {"GET / HTTP/1.1 extra", "GET / HTTP/1.1 ", "GET / HTTP/1.1x", "GET / HTTP/1",
                           "GET / HTTP/1.", "GET / HTTP/11.1", "GET / http/1.1", "GET / HTTP/a.b"}) {
    for (const std::string& bytes : {std::string(line) + "\r\n", std::string(line) + "\r\nHost: a\r\n\r\n"}) {
      const HttpParseResult r = parse_http_request(bytes);
      EXPECT_EQ(r.state, State::kError) << bytes;
      EXPECT_EQ(r.error_status, 400) << bytes << " -> " << r.error;
    }
  }
  for (const char* line : {"GET / HTTP/2.0", "GET / HTTP/1.2", "GET / HTTP/0.9", "GET / HTTP/9.9"}) {
    const HttpParseResult r = parse_http_request(std::string(line) + "\r\nHost: a\r\n\r\n");
    EXPECT_EQ(r.error_status, 505) << line << " -> " << r.error;
  }
}

const std::string kChunkedHead = "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n";

// The trailer section is bounded like the header section: bytes and field count, 431.
TEST(HttpParserTest, ChunkedTrailersAreBoundedByTheHeaderLimits) {
  const HttpLimits limits;  // 16 KiB, 100 fields
  std::string many;
  for (int i = 0; i < 1000; ++i) many += "X-T" + std::to_string(i) + ": 1\r\n";
  const HttpParseResult fields = parse_http_request(kChunkedHead + "0\r\n" + many + "\r\n", limits);
  EXPECT_EQ(fields.state, State::kError);
  EXPECT_EQ(fields.error_status, 431) << fields.error;
  // Exactly max_headers fields are fine.
  std::string hundred;
  for (int i = 0; i < 100; ++i) hundred += "X-T" + std::to_string(i) + ": 1\r\n";
  EXPECT_EQ(parse_http_request(kChunkedHead + "0\r\n" + hundred + "\r\n", limits).state, State::kComplete);

  const std::string big = "X-Big: " + std::string(4 << 20, 'a') + "\r\n";
  const HttpParseResult bytes = parse_http_request(kChunkedHead + "0\r\n" + big + "\r\n", limits);
  EXPECT_EQ(bytes.error_status, 431) << bytes.error;
  // Decided before the section ends: a long unterminated field, or many short complete ones.
  EXPECT_EQ(parse_http_request(kChunkedHead + "0\r\n" + big.substr(0, 20000), limits).error_status, 431);
  std::string lines;
  for (int i = 0; i < 90; ++i) lines += "X-" + std::to_string(i) + ": " + std::string(200, 'v') + "\r\n";
  EXPECT_EQ(parse_http_request(kChunkedHead + "0\r\n" + lines, limits).error_status, 431);
  // A section of exactly max_header_bytes (fields + the empty line) is accepted; one more byte is not.
  HttpLimits small;
  small.max_header_bytes = 1024;
  const std::string fit = "X: " + std::string(1024 - 2 - 5, 'v') + "\r\n";
  ASSERT_EQ(fit.size() + 2, 1024u);
  EXPECT_EQ(parse_http_request(kChunkedHead + "0\r\n" + fit + "\r\n", small).state, State::kComplete);
  const std::string over = "X: " + std::string(1024 - 2 - 4, 'v') + "\r\n";
  EXPECT_EQ(parse_http_request(kChunkedHead + "0\r\n" + over + "\r\n", small).error_status, 431);
}

// A bare LF (or a CR without LF) in the chunked framing is a 400 at once, not a wait for a CRLF.
TEST(HttpParserTest, BareLineEndsInChunkedFramingAreRejectedAtOnce) {
  for (const std::string body : {"5\nhello\r\n0\r\n\r\n", "0\n\n", "0\n", "0\r\n\n", "5\r\nhello\n",
                                 "5\r\nhello\r\r\n0\r\n\r\n", "0\r\nX: 1\n", "0\r\nX: 1\r\n\n", "0\rx",
                                 "5;ext\n", "5\r\nhelloX"}) {
    const HttpParseResult r = parse_http_request(kChunkedHead + body);
    EXPECT_EQ(r.state, State::kError) << body;
    EXPECT_EQ(r.error_status, 400) << body << " -> " << r.error;
  }
}

TEST(HttpParserTest, ExpectContinueIsReportedUntilTheBodyStarts) {
  const std::string head = "POST / HTTP/1.1\r\nHost: a\r\nExpect: 100-Continue\r\nContent-Length: 5\r\n\r\n";
  const HttpParseResult waiting = parse_http_request(head);
  EXPECT_EQ(waiting.state, State::kIncomplete);
  EXPECT_TRUE(waiting.expects_continue);
  EXPECT_FALSE(parse_http_request(head.substr(0, head.size() - 1)).expects_continue);  // headers not done
  EXPECT_FALSE(parse_http_request(head + "he").expects_continue);                      // body started
  EXPECT_EQ(parse_http_request(head + "hello").state, State::kComplete);
  const HttpParseResult chunked =
      parse_http_request("POST / HTTP/1.1\r\nHost: a\r\nExpect: 100-continue\r\nTransfer-Encoding: chunked\r\n\r\n");
  EXPECT_EQ(chunked.state, State::kIncomplete);
  EXPECT_TRUE(chunked.expects_continue);
  // Nothing to wait for: no interim response.
  EXPECT_EQ(parse_http_request("GET / HTTP/1.1\r\nHost: a\r\nExpect: 100-continue\r\n\r\n").state, State::kComplete);
  // Unacceptable headers are answered instead of continued.
  HttpLimits limits;
  limits.max_body_bytes = 4;
  EXPECT_EQ(parse_http_request(head, limits).error_status, 413);
  // Other expectations: 417. HTTP/1.0 ignores Expect.
  for (const char* e : {"Expect: 200-ok", "Expect: 100-continue, x", "Expect: 100-continue\r\nExpect: x"}) {
    const HttpParseResult r = parse_http_request(std::string("POST / HTTP/1.1\r\nHost: a\r\n") + e +
                                                 "\r\nContent-Length: 1\r\n\r\n");
    EXPECT_EQ(r.state, State::kError) << e;
    EXPECT_EQ(r.error_status, 417) << e;
  }
  const HttpParseResult old =
      parse_http_request("POST / HTTP/1.0\r\nExpect: 100-continue\r\nContent-Length: 1\r\n\r\n");
  EXPECT_EQ(old.state, State::kIncomplete);
  EXPECT_FALSE(old.expects_continue);
  EXPECT_EQ(parse_http_request("POST / HTTP/1.0\r\nExpect: odd\r\nContent-Length: 0\r\n\r\n").state, State::kComplete);
}

// Property: for random mutations and truncations of valid requests the parser returns one of its
// three states, never consumes more than it was given, and a complete parse re-parses to the same
// request from exactly the consumed bytes.
TEST(HttpParserTest, RandomMutationsNeverMisbehave) {
  std::mt19937 rng(1234);
  const std::string alphabet = "GETPOST /:\r\n\t HTTP/1.01Content-Length: 0123456789abc\x00\xff{}";
  for (int iter = 0; iter < 20000; ++iter) {
    std::string s = iter % 2 ? kPost : kChunked;
    const int edits = 1 + static_cast<int>(rng() % 8);
    for (int e = 0; e < edits; ++e) {
      const size_t pos = rng() % (s.size() + 1);
      switch (rng() % 4) {
        case 0: if (pos < s.size()) s[pos] = alphabet[rng() % alphabet.size()]; break;
        case 1: s.insert(pos, 1, alphabet[rng() % alphabet.size()]); break;
        case 2: if (pos < s.size()) s.erase(pos, 1 + rng() % 4); break;
        case 3: s.resize(pos); break;
      }
    }
    const HttpParseResult r = parse_http_request(s);
    if (r.state == State::kComplete) {
      ASSERT_LE(r.consumed, s.size());
      const HttpParseResult again = parse_http_request(s.substr(0, r.consumed));
      ASSERT_EQ(again.state, State::kComplete);
      EXPECT_EQ(again.request.body, r.request.body);
      EXPECT_EQ(again.request.headers, r.request.headers);
    } else if (r.state == State::kError) {
      EXPECT_GE(r.error_status, 400);
      EXPECT_LT(r.error_status, 600);
    }
  }
}

}  // namespace
}  // namespace weft
