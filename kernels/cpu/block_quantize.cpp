// Round-to-nearest quantizers of rows into the block-quantized dtypes (weft/kernels/block_quant.h).
// The layouts are those block_unpack.h reads; the tests check quantize -> dequantize round trips
// against the per-type error bounds and the legacy types bit for bit against the `gguf` package.
#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstring>
#include <vector>

#include "core/half.h"
#include "cpu/isa.h"
#include "weft/kernels/block_quant.h"

namespace weft::kernels {
namespace {

void store_half(uint8_t* p, float v) {
  const uint16_t h = float_to_f16(v);
  std::memcpy(p, &h, sizeof(h));
}

// The value of largest magnitude (the first such), signed: ggml's choice for Q4_0 / Q5_0.
float signed_absmax(const float* x, int n) {
  float amax = 0.0f, max = 0.0f;
  for (int j = 0; j < n; ++j) {
    if (amax < std::fabs(x[j])) {
      amax = std::fabs(x[j]);
      max = x[j];
    }
  }
  return max;
}

void min_max(const float* x, int n, float& min, float& max) {
  min = FLT_MAX;
  max = -FLT_MAX;
  for (int j = 0; j < n; ++j) {
    min = std::min(min, x[j]);
    max = std::max(max, x[j]);
  }
}

inline float inverse(float d) { return d != 0.0f ? 1.0f / d : 0.0f; }

// Packs levels q[0..n) (0..15) as low nibbles of the first half and high nibbles of the second.
void pack_nibbles(const uint8_t* q, int n, uint8_t* qs) {
  for (int j = 0; j < n / 2; ++j) qs[j] = static_cast<uint8_t>(q[j] | (q[j + n / 2] << 4));
}

// Symmetric 4-bit (Q4_0; the symmetric I4G*): d = max / -8, levels min(15, trunc(x / d + 8.5)).
// Writes the levels and returns d.
float quantize_sym4(const float* x, int n, uint8_t* q) {
  const float d = signed_absmax(x, n) / -8.0f;
  const float id = inverse(d);
  for (int j = 0; j < n; ++j) {
    q[j] = static_cast<uint8_t>(std::min(15, static_cast<int>(static_cast<int8_t>(x[j] * id + 8.5f))));
  }
  return d;
}

// Asymmetric (Q4_1 / Q5_1 / I4G*): d = (max - min) / levels, values trunc((x - min) / d + 0.5).
void quantize_asym(const float* x, int n, int levels, uint8_t* q, float& d, float& min) {
  float max;
  min_max(x, n, min, max);
  d = (max - min) / static_cast<float>(levels);
  const float id = inverse(d);
  for (int j = 0; j < n; ++j) {
    const int v = static_cast<int>(static_cast<int8_t>((x[j] - min) * id + 0.5f));
    q[j] = static_cast<uint8_t>(std::clamp(v, 0, levels));
  }
}

void quantize_q8_0(const float* x, uint8_t* b) {
  float amax = 0.0f;
  for (int j = 0; j < 32; ++j) amax = std::max(amax, std::fabs(x[j]));
  const float d = amax / 127.0f;
  const float id = inverse(d);
  store_half(b, d);
  for (int j = 0; j < 32; ++j) b[2 + j] = static_cast<uint8_t>(static_cast<int8_t>(std::round(x[j] * id)));
}

void quantize_q5_0(const float* x, uint8_t* b) {
  const float d = signed_absmax(x, 32) / -16.0f;
  const float id = inverse(d);
  uint8_t q[32];
  for (int j = 0; j < 32; ++j) {
    q[j] = static_cast<uint8_t>(std::min(31, static_cast<int>(static_cast<int8_t>(x[j] * id + 16.5f))));
  }
  store_half(b, d);
  uint32_t qh = 0;
  for (int j = 0; j < 32; ++j) qh |= static_cast<uint32_t>((q[j] >> 4) & 1u) << j;
  std::memcpy(b + 2, &qh, 4);
  for (int j = 0; j < 16; ++j) b[6 + j] = static_cast<uint8_t>((q[j] & 0x0F) | ((q[j + 16] & 0x0F) << 4));
}

void quantize_q5_1(const float* x, uint8_t* b) {
  uint8_t q[32];
  float d, min;
  quantize_asym(x, 32, 31, q, d, min);
  store_half(b, d);
  store_half(b + 2, min);
  uint32_t qh = 0;
  for (int j = 0; j < 32; ++j) qh |= static_cast<uint32_t>((q[j] >> 4) & 1u) << j;
  std::memcpy(b + 4, &qh, 4);
  for (int j = 0; j < 16; ++j) b[8 + j] = static_cast<uint8_t>((q[j] & 0x0F) | ((q[j + 16] & 0x0F) << 4));
}

// Q4_K (levels 15) and Q5_K (31): each sub-block of 32 gets range / levels as its scale and
// -min(0, min) as its minimum; both rounded to 6 bits of the super-block's d and dmin.
void quantize_k4_k5(const float* x, int levels, uint8_t* b) {
  float scale[8], mins[8];
  float max_scale = 0.0f, max_min = 0.0f;
  for (int s = 0; s < 8; ++s) {
    float lo, hi;
    min_max(x + 32 * s, 32, lo, hi);
    lo = std::min(lo, 0.0f);
    scale[s] = (hi - lo) / static_cast<float>(levels);
    mins[s] = -lo;
    max_scale = std::max(max_scale, scale[s]);
    max_min = std::max(max_min, mins[s]);
  }
  const float d = max_scale / 63.0f, dmin = max_min / 63.0f;
  store_half(b, d);
  store_half(b + 2, dmin);
  const float dh = f16_to_float(float_to_f16(d)), dminh = f16_to_float(float_to_f16(dmin));
  uint8_t ls[8], lm[8];
  for (int s = 0; s < 8; ++s) {
    ls[s] = static_cast<uint8_t>(std::clamp(static_cast<int>(std::nearbyint(scale[s] * inverse(dh))), 0, 63));
    lm[s] = static_cast<uint8_t>(std::clamp(static_cast<int>(std::nearbyint(mins[s] * inverse(dminh))), 0, 63));
  }
  uint8_t* sc = b + 4;
  for (int j = 0; j < 4; ++j) {
    sc[j] = static_cast<uint8_t>(ls[j] | ((ls[j + 4] >> 4) << 6));
    sc[j + 4] = static_cast<uint8_t>(lm[j] | ((lm[j + 4] >> 4) << 6));
    sc[j + 8] = static_cast<uint8_t>((ls[j + 4] & 0x0F) | ((lm[j + 4] & 0x0F) << 4));
  }
  uint8_t q[256];
  for (int s = 0; s < 8; ++s) {
    const float dd = dh * static_cast<float>(ls[s]), dm = dminh * static_cast<float>(lm[s]);
    const float id = inverse(dd);
    for (int l = 0; l < 32; ++l) {
      const int v = static_cast<int>(std::nearbyint((x[32 * s + l] + dm) * id));
      q[32 * s + l] = static_cast<uint8_t>(std::clamp(v, 0, levels));
    }
  }
  uint8_t* qh = levels == 31 ? b + 16 : nullptr;
  uint8_t* qs = levels == 31 ? b + 48 : b + 16;
  if (qh != nullptr) std::memset(qh, 0, 32);
  for (int j = 0; j < 4; ++j) {
    for (int l = 0; l < 32; ++l) {
      const uint8_t lo = q[64 * j + l], hi = q[64 * j + 32 + l];
      qs[32 * j + l] = static_cast<uint8_t>((lo & 0x0F) | ((hi & 0x0F) << 4));
      if (qh != nullptr) {
        qh[l] = static_cast<uint8_t>(qh[l] | (((lo >> 4) & 1) << (2 * j)) | (((hi >> 4) & 1) << (2 * j + 1)));
      }
    }
  }
}

// Q6_K: each sub-block of 16 gets max / -32 as its scale (as Q4_0 does with 8), rounded to an
// int8 multiple of the super-block's d = max |scale| / 128.
void quantize_q6_k(const float* x, uint8_t* b) {
  float scale[16];
  float max_scale = 0.0f, max_abs_scale = 0.0f;
  for (int s = 0; s < 16; ++s) {
    scale[s] = signed_absmax(x + 16 * s, 16) / -32.0f;
    if (std::fabs(scale[s]) > max_abs_scale) {
      max_abs_scale = std::fabs(scale[s]);
      max_scale = scale[s];
    }
  }
  const float iscale = max_scale != 0.0f ? -128.0f / max_scale : 0.0f;
  const float d = inverse(iscale);
  store_half(b + 208, d);
  const float dh = f16_to_float(float_to_f16(d));
  int8_t* sc = reinterpret_cast<int8_t*>(b + 192);
  uint8_t q[256];
  for (int s = 0; s < 16; ++s) {
    sc[s] = static_cast<int8_t>(std::clamp(static_cast<int>(std::nearbyint(iscale * scale[s])), -128, 127));
    const float id = inverse(dh * static_cast<float>(sc[s]));
    for (int l = 0; l < 16; ++l) {
      const int v = static_cast<int>(std::nearbyint(x[16 * s + l] * id));
      q[16 * s + l] = static_cast<uint8_t>(std::clamp(v, -32, 31) + 32);
    }
  }
  uint8_t* ql = b;
  uint8_t* qh = b + 128;
  for (int n = 0; n < 2; ++n) {
    for (int l = 0; l < 32; ++l) {
      const uint8_t* p = q + 128 * n;
      const uint8_t q1 = p[l], q2 = p[l + 32], q3 = p[l + 64], q4 = p[l + 96];
      ql[64 * n + l] = static_cast<uint8_t>((q1 & 0x0F) | ((q3 & 0x0F) << 4));
      ql[64 * n + l + 32] = static_cast<uint8_t>((q2 & 0x0F) | ((q4 & 0x0F) << 4));
      qh[32 * n + l] = static_cast<uint8_t>((q1 >> 4) | ((q2 >> 4) << 2) | ((q3 >> 4) << 4) | ((q4 >> 4) << 6));
    }
  }
}

// A group's 4-bit levels q, scale d and minimum m (symmetric: levels around 8, m = -8 d).
void int4_levels(const float* x, int group, bool symmetric, uint8_t* q, float& d, float& min) {
  if (symmetric) {
    d = quantize_sym4(x, group, q);
    min = -8.0f * d;
  } else {
    quantize_asym(x, group, 15, q, d, min);
  }
}

// Q4_0, Q4_1 and the I4G* groups: 4-bit levels, f16 scale (and minimum) in front.
void quantize_int4_group(const float* x, int group, bool symmetric, bool has_min, uint8_t* b) {
  uint8_t q[128];
  float d, min;
  int4_levels(x, group, symmetric, q, d, min);
  store_half(b, d);
  // A symmetric minimum is -8 times the stored (rounded) scale.
  if (has_min) store_half(b + 2, symmetric ? -8.0f * f16_to_float(float_to_f16(d)) : min);
  pack_nibbles(q, group, b + (has_min ? 4 : 2));
}

// The I4G*F groups: I4G*'s levels, with the scale and minimum stored in F32 (not rounded). They hold
// checkpoints' groups; quantizing into them (tests, kernels_bench) takes the asymmetric levels.
void quantize_int4_group_f32(const float* x, int group, bool symmetric, uint8_t* b) {
  uint8_t q[128];
  float d, min;
  int4_levels(x, group, symmetric, q, d, min);
  std::memcpy(b, &d, sizeof(d));
  std::memcpy(b + 4, &min, sizeof(min));
  pack_nibbles(q, group, b + 8);
}

// F8B64: the block's F32 scale max |x| / 448 (e4m3's largest finite value), then each x / scale
// as the nearest e4m3 code (float_to_fp8_e4m3). An all-zero block: scale 0, codes 0.
void quantize_f8b64(const float* x, uint8_t* b) {
  float amax = 0.0f;
  for (int j = 0; j < 64; ++j) amax = std::max(amax, std::fabs(x[j]));
  const float scale = amax / 448.0f;
  std::memcpy(b, &scale, sizeof(scale));
  const float inv = inverse(scale);
  for (int j = 0; j < 64; ++j) b[4 + j] = float_to_fp8_e4m3(x[j] * inv);
}

void quantize_block(DType dtype, const float* x, uint8_t* b, bool symmetric) {
  switch (dtype) {
    case DType::kQ8_0: return quantize_q8_0(x, b);
    case DType::kQ4_0: return quantize_int4_group(x, 32, true, false, b);
    case DType::kQ4_1: return quantize_int4_group(x, 32, false, true, b);
    case DType::kQ5_0: return quantize_q5_0(x, b);
    case DType::kQ5_1: return quantize_q5_1(x, b);
    case DType::kQ4_K: return quantize_k4_k5(x, 15, b);
    case DType::kQ5_K: return quantize_k4_k5(x, 31, b);
    case DType::kQ6_K: return quantize_q6_k(x, b);
    case DType::kI4G64: return quantize_int4_group(x, 64, symmetric, true, b);
    case DType::kI4G128: return quantize_int4_group(x, 128, symmetric, true, b);
    case DType::kF8B64: return quantize_f8b64(x, b);
    case DType::kI4G32F: return quantize_int4_group_f32(x, 32, symmetric, b);
    case DType::kI4G64F: return quantize_int4_group_f32(x, 64, symmetric, b);
    case DType::kI4G128F: return quantize_int4_group_f32(x, 128, symmetric, b);
    default: return;
  }
}

}  // namespace

uint8_t float_to_fp8_e4m3(float v) {
  const uint8_t sign = std::signbit(v) ? 0x80 : 0x00;
  const float a = std::fabs(v);
  if (!(a < 464.0f)) return sign | 0x7E;  // 448 and past it (NaN too): the largest finite code
  if (a < 0.015625f) {  // below 2^-6: subnormals, m / 8 * 2^-6 = m * 2^-9, m in 0..8
    const int m = static_cast<int>(std::nearbyint(a * 512.0f));
    return sign | static_cast<uint8_t>(m);  // m = 8 is the smallest normal's code, 0x08
  }
  int exponent;
  const float fraction = std::frexp(a, &exponent);  // a = fraction * 2^exponent, [0.5, 1)
  int e = exponent - 1;                             // a = (1 + m / 8) * 2^e
  int m = static_cast<int>(std::nearbyint((fraction * 2.0f - 1.0f) * 8.0f));
  if (m == 8) {
    m = 0;
    ++e;
  }
  const int field = e + 7;
  if (field > 15 || (field == 15 && m == 7)) return sign | 0x7E;
  return sign | static_cast<uint8_t>((field << 3) | m);
}

void quantize_row(DType dtype, const float* src, void* dst, int64_t n, bool symmetric) {
  const int64_t block = dtype_block_elems(dtype);
  const size_t bytes = dtype_block_bytes(dtype);
  uint8_t* out = static_cast<uint8_t*>(dst);
  for (int64_t i = 0; i < n / block; ++i) quantize_block(dtype, src + i * block, out + i * bytes, symmetric);
}

Tensor quantize_rows(const TensorView& w, DType dtype, bool symmetric, ThreadPool& pool) {
  const int64_t n = w.shape[0], k = w.shape[1];
  Tensor out = Tensor::empty(dtype, Shape{n, k});
  const size_t elem = dtype_size(w.dtype);
  const size_t row_bytes = dtype_nbytes(dtype, k);
  pool.parallel_for(n, [&](int64_t begin, int64_t end) {
    std::vector<float> row(static_cast<size_t>(k));
    for (int64_t j = begin; j < end; ++j) {
      cpu::vec_ops().widen(w.dtype, static_cast<const char*>(w.data) + j * k * elem, row.data(), k);
      quantize_row(dtype, row.data(), static_cast<char*>(out.data()) + j * row_bytes, k, symmetric);
    }
  });
  return out;
}

}  // namespace weft::kernels
