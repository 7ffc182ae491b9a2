#include "engine/cuda/cuda_weights.h"

#include <cstring>
#include <string>

#include "absl/strings/str_cat.h"
#include "core/half.h"
#include "core/status_macros.h"
#include "engine/cuda/device_memory_plan.h"
#include "weft/kernels/block_quant.h"

namespace weft {
namespace {

using kernels::cuda::cuda_check;
using kernels::cuda::DeviceBuffer;

// Rows of one checkpoint tensor ("<name>" of shape [rows, cols], or [rows] when cols == 0).
struct Part {
  std::string name;
  int64_t rows = 0;
};

// One device tensor: its parts stacked by rows, at `offset` bytes into the storage.
struct Entry {
  std::vector<Part> parts;
  int64_t cols = 0;  // 0: a vector
  int64_t offset = 0;
  const void** target = nullptr;
};

// Every tensor of the model in upload order, with `targets` pointing into `w` (which may be a
// scratch object when only the size is wanted). Returns the total bytes.
int64_t layout_entries(const ModelConfig& c, DType dtype, CudaModelWeights& w,
                       std::vector<Entry>& entries) {
  const int64_t es = static_cast<int64_t>(dtype_size(dtype));
  const int64_t h = c.hidden_size, d = c.head_dim;
  const int64_t q_rows = c.num_attention_heads * d, kv_rows = c.num_key_value_heads * d;
  const int64_t inter = c.intermediate_size;
  w.layers.assign(static_cast<size_t>(c.num_hidden_layers), CudaLayerWeights{});
  entries.clear();
  auto add = [&](std::vector<Part> parts, int64_t cols, const void** target) {
    entries.push_back(Entry{std::move(parts), cols, 0, target});
  };
  add({{"model.embed_tokens.weight", c.vocab_size}}, h, &w.embedding);
  for (int64_t i = 0; i < c.num_hidden_layers; ++i) {
    const std::string p = absl::StrCat("model.layers.", i);
    CudaLayerWeights& l = w.layers[static_cast<size_t>(i)];
    add({{p + ".input_layernorm.weight", h}}, 0, &l.input_norm);
    add({{p + ".self_attn.q_proj.weight", q_rows},
         {p + ".self_attn.k_proj.weight", kv_rows},
         {p + ".self_attn.v_proj.weight", kv_rows}},
        h, &l.qkv);
    if (c.attention_bias) {
      add({{p + ".self_attn.q_proj.bias", q_rows},
           {p + ".self_attn.k_proj.bias", kv_rows},
           {p + ".self_attn.v_proj.bias", kv_rows}},
          0, &l.qkv_bias);
    }
    if (c.qk_norm) {
      add({{p + ".self_attn.q_norm.weight", d}}, 0, &l.q_norm);
      add({{p + ".self_attn.k_norm.weight", d}}, 0, &l.k_norm);
    }
    add({{p + ".self_attn.o_proj.weight", h}}, q_rows, &l.o_proj);
    if (c.o_proj_bias) add({{p + ".self_attn.o_proj.bias", h}}, 0, &l.o_bias);
    add({{p + ".post_attention_layernorm.weight", h}}, 0, &l.post_norm);
    add({{p + ".mlp.gate_proj.weight", inter}, {p + ".mlp.up_proj.weight", inter}}, h,
        &l.gate_up);
    if (c.mlp_bias) {
      add({{p + ".mlp.gate_proj.bias", inter}, {p + ".mlp.up_proj.bias", inter}}, 0,
          &l.gate_up_bias);
    }
    add({{p + ".mlp.down_proj.weight", h}}, inter, &l.down);
    if (c.mlp_bias) add({{p + ".mlp.down_proj.bias", h}}, 0, &l.down_bias);
  }
  add({{"model.norm.weight", h}}, 0, &w.final_norm);
  if (!c.tie_word_embeddings) add({{"lm_head.weight", c.vocab_size}}, h, &w.lm_head);

  int64_t at = 0;
  for (Entry& e : entries) {
    int64_t rows = 0;
    for (const Part& part : e.parts) rows += part.rows;
    e.offset = at;
    at += align_device_bytes(rows * std::max<int64_t>(e.cols, 1) * es);
  }
  return at;
}

// Converts `n` elements of `src` (F32, F16 or BF16) to `dtype` (F16 or BF16) into `dst`.
absl::Status convert(const void* src, DType src_dtype, int64_t n, DType dtype, uint16_t* dst,
                     const std::string& name) {
  auto to_float = [&](int64_t i) -> float {
    switch (src_dtype) {
      case DType::kF32: return static_cast<const float*>(src)[i];
      case DType::kF16: return f16_to_float(static_cast<const uint16_t*>(src)[i]);
      default: return bf16_to_float(static_cast<const uint16_t*>(src)[i]);
    }
  };
  if (src_dtype == DType::kF8B64) {
    // FP8 checkpoints' weights (F8B64 on the CPU): dequantized (e4m3 * scale, exact in F32 for
    // F16 / BF16 scales) and rounded once to the compute dtype; no CUDA FP8 kernel yet.
    std::vector<float> row(static_cast<size_t>(n));
    kernels::dequantize_row(src_dtype, src, row.data(), n);
    for (int64_t i = 0; i < n; ++i) {
      dst[i] = dtype == DType::kF16 ? float_to_f16(row[i]) : float_to_bf16(row[i]);
    }
    return absl::OkStatus();
  }
  if (is_block_quantized(src_dtype)) {
    // CUDA twins of the block-quantized kernels (kernels/cuda) do not exist yet.
    return absl::UnimplementedError(absl::StrCat(
        "--device cuda: tensor '", name, "' is block-quantized (", dtype_name(src_dtype),
        "); block-quantized weights run on the CPU only for now (--device cpu)"));
  }
  if (src_dtype != DType::kF32 && src_dtype != DType::kF16 && src_dtype != DType::kBF16) {
    return absl::InvalidArgumentError(absl::StrCat("tensor '", name, "' has dtype ",
                                                   dtype_name(src_dtype),
                                                   ", expected F32, F16 or BF16"));
  }
  for (int64_t i = 0; i < n; ++i) {
    const float f = to_float(i);
    dst[i] = dtype == DType::kF16 ? float_to_f16(f) : float_to_bf16(f);
  }
  return absl::OkStatus();
}

}  // namespace

DType cuda_compute_dtype(DType checkpoint_dtype) {
  return checkpoint_dtype == DType::kF16 ? DType::kF16 : DType::kBF16;
}

int64_t cuda_weight_bytes(const ModelConfig& config, DType dtype) {
  CudaModelWeights scratch;
  std::vector<Entry> entries;
  return layout_entries(config, dtype, scratch, entries);
}

absl::StatusOr<CudaModelWeights> upload_cuda_weights(const ModelConfig& config,
                                                     const WeightStore& weights, DType dtype,
                                                     cudaStream_t stream) {
  if (dtype != DType::kF16 && dtype != DType::kBF16) {
    return absl::InvalidArgumentError(
        absl::StrCat("CUDA weights: compute dtype must be F16 or BF16, got ", dtype_name(dtype)));
  }
  CudaModelWeights w;
  w.dtype = dtype;
  std::vector<Entry> entries;
  const int64_t total = layout_entries(config, dtype, w, entries);
  WEFT_ASSIGN_OR_RETURN(w.storage, DeviceBuffer::allocate(static_cast<size_t>(total)));
  char* base = w.storage.as<char>();
  const size_t es = dtype_size(dtype);
  std::vector<uint16_t> staging;
  for (const Entry& e : entries) {
    char* dst = base + e.offset;
    for (const Part& part : e.parts) {
      const Shape shape = e.cols > 0 ? Shape{part.rows, e.cols} : Shape{part.rows};
      WEFT_ASSIGN_OR_RETURN(Tensor t, weights.get(part.name, shape));
      const size_t bytes = static_cast<size_t>(t.numel()) * es;
      const void* src = t.data();
      if (t.dtype() != dtype) {
        staging.resize(static_cast<size_t>(t.numel()));
        WEFT_RETURN_IF_ERROR(convert(t.data(), t.dtype(), t.numel(), dtype, staging.data(), part.name));
        src = staging.data();
      }
      WEFT_RETURN_IF_ERROR(cuda_check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, stream),
                                      "upload weights (cudaMemcpyAsync)"));
      // The staging vector and the mapped file pages are reused / may be unmapped: wait.
      WEFT_RETURN_IF_ERROR(cuda_check(cudaStreamSynchronize(stream), "upload weights (sync)"));
      dst += bytes;
    }
    *e.target = base + e.offset;
  }
  if (config.tie_word_embeddings) w.lm_head = w.embedding;
  return w;
}

}  // namespace weft
