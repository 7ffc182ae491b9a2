// A quantized Hugging Face checkpoint's linear weights in weft's own dtypes
// (model/checkpoint_quantization.h): the weight store calls these when a layer asks for
// "<module>.weight" of a module the checkpoint stores quantized, so the layers, the TP slicing
// (model/weight_slice.h, which cuts block dtypes only at group edges) and the kernels see a plain
// weft tensor.
#pragma once

#include <functional>
#include <string>

#include "absl/status/statusor.h"
#include "core/tensor.h"
#include "model/checkpoint_quantization.h"

namespace weft {

// A stored tensor by its checkpoint name, or NotFound.
using StoredTensorLookup = std::function<absl::StatusOr<Tensor>(const std::string& name)>;

// The suffix of the stored tensor that marks a module as quantized: ".weight_scale"
// (compressed-tensors), ".qweight" (GPTQ, AWQ).
std::string quantized_module_suffix(const CheckpointQuantization& q);

// The stored tensor whose presence marks `module` as quantized: "<module>.weight_packed"
// (pack-quantized) or "<module>.weight" (int8, whose dtype is I8).
std::string quantized_marker_tensor(const CheckpointQuantization& q, const std::string& module);

// "<module>.weight" of shape `expected` [out, in] in q.weft_dtype(), a new tensor, from the stored
// tensors of that module. kPackedInt4Group: each group of g elements becomes one block with
// d = f16(scale), m = f16(-scale * (zero + 8)) (symmetric: m = -8 d; group 32 symmetric is Q4_0),
// nibbles = stored values; kInt8Channel: the int8 values as they are (I8); GPTQ / AWQ: the same
// blocks with m = f16(-scale * zero), or F32 scale * (q - zero) (CheckpointQuantization::
// weft_dtype()); FP8: F8B64 (the e4m3 bytes with an F32 scale per 64 elements of a row) or F32
// fp8 * scale (CheckpointQuantization::held_dtype()); an FP8 NaN code is an error naming the
// element.
// Errors, naming `file`, the tensor and what is wrong: a missing weight_scale /
// weight_zero_point / weight_packed / weight_shape / qweight / qzeros / scales (g_idx under
// desc_act), a dtype other than int32 / I8 for packed values, float for scales; a shape other
// than the format's for `expected` (weight_shape too); a g_idx entry outside the groups, or one
// other than column / group_size without desc_act.
absl::StatusOr<Tensor> convert_checkpoint_weight(const CheckpointQuantization& q,
                                                 const std::string& module, const Shape& expected,
                                                 const StoredTensorLookup& lookup,
                                                 const std::string& file);

// The F32 [out] per-row scales of an int8 module (its weight_scale [out, 1] or [out]), for the
// int8 linear (kernels::linear_int8). Errors as above.
absl::StatusOr<Tensor> convert_checkpoint_row_scales(const CheckpointQuantization& q,
                                                     const std::string& module, int64_t rows,
                                                     const StoredTensorLookup& lookup,
                                                     const std::string& file);

}  // namespace weft
