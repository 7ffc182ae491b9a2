// AsyncEngine against the synchronous Engine it wraps: the same requests give the same tokens,
// from many submitting threads at once; aborts free every KV block; the bounded queue refuses.
#include "engine/async_engine.h"

#include <filesystem>
#include <map>
#include <thread>

#include "engine/local_engine.h"
#include "gtest/gtest.h"

namespace weft {
namespace {

const std::filesystem::path kModel = std::filesystem::path(WEFT_SOURCE_DIR) / "tests/golden/models/llama_gqa";

std::shared_ptr<LocalEngine> make_engine(int max_num_seqs = 64) {
  LocalEngineOptions o;
  o.model_dir = kModel;
  o.num_threads = 1;
  o.kv.max_blocks = 64;
  o.scheduler.max_num_seqs = max_num_seqs;
  auto e = LocalEngine::create(o);
  EXPECT_TRUE(e.ok()) << e.status();
  return std::shared_ptr<LocalEngine>(std::move(*e));
}

Request request(int i, int max_tokens) {
  Request r;
  r.prompt_ids = {1, static_cast<int32_t>(3 + i % 50), static_cast<int32_t>(7 + i % 13)};
  r.params.temperature = 0.0f;
  r.params.max_tokens = max_tokens;
  r.params.ignore_eos = true;
  return r;
}

// Collects a stream to the end: token ids per sequence index, and finish reasons.
std::pair<std::map<int, std::vector<int32_t>>, std::map<int, FinishReason>> drain(RequestStream& s) {
  std::map<int, std::vector<int32_t>> ids;
  std::map<int, FinishReason> reasons;
  for (;;) {
    RequestStream::Batch b = s.take();
    for (const StreamEvent& e : b.events) {
      ids[e.output.index].insert(ids[e.output.index].end(), e.output.token_ids.begin(), e.output.token_ids.end());
      if (e.output.finished) reasons[e.output.index] = e.output.finish_reason;
    }
    EXPECT_TRUE(b.status.ok()) << b.status;
    if (b.finished) return {ids, reasons};
    s.wait(std::chrono::milliseconds(1000));
  }
}

TEST(AsyncEngineTest, ConcurrentSubmittersGetTheTokensOfTheSynchronousEngine) {
  constexpr int kRequests = 24;
  std::vector<std::vector<int32_t>> expected(kRequests);
  {
    auto sync = make_engine();
    for (int i = 0; i < kRequests; ++i) {
      auto id = sync->engine().add_request(request(i, 6));
      ASSERT_TRUE(id.ok());
      while (sync->engine().has_unfinished()) {
        auto out = sync->engine().step();
        ASSERT_TRUE(out.ok());
        for (const auto& o : *out) expected[i].insert(expected[i].end(), o.token_ids.begin(), o.token_ids.end());
      }
    }
  }
  auto owner = make_engine();
  AsyncEngine engine(owner, owner->engine());
  engine.start();
  std::vector<std::vector<int32_t>> got(kRequests);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = t; i < kRequests; i += 4) {
        auto s = engine.submit(request(i, 6));
        ASSERT_TRUE(s.ok());
        auto [ids, reasons] = drain(**s);
        got[i] = ids[0];
        EXPECT_EQ(reasons[0], FinishReason::kLength);
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(got, expected);
}

TEST(AsyncEngineTest, AbortEndsTheRequestAndFreesItsBlocks) {
  auto owner = make_engine();
  AsyncEngine engine(owner, owner->engine());
  engine.start();
  Request r = request(1, 400);
  r.params.n = 2;
  auto s = engine.submit(r);
  ASSERT_TRUE(s.ok());
  // Wait for a first token, then abort.
  while ((*s)->take().events.empty()) (*s)->wait(std::chrono::milliseconds(1000));
  engine.abort((*s)->key());
  auto [ids, reasons] = drain(**s);
  EXPECT_EQ(reasons.size(), 2u);
  EXPECT_EQ(reasons[0], FinishReason::kAbort);
  EXPECT_EQ(reasons[1], FinishReason::kAbort);
  for (int i = 0; i < 1000 && engine.gauges().num_free_kv_blocks != engine.gauges().num_kv_blocks; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  EXPECT_EQ(engine.gauges().num_free_kv_blocks, engine.gauges().num_kv_blocks);
}

TEST(AsyncEngineTest, EngineValidationErrorsArriveOnTheStream) {
  auto owner = make_engine();
  AsyncEngine engine(owner, owner->engine());
  engine.start();
  Request r = request(0, 4);
  r.prompt_ids.push_back(999999);
  auto s = engine.submit(r);
  ASSERT_TRUE(s.ok());
  RequestStream::Batch b;
  while (!(b = (*s)->take()).finished) (*s)->wait(std::chrono::milliseconds(1000));
  EXPECT_EQ(b.status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(b.status.message().find("999999"), std::string::npos);
}

TEST(AsyncEngineTest, FullWaitingQueueIsRefusedAndStopFailsWhatIsLeft) {
  auto owner = make_engine();
  // Not started: submissions stay queued, so the queue bound is exact.
  AsyncEngine engine(owner, owner->engine(), {.max_waiting = 2});
  auto a = engine.submit(request(0, 4));
  auto b = engine.submit(request(1, 4));
  auto c = engine.submit(request(2, 4));
  ASSERT_TRUE(a.ok());
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(c.status().code(), absl::StatusCode::kResourceExhausted);
  engine.stop();
  engine.run();  // returns at once, failing the queued requests
  EXPECT_EQ((*a)->take().status.code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(engine.submit(request(3, 4)).status().code(), absl::StatusCode::kUnavailable);
}

}  // namespace
}  // namespace weft
