// The coordinator's side of the KV tiers: the host tier's LRU order and budget, the instructions
// it emits, and the BlockManager going past the pool into the tiers.
#include "kv/kv_tier_directory.h"

#include <gtest/gtest.h>

#include "kv/block_manager.h"
#include "kv_transfer_test_util.h"

namespace weft {
namespace {

using Kind = KvTransfer::Kind;

TEST(KvTierDirectoryTest, EvictsLeastRecentlyUsedWithinItsBudget) {
  KvTierDirectory tiers(2, 100);
  tiers.on_pool_evict(0, 10, 1, tokens_of(0));
  tiers.on_pool_evict(1, 11, 1, tokens_of(4));
  EXPECT_TRUE(tiers.find(10, 1, tokens_of(0)));  // 10 becomes the most recent
  tiers.on_pool_evict(2, 12, 1, tokens_of(8));   // 11 goes
  EXPECT_FALSE(tiers.find(11, 1, tokens_of(4)));
  EXPECT_TRUE(tiers.find(12, 1, tokens_of(8)));
  EXPECT_TRUE(tiers.find(10, 1, tokens_of(0)));
  const std::vector<std::pair<Kind, uint64_t>> expected = {
      {Kind::kSave, 10}, {Kind::kSave, 11}, {Kind::kSave, 12}, {Kind::kDrop, 11}};
  EXPECT_EQ(kinds(tiers.take_transfers()), expected);
  EXPECT_FALSE(tiers.has_transfers());
  EXPECT_EQ(tiers.stats().host_blocks, 2);
  EXPECT_EQ(tiers.stats().host_hit_blocks, 3);
  EXPECT_EQ(tiers.stats().host_query_blocks, 4);
  EXPECT_EQ(tiers.stats().dropped_blocks, 1);
}

TEST(KvTierDirectoryTest, AHashNamingAnotherPrefixIsAMiss) {
  KvTierDirectory tiers(4, 100);
  tiers.on_pool_evict(0, 10, 1, tokens_of(0));
  EXPECT_FALSE(tiers.find(10, 1, tokens_of(1)));  // other tokens
  EXPECT_FALSE(tiers.find(10, 2, tokens_of(0)));  // other parent
  EXPECT_TRUE(tiers.find(10, 1, tokens_of(0)));
}

TEST(KvTierDirectoryTest, ABlockTheHostTierStillHoldsIsNotCopiedAgain) {
  KvTierDirectory tiers(4, 100);
  tiers.on_pool_evict(0, 10, 1, tokens_of(0));
  ASSERT_TRUE(tiers.find(10, 1, tokens_of(0)));
  tiers.restore(10, 3);
  tiers.on_pool_evict(3, 10, 1, tokens_of(0));  // evicted again: the host copy is current
  const std::vector<std::pair<Kind, uint64_t>> expected = {{Kind::kSave, 10}, {Kind::kRestore, 10}};
  EXPECT_EQ(kinds(tiers.take_transfers()), expected);
}

TEST(KvTierDirectoryTest, DiskHitsAreStagedAndWithoutAHostTierDroppedAfterTheRestore) {
  int lookups = 0;
  KvDiskLookup disk;
  disk.contains = [](uint64_t hash) { return hash == 20 || hash == 10; };
  disk.load = [&](uint64_t hash, uint64_t, std::span<const int32_t>) {
    ++lookups;
    return hash == 20;
  };
  KvTierDirectory tiers(0, 100, disk);
  EXPECT_TRUE(tiers.may_hold(10));
  EXPECT_FALSE(tiers.may_hold(11));
  tiers.on_pool_evict(0, 10, 1, tokens_of(0));  // no host tier: nothing saved
  tiers.on_pool_cached(5, 21, 20, tokens_of(4));
  EXPECT_FALSE(tiers.find(10, 1, tokens_of(0)));
  ASSERT_TRUE(tiers.find(20, 1, tokens_of(0)));
  tiers.restore(20, 7);
  const std::vector<KvTransfer> ts = tiers.take_transfers();
  const std::vector<std::pair<Kind, uint64_t>> expected = {{Kind::kPersist, 21}, {Kind::kRestore, 20}, {Kind::kDrop, 20}};
  EXPECT_EQ(kinds(ts), expected);
  EXPECT_EQ(ts[0].parent, 20u);
  EXPECT_EQ(ts[0].tokens, tokens_of(4));
  EXPECT_EQ(ts[0].block, 5);
  EXPECT_EQ(lookups, 2);
  EXPECT_EQ(tiers.stats().disk_hit_blocks, 1);
  EXPECT_EQ(tiers.stats().disk_query_blocks, 2);
}

// A pool of 4 blocks of 2 tokens: a prompt's cached blocks are evicted by other sequences, move
// to the host tier and come back through match_prefix as restores into fresh blocks.
TEST(BlockManagerTiersTest, EvictedPrefixesAreRestoredFromTheHostTier) {
  BlockManager blocks(4, 2, /*enable_prefix_caching=*/true);
  blocks.attach_tiers(std::make_unique<KvTierDirectory>(8, 100));
  const std::vector<int32_t> prompt = {1, 2, 3, 4, 5};
  std::vector<uint64_t> hashes;
  std::vector<int32_t> table;
  ASSERT_EQ(blocks.match_prefix(prompt, 4, hashes, table), 0);
  ASSERT_TRUE(blocks.grow_to(table, 5));
  blocks.cache_block(table[0], hashes[0], BlockManager::kRootHash, prompt.data());
  blocks.cache_block(table[1], hashes[1], hashes[0], prompt.data() + 2);
  const std::vector<int32_t> first_table = table;
  blocks.release(table);
  EXPECT_TRUE(blocks.take_transfers().empty());  // nothing evicted yet

  std::vector<int32_t> other;
  ASSERT_TRUE(blocks.grow_to(other, 8));  // all four blocks: both cached ones are evicted
  const std::vector<KvTransfer> saved = blocks.take_transfers();
  ASSERT_EQ(saved.size(), 2u);
  EXPECT_EQ(saved[0].kind, Kind::kSave);
  EXPECT_EQ(saved[1].kind, Kind::kSave);
  blocks.release(other);

  std::vector<uint64_t> hashes2;
  std::vector<int32_t> table2;
  EXPECT_EQ(blocks.match_prefix(prompt, 4, hashes2, table2), 4);
  const std::vector<KvTransfer> restored = blocks.take_transfers();
  ASSERT_EQ(restored.size(), 2u);
  EXPECT_EQ(restored[0].kind, Kind::kRestore);
  EXPECT_EQ(restored[0].hash, hashes[0]);
  EXPECT_EQ(restored[0].block, table2[0]);
  EXPECT_EQ(restored[1].hash, hashes[1]);
  EXPECT_EQ(restored[1].block, table2[1]);
  EXPECT_EQ(blocks.prefix_hit_tokens(), 4);
  EXPECT_EQ(blocks.tiers()->stats().restored_blocks, 2);
  // Restored blocks are registered in the pool again: a third lookup hits there.
  std::vector<uint64_t> hashes3;
  std::vector<int32_t> table3;
  EXPECT_EQ(blocks.match_prefix(prompt, 4, hashes3, table3), 4);
  EXPECT_EQ(table3, table2);
  EXPECT_TRUE(blocks.take_transfers().empty());
}

TEST(BlockManagerTiersTest, ATierMissGivesTheBlockBack) {
  BlockManager blocks(2, 2, /*enable_prefix_caching=*/true);
  auto owned = std::make_unique<KvTierDirectory>(8, 100);
  KvTierDirectory* tiers = owned.get();
  blocks.attach_tiers(std::move(owned));
  std::vector<uint64_t> hashes;
  std::vector<int32_t> table;
  EXPECT_EQ(blocks.match_prefix({1, 2, 3}, 2, hashes, table), 0);  // nothing below the pool
  EXPECT_EQ(tiers->stats().host_query_blocks, 0);
  // The host tier names this hash, but for other tokens (a collision): looked up, missed, and the
  // block taken for it goes back.
  const std::vector<int32_t> first = {1, 2};
  tiers->on_pool_evict(1, BlockManager::hash_block(BlockManager::kRootHash, first.data(), 2), BlockManager::kRootHash,
                       tokens_of(9, 2));
  hashes.clear();
  EXPECT_EQ(blocks.match_prefix({1, 2, 3}, 2, hashes, table), 0);
  EXPECT_TRUE(table.empty());
  EXPECT_EQ(blocks.num_free_blocks(), 2);
  EXPECT_EQ(tiers->stats().host_query_blocks, 1);
  EXPECT_EQ(tiers->stats().restored_blocks, 0);
}

}  // namespace
}  // namespace weft
