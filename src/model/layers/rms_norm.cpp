#include "model/layers/rms_norm.h"

#include "core/half.h"
#include "core/status_macros.h"
#include "weft/kernels/norm.h"

namespace weft {
namespace {

// F32 [n] of 1 + w for a stored weight of any float dtype.
Tensor plus_one_f32(const Tensor& w) {
  Tensor out = Tensor::empty(DType::kF32, w.shape());
  float* o = out.data_as<float>();
  const int64_t n = w.numel();
  for (int64_t i = 0; i < n; ++i) {
    float x = 0.0f;
    switch (w.dtype()) {
      case DType::kBF16:
        x = bf16_to_float(w.data_as<const uint16_t>()[i]);
        break;
      case DType::kF16:
        x = f16_to_float(w.data_as<const uint16_t>()[i]);
        break;
      default:
        x = w.data_as<const float>()[i];
        break;
    }
    o[i] = 1.0f + x;
  }
  return out;
}

}  // namespace

absl::StatusOr<RmsNorm> RmsNorm::load(const LoadContext& ctx, const std::string& name,
                                      int64_t size) {
  RmsNorm norm;
  WEFT_ASSIGN_OR_RETURN(norm.weight_, ctx.weights.get(name + ".weight", Shape{size}));
  if (ctx.config.norm_weight_plus_one) norm.weight_ = plus_one_f32(norm.weight_);
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
