// Portable micro-kernel of linear(): 4 rows of x share each weight element loaded; eight partial
// sums per output let the compiler vectorise without reassociating a float sum.
#include <algorithm>

#include "core/half.h"
#include "cpu/linear_impl.h"

namespace weft::kernels::cpu {
namespace {

constexpr int kLanes = 8;
constexpr int kMaxRows = 4;

template <DType W>
inline float w_at(const void* base, int64_t idx) {
  if constexpr (W == DType::kF32) {
    return static_cast<const float*>(base)[idx];
  } else if constexpr (W == DType::kBF16) {
    return bf16_to_float(static_cast<const uint16_t*>(base)[idx]);
  } else if constexpr (W == DType::kI8) {
    return static_cast<float>(static_cast<const int8_t*>(base)[idx]);
  } else {
    return f16_to_float(static_cast<const uint16_t*>(base)[idx]);
  }
}

template <DType W>
void block(const LinearProblem& p, int64_t i0, int64_t i1, int64_t j0, int64_t j1) {
  const int64_t k = p.k;
  for (int64_t i = i0; i < i1; i += kMaxRows) {
    const int rows = static_cast<int>(std::min<int64_t>(kMaxRows, i1 - i));
    for (int64_t j = j0; j < j1; ++j) {
      float acc[kMaxRows][kLanes] = {};
      const int64_t wrow = j * k;
      int64_t kk = 0;
      for (; kk + kLanes <= k; kk += kLanes) {
        float wv[kLanes];
        for (int l = 0; l < kLanes; ++l) wv[l] = w_at<W>(p.w, wrow + kk + l);
        for (int r = 0; r < rows; ++r) {
          const float* x = p.x + (i + r) * k + kk;
          for (int l = 0; l < kLanes; ++l) acc[r][l] += x[l] * wv[l];
        }
      }
      for (int r = 0; r < rows; ++r) {
        float s = 0.0f;
        for (int l = 0; l < kLanes; ++l) s += acc[r][l];
        const float* x = p.x + (i + r) * k;
        for (int64_t t = kk; t < k; ++t) s += x[t] * w_at<W>(p.w, wrow + t);
        if constexpr (W == DType::kI8) s *= p.w_scale[j];
        p.y[(i + r) * p.n + j] = s + (p.bias ? p.bias[j] : 0.0f);
      }
    }
  }
}

}  // namespace

void linear_block_portable(const LinearProblem& p, int64_t i0, int64_t i1, int64_t j0, int64_t j1) {
  switch (p.w_dtype) {
    case DType::kBF16:
      return block<DType::kBF16>(p, i0, i1, j0, j1);
    case DType::kF16:
      return block<DType::kF16>(p, i0, i1, j0, j1);
    case DType::kI8:
      return block<DType::kI8>(p, i0, i1, j0, j1);
    default:
      return block<DType::kF32>(p, i0, i1, j0, j1);
  }
}

}  // namespace weft::kernels::cpu
