// AMX micro-kernels of linear() for BF16 weights with BF16-rounded activations
// (MatmulPrecision::kBf16 on CPUs with AMX-BF16, e.g. Intel Xeon Sapphire Rapids and later).
//
// The product is computed transposed, y^T = w x^T, so the weights need no repacking: an A tile
// is 16 weight rows x 32 elements of k loaded straight from the [n, k] matrix (row stride 2k
// bytes), and a B tile is 16 rows of x x 32 elements of k in the pair-interleaved ("VNNI")
// layout tdpbf16ps wants, packed once per call (pack_amx_bf16_x). Each tdpbf16ps adds 16 x 16
// outputs' products over 32 elements of k into F32 accumulator tiles. Every output's sum runs
// over k in the same order (32-element steps, ascending) whatever the tile shape or m, and x is
// zero-padded to whole tiles of 16 rows, so a row's result does not depend on its batch; the
// bias is added afterwards. k must be a multiple of 32 (linear.cpp sends other shapes to the
// AVX512-BF16 kernel).
#include <immintrin.h>

#include <algorithm>
#include <cstring>

#include "cpu/linear_impl.h"

#if defined(__x86_64__)
#pragma GCC target("amx-tile,amx-bf16,avx512f,avx512bw,avx512vl,avx2,fma")

namespace weft::kernels::cpu {
namespace {

// The ldtilecfg operand (palette 1): bytes per row and rows of each of the 8 tiles.
struct alignas(64) TileConfig {
  uint8_t palette = 1;
  uint8_t start_row = 0;
  uint8_t reserved[14] = {};
  uint16_t colsb[16] = {};
  uint8_t rows[16] = {};
};

// Tiles 0-3 accumulate C (weight rows x x-rows, F32), 4-5 hold A (weight rows x 32 BF16), 6-7
// hold B (16 pairs of k x x-rows). `weight_rows` (1..16) is the height of A and C, `x_rows`
// (1..16) the width of B and C: a decode step's single row multiplies only its own column (the
// same sums as a full tile's, about 20% faster at m = 1 than computing 15 zero columns).
TileConfig make_config(int weight_rows, int x_rows) {
  TileConfig c;
  for (int t = 0; t < 8; ++t) {
    const bool a = t == 4 || t == 5;
    c.colsb[t] = static_cast<uint16_t>(a ? 64 : 4 * x_rows);
    c.rows[t] = static_cast<uint8_t>(t < 6 ? weight_rows : 16);
  }
  return c;
}

// Loads the configuration unless this thread already holds it. The tile state stays loaded
// between calls (the OS saves and restores it with the thread like any register).
void use_config(int weight_rows, int x_rows) {
  thread_local int loaded = 0;
  const int key = weight_rows * 32 + x_rows;
  if (loaded == key) return;
  const TileConfig c = make_config(weight_rows, x_rows);
  _tile_loadconfig(&c);
  loaded = key;
}

constexpr int64_t kK = kAmxBf16TileK;  // elements of k per tile step
constexpr int64_t kTile = 16;          // weight rows per A tile, x rows per B tile

// One B tile: x rows [16 mt, 16 mt + 16), k [kK kt, kK kt + kK).
inline const uint32_t* b_tile(const AmxBf16LinearProblem& p, int64_t mt, int64_t kt) {
  return p.x_tiles + (mt * (p.k / kK) + kt) * kTile * kTile;
}

// y[16 mt + c, j + r] = acc[r][c] + bias[j + r] for the x rows that exist.
void store_tile(const AmxBf16LinearProblem& p, const float* acc, int64_t j, int rows, int64_t mt) {
  const int64_t cols = std::min<int64_t>(kTile, p.m - mt * kTile);
  for (int64_t c = 0; c < cols; ++c) {
    float* y = p.y + (mt * kTile + c) * p.n + j;
    for (int r = 0; r < rows; ++r) y[r] = acc[r * kTile + c] + (p.bias ? p.bias[j + r] : 0.0f);
  }
}

// Two weight-row tiles [j, j + 32) by two x-row tiles mt, mt + 1.
void kernel_2x2(const AmxBf16LinearProblem& p, int64_t j, int64_t mt) {
  const int64_t stride = p.k * 2;
  const uint16_t* w0 = p.w + j * p.k;
  const uint16_t* w1 = w0 + kTile * p.k;
  _tile_zero(0);
  _tile_zero(1);
  _tile_zero(2);
  _tile_zero(3);
  for (int64_t kt = 0; kt < p.k / kK; ++kt) {
    _tile_loadd(4, w0 + kt * kK, stride);
    _tile_loadd(5, w1 + kt * kK, stride);
    _tile_loadd(6, b_tile(p, mt, kt), 64);
    _tile_loadd(7, b_tile(p, mt + 1, kt), 64);
    _tile_dpbf16ps(0, 4, 6);
    _tile_dpbf16ps(1, 4, 7);
    _tile_dpbf16ps(2, 5, 6);
    _tile_dpbf16ps(3, 5, 7);
  }
  alignas(64) float acc[kTile * kTile];
  _tile_stored(0, acc, 64);
  store_tile(p, acc, j, kTile, mt);
  _tile_stored(1, acc, 64);
  store_tile(p, acc, j, kTile, mt + 1);
  _tile_stored(2, acc, 64);
  store_tile(p, acc, j + kTile, kTile, mt);
  _tile_stored(3, acc, 64);
  store_tile(p, acc, j + kTile, kTile, mt + 1);
}

// N (1..4) weight-row tiles [j, j + 16 N) by one x-row tile: decode's shape. The N accumulators
// are independent chains, so N tdpbf16ps overlap (one chain alone waits out each instruction's
// latency, several times its issue interval). A tiles 4 and 5 alternate.
template <int N>
void kernel_nx1(const AmxBf16LinearProblem& p, int64_t j, int rows, int64_t mt) {
  static_assert(N >= 1 && N <= 4);
  const int64_t stride = p.k * 2;
  const uint16_t* w = p.w + j * p.k;
  const int64_t tile_step = kTile * p.k;
  _tile_zero(0);
  if constexpr (N > 1) _tile_zero(1);
  if constexpr (N > 2) _tile_zero(2);
  if constexpr (N > 3) _tile_zero(3);
  for (int64_t kt = 0; kt < p.k / kK; ++kt) {
    const uint16_t* a = w + kt * kK;
    _tile_loadd(6, b_tile(p, mt, kt), 64);
    _tile_loadd(4, a, stride);
    _tile_dpbf16ps(0, 4, 6);
    if constexpr (N > 1) {
      _tile_loadd(5, a + tile_step, stride);
      _tile_dpbf16ps(1, 5, 6);
    }
    if constexpr (N > 2) {
      _tile_loadd(4, a + 2 * tile_step, stride);
      _tile_dpbf16ps(2, 4, 6);
    }
    if constexpr (N > 3) {
      _tile_loadd(5, a + 3 * tile_step, stride);
      _tile_dpbf16ps(3, 5, 6);
    }
  }
  alignas(64) float acc[kTile * kTile];
  _tile_stored(0, acc, 64);
  store_tile(p, acc, j, rows, mt);
  if constexpr (N > 1) {
    _tile_stored(1, acc, 64);
    store_tile(p, acc, j + kTile, kTile, mt);
  }
  if constexpr (N > 2) {
    _tile_stored(2, acc, 64);
    store_tile(p, acc, j + 2 * kTile, kTile, mt);
  }
  if constexpr (N > 3) {
    _tile_stored(3, acc, 64);
    store_tile(p, acc, j + 3 * kTile, kTile, mt);
  }
}

// Weight rows [j, j1) (whole tiles of 16) by x-row tile mt.
void rows_by_one_tile(const AmxBf16LinearProblem& p, int64_t j, int64_t j1, int64_t mt) {
  for (; j + 4 * kTile <= j1; j += 4 * kTile) kernel_nx1<4>(p, j, kTile, mt);
  switch ((j1 - j) / kTile) {
    case 3: kernel_nx1<3>(p, j, kTile, mt); break;
    case 2: kernel_nx1<2>(p, j, kTile, mt); break;
    case 1: kernel_nx1<1>(p, j, kTile, mt); break;
    default: break;
  }
}

}  // namespace

void pack_amx_bf16_x(const uint16_t* x_bf16, int64_t rows, int64_t k, int64_t mt,
                     uint32_t* x_tiles) {
  const int64_t kt_count = k / kK;
  uint32_t* tile0 = x_tiles + mt * kt_count * kTile * kTile;
  const int64_t r0 = mt * kTile;
  const int64_t valid = std::min<int64_t>(kTile, rows - r0);
  if (valid < kTile) std::memset(tile0, 0, static_cast<size_t>(kt_count * kTile * kTile) * 4);
  for (int64_t c = 0; c < valid; ++c) {
    const uint16_t* x = x_bf16 + (r0 + c) * k;
    for (int64_t pair = 0; pair < k / 2; ++pair) {
      // Element (pair % 16, c) of B tile pair / 16: x[2 pair] low, x[2 pair + 1] high.
      const uint32_t word = x[2 * pair] | (static_cast<uint32_t>(x[2 * pair + 1]) << 16);
      tile0[((pair / kTile) * kTile + pair % kTile) * kTile + c] = word;
    }
  }
}

void linear_block_amx_bf16(const AmxBf16LinearProblem& p, int64_t i0, int64_t i1, int64_t j0,
                           int64_t j1) {
  // Tiles of 16 x rows; i0 is a multiple of 16 (run_linear_tiles' row blocks are 64 rows). Only
  // the last tile of x may be partial; it runs with a configuration of its width.
  const int64_t mt0 = i0 / kTile, mt1 = (i1 + kTile - 1) / kTile;
  const int64_t whole = j0 + (j1 - j0) / kTile * kTile;  // end of the whole weight-row tiles
  const int last_cols = static_cast<int>(i1 - (mt1 - 1) * kTile);
  const int64_t full_mt1 = last_cols == kTile ? mt1 : mt1 - 1;  // end of the whole x tiles
  use_config(kTile, kTile);
  int64_t mt = mt0;
  for (; mt + 2 <= full_mt1; mt += 2) {
    int64_t j = j0;
    for (; j + 2 * kTile <= whole; j += 2 * kTile) kernel_2x2(p, j, mt);
    rows_by_one_tile(p, j, whole, mt);
    rows_by_one_tile(p, j, whole, mt + 1);
  }
  if (mt < full_mt1) rows_by_one_tile(p, j0, whole, mt++);
  if (mt < mt1) {
    use_config(kTile, last_cols);
    rows_by_one_tile(p, j0, whole, mt);
  }
  if (whole < j1) {
    const int rows = static_cast<int>(j1 - whole);
    for (int64_t t = mt0; t < mt1; ++t) {
      use_config(rows, t + 1 < mt1 ? kTile : last_cols);
      kernel_nx1<1>(p, whole, rows, t);
    }
  }
}

}  // namespace weft::kernels::cpu

#endif  // __x86_64__
