// Tensor-parallel linear layers (Megatron-style). Each owns how its weight is split over the TP
// group and when the group reduces; the transport is the injected Communicator.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/tensor.h"
#include "core/thread_pool.h"
#include "model/layers/load_context.h"
#include "parallel/tp_shard.h"

namespace weft {

// One projection contributing rows (output features) to a column-parallel layer: rows `shard`
// of a part of full_rows rows. The part is the whole tensor `name` ([full_rows, in_features]),
// or, in a fused checkpoint tensor (Phi3's qkv_proj, gate_up_proj), rows [tensor_offset,
// tensor_offset + full_rows) of a tensor of tensor_rows rows. Shard rows past full_rows (uneven
// TP splits) are zero-filled, never read from the next part of a fused tensor.
struct ColumnPart {
  std::string name;  // without the ".weight" / ".bias" suffix
  int64_t full_rows = 0;
  ShardRange shard;
  int64_t tensor_offset = 0;
  int64_t tensor_rows = 0;  // 0: full_rows (the part is the whole tensor)
};

// Rows `part.shard` of the part of `suffix` (".weight" [rows, in_features] or ".bias" /
// ".weight_scale" [rows] with in_features 0): a zero-copy view of the mapped checkpoint when the
// shard lies inside the part, else a copy with the rows past the part zero-filled.
absl::StatusOr<Tensor> read_part_rows(const WeightStore& weights, const ColumnPart& part,
                                      const std::string& suffix, int64_t in_features);

// y = x @ W^T (+ b) where W holds this rank's output rows. Several parts are fused into one
// weight (q/k/v; gate/up) so one matrix product serves them. Parts of different dtypes (a GGUF
// file of llama.cpp's mixed types, e.g. Q4_K_M's q/k in Q5_0 and v in Q8_0) stay apart, one
// product each, written into their columns of y. No communication. A rank reads and holds only
// its shard rows of each part. Errors: those of WeightStore::get_slice (a missing tensor, a shape
// other than [tensor_rows, in_features]).
class ColumnParallelLinear {
 public:
  static absl::StatusOr<ColumnParallelLinear> load(const LoadContext& ctx,
                                                   const std::vector<ColumnPart>& parts,
                                                   int64_t in_features, bool has_bias);
  int64_t out_features() const { return out_features_; }  // local rows
  // x: F32 [m, in_features]; y: F32 [m, out_features()].
  void forward(const TensorView& x, const TensorView& y, ThreadPool& pool) const;
  // The checkpoint's dtype, I8 with weight_scale() under --quantize int8, or a block-quantized
  // dtype (a GGUF checkpoint's, or --quantize int4 / q*). Undefined when the parts are held
  // apart (mixed dtypes).
  const Tensor& weight() const { return weight_; }
  const Tensor& weight_scale() const { return weight_scale_; }
  size_t weight_bytes() const;

 private:
  Tensor weight_;
  Tensor weight_scale_;  // F32 [out_features] when weight_ is I8
  Tensor bias_;
  // Parts of different dtypes, in order, instead of weight_, and each one's F32 row scales when
  // it is I8 (else undefined).
  std::vector<Tensor> separate_;
  std::vector<Tensor> separate_scales_;
  int64_t out_features_ = 0;
};

// y = sum over ranks of x_r @ W_r^T (+ b), where W_r holds input columns `shard` of `name` (full
// shape [out_features, full_in]). The all-reduce leaves the full result on every rank; the bias
// (replicated) is added once, after it.
class RowParallelLinear {
 public:
  static absl::StatusOr<RowParallelLinear> load(const LoadContext& ctx, const std::string& name,
                                                int64_t out_features, int64_t full_in,
                                                ShardRange shard, bool has_bias);
  // x: F32 [m, shard.count]; y: F32 [m, out_features].
  absl::Status forward(const TensorView& x, const TensorView& y, Communicator& tp,
                       ThreadPool& pool) const;
  // This rank's term of the sum, x_r @ W_r^T, without the reduce: for a caller that adds several
  // partial results (a mixture of experts) and reduces once. Requires a layer without bias.
  void forward_partial(const TensorView& x, const TensorView& y, ThreadPool& pool) const;
  size_t weight_bytes() const {
    return weight_.nbytes() + (weight_scale_.defined() ? weight_scale_.nbytes() : 0) +
           (bias_.defined() ? bias_.nbytes() : 0);
  }

 private:
  Tensor weight_;
  Tensor weight_scale_;  // F32 [out_features] when weight_ is I8
  Tensor bias_;
};

// A linear module of a quantized Hugging Face checkpoint (config.quantization_config): refuses
// --quantize on it, and a module the config says is quantized (not in `ignore`) that the files
// store dense (no weight_scale). A no-op for dense checkpoints.
absl::Status check_checkpoint_linear(const LoadContext& ctx, const std::string& name);
// Modules weft reads only dense (embeddings, the LM head, MoE routers): an error naming the
// module when the checkpoint stores it quantized.
absl::Status require_dense_module(const LoadContext& ctx, const std::string& name);

// --quantize at load: replaces `weight` (this rank's shard of tensor `name`, without ".weight")
// by int8 values and per-row F32 scales in `scale` (int8), or by a block-quantized copy (int4,
// GGUF types; model/weight_quantization.h chooses the layout from the shard's columns), and
// drops the checkpoint's pages behind it. A no-op without quantization. Errors (naming the
// tensor): a weight that is already block-quantized (a GGUF checkpoint: --quantize applies to
// F32/F16/BF16 ones), or a shard whose columns fit no group of the layout.
absl::Status quantize_linear_weight(const LoadContext& ctx, const std::string& name,
                                    Tensor& weight, Tensor& scale);

// Concatenates rows of several tensors of one dtype ([rows_i, cols] each) into a new tensor.
Tensor concat_rows(const std::vector<Tensor>& parts);

}  // namespace weft
