// HttpClientConnection against weft's own HttpServer on loopback: each body framing, a peer that
// dies mid-body, and interrupt().
#include "serving/http_client.h"

#include <gtest/gtest.h>

#include <thread>

#include "serving/http_server.h"

namespace weft {
namespace {

using std::chrono::milliseconds;
constexpr milliseconds kTimeout{10000};

class HttpClientTest : public ::testing::Test {
 protected:
  void start(HttpServer::Handler handler) {
    HttpServerOptions options;
    options.port = 0;
    server_ = std::make_unique<HttpServer>(options, std::move(handler));
    ASSERT_TRUE(server_->listen().ok());
    loop_ = std::thread([this] { server_->run(); });
  }
  void TearDown() override {
    if (server_) server_->stop();
    if (loop_.joinable()) loop_.join();
  }
  std::unique_ptr<HttpClientConnection> connect() {
    auto c = HttpClientConnection::connect("127.0.0.1", server_->port(), kTimeout);
    EXPECT_TRUE(c.ok()) << c.status();
    return c.ok() ? std::move(*c) : nullptr;
  }
  std::unique_ptr<HttpServer> server_;
  std::thread loop_;
};

TEST_F(HttpClientTest, ReadsAContentLengthBodyAndSendsTheRequestBody) {
  start([this](ConnectionId id, HttpRequest request) {
    const std::string echo(request.header("x-in").value_or(""));
    server_->respond(id, 201, {{"Content-Type", "text/plain"}, {"X-Echo", echo}},
                     request.method + " " + request.target + " " + request.body);
  });
  auto c = connect();
  ASSERT_TRUE(c);
  ASSERT_TRUE(c->send("POST", "/p?q=1", {{"X-In", "v"}}, "payload", kTimeout).ok());
  auto head = c->read_head(kTimeout);
  ASSERT_TRUE(head.ok()) << head.status();
  EXPECT_EQ(head->status, 201);
  EXPECT_EQ(head->header("x-echo"), "v");
  EXPECT_EQ(head->header("content-type"), "text/plain");
  auto body = c->read_body(kTimeout);
  ASSERT_TRUE(body.ok()) << body.status();
  EXPECT_EQ(*body, "POST /p?q=1 payload");
}

TEST_F(HttpClientTest, DecodesAChunkedStreamPartByPart) {
  start([this](ConnectionId id, HttpRequest) {
    server_->start_stream(id, 200, {{"Content-Type", "text/event-stream"}});
    server_->write_chunk(id, "data: 1\n\n");
    server_->write_chunk(id, "data: 2\n\n");
    server_->end_stream(id);
  });
  auto c = connect();
  ASSERT_TRUE(c);
  ASSERT_TRUE(c->send("GET", "/s", {}, "", kTimeout).ok());
  auto head = c->read_head(kTimeout);
  ASSERT_TRUE(head.ok());
  EXPECT_EQ(head->header("content-type"), "text/event-stream");
  std::string all;
  for (;;) {
    auto part = c->read_body_part(kTimeout);
    ASSERT_TRUE(part.ok()) << part.status();
    if (part->empty()) break;
    all += *part;
  }
  EXPECT_EQ(all, "data: 1\n\ndata: 2\n\n");
}

TEST_F(HttpClientTest, AStreamCutShortIsAnErrorNotAShortBody) {
  start([this](ConnectionId id, HttpRequest) {
    server_->start_stream(id, 200, {{"Content-Type", "text/event-stream"}});
    server_->write_chunk(id, "data: 1\n\n");
    // The server stops with the stream open: the client sees the connection close mid-body.
    server_->post([this] { server_->stop(); });
  });
  auto c = connect();
  ASSERT_TRUE(c);
  ASSERT_TRUE(c->send("GET", "/s", {}, "", kTimeout).ok());
  ASSERT_TRUE(c->read_head(kTimeout).ok());
  auto body = c->read_body(kTimeout);
  ASSERT_FALSE(body.ok());
  EXPECT_EQ(body.status().code(), absl::StatusCode::kUnavailable) << body.status();
}

TEST_F(HttpClientTest, InterruptEndsABlockedRead) {
  start([this](ConnectionId id, HttpRequest) {
    server_->start_stream(id, 200, {{"Content-Type", "text/event-stream"}});  // and nothing more
  });
  auto c = connect();
  ASSERT_TRUE(c);
  ASSERT_TRUE(c->send("GET", "/s", {}, "", kTimeout).ok());
  ASSERT_TRUE(c->read_head(kTimeout).ok());
  std::thread interrupter([&] {
    std::this_thread::sleep_for(milliseconds(100));
    c->interrupt();
  });
  auto part = c->read_body_part(milliseconds(60000));
  interrupter.join();
  ASSERT_FALSE(part.ok());
  EXPECT_EQ(part.status().code(), absl::StatusCode::kCancelled);
}

TEST(HttpClientConnectTest, ARefusedConnectionIsUnavailableAndNamesTheAddress) {
  // Port 1 on loopback: nothing listens there (a privileged port no test server uses).
  auto c = HttpClientConnection::connect("127.0.0.1", 1, milliseconds(2000));
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_NE(c.status().message().find("127.0.0.1:1"), std::string::npos);
}

}  // namespace
}  // namespace weft
