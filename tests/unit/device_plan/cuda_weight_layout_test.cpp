// The CUDA rank weight layout and its packed bytes (engine/cuda/cuda_weight_layout.h), on the
// CPU: each rank's tensors are checked element by element against slices of the full checkpoint
// tensors computed here from the head and row counts alone, and the layout against pipeline
// stages and bad shares.
#include <algorithm>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "absl/strings/str_cat.h"
#include "core/half.h"
#include "engine/cuda/cuda_weight_layout.h"

namespace weft {
namespace {

using ::testing::HasSubstr;

std::filesystem::path golden(const std::string& name) {
  return std::filesystem::path(WEFT_SOURCE_DIR) / "tests/golden/models" / name;
}

struct Model {
  ModelConfig config;
  WeightStore weights;
};

Model open_model(const std::string& name) {
  auto config = load_model_config(golden(name));
  EXPECT_TRUE(config.ok()) << config.status();
  auto weights = WeightStore::open(golden(name));
  EXPECT_TRUE(weights.ok()) << weights.status();
  return Model{*config, *std::move(weights)};
}

// A checkpoint tensor as F32 [rows, cols] (cols 1 for vectors), rounded through BF16 as the
// device holds it.
struct Full {
  int64_t rows = 0, cols = 1;
  std::vector<float> v;
  float at(int64_t r, int64_t c) const { return r < rows && c < cols ? v[r * cols + c] : 0.0f; }
};

Full full(const Model& m, const std::string& name, int64_t rows, int64_t cols) {
  auto t = m.weights.get(name, cols > 0 ? Shape{rows, cols} : Shape{rows});
  EXPECT_TRUE(t.ok()) << t.status();
  Full f;
  f.rows = rows;
  f.cols = std::max<int64_t>(cols, 1);
  f.v.resize(static_cast<size_t>(f.rows * f.cols));
  for (int64_t i = 0; i < f.rows * f.cols; ++i) {
    const float x = t->dtype() == DType::kF32 ? t->data_as<float>()[i] : bf16_to_float(t->data_as<uint16_t>()[i]);
    f.v[i] = bf16_to_float(float_to_bf16(x));
  }
  return f;
}

std::vector<float> packed(const Model& m, const CudaWeightEntry& e) {
  std::vector<uint16_t> bits;
  const absl::Status s = pack_cuda_weight(e, m.weights, DType::kBF16, bits);
  EXPECT_TRUE(s.ok()) << s;
  std::vector<float> out(bits.size());
  for (size_t i = 0; i < bits.size(); ++i) out[i] = bf16_to_float(bits[i]);
  return out;
}

const CudaWeightEntry* find(const CudaWeightLayout& l, CudaWeightSlot slot, int layer) {
  for (const CudaWeightEntry& e : l.entries) {
    if (e.slot == slot && e.layer == layer) return &e;
  }
  return nullptr;
}

// Appends rows [begin, begin + count) of `f` (zeros past its end) to `out`.
void append_rows(const Full& f, int64_t begin, int64_t count, std::vector<float>& out) {
  for (int64_t r = begin; r < begin + count; ++r) {
    for (int64_t c = 0; c < f.cols; ++c) out.push_back(f.at(r, c));
  }
}

// Checks every tensor of every rank of a TP group of `size` against the full checkpoint.
void check_tensor_parallel(const std::string& name, int size) {
  SCOPED_TRACE(absl::StrCat(name, " tp ", size));
  const Model m = open_model(name);
  const ModelConfig& c = m.config;
  const int64_t h = c.hidden_size, d = c.head_dim;
  const int64_t heads = c.num_attention_heads, kv_heads = c.num_key_value_heads, inter = c.intermediate_size;
  const int64_t vocab_rows = (c.vocab_size + size - 1) / size;
  const int64_t inter_rows = (inter + size - 1) / size;
  for (int rank = 0; rank < size; ++rank) {
    SCOPED_TRACE(absl::StrCat("rank ", rank));
    CudaRankShare share;
    share.tp_rank = rank;
    share.tp_size = size;
    auto layout = cuda_weight_layout(c, DType::kBF16, share);
    ASSERT_TRUE(layout.ok()) << layout.status();
    EXPECT_EQ(layout->vocab_begin, rank * vocab_rows);
    EXPECT_EQ(layout->vocab_rows, vocab_rows);
    // Vocabulary rows of the embedding (and the head), zero past vocab_size.
    const CudaWeightEntry* emb = find(*layout, CudaWeightSlot::kEmbedding, -1);
    ASSERT_NE(emb, nullptr);
    std::vector<float> want;
    append_rows(full(m, "model.embed_tokens.weight", c.vocab_size, h), rank * vocab_rows, vocab_rows, want);
    EXPECT_EQ(packed(m, *emb), want);
    for (int layer = 0; layer < c.num_hidden_layers; ++layer) {
      SCOPED_TRACE(absl::StrCat("layer ", layer));
      const std::string p = absl::StrCat("model.layers.", layer);
      // q: this rank's heads; k, v: its share of the KV heads, or (fewer KV heads than ranks)
      // the one head its query heads read.
      const int64_t q_per = heads / size;
      const int64_t kv_per = kv_heads >= size ? kv_heads / size : 1;
      const int64_t kv_first = kv_heads >= size ? rank * kv_per : rank * kv_heads / size;
      want.clear();
      append_rows(full(m, p + ".self_attn.q_proj.weight", heads * d, h), rank * q_per * d, q_per * d, want);
      append_rows(full(m, p + ".self_attn.k_proj.weight", kv_heads * d, h), kv_first * d, kv_per * d, want);
      append_rows(full(m, p + ".self_attn.v_proj.weight", kv_heads * d, h), kv_first * d, kv_per * d, want);
      const CudaWeightEntry* qkv = find(*layout, CudaWeightSlot::kQkv, layer);
      ASSERT_NE(qkv, nullptr);
      EXPECT_EQ(qkv->rows, (q_per + 2 * kv_per) * d);
      EXPECT_EQ(packed(m, *qkv), want);
      if (c.attention_bias) {
        want.clear();
        append_rows(full(m, p + ".self_attn.q_proj.bias", heads * d, 0), rank * q_per * d, q_per * d, want);
        append_rows(full(m, p + ".self_attn.k_proj.bias", kv_heads * d, 0), kv_first * d, kv_per * d, want);
        append_rows(full(m, p + ".self_attn.v_proj.bias", kv_heads * d, 0), kv_first * d, kv_per * d, want);
        const CudaWeightEntry* bias = find(*layout, CudaWeightSlot::kQkvBias, layer);
        ASSERT_NE(bias, nullptr);
        EXPECT_EQ(packed(m, *bias), want);
      }
      // o_proj: every output row, this rank's heads' input columns.
      const Full o = full(m, p + ".self_attn.o_proj.weight", h, heads * d);
      want.clear();
      for (int64_t r = 0; r < h; ++r) {
        for (int64_t col = rank * q_per * d; col < (rank + 1) * q_per * d; ++col) want.push_back(o.at(r, col));
      }
      const CudaWeightEntry* o_proj = find(*layout, CudaWeightSlot::kOProj, layer);
      ASSERT_NE(o_proj, nullptr);
      EXPECT_EQ(o_proj->cols, q_per * d);
      EXPECT_EQ(packed(m, *o_proj), want);
      // gate_up: this rank's intermediate rows of each (zero past intermediate_size); down: those columns.
      want.clear();
      append_rows(full(m, p + ".mlp.gate_proj.weight", inter, h), rank * inter_rows, inter_rows, want);
      append_rows(full(m, p + ".mlp.up_proj.weight", inter, h), rank * inter_rows, inter_rows, want);
      const CudaWeightEntry* gate_up = find(*layout, CudaWeightSlot::kGateUp, layer);
      ASSERT_NE(gate_up, nullptr);
      EXPECT_EQ(packed(m, *gate_up), want);
      const Full down = full(m, p + ".mlp.down_proj.weight", h, inter);
      want.clear();
      for (int64_t r = 0; r < h; ++r) {
        for (int64_t col = rank * inter_rows; col < (rank + 1) * inter_rows; ++col) want.push_back(down.at(r, col));
      }
      const CudaWeightEntry* down_entry = find(*layout, CudaWeightSlot::kDown, layer);
      ASSERT_NE(down_entry, nullptr);
      EXPECT_EQ(packed(m, *down_entry), want);
      // Norms whole on every rank.
      want.clear();
      append_rows(full(m, p + ".input_layernorm.weight", h, 0), 0, h, want);
      const CudaWeightEntry* norm = find(*layout, CudaWeightSlot::kInputNorm, layer);
      ASSERT_NE(norm, nullptr);
      EXPECT_EQ(packed(m, *norm), want);
    }
    if (!c.tie_word_embeddings) {
      const CudaWeightEntry* head = find(*layout, CudaWeightSlot::kLmHead, -1);
      ASSERT_NE(head, nullptr);
      want.clear();
      append_rows(full(m, "lm_head.weight", c.vocab_size, h), rank * vocab_rows, vocab_rows, want);
      EXPECT_EQ(packed(m, *head), want);
    } else {
      EXPECT_EQ(find(*layout, CudaWeightSlot::kLmHead, -1), nullptr);
      EXPECT_TRUE(layout->tied_head);
    }
  }
}

TEST(CudaWeightLayout, WholeModelIsTheFusedCheckpoint) { check_tensor_parallel("llama_gqa", 1); }
TEST(CudaWeightLayout, TwoRanksSplitHeadsAndIntermediate) { check_tensor_parallel("llama_gqa", 2); }
// Two KV heads over four ranks: replicated, each rank the head its query heads read.
TEST(CudaWeightLayout, FourRanksReplicateKvHeads) { check_tensor_parallel("llama_gqa", 4); }
// intermediate_size 150 over four ranks: 38 rows each, the last rank's two past the end zero.
TEST(CudaWeightLayout, UnevenIntermediateIsZeroPadded) { check_tensor_parallel("llama_4layers", 4); }
TEST(CudaWeightLayout, QkvBiasesAreSharded) {
  ASSERT_TRUE(open_model("qwen2_bias").config.attention_bias);
  check_tensor_parallel("qwen2_bias", 2);
}
TEST(CudaWeightLayout, TiedHeadReadsTheEmbedding) { check_tensor_parallel("llama3_tied", 2); }
TEST(CudaWeightLayout, Bf16CheckpointIsCopied) { check_tensor_parallel("llama_bf16", 2); }

TEST(CudaWeightLayout, PipelineStagesHoldTheirLayersOnly) {
  const Model m = open_model("llama_4layers");
  CudaRankShare first;
  first.end_layer = 2;
  first.last_stage = false;
  CudaRankShare last;
  last.first_layer = 2;
  last.first_stage = false;
  auto a = cuda_weight_layout(m.config, DType::kBF16, first);
  auto b = cuda_weight_layout(m.config, DType::kBF16, last);
  auto whole = cuda_weight_layout(m.config, DType::kBF16);
  ASSERT_TRUE(a.ok() && b.ok() && whole.ok());
  EXPECT_NE(find(*a, CudaWeightSlot::kEmbedding, -1), nullptr);
  EXPECT_EQ(find(*a, CudaWeightSlot::kLmHead, -1), nullptr);
  EXPECT_EQ(find(*a, CudaWeightSlot::kFinalNorm, -1), nullptr);
  EXPECT_NE(find(*a, CudaWeightSlot::kQkv, 1), nullptr);
  EXPECT_EQ(find(*a, CudaWeightSlot::kQkv, 2), nullptr);
  EXPECT_EQ(find(*b, CudaWeightSlot::kEmbedding, -1), nullptr);
  EXPECT_NE(find(*b, CudaWeightSlot::kLmHead, -1), nullptr);
  EXPECT_EQ(find(*b, CudaWeightSlot::kQkv, 1), nullptr);
  EXPECT_NE(find(*b, CudaWeightSlot::kQkv, 3), nullptr);
  EXPECT_EQ(a->entries.size() + b->entries.size(), whole->entries.size());
  // A tied head's last stage holds the embedding too (as the head).
  const Model tied = open_model("llama3_tied");
  CudaRankShare tied_last;
  tied_last.first_layer = 1;
  tied_last.first_stage = false;
  auto t = cuda_weight_layout(tied.config, DType::kBF16, tied_last);
  ASSERT_TRUE(t.ok());
  EXPECT_NE(find(*t, CudaWeightSlot::kEmbedding, -1), nullptr);
}

// A row-parallel bias joins the all-reduced sum once: only the group's first rank holds it.
TEST(CudaWeightLayout, RowParallelBiasesOnTheFirstRankOnly) {
  ModelConfig c = open_model("llama_gqa").config;
  c.o_proj_bias = true;
  c.mlp_bias = true;
  for (int rank = 0; rank < 2; ++rank) {
    CudaRankShare share;
    share.tp_rank = rank;
    share.tp_size = 2;
    auto layout = cuda_weight_layout(c, DType::kBF16, share);
    ASSERT_TRUE(layout.ok()) << layout.status();
    EXPECT_EQ(find(*layout, CudaWeightSlot::kOBias, 0) != nullptr, rank == 0);
    EXPECT_EQ(find(*layout, CudaWeightSlot::kDownBias, 1) != nullptr, rank == 0);
    EXPECT_NE(find(*layout, CudaWeightSlot::kGateUpBias, 1), nullptr);  // column-parallel: every rank its rows
  }
}

TEST(CudaWeightLayout, BadSharesAreRefusedByName) {
  const Model m = open_model("llama_gqa");  // 8 heads, 2 layers
  CudaRankShare three;
  three.tp_size = 3;
  auto heads = cuda_weight_layout(m.config, DType::kBF16, three);
  EXPECT_EQ(heads.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(heads.status().message()), HasSubstr("num_attention_heads"));
  CudaRankShare past;
  past.first_layer = 1;
  past.end_layer = 3;
  auto layers = cuda_weight_layout(m.config, DType::kBF16, past);
  EXPECT_EQ(layers.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(layers.status().message()), HasSubstr("layers [1, 3)"));
  auto f32 = cuda_weight_layout(m.config, DType::kF32);
  EXPECT_THAT(std::string(f32.status().message()), HasSubstr("F16 or BF16"));
}

}  // namespace
}  // namespace weft
