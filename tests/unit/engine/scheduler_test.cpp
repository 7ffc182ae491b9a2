// The scheduler as plain data: each test drives it step by step and checks, per step, the
// planned chunks (sequence, start position, length) against a table.
#include "engine/scheduler.h"

#include <gtest/gtest.h>

#include <condition_variable>
#include <limits>
#include <mutex>
#include <string>
#include <vector>

#include "engine/preemption_cost.h"
#include "kv/kv_disk_prefetcher.h"

namespace weft {
namespace {

Sequence make_seq(int64_t id, int prompt_len, int priority = 0) {
  Sequence s;
  s.id = id;
  s.arrival = id;
  s.priority = priority;
  for (int i = 0; i < prompt_len; ++i) s.prompt_ids.push_back(100 + i);
  return s;
}

// "id@start+len" for every chunk, e.g. "0@0+8 1@0+4".
std::string describe(const StepPlan& plan) {
  std::string out;
  for (const PlannedChunk& c : plan.chunks) {
    if (!out.empty()) out += ' ';
    out += std::to_string(c.seq_id) + "@" + std::to_string(c.start_position) + "+" +
           std::to_string(c.token_ids.size());
  }
  return out;
}

// Runs one step: every chunk that reaches its sequence's end samples token 7.
std::string step(Scheduler& s) {
  const StepPlan plan = s.schedule();
  std::vector<SampledToken> sampled;
  for (const PlannedChunk& c : plan.chunks) {
    if (c.logits != LogitsWanted::kNone) sampled.push_back({c.seq_id, 7});
  }
  s.on_step_done(plan, sampled);
  return describe(plan);
}

TEST(SchedulerTest, ChunkedPrefillUnderTokenBudgetThenDecodesFirst) {
  BlockManager blocks(64, 4);
  Scheduler s({/*max_num_seqs=*/8, /*max_num_batched_tokens=*/8, true}, blocks);
  s.add(make_seq(0, 10));
  s.add(make_seq(1, 5));
  const std::vector<std::string> expected = {
      "0@0+8",          // budget 8: the first prompt's first chunk
      "0@8+2 1@0+5",    // its rest, then the second prompt (fits in the 6 left)
      "0@10+1 1@5+1",   // both decode
      "0@11+1 1@6+1",
  };
  for (size_t i = 0; i < expected.size(); ++i) EXPECT_EQ(step(s), expected[i]) << "step " << i;
}

// Sliding window W = 6, blocks of 4: after each step the blocks ending before the next
// position - 5 are freed (kFreedBlock), so a long generation holds at most 3 blocks of its own.
TEST(SchedulerTest, BlocksWhollyOutsideTheWindowAreFreed) {
  BlockManager blocks(16, 4);
  SchedulerConfig config{/*max_num_seqs=*/8, /*max_num_batched_tokens=*/8, true};
  config.attention_window = 6;
  Scheduler s(config, blocks);
  s.add(make_seq(0, 10));
  const std::vector<std::string> expected_plans = {"0@0+8", "0@8+2", "0@10+1", "0@11+1", "0@12+1"};
  // Free blocks after each step: 16 - held. After step 0 (8 computed: keys from 3 on) block 0
  // [0,4) is still needed; after step 1 (10 computed: from 5 on) it is freed; step 4 reuses it
  // for positions [12, 16), and once 13 are computed (keys from 8 on) block 1 goes too.
  const std::vector<int64_t> expected_free = {14, 14, 14, 14, 14};
  const std::vector<std::vector<int32_t>> expected_tables = {
      {0, 1}, {BlockManager::kFreedBlock, 1, 2}, {BlockManager::kFreedBlock, 1, 2},
      {BlockManager::kFreedBlock, 1, 2}, {BlockManager::kFreedBlock, BlockManager::kFreedBlock, 2, 0}};
  for (size_t i = 0; i < expected_plans.size(); ++i) {
    EXPECT_EQ(step(s), expected_plans[i]) << "step " << i;
    EXPECT_EQ(blocks.num_free_blocks(), expected_free[i]) << "step " << i;
    EXPECT_EQ(s.find(0)->block_table, expected_tables[i]) << "step " << i;
  }
  // 200 more tokens never hold more than ceil((6 + 1) / 4) + 1 = 3 blocks.
  for (int i = 0; i < 200; ++i) {
    step(s);
    EXPECT_GE(blocks.num_free_blocks(), 13) << "token " << i;
  }
  s.finish(0);
  EXPECT_EQ(blocks.num_free_blocks(), 16);
}

// Forks share the parent's blocks, freed entries included; each gives back its own references.
TEST(SchedulerTest, WindowFreeingWithForksReturnsEveryBlock) {
  BlockManager blocks(16, 4, /*enable_prefix_caching=*/true);
  SchedulerConfig config{8, 64, true};
  config.attention_window = 5;
  Scheduler s(config, blocks);
  s.add(make_seq(0, 14));
  step(s);  // the prompt: blocks 0..3, then [0, 10) outside the window of position 14
  Sequence child = make_seq(1, 14);
  child.output_ids = s.find(0)->output_ids;
  s.fork(0, child);
  EXPECT_EQ(s.find(1)->block_table, s.find(0)->block_table);
  for (int i = 0; i < 20; ++i) step(s);
  s.finish(0);
  s.finish(1);
  EXPECT_EQ(blocks.num_free_blocks(), 16);
}

TEST(SchedulerTest, DecodesComeBeforeUnfinishedPrefills) {
  BlockManager blocks(64, 4);
  Scheduler s({8, 4, true}, blocks);
  s.add(make_seq(0, 2));
  EXPECT_EQ(step(s), "0@0+2");
  s.add(make_seq(1, 9));
  EXPECT_EQ(step(s), "0@2+1 1@0+3");
  EXPECT_EQ(step(s), "0@3+1 1@3+3");
  EXPECT_EQ(step(s), "0@4+1 1@6+3");
  EXPECT_EQ(step(s), "0@5+1 1@9+1");
}

TEST(SchedulerTest, RunningCapHoldsBackWaitingSequences) {
  BlockManager blocks(64, 4);
  Scheduler s({/*max_num_seqs=*/2, 64, true}, blocks);
  for (int i = 0; i < 3; ++i) s.add(make_seq(i, 3));
  EXPECT_EQ(step(s), "0@0+3 1@0+3");
  EXPECT_EQ(s.num_waiting(), 1);
  s.finish(0);
  EXPECT_EQ(step(s), "1@3+1 2@0+3");
}

TEST(SchedulerTest, PriorityOrdersAdmission) {
  BlockManager blocks(64, 4);
  Scheduler s({8, 4, false}, blocks);
  s.add(make_seq(0, 4, /*priority=*/5));
  s.add(make_seq(1, 4, /*priority=*/1));
  EXPECT_EQ(step(s), "1@0+4");
  EXPECT_EQ(step(s), "1@4+1");  // without chunking, seq 0's 4 tokens do not fit in 3
}

TEST(SchedulerTest, PreemptsTheLatestSequenceWhenBlocksRunOut) {
  // 4 blocks of 2 tokens: two sequences of 3 tokens take 2 blocks each; the first decode that
  // needs a third block for sequence 0 must preempt sequence 1.
  BlockManager blocks(4, 2);
  Scheduler s({8, 64, true}, blocks);
  s.add(make_seq(0, 3));
  s.add(make_seq(1, 3));
  EXPECT_EQ(step(s), "0@0+3 1@0+3");
  EXPECT_EQ(blocks.num_free_blocks(), 0);
  // Sequence 0 now has 4 tokens (needs 2 blocks, has 2): both decode at positions 3.
  EXPECT_EQ(step(s), "0@3+1 1@3+1");
  // Position 4 needs a third block for each: sequence 1 is preempted for sequence 0.
  EXPECT_EQ(step(s), "0@4+1");
  EXPECT_EQ(s.last_preempted(), std::vector<int64_t>{1});
  EXPECT_EQ(s.find(1)->state, SequenceState::kWaiting);
  EXPECT_EQ(s.find(1)->num_computed_tokens, 0);
  EXPECT_EQ(s.find(1)->output_ids.size(), 2u);  // its tokens survive; its KV is recomputed
  s.finish(0);
  // Sequence 1 is recomputed: prompt + both generated tokens in one prefill.
  EXPECT_EQ(step(s), "1@0+5");
  EXPECT_EQ(s.find(1)->num_preemptions, 1);
}

TEST(SchedulerTest, FinishFreesBlocks) {
  BlockManager blocks(8, 4);
  Scheduler s({8, 64, true}, blocks);
  s.add(make_seq(0, 9));
  step(s);
  EXPECT_EQ(blocks.num_free_blocks(), 5);
  s.finish(0);
  EXPECT_EQ(blocks.num_free_blocks(), 8);
  EXPECT_FALSE(s.has_unfinished());
}

TEST(BlockManagerTest, RefCountsShareAndRelease) {
  BlockManager blocks(4, 2);
  std::vector<int32_t> a, b;
  ASSERT_TRUE(blocks.grow_to(a, 3));
  EXPECT_EQ(a, (std::vector<int32_t>{0, 1}));
  blocks.share(a);
  b = a;
  EXPECT_EQ(blocks.ref_count(0), 2);
  blocks.release(a);
  EXPECT_EQ(blocks.num_free_blocks(), 2);
  blocks.release(b);
  EXPECT_EQ(blocks.num_free_blocks(), 4);
  std::vector<int32_t> big;
  EXPECT_FALSE(blocks.grow_to(big, 9));
  EXPECT_TRUE(big.empty());
  EXPECT_DOUBLE_EQ(blocks.usage(), 0.0);
}

// Prefix caching: each row is one step; a sequence admitted with cached leading blocks starts at
// the cached prefix (at most its length - 1), so only the suffix is planned.
TEST(SchedulerPrefixCacheTest, NewSequencesStartAtTheirCachedPrefix) {
  BlockManager blocks(32, 4, /*enable_prefix_caching=*/true);
  Scheduler s({8, 64, true}, blocks);
  s.add(make_seq(0, 10));
  EXPECT_EQ(step(s), "0@0+10");
  EXPECT_EQ(blocks.num_cached_blocks(), 2);  // tokens 0..7; the third block is partial
  s.add(make_seq(1, 10));                    // same 10 tokens: 8 cached, 2 to compute
  s.add(make_seq(2, 8));                     // 8 tokens, all cached: the last block is recomputed
  Sequence diverging = make_seq(3, 10);
  diverging.prompt_ids[5] = 999;             // shares only the first block
  s.add(diverging);
  s.add(make_seq(4, 3));                     // shorter than a block: nothing to share
  EXPECT_EQ(step(s), "0@10+1 1@8+2 2@4+4 3@4+6 4@0+3");
  EXPECT_EQ(s.find(1)->num_prefix_hit_tokens, 8);
  EXPECT_EQ(s.find(2)->num_prefix_hit_tokens, 4);
  EXPECT_EQ(s.find(3)->num_prefix_hit_tokens, 4);
  EXPECT_EQ(s.find(4)->num_prefix_hit_tokens, 0);
  EXPECT_EQ(blocks.ref_count(s.find(0)->block_table[0]), 4);  // sequences 0, 1, 2, 3
  EXPECT_EQ(s.find(1)->block_table[1], s.find(0)->block_table[1]);
  EXPECT_EQ(blocks.prefix_query_tokens(), 8 + 8 + 4 + 8 + 0);  // sequences 0..4
  EXPECT_EQ(blocks.prefix_hit_tokens(), 8 + 4 + 4);
  EXPECT_EQ(step(s), "0@11+1 1@10+1 2@8+1 3@10+1 4@3+1");
}

TEST(SchedulerPrefixCacheTest, ScoringSequencesTakeNoCachedPrefix) {
  BlockManager blocks(32, 4, true);
  Scheduler s({8, 64, true}, blocks);
  s.add(make_seq(0, 8));
  EXPECT_EQ(step(s), "0@0+8");
  s.add(make_seq(1, 8));
  s.set_return_all_logits(1, true);
  EXPECT_EQ(step(s), "0@8+1 1@0+8");
}

// LongRoPE (original_max_position_embeddings 6): a sequence that starts within 6 tokens is
// recomputed from scratch, all its tokens counted as prompt, at the step it first needs position
// 6, and guesses never reach position 6 before that.
TEST(SchedulerTest, LongRopeSequenceIsRecomputedWhenItFirstNeedsThePositionPastTheSwitch) {
  BlockManager blocks(32, 4);
  SchedulerConfig config{8, 64, true};
  config.longrope_switch = 6;
  Scheduler s(config, blocks);
  s.add(make_seq(0, 4));
  s.add(make_seq(1, 9));  // longer than 6 from the start: long everywhere, never recomputed
  auto prompt_lens = [](const StepPlan& plan) {
    std::string out;
    for (const PlannedChunk& c : plan.chunks) out += std::to_string(c.prompt_len) + " ";
    return out;
  };
  const std::vector<std::pair<std::string, std::string>> expected = {
      {"0@0+4 1@0+9", "4 9 "},
      {"0@4+1 1@9+1", "4 9 "},
      {"0@5+1 1@10+1", "4 9 "},   // sequence 0 now holds 7 tokens
      {"0@0+7 1@11+1", "7 9 "},   // its 7 tokens again, as one prompt
      {"0@7+1 1@12+1", "7 9 "},
  };
  // Guesses go at positions num_tokens()...: 6 - 4, 6 - 5, then none until the recompute.
  const std::vector<int64_t> guess_room = {2, 1, 0, 0, std::numeric_limits<int64_t>::max()};
  for (size_t i = 0; i < expected.size(); ++i) {
    EXPECT_EQ(s.guesses_before_rope_switch(*s.find(0)), guess_room[i]) << "step " << i;
    EXPECT_EQ(s.guesses_before_rope_switch(*s.find(1)), std::numeric_limits<int64_t>::max());
    const StepPlan plan = s.schedule();
    EXPECT_EQ(describe(plan), expected[i].first) << "step " << i;
    EXPECT_EQ(prompt_lens(plan), expected[i].second) << "step " << i;
    std::vector<SampledToken> sampled;
    for (const PlannedChunk& c : plan.chunks) {
      if (c.logits != LogitsWanted::kNone) sampled.push_back({c.seq_id, 7});
    }
    s.on_step_done(plan, sampled);
  }
  EXPECT_EQ(s.num_longrope_recomputes(), 1);
  EXPECT_EQ(s.find(0)->block_table.size(), 2u);  // 8 tokens in blocks of 4: the old ones went back
}

// Prompts longer than prompt_dependent_kv_above (dynamic NTK RoPE) have KV that depends on their
// length: they neither take cached blocks nor register theirs; shorter ones share as usual. Every
// chunk carries its sequence's prompt length, also the decode chunks.
TEST(SchedulerPrefixCacheTest, PromptsWhoseKvDependsOnTheirLengthShareNothing) {
  BlockManager blocks(32, 4, true);
  SchedulerConfig config{8, 64, true};
  config.prompt_dependent_kv_above = 8;
  Scheduler s(config, blocks);
  s.add(make_seq(0, 10));
  EXPECT_EQ(step(s), "0@0+10");
  EXPECT_EQ(blocks.num_cached_blocks(), 0);  // a 10-token prompt registers nothing
  s.add(make_seq(1, 10));                    // the same tokens: nothing to take
  s.add(make_seq(2, 8));                     // within the limit: registers its 2 blocks
  const StepPlan plan = s.schedule();
  EXPECT_EQ(describe(plan), "0@10+1 1@0+10 2@0+8");
  for (const PlannedChunk& c : plan.chunks) {
    EXPECT_EQ(c.prompt_len, static_cast<int32_t>(s.find(c.seq_id)->prompt_ids.size()));
  }
  s.on_step_done(plan, {{0, 7}, {1, 7}, {2, 7}});
  EXPECT_EQ(blocks.num_cached_blocks(), 2);
  s.add(make_seq(3, 8));  // shares sequence 2's first block (the last is recomputed)
  EXPECT_EQ(step(s), "0@11+1 1@10+1 2@8+1 3@4+4");
  EXPECT_EQ(s.find(1)->num_prefix_hit_tokens, 0);
  EXPECT_EQ(s.find(3)->num_prefix_hit_tokens, 4);
}

TEST(SchedulerPrefixCacheTest, FreedCachedBlocksAreReusedThenEvictedLeastRecentFirst) {
  BlockManager blocks(4, 2, true);
  Scheduler s({8, 64, true}, blocks);
  s.add(make_seq(0, 4));
  EXPECT_EQ(step(s), "0@0+4");  // blocks 0, 1; both full and cached
  s.finish(0);
  EXPECT_EQ(blocks.num_free_blocks(), 4);
  EXPECT_EQ(blocks.num_cached_blocks(), 2);
  // A finished request's prefix is still there for the next one.
  s.add(make_seq(1, 4));
  EXPECT_EQ(step(s), "1@2+2");
  // Block 2 comes from the never-cached free blocks (a stack), not from the cached block 1.
  EXPECT_EQ(s.find(1)->block_table, (std::vector<int32_t>{0, 2}));
  s.finish(1);
  // Block 2 held a prefix block 1 already caches, so it went back uncached. Six other tokens
  // need three blocks: the never-cached ones (2, 3), then an eviction of the least recently
  // freed cached block. A table is freed tail first, so block 1 (the second half of the prefix)
  // goes before block 0.
  Sequence other = make_seq(2, 6);
  for (int32_t& t : other.prompt_ids) t += 50;
  s.add(other);
  EXPECT_EQ(step(s), "2@0+6");
  EXPECT_EQ(s.find(2)->block_table, (std::vector<int32_t>{2, 3, 1}));
  s.finish(2);
  s.add(make_seq(3, 4));
  EXPECT_EQ(step(s), "3@2+2");  // block 0 survived
  EXPECT_EQ(s.find(3)->block_table[0], 0);
}

TEST(SchedulerPrefixCacheTest, PreemptedSequenceResumesFromItsCachedBlocks) {
  BlockManager blocks(4, 2, true);
  Scheduler s({8, 64, true}, blocks);
  s.add(make_seq(0, 3));
  s.add(make_seq(1, 3));
  EXPECT_EQ(step(s), "0@0+3 1@0+3");
  EXPECT_EQ(step(s), "0@3+1 1@3+1");
  EXPECT_EQ(step(s), "0@4+1");  // sequence 1 preempted; its full blocks stay cached
  EXPECT_EQ(s.last_preempted(), std::vector<int64_t>{1});
  s.finish(0);
  // Sequence 1 has 5 tokens (3 prompt + 2 sampled); its 2 full blocks are still cached.
  EXPECT_EQ(step(s), "1@4+1");
  EXPECT_EQ(s.find(1)->num_prefix_hit_tokens, 4);
}

// Forks share the parent's blocks; the first to write into the shared partial block gives it up
// and recomputes its tokens into a block of its own, the last holder writes in place.
TEST(SchedulerForkTest, CopyOnWriteByRecomputeOfTheSharedPartialBlock) {
  BlockManager blocks(16, 4);
  Scheduler s({8, 64, true}, blocks);
  s.add(make_seq(0, 6));
  EXPECT_EQ(step(s), "0@0+6");  // samples token 7: 7 tokens, 6 computed
  Sequence child = make_seq(1, 6);
  child.output_ids = {8};
  s.fork(0, child);
  EXPECT_EQ(s.find(1)->block_table, s.find(0)->block_table);
  EXPECT_EQ(blocks.ref_count(1), 2);
  EXPECT_EQ(step(s), "0@4+3 1@6+1");
  EXPECT_EQ(s.find(0)->block_table, (std::vector<int32_t>{0, 2}));
  EXPECT_EQ(s.find(1)->block_table, (std::vector<int32_t>{0, 1}));
  EXPECT_EQ(blocks.ref_count(0), 2);
  EXPECT_EQ(blocks.ref_count(1), 1);
  EXPECT_EQ(step(s), "0@7+1 1@7+1");
  s.finish(0);
  s.finish(1);
  EXPECT_EQ(blocks.num_free_blocks(), 16);
}

}  // namespace
}  // namespace weft

namespace weft {
namespace {

// Speculative decoding: guesses widen a decode chunk; what is not accepted is rolled back (the
// computed tokens stop after the accepted guesses, blocks past the tokens go back).
TEST(SchedulerTest, DraftTokensWidenADecodeAndRejectedOnesRollBack) {
  BlockManager blocks(16, 4);
  Scheduler s({8, 64, true}, blocks);
  s.add(make_seq(0, 6));
  step(s);  // prefill 6, sample one token: 7 tokens, 6 computed
  StepPlan plan = s.schedule();
  ASSERT_EQ(describe(plan), "0@6+1");
  const int64_t free_before = blocks.num_free_blocks();
  ASSERT_TRUE(s.add_draft_tokens(plan.chunks[0], std::vector<int32_t>{21, 22, 23, 24, 25}));
  EXPECT_EQ(describe(plan), "0@6+6");
  EXPECT_EQ(plan.chunks[0].num_draft_tokens, 5);
  EXPECT_EQ(plan.chunks[0].logits, LogitsWanted::kAll);
  EXPECT_EQ(plan.chunks[0].block_table.size(), 3u);  // positions 0..11
  EXPECT_EQ(blocks.num_free_blocks(), free_before - 1);
  // Two guesses accepted, then a third token: 7 + 3 = 10 tokens, 6 + 1 + 2 = 9 computed.
  s.on_step_done(plan, {{0, 21}, {0, 22}, {0, 30}});
  const Sequence* seq = s.find(0);
  EXPECT_EQ(seq->num_tokens(), 10);
  EXPECT_EQ(seq->num_computed_tokens, 9);
  EXPECT_EQ(seq->output_ids, (std::vector<int32_t>{7, 21, 22, 30}));
  EXPECT_EQ(seq->block_table.size(), 3u);  // 10 tokens still need 3 blocks of 4
  EXPECT_EQ(describe(s.schedule()), "0@9+1");  // the next step decodes the third token
}

// Accepted guesses that complete a block register it in the prefix cache under the right tokens:
// a later sequence with the same tokens takes it.
TEST(SchedulerTest, AcceptedGuessesFillingABlockAreCachedUnderTheirTokens) {
  BlockManager blocks(16, 4, /*enable_prefix_caching=*/true);
  Scheduler s({8, 64, true}, blocks);
  s.add(make_seq(0, 3));
  step(s);  // tokens 100 101 102 | 7: 3 computed
  StepPlan plan = s.schedule();
  ASSERT_TRUE(s.add_draft_tokens(plan.chunks[0], std::vector<int32_t>{8, 9, 10}));
  s.on_step_done(plan, {{0, 8}, {0, 9}, {0, 11}});  // 8, 9 accepted: 100 101 102 7 | 8 9 11
  EXPECT_EQ(s.find(0)->num_computed_tokens, 6);
  EXPECT_EQ(blocks.num_cached_blocks(), 1);
  Sequence twin = make_seq(1, 0);
  twin.prompt_ids = {100, 101, 102, 7, 8, 9};
  s.add(twin);
  const StepPlan next = s.schedule();
  EXPECT_EQ(describe(next), "0@6+1 1@4+2");  // the twin's first block came from the cache
}

TEST(SchedulerTest, AllGuessesRejectedGivesTheirBlocksBack) {
  BlockManager blocks(16, 4);
  Scheduler s({8, 64, true}, blocks);
  s.add(make_seq(0, 7));
  step(s);  // 8 tokens, 7 computed: 2 blocks
  const int64_t free_idle = blocks.num_free_blocks();
  StepPlan plan = s.schedule();
  ASSERT_TRUE(s.add_draft_tokens(plan.chunks[0], std::vector<int32_t>{1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(plan.chunks[0].block_table.size(), 4u);  // positions 0..13
  s.on_step_done(plan, {{0, 9}});  // the first guess missed: only the known token stands
  EXPECT_EQ(s.find(0)->num_computed_tokens, 8);
  EXPECT_EQ(s.find(0)->num_tokens(), 9);
  EXPECT_EQ(s.find(0)->block_table.size(), 3u);
  EXPECT_EQ(blocks.num_free_blocks(), free_idle - 1);
  s.finish(0);
  EXPECT_EQ(blocks.num_free_blocks(), blocks.num_blocks());
}

TEST(SchedulerTest, GuessesThatFindNoFreeBlockAreDroppedNotPreempting) {
  BlockManager blocks(3, 4);
  Scheduler s({8, 64, true}, blocks);
  s.add(make_seq(0, 7));
  s.add(make_seq(1, 3));
  step(s);  // blocks: 2 + 1, none free
  StepPlan plan = s.schedule();
  ASSERT_EQ(describe(plan), "0@7+1 1@3+1");
  EXPECT_FALSE(s.add_draft_tokens(plan.chunks[0], std::vector<int32_t>{1, 2}));
  EXPECT_EQ(describe(plan), "0@7+1 1@3+1");
  EXPECT_EQ(plan.chunks[0].num_draft_tokens, 0);
  EXPECT_TRUE(s.last_preempted().empty());
}

}  // namespace
}  // namespace weft

namespace weft {
namespace {

// Banned-phrase rollback: output tokens go, the last kept one is recomputed, and KV that is
// shared, cached or released is never written into.
TEST(SchedulerTruncateTest, DropsTheTokensAndRecomputesTheLastKeptOne) {
  BlockManager blocks(16, 4);
  Scheduler s({8, 64, true}, blocks);
  s.add(make_seq(0, 6));
  EXPECT_EQ(step(s), "0@0+6");
  EXPECT_EQ(step(s), "0@6+1");
  EXPECT_EQ(step(s), "0@7+1");
  EXPECT_EQ(step(s), "0@8+1");  // 10 tokens in 3 blocks, 9 computed
  s.truncate_output(0, 1);       // keep the first output token: 7 tokens
  EXPECT_EQ(s.find(0)->num_tokens(), 7);
  EXPECT_EQ(s.find(0)->num_computed_tokens, 6);
  EXPECT_EQ(s.find(0)->block_table.size(), 2u);
  EXPECT_EQ(blocks.num_free_blocks(), 14);
  EXPECT_EQ(step(s), "0@6+1");
}

TEST(SchedulerTruncateTest, ACachedBlockIsGivenUpAndItsTokensRecomputed) {
  BlockManager blocks(32, 4, /*enable_prefix_caching=*/true);
  Scheduler s({8, 64, true}, blocks);
  s.add(make_seq(0, 8));
  EXPECT_EQ(step(s), "0@0+8");
  EXPECT_EQ(step(s), "0@8+1");
  const std::vector<int32_t> before = s.find(0)->block_table;
  EXPECT_EQ(blocks.num_cached_blocks(), 2);
  s.truncate_output(0, 0);  // back to the prompt: its last token (in cached block 1) is recomputed
  EXPECT_EQ(s.find(0)->num_computed_tokens, 4);
  EXPECT_EQ(s.find(0)->block_table, (std::vector<int32_t>{before[0]}));
  EXPECT_EQ(s.find(0)->num_cached_blocks, 1);
  EXPECT_EQ(blocks.num_cached_blocks(), 2);  // the given-up block keeps its registration and KV
  EXPECT_EQ(step(s), "0@4+4");
  EXPECT_NE(s.find(0)->block_table[1], before[1]);
  EXPECT_EQ(step(s), "0@8+1");
}

TEST(SchedulerTruncateTest, ABlockAForkSharesIsNotWrittenInto) {
  BlockManager blocks(16, 4);
  Scheduler s({8, 64, true}, blocks);
  s.add(make_seq(0, 8));
  EXPECT_EQ(step(s), "0@0+8");
  Sequence child = make_seq(1, 8);
  child.output_ids = {9};
  s.fork(0, child);
  s.truncate_output(1, 0);
  EXPECT_EQ(s.find(1)->num_computed_tokens, 4);
  EXPECT_EQ(s.find(1)->block_table, (std::vector<int32_t>{s.find(0)->block_table[0]}));
  EXPECT_EQ(blocks.ref_count(s.find(0)->block_table[1]), 1);
  EXPECT_EQ(step(s), "0@8+1 1@4+4");
}

TEST(SchedulerTruncateTest, WindowedKvAlreadyReleasedMeansAFullRecompute) {
  BlockManager blocks(16, 4);
  SchedulerConfig config{8, 64, true};
  config.attention_window = 6;
  Scheduler s(config, blocks);
  s.add(make_seq(0, 4));
  EXPECT_EQ(step(s), "0@0+4");
  for (int i = 0; i < 9; ++i) step(s);  // 14 tokens, 13 computed: blocks 0 and 1 released
  EXPECT_EQ(s.find(0)->block_table[0], BlockManager::kFreedBlock);
  s.truncate_output(0, 4);  // 8 tokens: recomputing token 7 needs positions 2.. again
  EXPECT_EQ(s.find(0)->num_computed_tokens, 0);
  EXPECT_TRUE(s.find(0)->block_table.empty());
  EXPECT_EQ(blocks.num_free_blocks(), 16);
  EXPECT_EQ(step(s), "0@0+8");
}

}  // namespace
}  // namespace weft

namespace weft {
namespace {

// A disk tier (no host tier) that holds sequence 0's two full prompt blocks, read through a
// prefetcher whose reads wait for `open`: while they wait, sequence 0 stays queued and sequence 1
// runs its steps; once they are done sequence 0 is admitted on its restored prefix, and no block
// was read by the scheduling thread.
TEST(SchedulerPrefetchTest, ASequenceWaitsForItsDiskPrefixWithoutStallingOthers) {
  std::mutex mu;
  std::condition_variable cv;
  bool open = false;
  auto read = [&](uint64_t, uint64_t, std::span<const int32_t>) -> std::optional<std::vector<uint8_t>> {
    std::unique_lock<std::mutex> lock(mu);
    cv.wait(lock, [&] { return open; });
    return std::vector<uint8_t>(100, 1);
  };
  KvDiskPrefetcher prefetcher(read, 100, 1 << 20);
  const Sequence zero = make_seq(0, 9);
  const uint64_t h0 = BlockManager::hash_block(BlockManager::kRootHash, zero.prompt_ids.data(), 4);
  const uint64_t h1 = BlockManager::hash_block(h0, zero.prompt_ids.data() + 4, 4);
  int sync_reads = 0;
  KvDiskLookup disk;
  disk.contains = [&](uint64_t hash) { return hash == h0 || hash == h1; };
  disk.load = [&](uint64_t hash, uint64_t, std::span<const int32_t>) {
    std::vector<uint8_t> bytes;
    const KvDiskPrefetcher::Taken taken = prefetcher.take(hash, bytes);
    if (taken == KvDiskPrefetcher::Taken::kNotFetched) ++sync_reads;
    return taken != KvDiskPrefetcher::Taken::kMissed;
  };
  disk.prefetcher = &prefetcher;
  BlockManager blocks(16, 4, /*enable_prefix_caching=*/true);
  blocks.attach_tiers(std::make_unique<KvTierDirectory>(0, 100, disk));
  Scheduler s({8, 64, true}, blocks);
  s.add(zero);
  Sequence one = make_seq(1, 3);
  one.prompt_ids = {5, 6, 7};
  s.add(one);
  EXPECT_EQ(step(s), "1@0+3");
  EXPECT_TRUE(blocks.prefetch_pending());
  EXPECT_EQ(s.num_waiting_for_prefetch(), 1);
  EXPECT_EQ(step(s), "1@3+1");
  EXPECT_EQ(s.num_waiting(), 1);
  {
    std::lock_guard<std::mutex> lock(mu);
    open = true;
  }
  cv.notify_all();
  while (blocks.prefetch_pending()) blocks.wait_for_prefetch();
  EXPECT_EQ(step(s), "1@4+1 0@8+1");
  EXPECT_EQ(s.find(0)->num_prefix_hit_tokens, 8);
  EXPECT_EQ(sync_reads, 0);
  EXPECT_EQ(prefetcher.stats().served, 2);
  int restores = 0;
  for (const KvTransfer& t : blocks.take_transfers()) restores += t.kind == KvTransfer::Kind::kRestore;
  EXPECT_EQ(restores, 2);
}

}  // namespace
}  // namespace weft

namespace weft {
namespace {

// 4 blocks of 2 tokens and a host tier: sequence 1 is preempted for sequence 0 and the pool then
// evicts one of its blocks. Swap: that block moves down to the host tier and comes back when
// sequence 1 is admitted again. Recompute: it is neither copied down nor looked up, and is
// recomputed (what the pool still holds is taken either way).
void preempt_and_readmit(bool swap, const std::string& readmitted) {
  BlockManager blocks(4, 2, /*enable_prefix_caching=*/true);
  blocks.attach_tiers(std::make_unique<KvTierDirectory>(8, 100));
  Scheduler s({8, 64, true}, blocks);
  int asked = 0;
  s.set_swap_policy([&](const Sequence& victim) {
    ++asked;
    EXPECT_EQ(victim.id, 1);
    return swap;
  });
  s.add(make_seq(0, 3));
  Sequence one = make_seq(1, 3);
  one.prompt_ids = {200, 201, 202};
  s.add(one);
  EXPECT_EQ(step(s), "0@0+3 1@0+3");
  EXPECT_EQ(step(s), "0@3+1 1@3+1");
  EXPECT_EQ(step(s), "0@4+1");
  EXPECT_EQ(s.last_preempted(), std::vector<int64_t>{1});
  EXPECT_EQ(asked, 1);
  EXPECT_EQ(s.num_swap_preemptions(), swap ? 1 : 0);
  EXPECT_EQ(s.num_recompute_preemptions(), swap ? 0 : 1);
  EXPECT_EQ(blocks.tiers()->stats().saved_blocks, swap ? 1 : 0);  // recompute: not even copied down
  s.finish(0);
  EXPECT_EQ(step(s), readmitted);
  EXPECT_EQ(blocks.tiers()->stats().restored_blocks, swap ? 1 : 0);
  EXPECT_FALSE(s.find(1)->recompute_on_readmit);
}

TEST(SchedulerSwapTest, ASwappedSequenceTakesItsBlocksBackFromTheHostTier) { preempt_and_readmit(true, "1@4+1"); }

TEST(SchedulerSwapTest, ASequencePreemptedByRecomputeTakesNothingFromTheTiers) {
  preempt_and_readmit(false, "1@2+3");
}

TEST(PreemptionCostModelTest, SwapsUntilMeasuredThenChoosesTheCheaper) {
  PreemptionCostModel costs;
  EXPECT_TRUE(costs.swap_cheaper(16));
  costs.record_copies(10, 0.010);  // 1 ms a block copy: a swap costs 2 ms a block
  EXPECT_TRUE(costs.swap_cheaper(16));  // prefill not measured yet
  costs.record_prefill(1000, 0.1);      // 0.1 ms a token: 1.6 ms for a block of 16
  EXPECT_DOUBLE_EQ(costs.copy_seconds_per_block(), 0.001);
  EXPECT_DOUBLE_EQ(costs.prefill_seconds_per_token(), 0.0001);
  EXPECT_FALSE(costs.swap_cheaper(16));
  EXPECT_TRUE(costs.swap_cheaper(32));  // 3.2 ms of prefill a block
  costs.record_copies(10, 0.0);         // faster copies since: 0.5 ms a copy on average
  EXPECT_TRUE(costs.swap_cheaper(16));
  costs.record_copies(0, 5.0);          // nothing copied: not a measurement
  EXPECT_TRUE(costs.swap_cheaper(16));
}

}  // namespace
}  // namespace weft
