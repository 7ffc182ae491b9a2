#include "model/gguf_file.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <limits>

#include "gguf_test_writer.h"
#include "model/gguf_model_files.h"
#include "model/model_files.h"
#include "model/weight_store.h"

namespace weft {
namespace {

using testing::GgufBytes;

class GgufFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("weft_gguf_test_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  absl::StatusOr<std::shared_ptr<GgufFile>> open(const GgufBytes& bytes) {
    const auto path = dir_ / "model.gguf";
    bytes.write(path);
    return GgufFile::open(path);
  }
  // Expects open() to fail with a message containing `fragment` (and the file's name).
  void expect_error(const GgufBytes& bytes, const std::string& fragment) {
    auto file = open(bytes);
    ASSERT_FALSE(file.ok()) << "expected an error containing '" << fragment << "'";
    EXPECT_NE(file.status().message().find(fragment), std::string::npos) << file.status();
    EXPECT_NE(file.status().message().find("model.gguf"), std::string::npos) << file.status();
  }

  std::filesystem::path dir_;
};

// A well-formed file: two metadata entries and one F32 tensor of 2 x 3.
GgufBytes valid_file() {
  GgufBytes b;
  b.header(1, 2).kv_string("general.architecture", "llama").kv_u32("llama.block_count", 1);
  b.tensor("output_norm.weight", {3, 2}, 0, 0).align().f32_data({1, 2, 3, 4, 5, 6});
  return b;
}

TEST_F(GgufFileTest, ReadsMetadataAndTensorsInHuggingFaceOrder) {
  auto file = open(valid_file());
  ASSERT_TRUE(file.ok()) << file.status();
  EXPECT_EQ((*file)->version(), 3u);
  ASSERT_NE((*file)->find("general.architecture"), nullptr);
  EXPECT_EQ((*file)->find("general.architecture")->text, "llama");
  EXPECT_EQ((*file)->find("llama.block_count")->integer, 1);
  auto t = (*file)->tensor("output_norm.weight");
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->shape(), (Shape{2, 3}));  // GGUF's ne {3, 2}: rows of 3
  EXPECT_EQ(t->data_as<float>()[4], 5.0f);
}

TEST_F(GgufFileTest, RefusesBadMagicAndVersions) {
  GgufBytes not_gguf;
  not_gguf.raw<uint32_t>(0x12345678).raw<uint32_t>(3).raw<uint64_t>(0).raw<uint64_t>(0);
  expect_error(not_gguf, "not a GGUF file");
  GgufBytes v1;
  v1.header(0, 0, /*version=*/1);
  expect_error(v1, "GGUF version 1 is not supported");
  GgufBytes empty;
  expect_error(empty, "the file ends inside it");
}

// llama.cpp CVE patterns: counts that would make a reader allocate or loop without bound.
TEST_F(GgufFileTest, RefusesHugeCountsBeforeAllocating) {
  GgufBytes many_kv;
  many_kv.header(0, std::numeric_limits<uint64_t>::max());
  expect_error(many_kv, "metadata entries exceed the limit");
  GgufBytes many_tensors;
  many_tensors.header(uint64_t{1} << 40, 0);
  expect_error(many_tensors, "tensors exceed the limit");
  GgufBytes more_than_fit;
  more_than_fit.header(1000, 1000);
  expect_error(more_than_fit, "cannot fit in the file");
  GgufBytes huge_array;
  huge_array.header(0, 1).string("tokenizer.ggml.tokens").raw<uint32_t>(9).raw<uint32_t>(8)
      .raw<uint64_t>(uint64_t{1} << 62);
  expect_error(huge_array, "exceeds the limit");
  GgufBytes array_past_end;
  array_past_end.header(0, 1).string("tokenizer.ggml.scores").raw<uint32_t>(9).raw<uint32_t>(6)
      .raw<uint64_t>(1000).data(16);
  expect_error(array_past_end, "runs past the end of the file");
}

TEST_F(GgufFileTest, RefusesStringLengthsPastTheFile) {
  GgufBytes key_overflow;
  key_overflow.header(0, 1).raw<uint64_t>(std::numeric_limits<uint64_t>::max()).data(16);
  expect_error(key_overflow, "exceeds the limit");
  GgufBytes value_past_end;
  value_past_end.header(0, 1).string("general.name").raw<uint32_t>(8).raw<uint64_t>(1 << 20).data(8);
  expect_error(value_past_end, "runs past the end of the file");
}

TEST_F(GgufFileTest, RefusesMalformedMetadata) {
  GgufBytes unknown_type;
  unknown_type.header(0, 1).string("general.name").raw<uint32_t>(13).data(24);
  expect_error(unknown_type, "unknown metadata value type 13");
  GgufBytes nested;
  nested.header(0, 1).string("x").raw<uint32_t>(9).raw<uint32_t>(9).raw<uint64_t>(1).data(24);
  expect_error(nested, "arrays of arrays");
  GgufBytes twice;
  twice.header(0, 2).kv_u32("llama.block_count", 1).kv_u32("llama.block_count", 2).data(16);
  expect_error(twice, "the key appears twice");
  GgufBytes bad_bool;
  bad_bool.header(0, 1).string("b").raw<uint32_t>(7).raw<uint8_t>(7).data(16);
  expect_error(bad_bool, "is not 0 or 1");
  GgufBytes bad_alignment;
  bad_alignment.header(0, 1).kv_u32("general.alignment", 24).data(16);
  expect_error(bad_alignment, "power of two");
}

TEST_F(GgufFileTest, RefusesTensorDescriptionsThatOverflowOrLieOutside) {
  GgufBytes overflow;
  overflow.header(1, 0).tensor("t", {uint64_t{1} << 32, uint64_t{1} << 32}, 0, 0).data(64);
  expect_error(overflow, "element count overflows");
  // A zero dimension does not excuse the others: found by the gguf fuzzer, whose Shape::numel
  // multiplied the two huge dimensions before the zero.
  GgufBytes zero_then_overflow;
  zero_then_overflow.header(1, 0)
      .tensor("t", {0, uint64_t{1} << 32, uint64_t{1} << 32}, 0, 0)
      .data(64);
  expect_error(zero_then_overflow, "element count overflows");
  GgufBytes rank;
  rank.header(1, 0).string("t").raw<uint32_t>(5).data(64);
  expect_error(rank, "5 dimensions");
  GgufBytes past_end;
  past_end.header(1, 0).tensor("t", {4, 4}, 0, 0).align().data(32);  // needs 64 bytes
  expect_error(past_end, "lie outside the file");
  GgufBytes far_offset;
  far_offset.header(1, 0).tensor("t", {8}, 0, uint64_t{1} << 60).align().data(32);
  expect_error(far_offset, "lie outside the file");
  GgufBytes misaligned;
  misaligned.header(1, 0).tensor("t", {2}, 0, 4).align().data(64);
  expect_error(misaligned, "not a multiple of the 32-byte alignment");
  GgufBytes duplicate;
  duplicate.header(2, 0).tensor("t", {8}, 0, 0).tensor("t", {8}, 0, 32).align().data(64);
  expect_error(duplicate, "the name appears twice");
}

TEST_F(GgufFileTest, NamesUnsupportedTensorTypesAndPartialBlocks) {
  GgufBytes q2k;
  q2k.header(1, 0).tensor("t", {256}, 10, 0).align().data(256);
  expect_error(q2k, "ggml tensor type 10 (Q2_K) is not supported");
  GgufBytes partial;
  partial.header(1, 0).tensor("t", {40, 2}, 8, 0).align().data(256);  // Q8_0 rows of 40
  expect_error(partial, "not whole q8_0 blocks of 32");
  GgufBytes q8;  // two rows of one Q8_0 block (34 bytes each)
  q8.header(1, 0).tensor("t", {32, 2}, 8, 0).align().data(68);
  auto file = open(q8);
  ASSERT_TRUE(file.ok()) << file.status();
  auto t = (*file)->tensor("t");
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->dtype(), DType::kQ8_0);
  EXPECT_EQ(t->nbytes(), 68u);
}

TEST_F(GgufFileTest, MetadataThatWeftWouldIgnoreIsRefusedByName) {
  GgufBytes b;
  b.header(0, 8).kv_string("general.architecture", "llama").kv_u32("llama.block_count", 1)
      .kv_u32("llama.embedding_length", 64).kv_u32("llama.feed_forward_length", 128)
      .kv_u32("llama.attention.head_count", 2).kv_f32("llama.attention.layer_norm_rms_epsilon", 1e-5f)
      .kv_u32("llama.context_length", 64).kv_string("llama.rope.scaling.type", "yarn").data(8);
  auto file = open(b);
  ASSERT_TRUE(file.ok()) << file.status();
  auto config = gguf_config_json(**file);
  ASSERT_FALSE(config.ok());
  EXPECT_NE(config.status().message().find("llama.rope.scaling.type"), std::string::npos);

  GgufBytes other_arch;
  other_arch.header(0, 1).kv_string("general.architecture", "gemma3").data(8);
  file = open(other_arch);
  ASSERT_TRUE(file.ok());
  config = gguf_config_json(**file);
  ASSERT_FALSE(config.ok());
  EXPECT_NE(config.status().message().find("'gemma3' is not supported"), std::string::npos);

  GgufBytes unigram;
  unigram.header(0, 2).kv_string("tokenizer.ggml.model", "t5")
      .kv_string_array("tokenizer.ggml.tokens", {"a"}).data(8);
  file = open(unigram);
  ASSERT_TRUE(file.ok());
  auto tokenizer = gguf_tokenizer_json(**file);
  ASSERT_FALSE(tokenizer.ok());
  EXPECT_NE(tokenizer.status().message().find("tokenizer.ggml.model"), std::string::npos);

  // A sentencepiece vocabulary needs its merges or its scores to derive them from.
  GgufBytes spm;
  spm.header(0, 2).kv_string("tokenizer.ggml.model", "llama")
      .kv_string_array("tokenizer.ggml.tokens", {"a"}).data(8);
  file = open(spm);
  ASSERT_TRUE(file.ok());
  tokenizer = gguf_tokenizer_json(**file);
  ASSERT_FALSE(tokenizer.ok());
  EXPECT_NE(tokenizer.status().message().find("tokenizer.ggml.scores"), std::string::npos)
      << tokenizer.status();
}

TEST_F(GgufFileTest, TensorNamesMapToHuggingFaceNames) {
  EXPECT_EQ(gguf_to_hf_tensor_name("blk.12.attn_q.weight"), "model.layers.12.self_attn.q_proj.weight");
  EXPECT_EQ(gguf_to_hf_tensor_name("blk.0.ffn_down.weight"), "model.layers.0.mlp.down_proj.weight");
  EXPECT_EQ(gguf_to_hf_tensor_name("blk.1.attn_k.bias"), "model.layers.1.self_attn.k_proj.bias");
  EXPECT_EQ(gguf_to_hf_tensor_name("token_embd.weight"), "model.embed_tokens.weight");
  EXPECT_EQ(gguf_to_hf_tensor_name("blk.x.attn_q.weight"), std::nullopt);
  EXPECT_EQ(gguf_to_hf_tensor_name("blk.0.ffn_gate_exps.weight"), std::nullopt);
  EXPECT_EQ(gguf_to_hf_tensor_name("rope_freqs.weight"), std::nullopt);
}

TEST_F(GgufFileTest, WeightStoreRefusesTensorsItDoesNotKnow) {
  GgufBytes b;
  b.header(1, 0).tensor("blk.0.ffn_gate_exps.weight", {8}, 0, 0).align().data(32);
  b.write(dir_ / "model.gguf");
  auto store = WeightStore::open(dir_);  // a directory holding one .gguf and no config.json
  ASSERT_FALSE(store.ok());
  EXPECT_NE(store.status().message().find("blk.0.ffn_gate_exps.weight"), std::string::npos);
  EXPECT_EQ(gguf_model_file(dir_), dir_ / "model.gguf");
}

TEST_F(GgufFileTest, TruncatedCopiesOfARealFileFailCleanly) {
  const auto source = std::filesystem::path(WEFT_SOURCE_DIR) / "tests/golden/gguf/tiny_llama.q8_0.gguf";
  std::ifstream in(source, std::ios::binary);
  std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  ASSERT_GT(bytes.size(), 100000u);
  for (size_t cut : {size_t{3}, size_t{24}, size_t{5000}, size_t{200000}, bytes.size() - 1}) {
    const auto path = dir_ / "cut.gguf";
    std::ofstream(path, std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(cut));
    auto file = GgufFile::open(path);
    ASSERT_FALSE(file.ok()) << "a file cut at " << cut << " bytes opened";
    EXPECT_NE(file.status().message().find("cut.gguf"), std::string::npos) << file.status();
  }
}

}  // namespace
}  // namespace weft
