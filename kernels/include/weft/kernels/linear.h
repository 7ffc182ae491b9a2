// Dense matrix products of activations with weights, as in torch.nn.Linear.
#pragma once

#include "core/tensor.h"
#include "core/thread_pool.h"

namespace weft::kernels {

// y[m, n] = x[m, k] @ w[n, k]^T (+ bias[n]).
//   x: F32, contiguous [m, k].
//   w: F32, F16 or BF16, contiguous [n, k] (the Hugging Face [out_features, in_features] layout;
//      16-bit weights are used as stored and widened to F32 in registers), or any block-quantized
//      dtype (core/dtype.h), which goes to linear_block_quantized(), except F8B64 (FP8), which
//      goes to linear_f8().
//   bias: null, or [n] of any float dtype.
//   y: F32 [m, n], overwritten. Must not alias x.
// Accumulates in F32. Threads split over n (and m for large m). Uses AVX-512 / AVX2+FMA paths
// where cpu_features() allows, and a portable path otherwise; all agree to float rounding.
//
// MatmulPrecision::kBf16 (opt-in, process-wide): with BF16 weights on a CPU with AVX512-BF16,
// x is rounded to BF16 (nearest even) and the products use vdpbf16ps, or AMX tiles (tdpbf16ps)
// where the CPU has AMX-BF16 and k is a multiple of 32, still accumulated in F32:
// what llama.cpp and PyTorch's BF16 matmuls do, about twice the multiply-adds per instruction,
// at the cost of BF16 activations (relative error ~2^-9 per element of x). Otherwise, and by
// default (kF32), x stays F32.
void linear(const TensorView& x, const TensorView& w, const TensorView* bias, const TensorView& y,
            ThreadPool& pool);

// W8A16: y = x @ (w * w_scale[:, None])^T (+ bias), w I8 [n, k] with one F32 scale per output
// row (symmetric per-channel int8, kernels/quantize.h), x F32; each int8 is widened to F32 in
// registers, the row's sum multiplied by its scale. Same layouts, tiling and ISA paths as linear().
// Under MatmulPrecision::kInt8 on AVX512-VNNI (k a multiple of 64): W8A8 instead, the activations
// quantized as for block-quantized weights (linear_block_quantized), the rows read as int8
// operands of the same tile; one path for every m, so a row's result does not depend on its batch.
void linear_int8(const TensorView& x, const TensorView& w, const TensorView& w_scale,
                 const TensorView* bias, const TensorView& y, ThreadPool& pool);

// y = x @ w^T (+ bias) for w of a block-quantized dtype [n, k] (k a multiple of its block):
// W4A8 / W8A8 as llama.cpp does it. Each row of x is quantized per group of 16 elements to int8
// (quantize_activation_groups, block_quant.h), each weight row is decoded to bytes with an F32
// scale and offset per 16 (kernels/cpu/block_unpack.h), and every group's product is an exact
// int32 dot product (AVX512-VNNI vpdpbusd; AVX-512BW / AVX2 vpmaddubsw + vpmaddwd; portable
// scalar) scaled in F32:  y[i, j] = sum_g dx_g (a_g sum_t u_t qx_t + (c_g - zero a_g) sum_t qx_t).
// Error added by the activation rounding: |x_t - qx_t dx_g| <= dx_g / 2 = max_g |x| / 254, so
// |y - x @ dequant(w)^T| <= sum_t |w_t| max_{g(t)} |x| / 254 (+ F32 rounding); the ISA paths
// agree to F32 rounding (the integer parts are exact on each).
void linear_block_quantized(const TensorView& x, const TensorView& w, const TensorView* bias,
                            const TensorView& y, ThreadPool& pool);

// y = x @ w^T (+ bias) for w F8B64 [n, k] (FP8 E4M3, an F32 scale per 64 elements of a row;
// k a multiple of 64), x F32: each block's bytes are dequantized exactly in registers (e4m3 *
// scale rounded once to F32, the weight the F32 dequantized path holds: AVX-512 / AVX2 through
// F16 bit patterns and vcvtph2ps, portable through a 256-entry table) and multiplied into F32
// accumulators. One summation order per path for every m (a row's result does not depend on
// the batch); the paths agree to F32 rounding. MatmulPrecision does not apply. 1 byte per weight
// (+ 4 per 64) read instead of 4: decode at m = 1 is bandwidth-bound.
void linear_f8(const TensorView& x, const TensorView& w, const TensorView* bias,
               const TensorView& y, ThreadPool& pool);

// MatmulPrecision::kInt8 (opt-in): block-quantized weights (GGUF types, --quantize int4) multiply
// activations quantized to int8 per 16 elements, with exact int32 dot products (VNNI / AVX-512BW /
// AVX2): llama.cpp's way, several times faster, at the cost of the activation rounding (up to
// max|x|/254 per element of a group). By default (kF32, and with kBf16) block-quantized weights
// are dequantized to F32 in the kernel and meet F32 activations: the result of the dequantized
// weights, as transformers computes a GGUF model.
enum class MatmulPrecision { kF32, kBf16, kInt8 };
void set_matmul_precision(MatmulPrecision precision);
MatmulPrecision matmul_precision();
// What `--matmul-precision auto` (the launcher's default) means on this CPU: kBf16 where the
// BF16-activation path is both available and faster: AVX512-BF16 on AMD Zen 4+ (measured on a
// 2-core EPYC: 1.6-1.8x prefill and batched decode, 1.1x batch-1 decode, on a 125M BF16 Llama),
// and AMX-BF16 (measured on a 2-core Xeon with SmolLM2-135M: 3.5x prefill, 1.7x decode at batch
// 16, 0.9x at batch 1, where a tile multiply costs more than the AVX-512 GEMV); else kF32 (vdpbf16ps
// alone on a Xeon measured 20% slower for m >= 16). Only BF16 weights are affected either way.
MatmulPrecision auto_matmul_precision();
// Whether linear() with weights of `w_dtype` takes the BF16-activation path right now.
bool linear_uses_bf16_activations(DType w_dtype);

}  // namespace weft::kernels
