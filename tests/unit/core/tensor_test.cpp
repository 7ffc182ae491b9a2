#include "core/tensor.h"

#include <gtest/gtest.h>

#include "core/dtype.h"
#include "core/half.h"

namespace weft {
namespace {

TEST(ShapeTest, NumelAndToString) {
  Shape s{2, 3, 4};
  EXPECT_EQ(s.rank(), 3);
  EXPECT_EQ(s.numel(), 24);
  EXPECT_EQ(s.to_string(), "[2, 3, 4]");
  EXPECT_TRUE((s == Shape{2, 3, 4}));
  EXPECT_FALSE((s == Shape{2, 12}));
}

TEST(TensorTest, ZerosAreAlignedAndZero) {
  Tensor t = Tensor::zeros(DType::kF32, Shape{5, 7});
  ASSERT_TRUE(t.defined());
  EXPECT_EQ(reinterpret_cast<uintptr_t>(t.data()) % 64, 0u);
  EXPECT_EQ(t.nbytes(), 5u * 7u * 4u);
  for (int i = 0; i < 35; ++i) EXPECT_EQ(t.data_as<float>()[i], 0.0f);
}

TEST(TensorTest, RowsViewSharesMemory) {
  Tensor t = Tensor::zeros(DType::kF32, Shape{4, 3});
  for (int i = 0; i < 12; ++i) t.data_as<float>()[i] = static_cast<float>(i);
  TensorView r = t.view().rows(2, 2);
  EXPECT_EQ(r.shape, (Shape{2, 3}));
  EXPECT_EQ(r.as<float>()[0], 6.0f);
}

TEST(DTypeTest, SafetensorsNames) {
  EXPECT_EQ(*dtype_from_safetensors("BF16"), DType::kBF16);
  // FP8 E4M3 is read (quantized checkpoints); E5M2 is not, and the error names it.
  EXPECT_EQ(*dtype_from_safetensors("F8_E4M3"), DType::kF8E4M3);
  auto bad = dtype_from_safetensors("F8_E5M2");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("F8_E5M2"), std::string_view::npos);
}

TEST(DTypeTest, BlockQuantizedTensorsAreRowsOfWholeBlocks) {
  // ggml's block sizes: 32 elements in 34 (Q8_0) / 20 (Q4_1) bytes, 256 in 210 (Q6_K).
  EXPECT_EQ(dtype_nbytes(DType::kQ8_0, 64), 68u);
  EXPECT_EQ(dtype_nbytes(DType::kQ4_1, 32), 20u);
  EXPECT_EQ(dtype_nbytes(DType::kQ6_K, 512), 420u);
  EXPECT_EQ(dtype_nbytes(DType::kBF16, 3), 6u);
  EXPECT_TRUE(is_block_quantized(DType::kQ4_K));
  EXPECT_FALSE(is_block_quantized(DType::kU8));
  Tensor t = Tensor::zeros(DType::kQ4_0, Shape{3, 64});  // 2 blocks of 18 bytes per row
  EXPECT_EQ(t.nbytes(), 3u * 2u * 18u);
  TensorView r = t.view().rows(1, 2);
  EXPECT_EQ(static_cast<char*>(r.data) - static_cast<char*>(t.data()), 36);
  EXPECT_EQ(r.nbytes(), 72u);
  EXPECT_STREQ(dtype_name(DType::kQ5_K), "q5_k");
}

TEST(HalfTest, RoundTrips) {
  for (float f : {0.0f, 1.0f, -2.5f, 3.140625f, 65504.0f}) {
    EXPECT_EQ(f16_to_float(float_to_f16(f)), f);
    EXPECT_EQ(bf16_to_float(float_to_bf16(f)), bf16_to_float(float_to_bf16(bf16_to_float(float_to_bf16(f)))));
  }
  EXPECT_EQ(bf16_to_float(float_to_bf16(1.0f)), 1.0f);
  // Round to nearest even: 1 + 2^-8 is halfway between two bf16 values and rounds down to 1.
  EXPECT_EQ(bf16_to_float(float_to_bf16(1.0f + 1.0f / 256)), 1.0f);
}

}  // namespace
}  // namespace weft
