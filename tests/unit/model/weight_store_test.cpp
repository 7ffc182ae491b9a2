#include "model/weight_store.h"

#include <numeric>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "model_test_util.h"

namespace weft {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using testing::TempDir;
using testing::write_bytes;

// An f32 tensor whose element i (row-major) is offset + i.
Tensor iota(Shape shape, float offset = 0.0f) {
  Tensor t = Tensor::zeros(DType::kF32, shape);
  std::iota(t.data_as<float>(), t.data_as<float>() + t.numel(), offset);
  return t;
}

std::vector<float> values(const Tensor& t) {
  return std::vector<float>(t.data_as<float>(), t.data_as<float>() + t.numel());
}

TEST(WeightStoreTest, SingleFileGetAndShapeCheck) {
  TempDir dir;
  ASSERT_TRUE(write_safetensors(dir / "model.safetensors",
                                {{"embed", iota(Shape{4, 3})}, {"norm", iota(Shape{3}, 10)}})
                  .ok());
  auto store = WeightStore::open(dir.path());
  ASSERT_TRUE(store.ok()) << store.status();
  EXPECT_TRUE(store->contains("embed"));
  EXPECT_FALSE(store->contains("lm_head"));
  EXPECT_THAT(store->names(), ElementsAre("embed", "norm"));
  auto norm = store->get("norm", Shape{3});
  ASSERT_TRUE(norm.ok()) << norm.status();
  EXPECT_THAT(values(*norm), ElementsAre(10, 11, 12));

  const absl::Status wrong = store->get("embed", Shape{3, 4}).status();
  ASSERT_FALSE(wrong.ok());
  EXPECT_EQ(wrong.message(), "tensor 'embed' in " + (dir / "model.safetensors").string() +
                                 " has shape [4, 3], expected [3, 4] from config.json");
  const absl::Status missing = store->get("lm_head", Shape{4, 3}).status();
  EXPECT_EQ(missing.message(), "tensor 'lm_head' not found in " + dir.path().string());
}

TEST(WeightStoreTest, TensorOutlivesStore) {
  TempDir dir;
  ASSERT_TRUE(write_safetensors(dir / "model.safetensors", {{"w", iota(Shape{2, 2}, 1)}}).ok());
  Tensor w;
  Tensor rows;
  {
    auto store = WeightStore::open(dir.path());
    ASSERT_TRUE(store.ok());
    w = *store->get("w", Shape{2, 2});
    rows = *store->get_slice("w", Shape{2, 2}, 0, 1, 1);
  }
  EXPECT_THAT(values(w), ElementsAre(1, 2, 3, 4));
  EXPECT_THAT(values(rows), ElementsAre(3, 4));
}

TEST(WeightStoreTest, ShardedDirectory) {
  TempDir dir;
  ASSERT_TRUE(write_safetensors(dir / "model-00001-of-00002.safetensors",
                                {{"a", iota(Shape{2, 2})}, {"b", iota(Shape{2}, 5)}})
                  .ok());
  ASSERT_TRUE(
      write_safetensors(dir / "model-00002-of-00002.safetensors", {{"c", iota(Shape{3}, 7)}}).ok());
  write_bytes(
      dir / "model.safetensors.index.json",
      R"({"metadata": {"total_size": 36}, "weight_map": {"a": "model-00001-of-00002.safetensors",
                  "b": "model-00001-of-00002.safetensors", "c": "model-00002-of-00002.safetensors"}})");
  auto store = WeightStore::open(dir.path());
  ASSERT_TRUE(store.ok()) << store.status();
  EXPECT_THAT(store->names(), ElementsAre("a", "b", "c"));
  EXPECT_THAT(values(*store->get("c", Shape{3})), ElementsAre(7, 8, 9));
  EXPECT_THAT(values(*store->get("b", Shape{2})), ElementsAre(5, 6));
}

TEST(WeightStoreErrorTest, NoWeights) {
  TempDir dir;
  absl::Status status = WeightStore::open(dir.path()).status();
  EXPECT_THAT(
      status.message(),
      HasSubstr("no model.safetensors or model.safetensors.index.json in " + dir.path().string()));
  status = WeightStore::open(dir / "absent").status();
  EXPECT_THAT(status.message(), HasSubstr("absent does not exist"));
}

TEST(WeightStoreErrorTest, ShardFailsValidation) {
  TempDir dir;
  write_bytes(dir / "model.safetensors", "abc");
  const absl::Status status = WeightStore::open(dir.path()).status();
  EXPECT_THAT(status.message(), HasSubstr((dir / "model.safetensors").string()));
}

TEST(WeightStoreErrorTest, IndexNamesMissingShard) {
  TempDir dir;
  ASSERT_TRUE(write_safetensors(dir / "s1.safetensors", {{"a", iota(Shape{2})}}).ok());
  write_bytes(dir / "model.safetensors.index.json",
              R"({"weight_map": {"a": "s1.safetensors", "b": "s2.safetensors"}})");
  const absl::Status status = WeightStore::open(dir.path()).status();
  ASSERT_FALSE(status.ok());
  EXPECT_THAT(status.message(),
              HasSubstr("model.safetensors.index.json maps tensor 'b' to " +
                        (dir / "s2.safetensors").string() + ", which does not exist"));
}

TEST(WeightStoreErrorTest, TensorInTwoShards) {
  TempDir dir;
  ASSERT_TRUE(
      write_safetensors(dir / "s1.safetensors", {{"a", iota(Shape{2})}, {"b", iota(Shape{2})}})
          .ok());
  ASSERT_TRUE(write_safetensors(dir / "s2.safetensors", {{"b", iota(Shape{2})}}).ok());
  write_bytes(dir / "model.safetensors.index.json",
              R"({"weight_map": {"a": "s1.safetensors", "b": "s2.safetensors"}})");
  const absl::Status status = WeightStore::open(dir.path()).status();
  ASSERT_FALSE(status.ok());
  EXPECT_THAT(status.message(), HasSubstr("tensor 'b' is stored in both"));
  EXPECT_THAT(status.message(), HasSubstr("s1.safetensors"));
  EXPECT_THAT(status.message(), HasSubstr("s2.safetensors"));
}

TEST(WeightStoreErrorTest, MalformedIndex) {
  TempDir dir;
  ASSERT_TRUE(write_safetensors(dir / "s1.safetensors", {{"a", iota(Shape{2})}}).ok());
  const std::string index = (dir / "model.safetensors.index.json").string();
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"{", "not valid JSON"},
      {R"({"metadata": {}})", "field 'weight_map' must be an object"},
      {R"({"weight_map": {"a": 3}})", "weight_map entry for tensor 'a' must be a file name string"},
      {R"({"weight_map": {"a": "../s1.safetensors"}})", "expected a file name in"},
      {R"({"weight_map": {"a": "s1.safetensors", "a": "s1.safetensors"}})",
       "duplicate key 'weight_map.a'"},
      {R"({"weight_map": {"a": "s1.safetensors", "z": "s1.safetensors"}})",
       "maps tensor 'z' to s1.safetensors, which has no such tensor"},
  };
  for (const auto& [text, expected] : cases) {
    SCOPED_TRACE(text);
    write_bytes(index, text);
    const absl::Status status = WeightStore::open(dir.path()).status();
    ASSERT_FALSE(status.ok());
    EXPECT_THAT(status.message(), HasSubstr(index));
    EXPECT_THAT(status.message(), HasSubstr(expected));
  }
}

TEST(WeightStoreSliceTest, Dim0IsAZeroCopyView) {
  TempDir dir;
  ASSERT_TRUE(write_safetensors(dir / "model.safetensors", {{"w", iota(Shape{5, 3})}}).ok());
  auto store = WeightStore::open(dir.path());
  ASSERT_TRUE(store.ok());
  auto full = store->get("w", Shape{5, 3});
  auto slice = store->get_slice("w", Shape{5, 3}, 0, 2, 2);
  ASSERT_TRUE(full.ok() && slice.ok()) << slice.status();
  EXPECT_EQ(slice->shape(), (Shape{2, 3}));
  EXPECT_EQ(slice->data(), full->data_as<float>() + 6);
  EXPECT_THAT(values(*slice), ElementsAre(6, 7, 8, 9, 10, 11));
}

TEST(WeightStoreSliceTest, Dim0PastTheEndIsZeroPadded) {
  TempDir dir;
  ASSERT_TRUE(write_safetensors(dir / "model.safetensors", {{"w", iota(Shape{5, 2}, 1)}}).ok());
  auto store = WeightStore::open(dir.path());
  ASSERT_TRUE(store.ok());
  auto slice = store->get_slice("w", Shape{5, 2}, 0, 3, 3);  // rows 3, 4 and a padding row
  ASSERT_TRUE(slice.ok()) << slice.status();
  EXPECT_EQ(slice->shape(), (Shape{3, 2}));
  EXPECT_THAT(values(*slice), ElementsAre(7, 8, 9, 10, 0, 0));
  auto beyond = store->get_slice("w", Shape{5, 2}, 0, 6, 2);
  ASSERT_TRUE(beyond.ok());
  EXPECT_THAT(values(*beyond), ElementsAre(0, 0, 0, 0));
}

TEST(WeightStoreSliceTest, Dim1CopiesColumns) {
  TempDir dir;
  ASSERT_TRUE(write_safetensors(dir / "model.safetensors",
                                {{"w", iota(Shape{3, 4})}, {"k", iota(Shape{2, 3, 2})}})
                  .ok());
  auto store = WeightStore::open(dir.path());
  ASSERT_TRUE(store.ok());
  auto cols = store->get_slice("w", Shape{3, 4}, 1, 1, 2);
  ASSERT_TRUE(cols.ok()) << cols.status();
  EXPECT_EQ(cols->shape(), (Shape{3, 2}));
  EXPECT_THAT(values(*cols), ElementsAre(1, 2, 5, 6, 9, 10));

  auto padded = store->get_slice("w", Shape{3, 4}, 1, 2, 3);  // columns 2, 3 and a padding column
  ASSERT_TRUE(padded.ok());
  EXPECT_THAT(values(*padded), ElementsAre(2, 3, 0, 6, 7, 0, 10, 11, 0));

  // Rank 3: each dim-1 slice keeps its trailing dimension whole.
  auto rank3 = store->get_slice("k", Shape{2, 3, 2}, 1, 2, 2);
  ASSERT_TRUE(rank3.ok());
  EXPECT_EQ(rank3->shape(), (Shape{2, 2, 2}));
  EXPECT_THAT(values(*rank3), ElementsAre(4, 5, 0, 0, 10, 11, 0, 0));
}

TEST(WeightStoreSliceTest, Errors) {
  TempDir dir;
  ASSERT_TRUE(write_safetensors(dir / "model.safetensors",
                                {{"w", iota(Shape{3, 4})}, {"b", iota(Shape{4})}})
                  .ok());
  auto store = WeightStore::open(dir.path());
  ASSERT_TRUE(store.ok());
  EXPECT_THAT(store->get_slice("w", Shape{4, 3}, 0, 0, 1).status().message(),
              HasSubstr("expected [4, 3] from config.json"));
  EXPECT_THAT(store->get_slice("w", Shape{3, 4}, 2, 0, 1).status().message(),
              HasSubstr("slice of tensor 'w': dim must be 0 or 1"));
  EXPECT_THAT(store->get_slice("b", Shape{4}, 1, 0, 1).status().message(),
              HasSubstr("slice of tensor 'b': dim 1 out of range for shape [4]"));
  EXPECT_THAT(store->get_slice("w", Shape{3, 4}, 0, -1, 1).status().message(),
              HasSubstr("must be non-negative"));
}

}  // namespace
}  // namespace weft
