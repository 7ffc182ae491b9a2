// linear_block_quantized(): quantizes the activations once per call, then tiles the product over
// the pool with the widest path the CPU allows (linear_block_*.cpp).
#include <algorithm>
#include <cassert>
#include <cmath>
#include <vector>

#include "core/cpu_features.h"
#include "cpu/isa.h"
#include "cpu/linear_block.h"
#include "cpu/linear_impl.h"
#include "weft/kernels/block_quant.h"
#include "weft/kernels/linear.h"

namespace weft::kernels {

void quantize_activation_groups(const float* x, int64_t k, int8_t* q, float* scale, float* sums) {
#if defined(__x86_64__)
  if (cpu::current_isa() == cpu::Isa::kAvx512) {
    cpu::quantize_activation_groups_avx512(x, k, q, scale, sums);
    return;
  }
#endif
  constexpr int64_t kGroup = 16;
  for (int64_t g = 0; g < k / kGroup; ++g) {
    const float* xg = x + g * kGroup;
    float amax = 0.0f;
    for (int64_t t = 0; t < kGroup; ++t) amax = std::max(amax, std::fabs(xg[t]));
    const float inv = amax > 0.0f ? 127.0f / amax : 0.0f;
    int32_t sum = 0;
    for (int64_t t = 0; t < kGroup; ++t) {
      const int v = static_cast<int>(std::nearbyint(xg[t] * inv));
      q[g * kGroup + t] = static_cast<int8_t>(std::clamp(v, -127, 127));
      sum += q[g * kGroup + t];
    }
    scale[g] = amax / 127.0f;
    sums[g] = scale[g] * static_cast<float>(sum);
  }
}

namespace {

// The exact product (MatmulPrecision kF32 / kBf16): each weight row of the tile is dequantized to
// F32 (bit-exact with ggml, block_quant.h) and dotted with the F32 activations, so the result is
// that of the dequantized weights in F32, as transformers computes a GGUF model.
//
// Every y[i][j] is one VecOps::dot_rows sum of the dequantized row j and activation row i, the
// same bits whatever the tile (dot_rows' results do not depend on how many rows it is given, and
// its products are the same with either operand as "q"). The tile dequantizes kWeightRows weight
// rows at a time and dots every activation row of the tile with them: dot_rows_multi (which loads
// each vector once for several sums, and equals dot_rows on whole groups of four keys) for a
// whole group, dot_rows for the last rows of a tile. At batch 1 that runs four independent sums
// instead of one latency-bound chain; at batch 16 a 4 x 4 register tile needs half a load per
// multiply-add instead of one and a quarter. On AVX-512 a tile of up to 4 activation rows (decode)
// skips the F32 rows: dot4_dequantized_avx512 multiplies the four weight rows as it decodes them,
// with dot_rows' operations (storing and reloading the rows had bounded the loop).
void linear_block_dequantized(const TensorView& x, const TensorView& w, const float* bias,
                              const TensorView& y, ThreadPool& pool) {
  constexpr int64_t kWeightRows = 4;  // dot_rows_multi's group of keys
  const int64_t n = w.shape[0], k = w.shape[1];
  const int64_t m = y.numel() / n;
  const size_t row_bytes = dtype_nbytes(w.dtype, k);
  const auto* wb = static_cast<const uint8_t*>(w.data);
  const float* xf = x.as<const float>();
  float* yf = y.as<float>();
  const cpu::VecOps& ops = cpu::vec_ops();
  // Rows are adjacent and read once: fetch the bytes kWeightPrefetchBytes ahead of row j, then
  // dequantize it (SmolLM2 Q8_0 / Q4_0 at batch 1, 2 threads, on a Xeon: 47 -> 55 and 49 -> 63
  // tok/s for the prefetch).
  auto dequantize = [&](int64_t j, float* out) {
    const char* ahead = reinterpret_cast<const char*>(wb + static_cast<size_t>(j) * row_bytes) +
                        cpu::kWeightPrefetchBytes;
    for (size_t b = 0; b < row_bytes; b += 64) __builtin_prefetch(ahead + b);
    dequantize_row(w.dtype, wb + static_cast<size_t>(j) * row_bytes, out, k);
  };
#if defined(__x86_64__)
  const bool avx512 = cpu::current_isa() == cpu::Isa::kAvx512;
#else
  constexpr bool avx512 = false;
#endif
  cpu::run_linear_tiles(m, n, k, static_cast<int64_t>(row_bytes), pool,
                        [&](int64_t i0, int64_t i1, int64_t j0, int64_t j1) {
    const int64_t rows_x = i1 - i0;
    const bool decode_in_registers = avx512 && rows_x <= cpu::kDot4MaxRows;
    // The dequantized weight rows (not needed where the decode tile takes them in registers).
    std::vector<float> rows(decode_in_registers ? 0 : static_cast<size_t>(kWeightRows * k));
    std::vector<float> dots(static_cast<size_t>(rows_x * kWeightRows));
    std::vector<const float*> xs(static_cast<size_t>(rows_x));
    std::vector<float*> outs(static_cast<size_t>(rows_x));
    for (int64_t i = 0; i < rows_x; ++i) {
      xs[i] = xf + (i0 + i) * k;
      outs[i] = dots.data() + i * kWeightRows;
    }
    for (int64_t j = j0; j < j1; j += kWeightRows) {
      const int64_t count = std::min(kWeightRows, j1 - j);
      if (decode_in_registers) {
#if defined(__x86_64__)
        // The last rows of a tile repeat its last row: the sums are computed per row.
        const uint8_t* four[kWeightRows];
        for (int64_t c = 0; c < kWeightRows; ++c) {
          four[c] = wb + static_cast<size_t>(j + std::min(c, count - 1)) * row_bytes;
        }
        cpu::dot4_dequantized_avx512(w.dtype, four, xs.data(), static_cast<int>(rows_x), k, outs.data());
#endif
      } else {
        for (int64_t c = 0; c < count; ++c) dequantize(j + c, rows.data() + c * k);
        if (count == kWeightRows) {
          ops.dot_rows_multi(xs.data(), static_cast<int>(rows_x), rows.data(), count, k, k, 1.0f,
                             outs.data());
        } else {
          for (int64_t i = 0; i < rows_x; ++i) ops.dot_rows(xs[i], rows.data(), count, k, k, 1.0f, outs[i]);
        }
      }
      for (int64_t i = 0; i < rows_x; ++i) {
        for (int64_t c = 0; c < count; ++c) {
          yf[(i0 + i) * n + j + c] = outs[i][c] + (bias != nullptr ? bias[j + c] : 0.0f);
        }
      }
    }
  });
}

// y = x @ w^T (+ bias) with x quantized to int8 per 16 elements (quantize_activation_groups),
// `p`'s weight fields set by the caller, `block` the path's function over a tile of y.
void multiply_int8_activations(const TensorView& x, int64_t k, int64_t n, const TensorView* bias,
                               const TensorView& y, ThreadPool& pool, cpu::BlockLinearProblem& p,
                               void (*block)(const cpu::BlockLinearProblem&, int64_t, int64_t, int64_t, int64_t)) {
  const int64_t m = y.numel() / n;
  p.k = k;
  p.k_pad = cpu::block_linear_padded_k(k);
  p.groups = p.k_pad / 16;
  p.m = m;
  p.n = n;
  p.y = y.as<float>();
  std::vector<float> bias_f32;
  p.bias = cpu::f32_bias(bias, n, bias_f32);

  // Zero padding past k: values and scales 0, so padded groups add nothing on any path.
  std::vector<int8_t> xq(static_cast<size_t>(m * p.k_pad), 0);
  std::vector<float> xd(static_cast<size_t>(m * p.groups), 0.0f), xs(xd);
  const float* xf = x.as<const float>();
  pool.parallel_for(m, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      quantize_activation_groups(xf + r * k, k, xq.data() + r * p.k_pad, xd.data() + r * p.groups,
                                 xs.data() + r * p.groups);
    }
  });
  p.xq = xq.data();
  p.xd = xd.data();
  p.xs = xs.data();
  cpu::run_linear_tiles(m, n, k, static_cast<int64_t>(p.w_row_bytes), pool,
                        [&](int64_t i0, int64_t i1, int64_t j0, int64_t j1) { block(p, i0, i1, j0, j1); });
}

}  // namespace

void linear_block_quantized(const TensorView& x, const TensorView& w, const TensorView* bias,
                            const TensorView& y, ThreadPool& pool) {
  const int64_t n = w.shape[0];
  const int64_t k = w.shape[1];
  const int64_t m = n > 0 ? y.numel() / n : 0;
  assert(is_block_quantized(w.dtype) && w.shape.rank() == 2 && k % dtype_block_elems(w.dtype) == 0);
  assert(x.dtype == DType::kF32 && y.dtype == DType::kF32 && x.numel() == m * k);
  assert(bias == nullptr || bias->numel() == n);
  if (m == 0 || n == 0) return;
  if (matmul_precision() != MatmulPrecision::kInt8) {
    std::vector<float> bias_f32;
    if (bias != nullptr && bias->data != nullptr) {
      bias_f32.resize(static_cast<size_t>(n));
      cpu::vec_ops().widen(bias->dtype, bias->data, bias_f32.data(), n);
    }
    linear_block_dequantized(x, w, bias_f32.empty() ? nullptr : bias_f32.data(), y, pool);
    return;
  }

  cpu::BlockLinearProblem p;
  p.w = static_cast<const uint8_t*>(w.data);
  p.w_dtype = w.dtype;
  p.w_row_bytes = dtype_nbytes(w.dtype, k);
  const auto block = cpu::isa_choice(
      &cpu::linear_block_q_portable, WEFT_X86_PATH(cpu::linear_block_q_avx2),
      cpu_features().avx512vnni ? WEFT_X86_PATH(cpu::linear_block_q_avx512vnni)
                                 : WEFT_X86_PATH(cpu::linear_block_q_avx512));
  multiply_int8_activations(x, k, n, bias, y, pool, p, block);
}

namespace cpu {

bool linear_i8_int8_activations(const TensorView& x, const TensorView& w, const float* w_scale,
                                const TensorView* bias, const TensorView& y, ThreadPool& pool) {
  const int64_t n = w.shape[0], k = w.shape[1];
  if (current_isa() != Isa::kAvx512 || !cpu_features().avx512vnni || k % 64 != 0 || n == 0) return false;
  BlockLinearProblem p;
  p.w = static_cast<const uint8_t*>(w.data);
  p.w_dtype = DType::kI8;
  p.w_row_bytes = static_cast<size_t>(k);
  p.w_row_scale = w_scale;
  multiply_int8_activations(x, k, n, bias, y, pool, p, WEFT_X86_PATH(linear_i8_rows_avx512vnni));
  return true;
}

}  // namespace cpu

}  // namespace weft::kernels
