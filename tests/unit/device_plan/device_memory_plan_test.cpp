// The device memory plan (src/engine/cuda/device_memory_plan.h) against sums written out by hand.
#include "engine/cuda/device_memory_plan.h"

#include <gtest/gtest.h>

namespace weft {
namespace {

constexpr int64_t kMiB = int64_t{1} << 20;
constexpr int64_t kGiB = int64_t{1} << 30;

DeviceMemoryRequest request() {
  DeviceMemoryRequest r;
  r.free_bytes = 100 * kGiB;
  r.weight_bytes = 20 * kGiB;
  r.workspace_bytes = 3 * kGiB;
  r.reserve_bytes = 1 * kGiB;
  r.kv_bytes_per_block = 512 * 1024;
  return r;
}

TEST(DeviceMemoryPlanTest, FractionOfWhatRemainsAfterWeightsAndWorkspace) {
  DeviceMemoryRequest r = request();
  r.kv_memory_fraction = 0.5;
  auto plan = plan_device_memory(r);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->available_for_kv, 76 * kGiB);
  EXPECT_EQ(plan->kv_budget_bytes, 38 * kGiB);
  EXPECT_EQ(plan->kv_blocks, 38 * kGiB / (512 * 1024));  // 77824
  EXPECT_EQ(plan->kv_blocks, 77824);
  EXPECT_EQ(plan->kv_bytes, plan->kv_blocks * 512 * 1024);
  const std::string text = plan->describe();
  EXPECT_NE(text.find("77824 blocks"), std::string::npos) << text;
  EXPECT_NE(text.find("weights"), std::string::npos);
}

TEST(DeviceMemoryPlanTest, FixedBudgetIsCappedByWhatRemains) {
  DeviceMemoryRequest r = request();
  r.kv_memory_bytes = 1 * kGiB + 100;  // not a whole number of blocks: rounds down
  auto plan = plan_device_memory(r);
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(plan->kv_blocks, 2048);
  r.kv_memory_bytes = 500 * kGiB;  // more than is free
  plan = plan_device_memory(r);
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(plan->kv_budget_bytes, 76 * kGiB);
  r.max_blocks = 10;
  plan = plan_device_memory(r);
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(plan->kv_blocks, 10);
  EXPECT_EQ(plan->kv_bytes, 10 * 512 * 1024);
}

TEST(DeviceMemoryPlanTest, TooLittleMemoryNamesTheFlags) {
  DeviceMemoryRequest r = request();
  r.weight_bytes = 99 * kGiB;
  auto plan = plan_device_memory(r);
  ASSERT_FALSE(plan.ok());
  EXPECT_EQ(plan.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(plan.status().message().find("--max-num-batched-tokens"), std::string::npos);

  r = request();
  r.kv_memory_fraction = 1e-9;  // ~80 bytes: no whole block
  plan = plan_device_memory(r);
  ASSERT_FALSE(plan.ok());
  EXPECT_NE(plan.status().message().find("--kv-cache-memory-fraction"), std::string::npos);

  r = request();
  r.kv_memory_bytes = 4 * kGiB;
  r.min_blocks = 8193;  // 4 GiB holds exactly 8192
  EXPECT_FALSE(plan_device_memory(r).ok());
  r.min_blocks = 8192;
  EXPECT_TRUE(plan_device_memory(r).ok());
}

TEST(DeviceMemoryPlanTest, RejectsBadInput) {
  DeviceMemoryRequest r = request();
  r.kv_bytes_per_block = 0;
  EXPECT_EQ(plan_device_memory(r).status().code(), absl::StatusCode::kInvalidArgument);
  r = request();
  r.kv_memory_fraction = 1.5;
  EXPECT_EQ(plan_device_memory(r).status().code(), absl::StatusCode::kInvalidArgument);
  r = request();
  r.weight_bytes = -1;
  EXPECT_EQ(plan_device_memory(r).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(ActivationLayoutTest, BuffersAreAlignedDisjointAndSizedForTheLargestStep) {
  ActivationShape s;
  s.max_tokens = 2048;
  s.max_seqs = 256;
  s.max_logit_rows = 256;
  s.hidden = 2048;
  s.num_heads = 32;
  s.num_kv_heads = 8;
  s.head_dim = 64;
  s.intermediate = 8192;
  s.vocab = 32000;
  s.act_bytes = 2;
  s.decode_attention_bytes = 1000;
  auto l = plan_activation_layout(s);
  ASSERT_TRUE(l.ok()) << l.status();
  // In layout order, each buffer's size written out: [offset, size].
  const std::vector<std::pair<int64_t, int64_t>> buffers = {
      {l->residual, 2048 * 2048 * 2},        {l->normed, 2048 * 2048 * 2},
      {l->qkv, 2048 * (32 + 16) * 64 * 2},   {l->q, 2048 * 32 * 64 * 2},
      {l->attn_out, 2048 * 32 * 64 * 2},     {l->delta, 2048 * 2048 * 2},
      {l->gate_up, 2048 * 2 * 8192 * 2},     {l->mlp_act, 2048 * 8192 * 2},
      {l->selected, 256 * 2048 * 2},         {l->logits, 256 * 32000 * 4},
      {l->tokens_out, 256 * 4},
      {l->decode_attention, 1000}};
  int64_t expected_end = 0;
  for (const auto& [offset, size] : buffers) {
    EXPECT_EQ(offset % kDeviceAlignment, 0);
    EXPECT_EQ(offset, expected_end);  // follows the previous buffer, no overlap
    expected_end = offset + align_device_bytes(size);
  }
  EXPECT_EQ(l->total_bytes, expected_end);
  EXPECT_EQ(align_device_bytes(1000), 1024);
  EXPECT_EQ(align_device_bytes(1024), 1024);
}

TEST(ActivationLayoutTest, RejectsNonPositiveSizesNamingTheField) {
  ActivationShape s;
  s.max_tokens = 16;
  auto l = plan_activation_layout(s);
  ASSERT_FALSE(l.ok());
  EXPECT_NE(l.status().message().find("max_seqs"), std::string::npos);
}

}  // namespace
}  // namespace weft
