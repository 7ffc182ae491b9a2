// RMSNorm with a learned scale, as in Llama (weights kept in their stored dtype). With
// ModelConfig::norm_weight_plus_one (Gemma) the scale is 1 + weight, computed once at load in F32
// (transformers: output * (1.0 + weight.float())), and held as F32.
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "core/tensor.h"
#include "core/thread_pool.h"
#include "model/layers/load_context.h"

namespace weft {

class RmsNorm {
 public:
  // `name` without ".weight"; the weight has shape [size].
  static absl::StatusOr<RmsNorm> load(const LoadContext& ctx, const std::string& name,
                                      int64_t size);
  // out = norm(x). x, out: F32 [rows, size]; may alias.
  void forward(const TensorView& x, const TensorView& out, ThreadPool& pool) const;
  // residual += x; out = norm(residual).
  void add_forward(const TensorView& residual, const TensorView& x, const TensorView& out,
                   ThreadPool& pool) const;
  // In place over the last dimension of x: F32 [tokens, heads, size] (q/k norm).
  void forward_heads(const TensorView& x, ThreadPool& pool) const;
  size_t weight_bytes() const { return weight_.nbytes(); }

 private:
  Tensor weight_;
  float eps_ = 1e-6f;
};

}  // namespace weft
