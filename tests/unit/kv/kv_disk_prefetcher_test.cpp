// The disk prefetcher's state machine: queued -> read on its thread -> ready or missed; taken
// once; refused past its memory; a block taken before its read is done is cancelled; what no
// request asked for in a round is discarded. Reads are gated so each state can be looked at; the
// last test reads a real disk tier. In the TSan list (scripts/sanitize.sh).
#include "kv/kv_disk_prefetcher.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <filesystem>
#include <mutex>
#include <numeric>

#include "kv/kv_disk_tier.h"

namespace weft {
namespace {

using State = KvDiskPrefetcher::State;
using Taken = KvDiskPrefetcher::Taken;
constexpr int64_t kBlockBytes = 64;

std::vector<uint8_t> payload_of(uint64_t hash) { return std::vector<uint8_t>(kBlockBytes, static_cast<uint8_t>(hash)); }

// Holds every read until opened; counts the reads that started.
class Gate {
 public:
  void pass() {
    std::unique_lock<std::mutex> lock(mu_);
    ++entered_;
    cv_.notify_all();
    cv_.wait(lock, [&] { return open_; });
  }
  void open() {
    std::lock_guard<std::mutex> lock(mu_);
    open_ = true;
    cv_.notify_all();
  }
  void wait_entered(int n) {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return entered_ >= n; });
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool open_ = false;
  int entered_ = 0;
};

// Reads hash h as payload_of(h), misses odd hashes, after passing the gate.
KvDiskPrefetcher::ReadFn gated_reader(Gate& gate, std::atomic<int>& reads) {
  return [&gate, &reads](uint64_t hash, uint64_t, std::span<const int32_t>) -> std::optional<std::vector<uint8_t>> {
    gate.pass();
    ++reads;
    if (hash % 2 == 1) return std::nullopt;
    return payload_of(hash);
  };
}

void wait_idle(KvDiskPrefetcher& p) {
  while (p.pending()) p.wait_for_progress();
}

const std::vector<int32_t> kTokens = {1, 2, 3, 4};

TEST(KvDiskPrefetcherTest, ReadsOnItsThreadAndServesEachBlockOnce) {
  Gate gate;
  std::atomic<int> reads = 0;
  KvDiskPrefetcher p(gated_reader(gate, reads), kBlockBytes, 1 << 20);
  EXPECT_FALSE(p.pending());
  EXPECT_EQ(p.request(10, 1, kTokens), State::kQueued);
  EXPECT_EQ(p.request(10, 1, kTokens), State::kQueued);  // asked again: still the one read
  EXPECT_TRUE(p.pending());
  gate.wait_entered(1);
  EXPECT_EQ(p.request(10, 1, kTokens), State::kQueued);  // being read
  gate.open();
  wait_idle(p);
  EXPECT_EQ(p.request(10, 1, kTokens), State::kReady);
  EXPECT_EQ(p.bytes(), kBlockBytes);
  std::vector<uint8_t> got;
  EXPECT_EQ(p.take(10, got), Taken::kReady);
  EXPECT_EQ(got, payload_of(10));
  EXPECT_EQ(p.bytes(), 0);
  EXPECT_EQ(p.take(10, got), Taken::kNotFetched);  // taken once
  EXPECT_EQ(reads.load(), 1);
  const KvDiskPrefetchStats s = p.stats();
  EXPECT_EQ(s.requested, 1);
  EXPECT_EQ(s.read, 1);
  EXPECT_EQ(s.served, 1);
  EXPECT_EQ(s.not_fetched, 1);
}

TEST(KvDiskPrefetcherTest, AFailedReadIsAMissTakenOnce) {
  Gate gate;
  gate.open();
  std::atomic<int> reads = 0;
  KvDiskPrefetcher p(gated_reader(gate, reads), kBlockBytes, 1 << 20);
  EXPECT_EQ(p.request(11, 1, kTokens), State::kQueued);
  wait_idle(p);
  EXPECT_EQ(p.request(11, 1, kTokens), State::kMissed);
  EXPECT_EQ(p.bytes(), 0);  // a miss holds no memory
  std::vector<uint8_t> got;
  EXPECT_EQ(p.take(11, got), Taken::kMissed);
  EXPECT_EQ(p.stats().missed, 1);
  EXPECT_EQ(reads.load(), 1);
}

TEST(KvDiskPrefetcherTest, RefusesRequestsPastItsMemory) {
  Gate gate;
  std::atomic<int> reads = 0;
  KvDiskPrefetcher p(gated_reader(gate, reads), kBlockBytes, 2 * kBlockBytes);
  EXPECT_EQ(p.request(2, 1, kTokens), State::kQueued);
  EXPECT_EQ(p.request(4, 1, kTokens), State::kQueued);
  EXPECT_EQ(p.request(6, 1, kTokens), State::kRefused);
  EXPECT_EQ(p.stats().refused, 1);
  gate.open();
  wait_idle(p);
  EXPECT_EQ(p.request(6, 1, kTokens), State::kRefused);  // ready blocks still hold the memory
  std::vector<uint8_t> got;
  EXPECT_EQ(p.take(2, got), Taken::kReady);
  EXPECT_EQ(p.request(6, 1, kTokens), State::kQueued);
  wait_idle(p);
  EXPECT_EQ(p.take(6, got), Taken::kReady);
  EXPECT_EQ(got, payload_of(6));
}

TEST(KvDiskPrefetcherTest, TakingABlockBeforeItsReadIsDoneCancelsIt) {
  Gate gate;
  std::atomic<int> reads = 0;
  KvDiskPrefetcher p(gated_reader(gate, reads), kBlockBytes, 1 << 20);
  EXPECT_EQ(p.request(2, 1, kTokens), State::kQueued);
  EXPECT_EQ(p.request(4, 1, kTokens), State::kQueued);
  gate.wait_entered(1);  // 2 is being read, 4 waits behind it
  std::vector<uint8_t> got;
  EXPECT_EQ(p.take(2, got), Taken::kNotFetched);
  EXPECT_EQ(p.take(4, got), Taken::kNotFetched);
  EXPECT_FALSE(p.pending());
  EXPECT_EQ(p.bytes(), 0);
  // Asked for again while the cancelled read is still in progress: a fresh request, not that
  // read's late result.
  EXPECT_EQ(p.request(2, 1, kTokens), State::kQueued);
  gate.open();
  wait_idle(p);
  EXPECT_EQ(p.take(2, got), Taken::kReady);
  EXPECT_EQ(got, payload_of(2));
  EXPECT_EQ(reads.load(), 2);  // 2 twice; 4 was never read
  EXPECT_EQ(p.stats().not_fetched, 2);
}

TEST(KvDiskPrefetcherTest, ARoundDiscardsWhatNobodyAskedFor) {
  Gate gate;
  gate.open();
  std::atomic<int> reads = 0;
  KvDiskPrefetcher p(gated_reader(gate, reads), kBlockBytes, 1 << 20);
  p.request(2, 1, kTokens);
  p.request(4, 1, kTokens);
  wait_idle(p);
  p.end_round();  // both asked for in this round: kept
  EXPECT_EQ(p.bytes(), 2 * kBlockBytes);
  EXPECT_EQ(p.request(2, 1, kTokens), State::kReady);
  p.end_round();  // 4's request went away
  EXPECT_EQ(p.bytes(), kBlockBytes);
  EXPECT_EQ(p.stats().discarded, 1);
  std::vector<uint8_t> got;
  EXPECT_EQ(p.take(4, got), Taken::kNotFetched);
  EXPECT_EQ(p.take(2, got), Taken::kReady);
}

TEST(KvDiskPrefetcherTest, StopsWithReadsQueued) {
  Gate gate;
  gate.open();
  std::atomic<int> reads = 0;
  auto p = std::make_unique<KvDiskPrefetcher>(gated_reader(gate, reads), kBlockBytes, 1 << 20);
  for (uint64_t h = 0; h < 64; h += 2) p->request(h, 1, kTokens);
  p.reset();  // joins its thread after at most the read in progress
  EXPECT_LE(reads.load(), 32);
}

TEST(KvDiskPrefetcherTest, ReadsAndChecksARealDiskTier) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("weft_kv_prefetch_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  KvDiskTierOptions o;
  o.dir = dir;
  o.max_bytes = 1 << 20;
  o.key.model_identity = 1;
  o.key.block_size = 4;
  o.key.num_layers = 1;
  o.key.num_kv_heads = 1;
  o.key.head_dim = 8;
  o.block_bytes = kBlockBytes;
  auto opened = KvDiskTier::open(o);
  ASSERT_TRUE(opened.ok()) << opened.status();
  std::unique_ptr<KvDiskTier> disk = *std::move(opened);
  disk->write_async(20, 1, kTokens, payload_of(20));
  disk->flush();
  {
    KvDiskTier* d = disk.get();
    KvDiskPrefetcher p([d](uint64_t h, uint64_t parent, std::span<const int32_t> t) { return d->load(h, parent, t); },
                       kBlockBytes, 1 << 20);
    p.request(20, 1, kTokens);
    p.request(21, 1, kTokens);  // no such file
    const std::vector<int32_t> other = {9, 9, 9, 9};
    wait_idle(p);
    std::vector<uint8_t> got;
    EXPECT_EQ(p.take(20, got), Taken::kReady);
    EXPECT_EQ(got, payload_of(20));
    EXPECT_EQ(p.take(21, got), Taken::kMissed);
    EXPECT_EQ(p.request(20, 1, other), State::kQueued);  // the same hash for another prefix
    wait_idle(p);
    EXPECT_EQ(p.take(20, got), Taken::kMissed);  // checked against the file: never a wrong hit
  }
  EXPECT_EQ(disk->stats().hits, 1);
  disk.reset();
  fs::remove_all(dir);
}

}  // namespace
}  // namespace weft
