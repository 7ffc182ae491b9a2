// Phi3's fused checkpoint tensors (self_attn.qkv_proj = [q; k; v] rows, mlp.gate_up_proj =
// [gate; up] rows) load into the tensor-parallel layers exactly as the separate q/k/v and
// gate/up tensors holding the same numbers do: on every rank of TP 1, 2 and 4 the same shard
// rows (uneven intermediate shards zero-padded, never taken from the next part), the same bytes.
#include <map>
#include <random>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "model/layers/attention.h"
#include "model/layers/gated_mlp.h"
#include "model/layers/parallel_linear.h"
#include "model/safetensors.h"
#include "model/weight_store.h"
#include "model_test_util.h"

namespace weft {
namespace {

using testing::FakeGroup;

Tensor random_f32(Shape shape, std::mt19937& rng) {
  Tensor t = Tensor::empty(DType::kF32, shape);
  std::normal_distribution<float> dist;
  for (int64_t i = 0; i < t.numel(); ++i) t.data_as<float>()[i] = dist(rng);
  return t;
}

Tensor rows_of(const Tensor& t, int64_t begin, int64_t count) {
  const int64_t cols = t.dim(1);
  Tensor out = Tensor::empty(DType::kF32, Shape{count, cols});
  std::memcpy(out.data(), t.data_as<float>() + begin * cols, count * cols * sizeof(float));
  return out;
}

bool same_bytes(const Tensor& a, const Tensor& b) {
  return a.shape() == b.shape() && a.nbytes() == b.nbytes() &&
         std::memcmp(a.data(), b.data(), a.nbytes()) == 0;
}

class FusedWeightsTest : public ::testing::Test {
 protected:
  // hidden 8, 4 query heads / 2 kv heads of 2 dims, intermediate 5 (uneven at TP 2 and 4).
  void SetUp() override {
    config_.hidden_size = 8;
    config_.num_attention_heads = 4;
    config_.num_key_value_heads = 2;
    config_.head_dim = 2;
    config_.intermediate_size = 5;
    config_.rms_norm_eps = 1e-5;
    std::mt19937 rng(7);
    const Tensor qkv = random_f32(Shape{8 + 2 * 4, 8}, rng);
    const Tensor gate_up = random_f32(Shape{10, 8}, rng);
    std::map<std::string, Tensor> tensors;
    tensors["fused.self_attn.qkv_proj.weight"] = qkv;
    tensors["fused.mlp.gate_up_proj.weight"] = gate_up;
    tensors["split.self_attn.q_proj.weight"] = rows_of(qkv, 0, 8);
    tensors["split.self_attn.k_proj.weight"] = rows_of(qkv, 8, 4);
    tensors["split.self_attn.v_proj.weight"] = rows_of(qkv, 12, 4);
    tensors["split.mlp.gate_proj.weight"] = rows_of(gate_up, 0, 5);
    tensors["split.mlp.up_proj.weight"] = rows_of(gate_up, 5, 5);
    const Tensor o = random_f32(Shape{8, 8}, rng), down = random_f32(Shape{8, 5}, rng);
    for (const char* p : {"fused", "split"}) {
      tensors[std::string(p) + ".self_attn.o_proj.weight"] = o;
      tensors[std::string(p) + ".mlp.down_proj.weight"] = down;
    }
    ASSERT_TRUE(write_safetensors(dir_ / "model.safetensors", tensors).ok());
    auto store = WeightStore::open(dir_.path());
    ASSERT_TRUE(store.ok()) << store.status();
    store_ = std::make_unique<WeightStore>(std::move(*store));
    fused_ = config_;
    fused_.fused_qkv_proj = fused_.fused_gate_up_proj = true;
  }

  testing::TempDir dir_;
  ModelConfig config_, fused_;
  std::unique_ptr<WeightStore> store_;
};

TEST_F(FusedWeightsTest, GateUpShardsMatchTheSeparateTensorsOnEveryRank) {
  ThreadPool pool(1);
  std::mt19937 rng(3);
  const Tensor x = random_f32(Shape{3, 8}, rng);
  for (int size : {1, 2, 4}) {
    for (int rank = 0; rank < size; ++rank) {
      SCOPED_TRACE(::testing::Message() << "rank " << rank << " of " << size);
      FakeGroup group(rank, size);
      auto split = GatedMlp::load(LoadContext{*store_, config_, group}, "split.mlp");
      auto fused = GatedMlp::load(LoadContext{*store_, fused_, group}, "fused.mlp");
      ASSERT_TRUE(split.ok()) << split.status();
      ASSERT_TRUE(fused.ok()) << fused.status();
      EXPECT_EQ(fused->weight_bytes(), split->weight_bytes());
      const ShardRange shard = padded_shard(5, rank, size);
      EXPECT_EQ(fused->weight_bytes(), (2 * shard.count * 8 + 8 * shard.count) * sizeof(float));
      ForwardBatch batch;
      batch.num_tokens = 3;
      Tensor inv_freq = Tensor::zeros(DType::kF32, Shape{1});
      const ForwardContext fc{batch, inv_freq, 1.0f, group, pool};
      Tensor a = Tensor::zeros(DType::kF32, Shape{3, 8}),
             b = Tensor::zeros(DType::kF32, Shape{3, 8});
      ASSERT_TRUE(split->forward(fc, x.view(), a.view()).ok());
      ASSERT_TRUE(fused->forward(fc, x.view(), b.view()).ok());
      EXPECT_TRUE(same_bytes(a, b));
    }
  }
}

TEST_F(FusedWeightsTest, QkvShardsMatchTheSeparateTensorsOnEveryRank) {
  for (int size : {1, 2, 4}) {
    for (int rank = 0; rank < size; ++rank) {
      SCOPED_TRACE(::testing::Message() << "rank " << rank << " of " << size);
      FakeGroup group(rank, size);
      auto split = Attention::load(LoadContext{*store_, config_, group}, "split.self_attn");
      auto fused = Attention::load(LoadContext{*store_, fused_, group}, "fused.self_attn");
      ASSERT_TRUE(split.ok()) << split.status();
      ASSERT_TRUE(fused.ok()) << fused.status();
      EXPECT_EQ(fused->num_heads(), 4 / size);
      EXPECT_EQ(fused->num_kv_heads(), size == 4 ? 1 : 2 / size);  // replicated at TP 4
      EXPECT_EQ(fused->weight_bytes(), split->weight_bytes());

      // The same rows, by ColumnParallelLinear directly (Attention keeps its weight private).
      const LoadContext ctx{*store_, fused_, group};
      const ShardRange q = *head_shard(4, 2, rank, size, "heads");
      const ShardRange kv = *kv_head_shard(2, 2, rank, size);
      auto from_fused = ColumnParallelLinear::load(ctx,
                                                   {{"fused.self_attn.qkv_proj", 8, q, 0, 16},
                                                    {"fused.self_attn.qkv_proj", 4, kv, 8, 16},
                                                    {"fused.self_attn.qkv_proj", 4, kv, 12, 16}},
                                                   8, false);
      auto from_split = ColumnParallelLinear::load(ctx,
                                                   {{"split.self_attn.q_proj", 8, q},
                                                    {"split.self_attn.k_proj", 4, kv},
                                                    {"split.self_attn.v_proj", 4, kv}},
                                                   8, false);
      ASSERT_TRUE(from_fused.ok()) << from_fused.status();
      ASSERT_TRUE(from_split.ok()) << from_split.status();
      EXPECT_TRUE(same_bytes(from_fused->weight(), from_split->weight()));
    }
  }
}

// Rows of a shard past its part are zeros, not the first rows of the next part.
TEST_F(FusedWeightsTest, PaddedShardRowsAreZeroNotTheNextPart) {
  FakeGroup group(1, 2);
  const LoadContext ctx{*store_, fused_, group};
  const ShardRange shard = padded_shard(5, 1, 2);  // rows [3, 6) of a 5-row part
  auto layer =
      ColumnParallelLinear::load(ctx, {{"fused.mlp.gate_up_proj", 5, shard, 0, 10}}, 8, false);
  ASSERT_TRUE(layer.ok()) << layer.status();
  const Tensor& w = layer->weight();
  ASSERT_EQ(w.dim(0), 3);
  auto full = store_->get("fused.mlp.gate_up_proj.weight", Shape{10, 8});
  ASSERT_TRUE(full.ok());
  EXPECT_EQ(std::memcmp(w.data(), full->data_as<float>() + 3 * 8, 2 * 8 * sizeof(float)), 0);
  for (int j = 0; j < 8; ++j) EXPECT_EQ(w.data_as<float>()[2 * 8 + j], 0.0f);
}

TEST_F(FusedWeightsTest, WrongFusedShapeNamesTheTensor) {
  FakeGroup group(0, 1);
  ModelConfig wrong = fused_;
  wrong.num_key_value_heads = 4;  // qkv_proj would need 24 rows
  auto attention = Attention::load(LoadContext{*store_, wrong, group}, "fused.self_attn");
  ASSERT_FALSE(attention.ok());
  EXPECT_THAT(attention.status().message(),
              ::testing::HasSubstr("tensor 'fused.self_attn.qkv_proj.weight'"));
  EXPECT_THAT(attention.status().message(), ::testing::HasSubstr("expected [24, 8]"));
}

}  // namespace
}  // namespace weft
