#include "engine/model_runner.h"

#include <gtest/gtest.h>

namespace weft {
namespace {

TEST(BuildForwardBatchTest, PositionsSlotsAndLogitRows) {
  StepPlan plan;
  PlannedChunk a;
  a.seq_id = 0;
  a.token_ids = {5, 6, 7};
  a.start_position = 2;  // tokens at positions 2..4
  a.block_table = {3, 1};
  a.logits = LogitsWanted::kLast;
  PlannedChunk b;
  b.seq_id = 1;
  b.token_ids = {9};
  b.start_position = 0;
  b.block_table = {2};
  b.logits = LogitsWanted::kAll;
  plan.chunks = {a, b};
  auto batch = build_forward_batch(plan, /*block_size=*/4, /*num_blocks=*/4);
  ASSERT_TRUE(batch.ok()) << batch.status();
  EXPECT_EQ(batch->num_tokens, 4);
  const int64_t* slots = batch->slots.data_as<int64_t>();
  EXPECT_EQ(slots[0], 3 * 4 + 2);
  EXPECT_EQ(slots[1], 3 * 4 + 3);
  EXPECT_EQ(slots[2], 1 * 4 + 0);
  EXPECT_EQ(slots[3], 2 * 4 + 0);
  EXPECT_EQ(batch->positions.data_as<int32_t>()[2], 4);
  EXPECT_EQ(batch->query_start, (std::vector<int32_t>{0, 3, 4}));
  EXPECT_EQ(batch->context_len, (std::vector<int32_t>{5, 1}));
  EXPECT_EQ(batch->logit_rows, (std::vector<int32_t>{2, 3}));
}

TEST(BuildForwardBatchTest, RejectsShortBlockTablesAndBadBlockIds) {
  StepPlan plan;
  PlannedChunk a;
  a.seq_id = 4;
  a.token_ids = {1, 2, 3, 4, 5};
  a.block_table = {0};
  plan.chunks = {a};
  auto short_table = build_forward_batch(plan, 4, 8);
  ASSERT_FALSE(short_table.ok());
  EXPECT_NE(short_table.status().message().find("sequence 4"), std::string::npos);
  plan.chunks[0].block_table = {0, 9};
  auto bad_id = build_forward_batch(plan, 4, 8);
  ASSERT_FALSE(bad_id.ok());
  EXPECT_NE(bad_id.status().message().find("block id 9"), std::string::npos);
}

}  // namespace
}  // namespace weft
