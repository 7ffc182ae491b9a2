// The KV tiers below the pool on the golden models, through the whole Engine: a pool too small
// to keep a shared prefix, with a host tier (--kv-offload-bytes), restores it instead of
// recomputing; a disk tier (--kv-disk-cache) lets a fresh engine restore what an earlier one
// wrote; a corrupted disk tier is recomputed. Each run's tokens (and logprobs) equal an engine
// without tiers and without prefix caching.
#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>

#include "kv_tier_workload.h"

namespace weft::golden {
namespace {

namespace fs = std::filesystem;

constexpr int kBlock = kTierBlock;
constexpr int kTokens = kTierTokens;

struct TierSetup {
  int64_t max_blocks = 256;
  bool prefix_caching = true;
  int64_t host_bytes = 0;
  fs::path disk_dir = {};
  std::optional<DType> kv_dtype = DType::kF32;
  int64_t disk_prefetch_bytes = KvTierOptions{}.disk_prefetch_bytes;
};

std::unique_ptr<LocalEngine> make_engine(const std::string& name, const TierSetup& setup) {
  LocalEngineOptions options;
  options.model_dir = model_dir(name);
  options.num_threads = 2;
  options.kv.block_size = kBlock;
  options.kv.dtype = setup.kv_dtype;
  options.kv.max_blocks = setup.max_blocks;
  options.scheduler.enable_prefix_caching = setup.prefix_caching;
  options.kv_tiers.host_bytes = setup.host_bytes;
  options.kv_tiers.disk_dir = setup.disk_dir;
  options.kv_tiers.disk_prefetch_bytes = setup.disk_prefetch_bytes;
  auto engine = LocalEngine::create(options);
  EXPECT_TRUE(engine.ok()) << engine.status();
  return engine.ok() ? std::move(*engine) : nullptr;
}

fs::path fresh_dir(const std::string& tag) {
  const fs::path dir = fs::temp_directory_path() /
                       ("weft_kv_tiers_" + std::to_string(::getpid()) + "_" + tag);
  fs::remove_all(dir);
  return dir;
}

// The workload on an engine without prefix caching (nothing reused): what every tiered run must
// give.
TierRuns uncached_runs(const std::string& name, const TierWorkload& w, bool with_fillers,
                       std::optional<DType> kv_dtype = DType::kF32) {
  auto plain = make_engine(name, {.prefix_caching = false, .kv_dtype = kv_dtype});
  if (plain == nullptr) return {};
  return run_tier_workload(plain->engine(), w, with_fillers);
}

class KvTiersTest : public ::testing::TestWithParam<std::string> {};

TEST_P(KvTiersTest, TheHostTierRestoresAnEvictedPrefixWithIdenticalOutput) {
  const TierWorkload w = tier_workload(load_reference(GetParam()));
  const TierRuns expected = uncached_runs(GetParam(), w, /*with_fillers=*/true);

  auto pool_only = make_engine(GetParam(), {.max_blocks = tight_tier_blocks(w)});
  ASSERT_NE(pool_only, nullptr);
  const TierRuns pool_runs = run_tier_workload(pool_only->engine(), w);
  EXPECT_EQ(compare_tier_runs(pool_runs, expected), "") << "pool only";

  auto tiered = make_engine(GetParam(), {.max_blocks = tight_tier_blocks(w), .host_bytes = 64 << 20});
  ASSERT_NE(tiered, nullptr);
  const TierRuns tier_runs = run_tier_workload(tiered->engine(), w);
  EXPECT_EQ(compare_tier_runs(tier_runs, expected), "") << "host tier";
  const KvTierStats& s = tiered->engine().kv_tiers()->stats();
  EXPECT_GT(s.saved_blocks, 0);
  EXPECT_GT(s.restored_blocks, 0) << "the fillers never pushed the prefix out of the pool";
  // Every shared block came from the pool or the host tier: only the suffix was computed.
  EXPECT_EQ(tier_runs.second_prefilled, static_cast<int64_t>(w.second.size()) - w.shared_blocks * kBlock);
  EXPECT_GT(pool_runs.second_prefilled, tier_runs.second_prefilled);
  EXPECT_EQ(tiered->kv_store()->num_blocks(), s.host_blocks);
  std::printf("%s: second prompt %zu tokens: %lld prefilled with the host tier (%lld restored blocks), %lld "
              "with the pool alone\n",
              GetParam().c_str(), w.second.size(), static_cast<long long>(tier_runs.second_prefilled),
              static_cast<long long>(s.restored_blocks), static_cast<long long>(pool_runs.second_prefilled));
}

TEST_P(KvTiersTest, AFreshEngineRestoresThePrefixFromTheDiskTier) {
  const TierWorkload w = tier_workload(load_reference(GetParam()));
  const TierRuns expected = uncached_runs(GetParam(), w, /*with_fillers=*/false);
  ASSERT_EQ(expected.phases.size(), 2u);
  const fs::path dir = fresh_dir(GetParam() + "_disk");
  {
    auto writer = make_engine(GetParam(), {.max_blocks = tight_tier_blocks(w), .disk_dir = dir});
    ASSERT_NE(writer, nullptr);
    const GreedyRun first = greedy(writer->engine(), {w.first}, kTokens);
    EXPECT_EQ(first.ids, expected.phases[0].ids);
  }  // the process ends: its queued blocks are written
  // Read ahead on the prefetcher's thread while the request waits (the default), and read when
  // it is admitted: the same blocks, the same output. Each reader gets its own copy of the
  // directory (a reader persists its own prompt's blocks, which the next one would hit).
  const fs::path copy = fresh_dir(GetParam() + "_disk_copy");
  fs::copy(dir, copy, fs::copy_options::recursive);
  for (const int64_t prefetch_bytes : {KvTierOptions{}.disk_prefetch_bytes, int64_t{0}}) {
    SCOPED_TRACE(prefetch_bytes > 0 ? "prefetch" : "no prefetch");
    auto reader = make_engine(GetParam(), {.max_blocks = tight_tier_blocks(w), .disk_dir = prefetch_bytes > 0 ? dir : copy,
                                           .disk_prefetch_bytes = prefetch_bytes});
    ASSERT_NE(reader, nullptr);
    const int64_t before = reader->engine().num_prefilled_tokens();
    const GreedyRun second = greedy(reader->engine(), {w.second}, kTokens);
    EXPECT_EQ(second.ids, expected.phases[1].ids);
    EXPECT_EQ(compare_runs(second, expected.phases[1], 1e-4f), "");
    EXPECT_EQ(reader->engine().num_prefilled_tokens() - before,
              static_cast<int64_t>(w.second.size()) - w.shared_blocks * kBlock);
    const KvTierDirectory& tiers = *reader->engine().kv_tiers();
    EXPECT_EQ(tiers.stats().disk_hit_blocks, w.shared_blocks);
    EXPECT_EQ(tiers.disk_stats()->misses_corrupt, 0);
    EXPECT_EQ(tiers.prefetches(), prefetch_bytes > 0);
    if (prefetch_bytes > 0) {  // every restored block was read on the prefetcher's thread
      EXPECT_EQ(tiers.prefetch_stats().served, w.shared_blocks);
      EXPECT_EQ(tiers.prefetch_stats().not_fetched, 0);
    }
  }
  fs::remove_all(dir);
  fs::remove_all(copy);
}

TEST_P(KvTiersTest, ACorruptedDiskTierIsRecomputed) {
  const TierWorkload w = tier_workload(load_reference(GetParam()));
  const TierRuns expected = uncached_runs(GetParam(), w, /*with_fillers=*/false);
  ASSERT_EQ(expected.phases.size(), 2u);
  const fs::path dir = fresh_dir(GetParam() + "_corrupt");
  {
    auto writer = make_engine(GetParam(), {.disk_dir = dir});
    ASSERT_NE(writer, nullptr);
    greedy(writer->engine(), {w.first}, kTokens);
  }
  int64_t damaged = 0;
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (entry.path().extension() != ".kvb") continue;
    std::fstream f(entry.path(), std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(static_cast<std::streamoff>(entry.file_size() - 1));
    f.put('\x7f');  // the payload's last byte: only the checksum can tell
    ++damaged;
  }
  ASSERT_GE(damaged, w.shared_blocks);
  auto reader = make_engine(GetParam(), {.host_bytes = 64 << 20, .disk_dir = dir});
  ASSERT_NE(reader, nullptr);
  const int64_t before = reader->engine().num_prefilled_tokens();
  const GreedyRun second = greedy(reader->engine(), {w.second}, kTokens);
  EXPECT_EQ(second.ids, expected.phases[1].ids);
  EXPECT_EQ(reader->engine().num_prefilled_tokens() - before, static_cast<int64_t>(w.second.size()));
  EXPECT_EQ(reader->engine().kv_tiers()->stats().disk_hit_blocks, 0);
  EXPECT_GE(reader->engine().kv_tiers()->disk_stats()->misses_corrupt, 1);
  reader.reset();  // its disk writer may still be writing the recomputed blocks into dir
  fs::remove_all(dir);
}

INSTANTIATE_TEST_SUITE_P(Models, KvTiersTest, ::testing::Values("llama_gqa", "mistral_window", "gemma3_text"));

// Int8 KV (per-slot scales travel with the block) and both tiers at once.
TEST(KvTiersInt8Test, BothTiersWithAnInt8CacheKeepTheOutput) {
  const TierWorkload w = tier_workload(load_reference("llama_gqa"));
  const TierRuns expected = uncached_runs("llama_gqa", w, /*with_fillers=*/true, DType::kI8);
  const fs::path dir = fresh_dir("int8");
  auto tiered = make_engine("llama_gqa", {.max_blocks = tight_tier_blocks(w), .host_bytes = 1 << 20, .disk_dir = dir,
                                          .kv_dtype = DType::kI8});
  ASSERT_NE(tiered, nullptr);
  const TierRuns runs = run_tier_workload(tiered->engine(), w);
  for (size_t i = 0; i < runs.phases.size(); ++i) EXPECT_EQ(runs.phases[i].ids, expected.phases[i].ids) << i;
  EXPECT_GT(tiered->engine().kv_tiers()->stats().restored_blocks, 0);
  EXPECT_EQ(runs.second_prefilled, static_cast<int64_t>(w.second.size()) - w.shared_blocks * kBlock);
  tiered.reset();
  fs::remove_all(dir);
}

TEST(KvTiersFlagsTest, TiersNeedPrefixCaching) {
  LocalEngineOptions options;
  options.model_dir = model_dir("llama_gqa");
  options.num_threads = 1;
  options.kv.max_blocks = 16;
  options.scheduler.enable_prefix_caching = false;
  options.kv_tiers.host_bytes = 1 << 20;
  auto engine = LocalEngine::create(options);
  ASSERT_FALSE(engine.ok());
  EXPECT_NE(engine.status().message().find("--no-prefix-caching"), std::string::npos) << engine.status();
}

}  // namespace
}  // namespace weft::golden
