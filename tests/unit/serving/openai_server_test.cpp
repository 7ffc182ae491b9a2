// OpenAiServer over a real socket with an engine whose step fails (as when a rank dies): every
// admitted request ends with a 503 service_unavailable error naming the failure, streams as a
// final SSE error event and [DONE], other requests as a JSON body. No model, no MPI: the
// executor is a stub that fails when the test lets it.
#include "serving/openai_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>

#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace weft {
namespace {

// Blocks in submit() until released, then fails the step.
class FailingExecutor : public StepExecutor {
 public:
  absl::Status submit(const StepPlan&) override {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return released_; });
    return absl::InternalError("rank 1 stopped responding");
  }
  absl::StatusOr<StepOutput> collect() override { return absl::InternalError("nothing submitted"); }
  void release() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      released_ = true;
    }
    cv_.notify_all();
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool released_ = false;
};

int connect_to(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  timeval tv{30, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  EXPECT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  return fd;
}

void send_all(int fd, const std::string& data) {
  size_t off = 0;
  while (off < data.size()) {
    const ssize_t n = ::send(fd, data.data() + off, data.size() - off, MSG_NOSIGNAL);
    ASSERT_GT(n, 0);
    off += static_cast<size_t>(n);
  }
}

// Reads until `done(bytes)` holds or the peer closes (or 30 s pass).
template <typename Done>
std::string read_until(int fd, Done done) {
  std::string got;
  char buf[4096];
  while (!done(got)) {
    const ssize_t n = ::recv(fd, buf, sizeof(buf), 0);
    if (n <= 0) break;
    got.append(buf, static_cast<size_t>(n));
  }
  return got;
}

std::string post(const std::string& body) {
  return "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: " +
         std::to_string(body.size()) + "\r\n\r\n" + body;
}

nlohmann::json error_of(const std::string& json_text) {
  auto j = nlohmann::json::parse(json_text, nullptr, /*allow_exceptions=*/false);
  EXPECT_TRUE(j.is_object() && j.contains("error")) << json_text;
  return j.is_object() && j.contains("error") ? j["error"] : nlohmann::json();
}

TEST(OpenAiServerTest, AnEngineFailureEndsStreamsWithAnErrorEventAndOtherRequestsWith503) {
  EngineConfig config;
  config.vocab_size = 32;
  config.max_model_len = 64;
  FailingExecutor executor;
  ThreadPool pool(1);
  Engine core(config, /*num_kv_blocks=*/16, /*block_size=*/16, executor, pool);
  AsyncEngine engine(nullptr, core);

  ServedModel model;
  model.name = "m";
  model.max_model_len = config.max_model_len;
  model.vocab_size = config.vocab_size;
  ServingMetrics metrics;
  OpenAiServerOptions options;
  options.http.port = 0;
  OpenAiServer server(options, engine, model, metrics);
  ASSERT_TRUE(server.listen().ok());
  std::thread http([&] { server.run(); });

  // Both requests reach the engine before its loop starts, so both are admitted by its first
  // iteration and both are running when the step fails.
  const int streaming = connect_to(server.port());
  const int whole = connect_to(server.port());
  send_all(streaming, post(R"({"prompt": [1, 2, 3], "max_tokens": 4, "stream": true})"));
  send_all(whole, post(R"({"prompt": [1, 2, 3], "max_tokens": 4})"));
  for (int i = 0; i < 3000 && engine.gauges().num_active_requests < 2; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_EQ(engine.gauges().num_active_requests, 2);
  engine.start();

  // The stream starts on admission, while the step is still running...
  const std::string head = read_until(streaming, [](const std::string& s) { return s.find("\r\n\r\n") != s.npos; });
  EXPECT_EQ(head.rfind("HTTP/1.1 200 ", 0), 0u) << head;
  EXPECT_NE(head.find("text/event-stream"), std::string::npos) << head;
  // ... then the step fails.
  executor.release();

  const std::string end = "data: [DONE]\n\n\r\n0\r\n\r\n";
  const std::string rest = read_until(streaming, [&](const std::string& s) {
    return s.size() >= end.size() && s.compare(s.size() - end.size(), end.size(), end) == 0;
  });
  const std::string events = head + rest;
  const size_t data = events.find("data: {\"error\"");
  ASSERT_NE(data, std::string::npos) << events;
  const size_t eol = events.find("\n\n", data);
  const nlohmann::json event = error_of(events.substr(data + 6, eol - data - 6));
  EXPECT_EQ(event["type"], "service_unavailable") << event;
  EXPECT_NE(event["message"].get<std::string>().find("rank 1 stopped responding"), std::string::npos) << event;
  EXPECT_TRUE(event["code"].is_null()) << event;
  EXPECT_NE(events.find("data: [DONE]\n\n", eol), std::string::npos) << events;

  const std::string response = read_until(whole, [](const std::string& s) {
    const size_t h = s.find("\r\n\r\n");
    const size_t cl = s.find("Content-Length: ");
    return h != s.npos && cl != s.npos && s.size() >= h + 4 + std::stoul(s.substr(cl + 16));
  });
  EXPECT_EQ(response.rfind("HTTP/1.1 503 ", 0), 0u) << response;
  EXPECT_NE(response.find("Retry-After: "), std::string::npos) << response;
  const nlohmann::json error = error_of(response.substr(response.find("\r\n\r\n") + 4));
  EXPECT_EQ(error["type"], "service_unavailable") << error;
  EXPECT_NE(error["message"].get<std::string>().find("rank 1 stopped responding"), std::string::npos) << error;
  EXPECT_TRUE(error["code"].is_null()) << error;

  ::close(streaming);
  ::close(whole);
  server.stop();
  http.join();
  engine.stop();
}

}  // namespace
}  // namespace weft
