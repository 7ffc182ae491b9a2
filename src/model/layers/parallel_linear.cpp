#include "model/layers/parallel_linear.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/half.h"
#include "core/status_macros.h"
#include "model/checkpoint_weights.h"
#include "weft/kernels/block_quant.h"
#include "weft/kernels/linear.h"
#include "weft/kernels/quantize.h"

namespace weft {
namespace {

float element_as_float(const TensorView& t, int64_t i) {
  switch (t.dtype) {
    case DType::kBF16: return bf16_to_float(t.as<uint16_t>()[i]);
    case DType::kF16: return f16_to_float(t.as<uint16_t>()[i]);
    default: return t.as<float>()[i];
  }
}

// `t` in F32 (itself when it is F32): an exact widening of F16 / BF16, or the F8B64 weights'
// e4m3 * scale (the F32 the checkpoint's dequantization gives).
Tensor to_f32(const Tensor& t) {
  if (t.dtype() == DType::kF32) return t;
  Tensor out = Tensor::empty(DType::kF32, t.shape());
  if (t.dtype() == DType::kF8B64) {
    const int64_t cols = t.dim(1);
    for (int64_t r = 0; r < t.dim(0); ++r) {
      kernels::dequantize_row(t.dtype(), static_cast<const char*>(t.data()) + dtype_nbytes(t.dtype(), r * cols),
                              out.data_as<float>() + r * cols, cols);
    }
    return out;
  }
  for (int64_t i = 0; i < t.numel(); ++i) out.data_as<float>()[i] = element_as_float(t.view(), i);
  return out;
}

// y[r, :] += bias for every row: the bias of a row-parallel layer, added once after the reduce.
void add_bias_rows(const TensorView& y, const TensorView& bias, ThreadPool& pool) {
  const int64_t n = bias.numel();
  std::vector<float> b(n);
  for (int64_t j = 0; j < n; ++j) b[j] = element_as_float(bias, j);
  pool.parallel_for(y.numel() / n, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      float* row = y.as<float>() + r * n;
      for (int64_t j = 0; j < n; ++j) row[j] += b[j];
    }
  });
}

// y = x W^T (+ bias) for a weight in the checkpoint's dtype, quantized to int8, or
// block-quantized (kernels::linear dispatches on the dtype).
void apply(const TensorView& x, const Tensor& weight, const Tensor& scale, const TensorView* bias,
           const TensorView& y, ThreadPool& pool) {
  if (scale.defined()) {
    kernels::linear_int8(x, weight.view(), scale.view(), bias, y, pool);
  } else {
    kernels::linear(x, weight.view(), bias, y, pool);
  }
}

}  // namespace

absl::StatusOr<Tensor> read_part_rows(const WeightStore& weights, const ColumnPart& part,
                                      const std::string& suffix, int64_t in_features) {
  const int64_t tensor_rows = part.tensor_rows > 0 ? part.tensor_rows : part.full_rows;
  const Shape shape = in_features > 0 ? Shape{tensor_rows, in_features} : Shape{tensor_rows};
  if (part.tensor_offset < 0 || part.tensor_offset + part.full_rows > tensor_rows) {
    return absl::InternalError(
        absl::StrCat("rows [", part.tensor_offset, ", ", part.tensor_offset + part.full_rows,
                     ") of '", part.name, suffix, "' lie outside its ", tensor_rows, " rows"));
  }
  const int64_t available =
      std::clamp<int64_t>(part.full_rows - part.shard.begin, 0, part.shard.count);
  WEFT_ASSIGN_OR_RETURN(
      Tensor rows, weights.get_slice(
                       part.name + suffix, shape, 0,
                       part.tensor_offset + std::min(part.shard.begin, part.full_rows), available));
  if (available == part.shard.count) return rows;
  Shape padded_shape = rows.shape();
  padded_shape[0] = part.shard.count;
  Tensor padded = Tensor::zeros(rows.dtype(), padded_shape);
  if (rows.nbytes() > 0) std::memcpy(padded.data(), rows.data(), rows.nbytes());
  return padded;
}

absl::Status check_checkpoint_linear(const LoadContext& ctx, const std::string& name) {
  const CheckpointQuantization& q = ctx.config.checkpoint_quantization;
  if (!q.enabled()) return absl::OkStatus();
  if (ctx.quantization != WeightQuantization::kNone) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--quantize ", weight_quantization_name(ctx.quantization),
        ": the checkpoint is already quantized (config.json quantization_config: ", q.describe(),
        "); run it without --quantize"));
  }
  // Native FP8 checkpoints keep the shapes their blocks do not tile dense (transformers' rule).
  if (q.quantizes(name) && !ctx.weights.is_quantized_module(name) &&
      q.method != CheckpointQuantMethod::kFp8) {
    return absl::InvalidArgumentError(absl::StrCat(
        "tensor '", name, quantized_module_suffix(q), "' not found: module '", name,
        "' is not in quantization_config's 'ignore' list, so the checkpoint must store it "
        "quantized"));
  }
  return absl::OkStatus();
}

absl::Status require_dense_module(const LoadContext& ctx, const std::string& name) {
  if (!ctx.weights.is_quantized_module(name)) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      "module '", name, "' is stored quantized (it has '", name,
      ".weight_scale'); weft reads embeddings, the LM head and routers only dense (such "
      "checkpoints list them in quantization_config's 'ignore')"));
}

absl::Status quantize_linear_weight(const LoadContext& ctx, const std::string& name,
                                    Tensor& weight, Tensor& scale) {
  if (ctx.quantization == WeightQuantization::kNone) return absl::OkStatus();
  if (!is_float_dtype(weight.dtype())) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--quantize ", weight_quantization_name(ctx.quantization), ": tensor '", name,
        ".weight' is already ", dtype_name(weight.dtype()),
        "; --quantize applies to F32 / F16 / BF16 checkpoints (run this one without it)"));
  }
  ThreadPool pool(1);
  if (ctx.quantization == WeightQuantization::kInt8) {
    kernels::QuantizedRows q = kernels::quantize_rows_int8(weight.view(), pool);
    ctx.weights.release(weight);
    weight = std::move(q.values);
    scale = std::move(q.scales);
    return absl::OkStatus();
  }
  const absl::StatusOr<QuantizedLayout> layout = quantized_layout(ctx.quantization, weight.dim(1));
  if (!layout.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "tensor '", name, ".weight' (this rank's shard ", weight.shape().to_string(),
        " under tensor parallelism of degree ", ctx.tp.size(), "): ", layout.status().message()));
  }
  Tensor q = kernels::quantize_rows(weight.view(), layout->dtype, layout->symmetric, pool);
  ctx.weights.release(weight);
  weight = std::move(q);
  return absl::OkStatus();
}

Tensor concat_rows(const std::vector<Tensor>& parts) {
  if (parts.size() == 1) return parts[0];
  int64_t rows = 0;
  for (const Tensor& p : parts) rows += p.dim(0);
  const Shape& first = parts[0].shape();
  Shape shape = first;
  shape[0] = rows;
  Tensor out = Tensor::empty(parts[0].dtype(), shape);
  char* dst = static_cast<char*>(out.data());
  for (const Tensor& p : parts) {
    std::memcpy(dst, p.data(), p.nbytes());
    dst += p.nbytes();
  }
  return out;
}

absl::StatusOr<ColumnParallelLinear> ColumnParallelLinear::load(
    const LoadContext& ctx, const std::vector<ColumnPart>& parts, int64_t in_features,
    bool has_bias) {
  // scales[i]: part i's F32 row scales when the checkpoint stores it as int8 rows, else undefined.
  std::vector<Tensor> weights, biases, scales;
  for (const ColumnPart& part : parts) {
    WEFT_RETURN_IF_ERROR(check_checkpoint_linear(ctx, part.name));
    WEFT_ASSIGN_OR_RETURN(Tensor w, read_part_rows(ctx.weights, part, ".weight", in_features));
    Tensor scale;
    if (w.dtype() == DType::kI8 && ctx.weights.is_quantized_module(part.name)) {
      // The checkpoint's int8 rows come with their F32 scales, cut like the rows.
      WEFT_ASSIGN_OR_RETURN(scale, read_part_rows(ctx.weights, part, ".weight_scale", 0));
    }
    const auto f32_or_fp8 = [](DType d) { return is_float_dtype(d) || d == DType::kF8B64; };
    if (!weights.empty() && w.dtype() != weights[0].dtype() &&
        ctx.config.checkpoint_quantization.enabled() && f32_or_fp8(w.dtype()) &&
        f32_or_fp8(weights[0].dtype())) {
      // A checkpoint that holds some parts as F8B64 or F32 and keeps others dense (native FP8
      // leaves shapes its blocks do not tile dense): the fused weight is F32, exactly (the plan,
      // model/weight_plan.cpp, counts it so).
      w = to_f32(w);
      for (Tensor& earlier : weights) earlier = to_f32(earlier);
    }
    weights.push_back(std::move(w));
    scales.push_back(std::move(scale));
    if (has_bias) {
      WEFT_ASSIGN_OR_RETURN(Tensor b, read_part_rows(ctx.weights, part, ".bias", 0));
      biases.push_back(std::move(b));
    }
  }
  ColumnParallelLinear layer;
  for (const Tensor& w : weights) layer.out_features_ += w.dim(0);
  if (has_bias) layer.bias_ = concat_rows(biases);
  const bool one_dtype = std::all_of(weights.begin(), weights.end(),
                                     [&](const Tensor& w) { return w.dtype() == weights[0].dtype(); });
  if (!one_dtype) {
    // Held apart (a GGUF file's mixed types; a compressed-tensors checkpoint whose config groups
    // store the parts differently, each int8 part with its scales).
    for (size_t i = 0; i < weights.size(); ++i) {
      Tensor no_scale;
      WEFT_RETURN_IF_ERROR(quantize_linear_weight(ctx, parts[i].name, weights[i], no_scale));
      if (no_scale.defined()) {
        return absl::InvalidArgumentError(absl::StrCat("tensor '", parts[i].name,
                                                       ".weight': --quantize int8 of projections held apart"));
      }
    }
    for (Tensor& w : weights) w = held_weight(ctx, std::move(w));
    layer.separate_ = std::move(weights);
    layer.separate_scales_ = std::move(scales);
    return layer;
  }
  layer.weight_ = concat_rows(weights);
  if (scales[0].defined()) layer.weight_scale_ = concat_rows(scales);
  if (weights.size() > 1) {
    // The fused copy is the only one used from now on: hold the weights once.
    for (const Tensor& w : weights) ctx.weights.release(w);
    for (const Tensor& b : biases) ctx.weights.release(b);
  }
  WEFT_RETURN_IF_ERROR(
      quantize_linear_weight(ctx, parts[0].name, layer.weight_, layer.weight_scale_));
  layer.weight_ = held_weight(ctx, std::move(layer.weight_));
  return layer;
}

void ColumnParallelLinear::forward(const TensorView& x, const TensorView& y,
                                   ThreadPool& pool) const {
  if (separate_.empty()) {
    apply(x, weight_, weight_scale_, bias_.defined() ? &bias_.view() : nullptr, y, pool);
    return;
  }
  // Each part's product into a scratch [m, rows], then into its columns of y.
  const int64_t m = y.shape[0];
  float* out = y.as<float>();
  int64_t column = 0;
  for (size_t p = 0; p < separate_.size(); ++p) {
    const Tensor& w = separate_[p];
    const int64_t rows = w.dim(0);
    Tensor part = Tensor::empty(DType::kF32, Shape{m, rows});
    apply(x, w, separate_scales_[p], nullptr, part.view(), pool);
    const float* src = part.data_as<float>();
    for (int64_t i = 0; i < m; ++i) {
      std::memcpy(out + i * out_features_ + column, src + i * rows, static_cast<size_t>(rows) * sizeof(float));
    }
    column += rows;
  }
  if (bias_.defined()) add_bias_rows(y, bias_.view(), pool);
}

size_t ColumnParallelLinear::weight_bytes() const {
  size_t bytes = weight_.defined() ? weight_.nbytes() : 0;
  for (const Tensor& w : separate_) bytes += w.nbytes();
  for (const Tensor& s : separate_scales_) bytes += s.defined() ? s.nbytes() : 0;
  if (weight_scale_.defined()) bytes += weight_scale_.nbytes();
  if (bias_.defined()) bytes += bias_.nbytes();
  return bytes;
}

absl::StatusOr<RowParallelLinear> RowParallelLinear::load(const LoadContext& ctx,
                                                          const std::string& name,
                                                          int64_t out_features, int64_t full_in,
                                                          ShardRange shard, bool has_bias) {
  RowParallelLinear layer;
  WEFT_RETURN_IF_ERROR(check_checkpoint_linear(ctx, name));
  absl::StatusOr<Tensor> weight = ctx.weights.get_slice(name + ".weight",
                                                        Shape{out_features, full_in}, 1,
                                                        shard.begin, shard.count);
  if (!weight.ok()) {
    // A block-quantized checkpoint cuts only at block edges: say which TP layout asked otherwise.
    return absl::Status(weight.status().code(),
                        absl::StrCat(weight.status().message(), " (row-parallel shard ",
                                     ctx.tp.rank(), " of tensor parallelism of degree ",
                                     ctx.tp.size(), ")"));
  }
  layer.weight_ = *std::move(weight);
  if (layer.weight_.dtype() == DType::kI8 && ctx.weights.is_quantized_module(name)) {
    WEFT_ASSIGN_OR_RETURN(layer.weight_scale_,
                          ctx.weights.get(name + ".weight_scale", Shape{out_features}));
  }
  if (has_bias) {
    WEFT_ASSIGN_OR_RETURN(layer.bias_, ctx.weights.get(name + ".bias", Shape{out_features}));
  }
  WEFT_RETURN_IF_ERROR(quantize_linear_weight(ctx, name, layer.weight_, layer.weight_scale_));
  layer.weight_ = held_weight(ctx, std::move(layer.weight_));
  return layer;
}

absl::Status RowParallelLinear::forward(const TensorView& x, const TensorView& y,
                                        Communicator& tp, ThreadPool& pool) const {
  if (tp.size() == 1) {
    apply(x, weight_, weight_scale_, bias_.defined() ? &bias_.view() : nullptr, y, pool);
    return absl::OkStatus();
  }
  apply(x, weight_, weight_scale_, nullptr, y, pool);
  WEFT_RETURN_IF_ERROR(tp.all_reduce_sum(y));
  if (bias_.defined()) add_bias_rows(y, bias_.view(), pool);
  return absl::OkStatus();
}

void RowParallelLinear::forward_partial(const TensorView& x, const TensorView& y,
                                        ThreadPool& pool) const {
  apply(x, weight_, weight_scale_, nullptr, y, pool);
}

}  // namespace weft
