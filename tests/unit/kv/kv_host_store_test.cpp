// The rank's side of the tier instructions: blocks copied out of and back into the pool, every
// tensor of the block (keys, values, int8 scales), reference-counted entries, and refusals.
#include "kv/kv_host_store.h"

#include <gtest/gtest.h>

#include <cstring>

#include "core/crc32c.h"

namespace weft {
namespace {

KvCache make_cache(DType dtype) {
  KvCacheShape shape;
  shape.num_layers = 2;
  shape.block_size = 4;
  shape.num_kv_heads = 2;
  shape.head_dim = 8;
  shape.dtype = dtype;
  absl::StatusOr<KvCache> cache = KvCache::allocate(shape, 6);
  EXPECT_TRUE(cache.ok()) << cache.status();
  return *std::move(cache);
}

// Fills block `block` of every tensor with bytes derived from `seed`.
void fill(const KvHostStore& store, int32_t block, uint8_t seed) {
  std::vector<uint8_t> bytes(static_cast<size_t>(store.block_bytes()));
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<uint8_t>(seed + i * 7);
  store.copy_in(bytes.data(), block);
}

std::vector<uint8_t> contents(const KvHostStore& store, int32_t block) {
  std::vector<uint8_t> bytes(static_cast<size_t>(store.block_bytes()));
  store.copy_out(block, bytes.data());
  return bytes;
}

class KvHostStoreTest : public ::testing::TestWithParam<DType> {};

TEST_P(KvHostStoreTest, SavedBlocksComeBackIntoAnotherBlock) {
  const KvCache cache = make_cache(GetParam());
  KvHostStore store(cache);
  EXPECT_EQ(store.block_bytes(), cache.shape().bytes_per_block());
  fill(store, 1, 3);
  fill(store, 2, 5);
  const std::vector<uint8_t> one = contents(store, 1);
  ASSERT_TRUE(store.apply({KvTransfer::save(100, 1)}).ok());
  fill(store, 1, 9);  // the pool block is reused
  ASSERT_TRUE(store.apply({KvTransfer::restore(100, 4)}).ok());
  EXPECT_EQ(contents(store, 4), one);
  EXPECT_NE(contents(store, 2), one);
  EXPECT_EQ(store.num_blocks(), 1);
  EXPECT_EQ(store.bytes(), store.block_bytes());
  ASSERT_TRUE(store.apply({KvTransfer::drop(100)}).ok());
  EXPECT_EQ(store.num_blocks(), 0);
}

TEST_P(KvHostStoreTest, EachBlockTensorIsCopied) {
  // Writing block 3 must touch only block 3's slice of every layer's tensors.
  const KvCache cache = make_cache(GetParam());
  KvHostStore store(cache);
  for (int32_t b = 0; b < cache.num_blocks(); ++b) fill(store, b, static_cast<uint8_t>(b));
  const std::vector<uint8_t> two = contents(store, 2), four = contents(store, 4);
  fill(store, 3, 77);
  EXPECT_EQ(contents(store, 2), two);
  EXPECT_EQ(contents(store, 4), four);
  // The first key element of layer 1's block 3 is where the layout says.
  const KvCacheShape& s = cache.shape();
  const int64_t kv_bytes = int64_t{s.block_size} * s.num_kv_heads * s.head_dim * dtype_size(s.dtype);
  const int64_t scale_bytes = s.dtype == DType::kI8 ? 2 * int64_t{s.block_size} * s.num_kv_heads * 4 : 0;
  const std::vector<uint8_t> three = contents(store, 3);
  EXPECT_EQ(std::memcmp(cache.keys(1).data_as<uint8_t>() + 3 * kv_bytes, three.data() + 2 * kv_bytes + scale_bytes,
                        static_cast<size_t>(kv_bytes)),
            0);
}

INSTANTIATE_TEST_SUITE_P(Dtypes, KvHostStoreTest, ::testing::Values(DType::kF32, DType::kBF16, DType::kI8));

TEST(KvHostStoreRefsTest, ASaveAfterAQueuedDropOfTheSameHashKeepsTheEntry) {
  const KvCache cache = make_cache(DType::kF32);
  KvHostStore store(cache);
  fill(store, 0, 1);
  ASSERT_TRUE(store.apply({KvTransfer::save(7, 0), KvTransfer::save(7, 0), KvTransfer::drop(7)}).ok());
  EXPECT_TRUE(store.contains(7));
  ASSERT_TRUE(store.apply({KvTransfer::drop(7)}).ok());
  EXPECT_FALSE(store.contains(7));
}

TEST(KvHostStoreRefsTest, InstructionsTheStoreCannotFollowAreErrors) {
  const KvCache cache = make_cache(DType::kF32);
  KvHostStore store(cache);
  EXPECT_FALSE(store.apply({KvTransfer::restore(5, 0)}).ok());
  EXPECT_FALSE(store.apply({KvTransfer::drop(5)}).ok());
  EXPECT_FALSE(store.apply({KvTransfer::save(5, 6)}).ok());   // past the pool
  EXPECT_FALSE(store.apply({KvTransfer::save(5, -1)}).ok());
  const absl::Status persist = store.apply({KvTransfer::persist(5, 0, 0, {})});
  EXPECT_FALSE(persist.ok());
  EXPECT_NE(persist.message().find("no disk tier"), std::string::npos) << persist;
}

TEST(Crc32cTest, MatchesTheStandardCheckValue) {
  EXPECT_EQ(crc32c("123456789", 9), 0xE3069283u);
  // Extending in two pieces equals one pass.
  EXPECT_EQ(crc32c("6789", 4, crc32c("12345", 5)), 0xE3069283u);
  EXPECT_EQ(crc32c("", 0), 0u);
}

}  // namespace
}  // namespace weft
