// Private to kernels/cpu: the loop of linear_block_quantized() that every ISA path shares. For
// each weight row of the block it decodes the row once (block_unpack.h) into a scratch row that
// stays in L1, folds the type's zero into the offsets, and lets the path's Kernel::tile<MR>
// multiply it with MR activation rows at a time.
//
// Kernel (a type per ISA file) provides:
//   static constexpr int kOffset;  // added to -zero: 0 where the dot product takes u as
//                                  // unsigned; 128 where it takes u - 128 as signed
//   template <int MR> static void tile(const BlockLinearProblem&, const uint8_t* u,
//                                      const float* a, const float* c, int64_t i, float* out);
//     out[r] = sum_g xd[i + r][g] a[g] (sum over the group of u_t xq_t, u as the path reads it)
//              + sum_g c[g] xs[i + r][g]
// Include after the file's `#pragma GCC target` (internal linkage, like block_unpack.h).
#pragma once

#include <vector>

#include "cpu/block_unpack.h"
#include "cpu/linear_block.h"

namespace weft::kernels::cpu {
namespace {

// y[i + r, j] for r < MR from a tile's sums: the one place the bias is added.
template <int MR>
inline void store_tile_sums(const BlockLinearProblem& p, const float* sums, int64_t i, int64_t j) {
  for (int r = 0; r < MR; ++r) p.y[(i + r) * p.n + j] = sums[r] + (p.bias ? p.bias[j] : 0.0f);
}

template <class Kernel, int MR>
inline void block_rows_tile(const BlockLinearProblem& p, const uint8_t* u, const float* a,
                            const float* c, int64_t i, int64_t j) {
  float sums[MR];
  Kernel::template tile<MR>(p, u, a, c, i, sums);
  store_tile_sums<MR>(p, sums, i, j);
}

template <class Kernel, DType D>
void block_rows_of(const BlockLinearProblem& p, int64_t i0, int64_t i1, int64_t j0, int64_t j1) {
  // alignas(64) storage: the AVX-512 path loads u 64 bytes at a time.
  struct alignas(64) Line {
    uint8_t b[64];
  };
  std::vector<Line> u_lines(static_cast<size_t>(p.k_pad / 64));
  uint8_t* u = u_lines.data()->b;
  std::vector<float> a(static_cast<size_t>(p.groups), 0.0f), c(a);
  for (int64_t t = p.k; t < p.k_pad; ++t) u[t] = 0;
  const float offset = static_cast<float>(Kernel::kOffset - unpack_zero(D));
  const int64_t real_groups = p.k / kUnpackGroup;
  for (int64_t j = j0; j < j1; ++j) {
    unpack_row_of<D>(p.w + static_cast<size_t>(j) * p.w_row_bytes, p.k, u, a.data(), c.data());
    // sum_t (a (u_t - zero) + c) qx_t = a sum u_t qx_t + (c - zero a) sum qx_t, and the paths
    // that read u - 128 add 128 a sum qx_t back.
    for (int64_t g = 0; g < real_groups; ++g) c[g] += offset * a[g];
    int64_t i = i0;
    for (; i + 4 <= i1; i += 4) block_rows_tile<Kernel, 4>(p, u, a.data(), c.data(), i, j);
    switch (i1 - i) {
      case 3: block_rows_tile<Kernel, 3>(p, u, a.data(), c.data(), i, j); break;
      case 2: block_rows_tile<Kernel, 2>(p, u, a.data(), c.data(), i, j); break;
      case 1: block_rows_tile<Kernel, 1>(p, u, a.data(), c.data(), i, j); break;
      default: break;
    }
  }
}

template <class Kernel>
void block_rows(const BlockLinearProblem& p, int64_t i0, int64_t i1, int64_t j0, int64_t j1) {
  with_block_dtype(p.w_dtype, [&](auto d) { block_rows_of<Kernel, decltype(d)::value>(p, i0, i1, j0, j1); });
}

}  // namespace
}  // namespace weft::kernels::cpu
