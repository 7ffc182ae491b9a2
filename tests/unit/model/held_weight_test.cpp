// held_weight(): how a rank keeps the weights its kernels stream (model/layers/load_context.h).
#include <cstring>
#include <numeric>

#include "gtest/gtest.h"
#include "model/layers/load_context.h"
#include "model/layers/parallel_linear.h"
#include "model/safetensors.h"
#include "model/weight_store.h"
#include "model_test_util.h"

namespace weft {
namespace {

using testing::FakeGroup;
using testing::TempDir;

Tensor iota(Shape shape, float offset) {
  Tensor t = Tensor::empty(DType::kF32, shape);
  std::iota(t.data_as<float>(), t.data_as<float>() + t.numel(), offset);
  return t;
}

bool same_values(const Tensor& a, const Tensor& b) {
  return a.dtype() == b.dtype() && a.shape() == b.shape() && std::memcmp(a.data(), b.data(), a.nbytes()) == 0;
}

class HeldWeightTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(write_safetensors(dir_ / "model.safetensors",
                                  {{"a.weight", iota(Shape{6, 4}, 1)}, {"b.weight", iota(Shape{3, 4}, 100)}})
                    .ok());
    auto store = WeightStore::open(dir_.path());
    ASSERT_TRUE(store.ok()) << store.status();
    store_.emplace(*std::move(store));
    config_.hidden_size = 4;
  }

  TempDir dir_;
  std::optional<WeightStore> store_;
  ModelConfig config_;
  FakeGroup group_{0, 1};
  HugePageArena arena_;
};

TEST_F(HeldWeightTest, AMappedViewIsCopiedIntoTheArena) {
  const LoadContext ctx{*store_, config_, group_, 1, WeightQuantization::kNone, false, false, &arena_};
  const Tensor mapped = *store_->get_slice("a.weight", Shape{6, 4}, 0, 2, 3);
  ASSERT_TRUE(store_->is_mapped(mapped));
  const Tensor expected = iota(Shape{3, 4}, 9);
  const Tensor held = held_weight(ctx, mapped);
  EXPECT_FALSE(store_->is_mapped(held));
  EXPECT_TRUE(same_values(held, expected));
  // The mapped view still reads the same bytes (its pages were released, not lost).
  EXPECT_TRUE(same_values(mapped, expected));
}

TEST_F(HeldWeightTest, ALayersWeightIsHeldOutsideTheMapping) {
  const LoadContext ctx{*store_, config_, group_, 1, WeightQuantization::kNone, false, false, &arena_};
  // One part, a shard of whole rows: get_slice's view is what the layer would keep.
  auto layer = ColumnParallelLinear::load(ctx, {{"b", 3, ShardRange{0, 3}}}, 4, false);
  ASSERT_TRUE(layer.ok()) << layer.status();
  EXPECT_FALSE(store_->is_mapped(layer->weight()));
  EXPECT_TRUE(same_values(layer->weight(), iota(Shape{3, 4}, 100)));
}

TEST_F(HeldWeightTest, MmapWeightsKeepsTheView) {
  const LoadContext ctx{*store_, config_, group_, 1, WeightQuantization::kNone, false, true, &arena_};
  const Tensor mapped = *store_->get("b.weight", Shape{3, 4});
  EXPECT_EQ(held_weight(ctx, mapped).data(), mapped.data());
  const LoadContext no_arena{*store_, config_, group_};
  EXPECT_EQ(held_weight(no_arena, mapped).data(), mapped.data());
}

TEST_F(HeldWeightTest, HeapTensorsAreCopiedToo) {
  // Fused and quantized weights are heap copies (4 KiB pages), large or small.
  const LoadContext ctx{*store_, config_, group_, 1, WeightQuantization::kNone, false, false, &arena_};
  for (const int64_t n : {int64_t{20}, (int64_t{5} << 20) + 3}) {
    const Tensor t = iota(Shape{n}, 3);
    const Tensor held = held_weight(ctx, t);
    EXPECT_NE(held.data(), t.data());
    EXPECT_TRUE(same_values(held, t));
  }
}

}  // namespace
}  // namespace weft
