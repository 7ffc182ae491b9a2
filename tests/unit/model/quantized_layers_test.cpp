// Block-quantized weights in the tensor-parallel layers: slicing a block-quantized tensor for a
// shard (block-aligned, or a clear error), --quantize int4 / GGUF types per rank after sharding
// (the group fallback, the bytes, the product against the dense F32 one), and the refusal to
// re-quantize a block-quantized checkpoint.
#include <cmath>
#include <cstring>
#include <map>
#include <random>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "model/layers/parallel_linear.h"
#include "model/safetensors.h"
#include "model/stage_layout.h"
#include "model/weight_plan.h"
#include "model/weight_slice.h"
#include "model/weight_store.h"
#include "model_test_util.h"
#include "weft/kernels/block_quant.h"
#include "weft/kernels/linear.h"

namespace weft {
namespace {

using ::testing::HasSubstr;
using testing::FakeGroup;

Tensor random_f32(Shape shape, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist;
  Tensor t = Tensor::empty(DType::kF32, shape);
  for (int64_t i = 0; i < t.numel(); ++i) t.data_as<float>()[i] = dist(rng);
  return t;
}

Tensor quantized(const Tensor& w, DType dtype) {
  ThreadPool pool(1);
  return kernels::quantize_rows(w.view(), dtype, false, pool);
}

TEST(BlockWeightSlice, RowsAreViewsAndColumnsCutAtBlockEdges) {
  const Tensor dense = random_f32(Shape{3, 512}, 1);
  const Tensor q = quantized(dense, DType::kQ4_K);  // 2 blocks of 256 per row
  auto rows = slice_weight(q, "w", Shape{3, 512}, 0, 1, 2);
  ASSERT_TRUE(rows.ok()) << rows.status();
  EXPECT_FALSE(rows->copied);
  EXPECT_EQ(rows->tensor.data(), static_cast<char*>(q.data()) + 288);
  EXPECT_EQ(rows->tensor.nbytes(), 2u * 288);

  auto cols = slice_weight(q, "w", Shape{3, 512}, 1, 256, 256);
  ASSERT_TRUE(cols.ok()) << cols.status();
  ASSERT_EQ(cols->tensor.shape(), (Shape{3, 256}));
  for (int r = 0; r < 3; ++r) {
    EXPECT_EQ(std::memcmp(static_cast<char*>(cols->tensor.data()) + r * 144,
                          static_cast<char*>(q.data()) + r * 288 + 144, 144), 0);
  }
  // Padding columns of an uneven split are whole zero blocks (zero scale: zero values).
  auto padded = slice_weight(q, "w", Shape{3, 512}, 1, 256, 512);
  ASSERT_TRUE(padded.ok()) << padded.status();
  std::vector<float> row(512);
  kernels::dequantize_row(DType::kQ4_K, padded->tensor.data(), row.data(), 512);
  for (int t = 256; t < 512; ++t) ASSERT_EQ(row[t], 0.0f);

  auto misaligned = slice_weight(q, "model.layers.0.mlp.down_proj.weight", Shape{3, 512}, 1, 128, 128);
  ASSERT_FALSE(misaligned.ok());
  EXPECT_THAT(misaligned.status().message(), HasSubstr("model.layers.0.mlp.down_proj.weight"));
  EXPECT_THAT(misaligned.status().message(), HasSubstr("q4_k"));
  EXPECT_THAT(misaligned.status().message(), HasSubstr("blocks of 256"));
}

class QuantizedLayersTest : public ::testing::Test {
 protected:
  // in 256, out 96: row-parallel shards of 128 (TP 2) and 64 (TP 4) input columns.
  void SetUp() override {
    std::map<std::string, Tensor> tensors;
    tensors["col.weight"] = random_f32(Shape{96, 256}, 2);
    tensors["row.weight"] = random_f32(Shape{96, 256}, 3);
    ASSERT_TRUE(write_safetensors(dir_ / "model.safetensors", tensors).ok());
    auto store = WeightStore::open(dir_.path());
    ASSERT_TRUE(store.ok()) << store.status();
    store_ = std::make_unique<WeightStore>(std::move(*store));
    dense_col_ = tensors["col.weight"];
    dense_row_ = tensors["row.weight"];
  }

  testing::TempDir dir_;
  ModelConfig config_;
  std::unique_ptr<WeightStore> store_;
  Tensor dense_col_, dense_row_;
};

// |y - x W^T| over the dense F32 weights, relative to sum |x| |w|: int4 steps are ~1/15 of a
// group's range, so a few percent; a mis-sliced or mis-scaled shard is off by ~100%.
double relative_error(const Tensor& y, const Tensor& x, const Tensor& w, int64_t col0) {
  const int64_t m = x.dim(0), k = x.dim(1), n = y.dim(1);
  double err = 0.0, mag = 0.0;
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      double ref = 0.0;
      for (int64_t t = 0; t < k; ++t) {
        const double p = double(x.data_as<float>()[i * k + t]) * w.data_as<float>()[j * w.dim(1) + col0 + t];
        ref += p;
        mag += std::fabs(p);
      }
      err += std::fabs(y.data_as<float>()[i * n + j] - ref);
    }
  }
  return err / mag;
}

TEST_F(QuantizedLayersTest, RowParallelShardsTakeTheLargestGroupThatFits) {
  ThreadPool pool(1);
  struct Case {
    WeightQuantization q;
    int tp;
    DType want;
  };
  for (const Case& c : {Case{WeightQuantization::kInt4G128, 1, DType::kI4G128},
                        Case{WeightQuantization::kInt4G128, 2, DType::kI4G128},
                        Case{WeightQuantization::kInt4G128, 4, DType::kI4G64},
                        Case{WeightQuantization::kInt4G128Sym, 4, DType::kI4G64},
                        Case{WeightQuantization::kInt4G32Sym, 2, DType::kQ4_0},
                        Case{WeightQuantization::kQ4_K, 1, DType::kQ4_K},
                        Case{WeightQuantization::kQ8_0, 4, DType::kQ8_0}}) {
    for (int rank = 0; rank < c.tp; ++rank) {
      SCOPED_TRACE(::testing::Message() << weight_quantization_name(c.q) << " rank " << rank << " of " << c.tp);
      FakeGroup group(rank, c.tp);
      LoadContext ctx{*store_, config_, group, 1, c.q};
      const ShardRange shard = padded_shard(256, rank, c.tp);
      auto layer = RowParallelLinear::load(ctx, "row", 96, 256, shard, false);
      ASSERT_TRUE(layer.ok()) << layer.status();
      EXPECT_EQ(static_cast<int64_t>(layer->weight_bytes()),
                quantized_weight_bytes(c.q, 96, shard.count, 4));
      EXPECT_EQ(static_cast<int64_t>(layer->weight_bytes()), static_cast<int64_t>(dtype_nbytes(c.want, 96 * shard.count)));
      const Tensor x = random_f32(Shape{3, shard.count}, 9);
      Tensor y = Tensor::zeros(DType::kF32, Shape{3, 96});
      layer->forward_partial(x, y, pool);
      EXPECT_LT(relative_error(y, x, dense_row_, shard.begin), c.q == WeightQuantization::kQ8_0 ? 0.01 : 0.1);
    }
  }
}

TEST_F(QuantizedLayersTest, ColumnParallelRowsQuantizeWhole) {
  ThreadPool pool(1);
  for (int tp : {1, 2}) {
    for (int rank = 0; rank < tp; ++rank) {
      FakeGroup group(rank, tp);
      LoadContext ctx{*store_, config_, group, 1, WeightQuantization::kInt4G32};
      const ShardRange shard = padded_shard(96, rank, tp);
      auto layer = ColumnParallelLinear::load(ctx, {ColumnPart{"col", 96, shard}}, 256, false);
      ASSERT_TRUE(layer.ok()) << layer.status();
      EXPECT_EQ(layer->weight().dtype(), DType::kQ4_1);
      const Tensor x = random_f32(Shape{2, 256}, 5);
      Tensor y = Tensor::zeros(DType::kF32, Shape{2, shard.count});
      layer->forward(x, y, pool);
      // Rows [shard.begin, ...) of the dense weight.
      Tensor rows = Tensor::empty(DType::kF32, Shape{shard.count, 256});
      std::memcpy(rows.data(), dense_col_.data_as<float>() + shard.begin * 256, rows.nbytes());
      EXPECT_LT(relative_error(y, x, rows, 0), 0.1);
    }
  }
}

TEST_F(QuantizedLayersTest, ShardsThatFitNoGroupAreRefusedByName) {
  // TP 16: row-parallel shards of 16 columns, below the smallest int4 group.
  FakeGroup group(3, 16);
  LoadContext ctx{*store_, config_, group, 1, WeightQuantization::kInt4G128};
  auto layer = RowParallelLinear::load(ctx, "row", 96, 256, padded_shard(256, 3, 16), false);
  ASSERT_FALSE(layer.ok());
  EXPECT_THAT(layer.status().message(), HasSubstr("row.weight"));
  EXPECT_THAT(layer.status().message(), HasSubstr("degree 16"));
  EXPECT_THAT(layer.status().message(), HasSubstr("multiple of 32"));
}

TEST_F(QuantizedLayersTest, AlreadyBlockQuantizedWeightsAreNotQuantizedAgain) {
  FakeGroup group(0, 1);
  for (WeightQuantization q : {WeightQuantization::kInt8, WeightQuantization::kInt4G128}) {
    LoadContext ctx{*store_, config_, group, 1, q};
    Tensor weight = quantized(dense_col_, DType::kQ6_K), scale;
    const absl::Status s = quantize_linear_weight(ctx, "model.layers.3.self_attn.q_proj", weight, scale);
    ASSERT_FALSE(s.ok());
    EXPECT_THAT(s.message(), HasSubstr("model.layers.3.self_attn.q_proj.weight"));
    EXPECT_THAT(s.message(), HasSubstr("already q6_k"));
  }
  // Without --quantize a block-quantized weight is taken as it is.
  LoadContext plain{*store_, config_, group};
  Tensor weight = quantized(dense_col_, DType::kQ6_K), scale;
  EXPECT_TRUE(quantize_linear_weight(plain, "w", weight, scale).ok());
  EXPECT_EQ(weight.dtype(), DType::kQ6_K);
}

TEST(WeightQuantizationNames, EveryFlagValueRoundTrips) {
  for (const char* name : {"none", "int8", "int4-g32", "int4-g64", "int4-g128", "int4-g32-sym",
                           "int4-g64-sym", "int4-g128-sym", "q8_0", "q4_0", "q4_1", "q5_0",
                           "q5_1", "q4_k", "q5_k", "q6_k", "fp8"}) {
    auto q = parse_weight_quantization(name);
    ASSERT_TRUE(q.ok()) << name;
    EXPECT_STREQ(weight_quantization_name(*q), name);
  }
  EXPECT_EQ(*parse_weight_quantization("int4"), WeightQuantization::kInt4G128);
  auto bad = parse_weight_quantization("int3");
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(), HasSubstr("--quantize"));
  EXPECT_THAT(bad.status().message(), HasSubstr("int4-g128"));
}

// weft info's plan refuses, as the load does, a layout whose shards fit no block of the type.
TEST(QuantizedWeightPlan, CheckedPlanRefusesShardsOffTheBlock) {
  ModelConfig c;
  c.hidden_size = 256;
  c.intermediate_size = 768;
  c.num_attention_heads = 8;
  c.num_key_value_heads = 4;
  c.head_dim = 32;
  c.num_hidden_layers = 2;
  c.vocab_size = 512;
  c.torch_dtype = DType::kBF16;
  auto layout = stage_layout(2, 1, 0);
  ASSERT_TRUE(layout.ok());
  auto tp1 = checked_planned_weight_bytes(c, 1, 1, *layout, WeightQuantization::kQ4_K);
  ASSERT_TRUE(tp1.ok()) << tp1.status();
  EXPECT_EQ(*tp1, planned_weight_bytes(c, 1, 1, *layout, WeightQuantization::kQ4_K));
  // TP 2: o_proj shards of 128 columns, half a Q4_K block.
  auto tp2 = checked_planned_weight_bytes(c, 2, 1, *layout, WeightQuantization::kQ4_K);
  ASSERT_FALSE(tp2.ok());
  EXPECT_THAT(tp2.status().message(), HasSubstr("128 input columns"));
  EXPECT_THAT(tp2.status().message(), HasSubstr("degree 2"));
  EXPECT_TRUE(checked_planned_weight_bytes(c, 2, 1, *layout, WeightQuantization::kInt4G128).ok());
}

}  // namespace
}  // namespace weft
