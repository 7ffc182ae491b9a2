// Multi-rank disk hits: the ranks' report (kv_load_report), the coordinator's agreement on each
// load (kv_disk_agreement), the directory planning a disk hit only once every rank loaded the
// block, and a rank's store performing a load that may miss (kv_host_store).
#include "kv/kv_disk_agreement.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "kv/kv_disk_tier.h"
#include "kv/kv_host_store.h"
#include "kv/kv_tier_directory.h"
#include "kv_transfer_test_util.h"

namespace weft {
namespace {

namespace fs = std::filesystem;
using Kind = KvTransfer::Kind;
using State = KvDiskAgreement::State;

TEST(KvLoadReportTest, RanksCombineByAndAndRoundTrip) {
  KvLoadReport a{true, {1, 1, 0}};
  const KvLoadReport b{false, {1, 0, 1}};
  ASSERT_TRUE(a.merge(b).ok());
  EXPECT_EQ(a, (KvLoadReport{false, {1, 0, 0}}));
  auto parsed = KvLoadReport::parse(a.serialize());
  ASSERT_TRUE(parsed.ok());
  EXPECT_EQ(*parsed, a);
  EXPECT_FALSE(a.merge(KvLoadReport{true, {1}}).ok());  // another plan's
  EXPECT_FALSE(KvLoadReport::parse("").ok());
  EXPECT_TRUE(needs_kv_load_report({KvTransfer::persist(1, 0, 2, tokens_of(0))}));
  EXPECT_TRUE(needs_kv_load_report({KvTransfer::load(1, 2, tokens_of(0))}));
  EXPECT_FALSE(needs_kv_load_report({KvTransfer::save(1, 0), KvTransfer::restore(1, 2), KvTransfer::drop(1)}));
}

TEST(KvDiskAgreementTest, ABlockEveryRankLoadedIsTakenOnce) {
  KvDiskAgreement agreement(8);
  std::vector<KvTransfer> plan;
  EXPECT_EQ(agreement.request(10, 1, tokens_of(0)), State::kUnknown);
  ASSERT_TRUE(agreement.start(10, 1, tokens_of(0), plan));
  ASSERT_TRUE(agreement.start(11, 10, tokens_of(4), plan));
  EXPECT_EQ(kinds(plan), (std::vector<std::pair<Kind, uint64_t>>{{Kind::kLoad, 10}, {Kind::kLoad, 11}}));
  EXPECT_EQ(plan[0].tokens, tokens_of(0));
  EXPECT_TRUE(agreement.loading());
  EXPECT_EQ(agreement.request(10, 1, tokens_of(0)), State::kLoading);
  std::vector<KvTransfer> next;
  agreement.end_round(next);  // a load in flight outlives the round
  EXPECT_EQ(agreement.request(10, 1, tokens_of(0)), State::kLoading);

  ASSERT_TRUE(agreement.on_report(plan, KvLoadReport{true, {1, 0}}, next).ok());
  EXPECT_FALSE(agreement.loading());
  EXPECT_EQ(agreement.request(10, 1, tokens_of(0)), State::kAgreed);
  EXPECT_EQ(agreement.request(11, 10, tokens_of(4)), State::kRefused);
  EXPECT_EQ(agreement.request(10, 1, tokens_of(1)), State::kRefused);  // another prefix, same hash
  // The refused block is dropped from every rank's store (each holds an entry, loaded or not).
  EXPECT_EQ(kinds(next), (std::vector<std::pair<Kind, uint64_t>>{{Kind::kDrop, 11}}));
  EXPECT_FALSE(agreement.take(11, 10, tokens_of(4)));
  EXPECT_FALSE(agreement.take(10, 1, tokens_of(1)));
  EXPECT_TRUE(agreement.take(10, 1, tokens_of(0)));
  EXPECT_FALSE(agreement.take(10, 1, tokens_of(0)));
  EXPECT_EQ(agreement.stats().agreed, 1);
  EXPECT_EQ(agreement.stats().refused, 1);
}

TEST(KvDiskAgreementTest, WhatNobodyWantsIsDroppedAndTheHoldIsBounded) {
  KvDiskAgreement agreement(2);
  std::vector<KvTransfer> plan, next;
  ASSERT_TRUE(agreement.start(10, 1, tokens_of(0), plan));
  ASSERT_TRUE(agreement.start(11, 10, tokens_of(4), plan));
  EXPECT_FALSE(agreement.start(12, 11, tokens_of(8), plan));  // two held already
  EXPECT_EQ(agreement.stats().over_limit, 1);
  ASSERT_TRUE(agreement.on_report(plan, KvLoadReport{true, {1, 1}}, next).ok());
  agreement.end_round(next);  // asked for since start: kept
  EXPECT_TRUE(next.empty());
  EXPECT_EQ(agreement.request(10, 1, tokens_of(0)), State::kAgreed);
  agreement.end_round(next);  // 11 was not asked for in this round
  EXPECT_EQ(kinds(next), (std::vector<std::pair<Kind, uint64_t>>{{Kind::kDrop, 11}}));
  EXPECT_TRUE(agreement.start(12, 11, tokens_of(8), plan));  // room again
  EXPECT_EQ(agreement.stats().discarded, 1);
}

TEST(KvDiskAgreementTest, AReportThatDoesNotFitThePlanIsAnError) {
  KvDiskAgreement agreement(4);
  std::vector<KvTransfer> plan, next;
  ASSERT_TRUE(agreement.start(10, 1, tokens_of(0), plan));
  EXPECT_FALSE(agreement.on_report(plan, KvLoadReport{true, {}}, next).ok());
  EXPECT_FALSE(agreement.on_report({KvTransfer::load(99, 1, tokens_of(0))}, KvLoadReport{true, {1}}, next).ok());
}

// The coordinator's directory with agreed disk hits over a disk that names hashes 10 and 11.
KvTierDirectory agreed_directory(int64_t host_blocks) {
  KvDiskLookup disk;
  disk.contains = [](uint64_t hash) { return hash == 10 || hash == 11; };
  disk.agreement_max_blocks = 8;
  return KvTierDirectory(host_blocks, 100, std::move(disk));
}

TEST(KvTierDirectoryAgreementTest, ADiskHitIsPlannedOnlyAfterEveryRankLoadedIt) {
  KvTierDirectory tiers = agreed_directory(0);
  ASSERT_TRUE(tiers.agrees_disk_hits());
  ASSERT_TRUE(tiers.prefetches());
  EXPECT_EQ(tiers.prepare(10, 1, tokens_of(0)), TierReadiness::kPending);
  EXPECT_EQ(tiers.prepare(11, 10, tokens_of(4)), TierReadiness::kPending);
  EXPECT_EQ(tiers.prepare(12, 11, tokens_of(8)), TierReadiness::kAbsent);  // not on the coordinator's disk
  EXPECT_FALSE(tiers.find(10, 1, tokens_of(0)));  // not agreed yet: a miss, never a guess
  EXPECT_TRUE(tiers.prefetch_pending());
  EXPECT_TRUE(tiers.has_pending_loads());
  tiers.end_prefetch_round();
  const std::vector<KvTransfer> plan = tiers.take_transfers();
  EXPECT_EQ(kinds(plan), (std::vector<std::pair<Kind, uint64_t>>{{Kind::kLoad, 10}, {Kind::kLoad, 11}}));
  EXPECT_FALSE(tiers.on_load_report(plan, std::nullopt).ok());  // a report is due
  ASSERT_TRUE(tiers.on_load_report(plan, KvLoadReport{true, {1, 0}}).ok());  // 11 missed on a rank
  EXPECT_FALSE(tiers.prefetch_pending());
  EXPECT_EQ(tiers.prepare(10, 1, tokens_of(0)), TierReadiness::kReady);
  EXPECT_EQ(tiers.prepare(11, 10, tokens_of(4)), TierReadiness::kAbsent);
  ASSERT_TRUE(tiers.find(10, 1, tokens_of(0)));
  tiers.restore(10, 3);
  EXPECT_FALSE(tiers.find(11, 10, tokens_of(4)));
  // The refused block is dropped at once, the restored one right after its restore (no host tier).
  EXPECT_EQ(kinds(tiers.take_transfers()),
            (std::vector<std::pair<Kind, uint64_t>>{{Kind::kDrop, 11}, {Kind::kRestore, 10}, {Kind::kDrop, 10}}));
  EXPECT_EQ(tiers.stats().disk_hit_blocks, 1);
  EXPECT_EQ(tiers.agreement_stats()->refused, 1);
}

TEST(KvTierDirectoryAgreementTest, ARankWhoseDiskStoppedWritingTurnsTheTierOffForAll) {
  KvTierDirectory tiers = agreed_directory(4);
  tiers.on_pool_cached(0, 10, 1, tokens_of(0));
  const std::vector<KvTransfer> plan = tiers.take_transfers();
  ASSERT_EQ(kinds(plan), (std::vector<std::pair<Kind, uint64_t>>{{Kind::kPersist, 10}}));
  ASSERT_TRUE(tiers.on_load_report(plan, KvLoadReport{false, {}}).ok());
  tiers.on_pool_cached(1, 11, 10, tokens_of(4));
  EXPECT_FALSE(tiers.has_transfers());  // no more persists
  EXPECT_FALSE(tiers.may_hold(10));
  EXPECT_EQ(tiers.prepare(10, 1, tokens_of(0)), TierReadiness::kAbsent);
}

TEST(KvHostStoreLoadTest, ALoadThatMissesLeavesAnEntryOnlyADropRemoves) {
  const fs::path dir = fs::temp_directory_path() / ("weft_kv_agreement_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  KvCacheShape shape;
  shape.num_layers = 1;
  shape.block_size = 4;
  shape.num_kv_heads = 1;
  shape.head_dim = 4;
  shape.dtype = DType::kF32;
  absl::StatusOr<KvCache> cache = KvCache::allocate(shape, 4);
  ASSERT_TRUE(cache.ok());
  KvDiskTierOptions options;
  options.dir = dir;
  options.max_bytes = 1 << 20;
  options.block_bytes = shape.bytes_per_block();
  auto disk = KvDiskTier::open(options);
  ASSERT_TRUE(disk.ok()) << disk.status();
  KvHostStore store(*cache, disk->get());
  std::vector<uint8_t> bytes(static_cast<size_t>(store.block_bytes()), 7);
  store.copy_in(bytes.data(), 0);
  ASSERT_TRUE(store.apply({KvTransfer::persist(10, 0, 1, tokens_of(0))}).ok());
  (*disk)->flush();

  KvLoadReport report;
  ASSERT_TRUE(store.apply({KvTransfer::load(10, 1, tokens_of(0)), KvTransfer::load(11, 10, tokens_of(4))}, &report)
                  .ok());
  EXPECT_EQ(report, (KvLoadReport{true, {1, 0}}));
  EXPECT_TRUE(store.contains(11));  // so the coordinator's drop finds it on every rank
  ASSERT_TRUE(store.apply({KvTransfer::restore(10, 2)}).ok());
  std::vector<uint8_t> back(bytes.size());
  store.copy_out(2, back.data());
  EXPECT_EQ(back, bytes);
  const absl::Status restore_missed = store.apply({KvTransfer::restore(11, 3)});
  EXPECT_NE(restore_missed.message().find("missed on this rank"), std::string::npos) << restore_missed;
  ASSERT_TRUE(store.apply({KvTransfer::drop(11), KvTransfer::drop(10)}).ok());
  EXPECT_EQ(store.num_blocks(), 0);
  disk->reset();
  fs::remove_all(dir);
}

}  // namespace
}  // namespace weft
