// Private to kernels/cpu: the loop of linear_f8() that every ISA path shares. For each weight row
// of the block Kernel::decode(row, k, w) dequantizes it into F32 (w 64-byte aligned), then
// Kernel::dot<MR, NR>(p, w, i, out) dots NR such rows (w + c * k) with x rows i..i+MR, MR up to
// 4 and NR up to 4. Each output has its own accumulator, summed in the same order whatever MR
// and NR, so a row's output is the same in any batch. A Kernel with kDecodeInRegisters also
// provides dot_rows<NR>(p, rows, i, out) for a block of one x row (decode): dot<1, NR>'s
// operations on rows decoded in registers, skipping the buffer. Include after the file's
// `#pragma GCC target`.
#pragma once

#include <algorithm>
#include <cstring>
#include <memory>

#include "cpu/linear_f8.h"

namespace weft::kernels::cpu {
namespace {

inline float f8_block_scale(const uint8_t* block) {
  float s;
  std::memcpy(&s, block, 4);
  return s;
}

// Up to kF8Cols weight rows are dequantized at a time (once per block, whatever its x rows).
constexpr int kF8Cols = 4;

template <class Kernel, int MR, int NR>
inline void f8_rows_tile(const F8LinearProblem& p, const float* w, int64_t i, int64_t j) {
  float sums[MR][NR];
  Kernel::template dot<MR, NR>(p, w, i, sums);
  for (int r = 0; r < MR; ++r) {
    for (int c = 0; c < NR; ++c) {
      p.y[(i + r) * p.n + j + c] = sums[r][c] + (p.bias ? p.bias[j + c] : 0.0f);
    }
  }
}

template <class Kernel, int NR>
void f8_rows_cols(const F8LinearProblem& p, const float* w, int64_t i0, int64_t i1, int64_t j) {
  int64_t i = i0;
  for (; i + 4 <= i1; i += 4) f8_rows_tile<Kernel, 4, NR>(p, w, i, j);
  switch (i1 - i) {
    case 3: f8_rows_tile<Kernel, 3, NR>(p, w, i, j); break;
    case 2: f8_rows_tile<Kernel, 2, NR>(p, w, i, j); break;
    case 1: f8_rows_tile<Kernel, 1, NR>(p, w, i, j); break;
    default: break;
  }
}

// Weight rows j..j+NR are dequantized into `w` (NR rows of k floats, 64-byte aligned) once, then
// every x row of the block is dotted with them, MR x NR outputs per tile.
template <class Kernel>
void f8_rows(const F8LinearProblem& p, int64_t i0, int64_t i1, int64_t j0, int64_t j1) {
  const size_t row_bytes = static_cast<size_t>(p.k / kF8Block * kF8BlockBytes);
  if constexpr (requires { Kernel::kDecodeInRegisters; }) {
    // One x row (decode): Kernel::dot_rows<NR> decodes in registers, with the sums of dot<1, NR>.
    if (i1 - i0 == 1) {
      for (int64_t j = j0; j < j1; j += kF8Cols) {
        const uint8_t* rows[kF8Cols];
        const int nr = static_cast<int>(std::min<int64_t>(kF8Cols, j1 - j));
        for (int c = 0; c < nr; ++c) rows[c] = p.w + static_cast<size_t>(j + c) * row_bytes;
        float sums[kF8Cols];
        switch (nr) {
          case 4: Kernel::template dot_rows<4>(p, rows, i0, sums); break;
          case 3: Kernel::template dot_rows<3>(p, rows, i0, sums); break;
          case 2: Kernel::template dot_rows<2>(p, rows, i0, sums); break;
          default: Kernel::template dot_rows<1>(p, rows, i0, sums); break;
        }
        for (int c = 0; c < nr; ++c) p.y[i0 * p.n + j + c] = sums[c] + (p.bias ? p.bias[j + c] : 0.0f);
      }
      return;
    }
  }
  struct alignas(64) Line {
    float v[16];
  };
  // Not zeroed (written before read): a block call should not clear 4 k floats per task.
  const std::unique_ptr<Line[]> lines(new Line[static_cast<size_t>(kF8Cols * p.k / 16)]);
  float* w = lines[0].v;
  for (int64_t j = j0; j < j1; j += kF8Cols) {
    const int nr = static_cast<int>(std::min<int64_t>(kF8Cols, j1 - j));
    for (int c = 0; c < nr; ++c) {
      Kernel::decode(p.w + static_cast<size_t>(j + c) * row_bytes, p.k, w + c * p.k);
    }
    switch (nr) {
      case 4: f8_rows_cols<Kernel, 4>(p, w, i0, i1, j); break;
      case 3: f8_rows_cols<Kernel, 3>(p, w, i0, i1, j); break;
      case 2: f8_rows_cols<Kernel, 2>(p, w, i0, i1, j); break;
      default: f8_rows_cols<Kernel, 1>(p, w, i0, i1, j); break;
    }
  }
}

}  // namespace
}  // namespace weft::kernels::cpu
