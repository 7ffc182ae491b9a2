#include "model/layers/rms_norm.h"

#include "core/status_macros.h"
#include "weft/kernels/norm.h"

namespace weft {

absl::StatusOr<RmsNorm> RmsNorm::load(const LoadContext& ctx, const std::string& name,
                                      int64_t size) {
  RmsNorm norm;
  WEFT_ASSIGN_OR_RETURN(norm.weight_, ctx.weights.get(name + ".weight", Shape{size}));
  norm.eps_ = static_cast<float>(ctx.config.rms_norm_eps);
  return norm;
}

void RmsNorm::forward(const TensorView& x, const TensorView& out, ThreadPool& pool) const {
  kernels::rms_norm(x, weight_.view(), eps_, out, pool);
}

void RmsNorm::add_forward(const TensorView& residual, const TensorView& x, const TensorView& out,
                          ThreadPool& pool) const {
  kernels::add_rms_norm(residual, x, weight_.view(), eps_, out, pool);
}

void RmsNorm::forward_heads(const TensorView& x, ThreadPool& pool) const {
  kernels::head_rms_norm(x, weight_.view(), eps_, pool);
}

}  // namespace weft
