// The disk tier: written blocks are found by a fresh instance (a restarted process); corrupt,
// truncated, foreign and other-prefix files are misses (counted, never a hit); the budget
// deletes least recently used files; the directory lock keeps a second user out; a failed write
// disables the tier with one warning.
#include "kv/kv_disk_tier.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>
#include <numeric>

namespace weft {
namespace {

namespace fs = std::filesystem;

constexpr int64_t kBlockBytes = 512;

class KvDiskTierTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("weft_kv_disk_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  KvDiskTierOptions options(uint64_t model = 1, int64_t max_bytes = 1 << 20) {
    KvDiskTierOptions o;
    o.dir = dir_;
    o.max_bytes = max_bytes;
    o.key.model_identity = model;
    o.key.dtype = 3;
    o.key.block_size = 4;
    o.key.num_layers = 2;
    o.key.num_kv_heads = 2;
    o.key.head_dim = 8;
    o.block_bytes = kBlockBytes;
    o.warn = [this](const std::string& m) { warnings_.push_back(m); };
    return o;
  }
  std::unique_ptr<KvDiskTier> open_tier(const KvDiskTierOptions& o) {
    auto t = KvDiskTier::open(o);
    EXPECT_TRUE(t.ok()) << t.status();
    return t.ok() ? *std::move(t) : nullptr;
  }
  static std::vector<uint8_t> payload(uint8_t seed) {
    std::vector<uint8_t> p(kBlockBytes);
    for (size_t i = 0; i < p.size(); ++i) p[i] = static_cast<uint8_t>(seed * 31 + i);
    return p;
  }
  static std::vector<int32_t> tokens(int first) {
    std::vector<int32_t> t(4);
    std::iota(t.begin(), t.end(), first);
    return t;
  }
  // Writes blocks 100 + i (parent 1, tokens 4i..) with a fresh tier and closes it.
  void write_blocks(int n, uint64_t model = 1) {
    auto t = open_tier(options(model));
    ASSERT_NE(t, nullptr);
    for (int i = 0; i < n; ++i) t->write_async(100 + i, 1, tokens(4 * i), payload(static_cast<uint8_t>(i)));
    t->flush();
    EXPECT_EQ(t->stats().writes, n);
  }

  fs::path dir_;
  std::vector<std::string> warnings_;
};

TEST_F(KvDiskTierTest, AFreshInstanceFindsWhatAnEarlierOneWrote) {
  write_blocks(3);
  auto t = open_tier(options());
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->stats().indexed_at_open, 3);
  for (int i = 0; i < 3; ++i) {
    auto got = t->load(100 + i, 1, tokens(4 * i));
    ASSERT_TRUE(got.has_value()) << i;
    EXPECT_EQ(*got, payload(static_cast<uint8_t>(i)));
  }
  EXPECT_FALSE(t->load(200, 1, tokens(0)).has_value());
  EXPECT_EQ(t->stats().hits, 3);
  EXPECT_EQ(t->stats().misses_absent, 1);
  EXPECT_TRUE(warnings_.empty());
}

TEST_F(KvDiskTierTest, CorruptTruncatedAndOtherPrefixFilesAreMisses) {
  write_blocks(4);
  auto t0 = open_tier(options());
  const fs::path corrupt = t0->path_of(100), truncated = t0->path_of(101), header = t0->path_of(102);
  t0.reset();
  {
    std::fstream f(corrupt, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(static_cast<std::streamoff>(fs::file_size(corrupt) - 10));
    f.put('\x5a');  // one payload byte
  }
  fs::resize_file(truncated, fs::file_size(truncated) - 1);
  {
    std::fstream f(header, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(40);
    f.put('\x7f');  // tp_size, inside the header (caught by its checksum at open: never indexed)
  }
  auto t = open_tier(options());
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->stats().indexed_at_open, 3);
  EXPECT_FALSE(t->load(100, 1, tokens(0)).has_value());
  EXPECT_FALSE(t->load(101, 1, tokens(4)).has_value());
  EXPECT_FALSE(t->load(102, 1, tokens(8)).has_value());
  EXPECT_FALSE(t->load(103, 1, tokens(99)).has_value());  // the file names another prefix
  const KvDiskTierStats s = t->stats();
  EXPECT_EQ(s.hits, 0);
  EXPECT_EQ(s.misses_corrupt, 1);
  EXPECT_EQ(s.misses_truncated, 1);
  EXPECT_EQ(s.misses_absent, 1);
  EXPECT_EQ(s.misses_foreign, 1);
  EXPECT_FALSE(fs::exists(corrupt));  // bad files are deleted
  EXPECT_FALSE(fs::exists(truncated));
}

TEST_F(KvDiskTierTest, AnotherModelsFilesAreNeverServed) {
  write_blocks(2, /*model=*/7);
  auto t = open_tier(options(/*model=*/8));
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->stats().indexed_at_open, 0);
  EXPECT_EQ(t->stats().bytes, 0);
  EXPECT_FALSE(t->load(100, 1, tokens(0)).has_value());
  // Renamed into place anyway, the key check still refuses it at load.
  t->write_async(300, 1, tokens(0), payload(1));
  t->flush();
  fs::rename(t->path_of(100), t->path_of(300));  // model 7's file under a name model 8 indexed
  EXPECT_FALSE(t->load(300, 1, tokens(0)).has_value());
  EXPECT_EQ(t->stats().misses_foreign, 1);
}

TEST_F(KvDiskTierTest, TheBudgetDeletesTheLeastRecentlyUsedFiles) {
  auto probe = open_tier(options());
  ASSERT_NE(probe, nullptr);
  probe->write_async(1, 1, tokens(0), payload(0));
  probe->flush();
  const int64_t file_bytes = probe->stats().bytes;
  probe.reset();
  fs::remove_all(dir_);
  auto t = open_tier(options(1, 2 * file_bytes));
  ASSERT_NE(t, nullptr);
  t->write_async(100, 1, tokens(0), payload(0));
  t->write_async(101, 1, tokens(4), payload(1));
  t->flush();
  ASSERT_TRUE(t->load(100, 1, tokens(0)).has_value());  // 100 is now the most recent
  t->write_async(102, 1, tokens(8), payload(2));
  t->flush();
  EXPECT_EQ(t->stats().files, 2);
  EXPECT_EQ(t->stats().evicted, 1);
  EXPECT_FALSE(fs::exists(t->path_of(101)));
  EXPECT_TRUE(t->load(100, 1, tokens(0)).has_value());
  EXPECT_TRUE(t->load(102, 1, tokens(8)).has_value());
}

TEST_F(KvDiskTierTest, TheDirectoryIsLockedAgainstASecondUser) {
  auto first = open_tier(options());
  ASSERT_NE(first, nullptr);
  auto second = KvDiskTier::open(options());
  ASSERT_FALSE(second.ok());
  EXPECT_NE(second.status().message().find("another process"), std::string::npos) << second.status();
  first.reset();
  EXPECT_TRUE(KvDiskTier::open(options()).ok());  // released with the first
}

TEST_F(KvDiskTierTest, LeftoverTemporaryFilesAreRemovedAtOpen) {
  write_blocks(1);
  { std::ofstream(dir_ / ".tmp-0000000000000065.kvb") << "half a block"; }
  auto t = open_tier(options());
  ASSERT_NE(t, nullptr);
  EXPECT_FALSE(fs::exists(dir_ / ".tmp-0000000000000065.kvb"));
  EXPECT_EQ(t->stats().indexed_at_open, 1);
}

TEST_F(KvDiskTierTest, AFailedWriteDisablesTheTierWithOneWarning) {
  auto t = open_tier(options());
  ASSERT_NE(t, nullptr);
  fs::remove_all(dir_);  // writes now fail (ENOENT), also for root, who ignores permissions
  t->write_async(100, 1, tokens(0), payload(0));
  t->flush();
  t->write_async(101, 1, tokens(4), payload(1));
  t->flush();
  EXPECT_FALSE(t->stats().enabled);
  EXPECT_EQ(t->stats().writes, 0);
  ASSERT_EQ(warnings_.size(), 1u);
  EXPECT_NE(warnings_[0].find("continuing without the disk tier"), std::string::npos) << warnings_[0];
}

TEST_F(KvDiskTierTest, QueuedBlocksAreServedBeforeTheyReachTheDisk) {
  auto t = open_tier(options());
  ASSERT_NE(t, nullptr);
  t->write_async(100, 1, tokens(0), payload(4));
  auto got = t->load(100, 1, tokens(0));  // queued or written: either way the same bytes
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(*got, payload(4));
}

}  // namespace
}  // namespace weft
