// Private to kernels/cpu: the loop of linear_f8() that every ISA path shares. For each weight row
// of the block it runs Kernel::tile<MR> over the x rows, four at a time (then 3, 2, 1): each
// tile decodes the row's blocks once for its MR rows. A row's sum does not depend on MR, so a
// row's output is the same in any batch. Include after the file's `#pragma GCC target`.
#pragma once

#include <cstring>

#include "cpu/linear_f8.h"

namespace weft::kernels::cpu {
namespace {

inline float f8_block_scale(const uint8_t* block) {
  float s;
  std::memcpy(&s, block, 4);
  return s;
}

template <class Kernel, int MR>
inline void f8_rows_tile(const F8LinearProblem& p, const uint8_t* row, int64_t i, int64_t j) {
  float sums[MR];
  Kernel::template tile<MR>(p, row, i, sums);
  for (int r = 0; r < MR; ++r) p.y[(i + r) * p.n + j] = sums[r] + (p.bias ? p.bias[j] : 0.0f);
}

template <class Kernel>
void f8_rows(const F8LinearProblem& p, int64_t i0, int64_t i1, int64_t j0, int64_t j1) {
  const size_t row_bytes = static_cast<size_t>(p.k / kF8Block * kF8BlockBytes);
  for (int64_t j = j0; j < j1; ++j) {
    const uint8_t* row = p.w + static_cast<size_t>(j) * row_bytes;
    int64_t i = i0;
    for (; i + 4 <= i1; i += 4) f8_rows_tile<Kernel, 4>(p, row, i, j);
    switch (i1 - i) {
      case 3: f8_rows_tile<Kernel, 3>(p, row, i, j); break;
      case 2: f8_rows_tile<Kernel, 2>(p, row, i, j); break;
      case 1: f8_rows_tile<Kernel, 1>(p, row, i, j); break;
      default: break;
    }
  }
}

}  // namespace
}  // namespace weft::kernels::cpu
