// Private to kernels/cpu: the per-ISA blocks of linear() (see linear.cpp for the tiling).
#pragma once

#include <cstdint>
#include <functional>
#include <type_traits>
#include <vector>

#include "core/dtype.h"
#include "core/tensor.h"
#include "cpu/isa.h"
#include "core/thread_pool.h"

namespace weft::kernels::cpu {

using LinearBlockFn = std::function<void(int64_t i0, int64_t i1, int64_t j0, int64_t j1)>;

// Runs `block` over the [m, n] output in tasks of weight-row blocks (and x-row blocks for large
// m) sized for L2 (weight rows of weight_row_bytes each) and for the pool to balance.
void run_linear_tiles(int64_t m, int64_t n, int64_t k, int64_t weight_row_bytes, ThreadPool& pool,
                      const LinearBlockFn& block);

// `bias` ([n] of any float dtype, or null / without data) as F32: its own data when F32, else
// widened into `storage`; null when there is none.
const float* f32_bias(const TensorView* bias, int64_t n, std::vector<float>& storage);

// The block function of the path current_isa() selects (portable on other architectures, where
// the x86 paths are not compiled: pass them as WEFT_X86_PATH(f)).
#if defined(__x86_64__)
#define WEFT_X86_PATH(f) (&(f))
#else
#define WEFT_X86_PATH(f) nullptr
#endif
template <class Fn>
Fn isa_choice(Fn portable, std::type_identity_t<Fn> avx2, std::type_identity_t<Fn> avx512) {
#if defined(__x86_64__)
  switch (current_isa()) {
    case Isa::kAvx512: return avx512;
    case Isa::kAvx2: return avx2;
    case Isa::kPortable: break;
  }
#else
  (void)avx2;
  (void)avx512;
#endif
  return portable;
}

struct LinearProblem {
  const float* x = nullptr;  // [m, k]
  const void* w = nullptr;   // [n, k] of w_dtype
  DType w_dtype = DType::kF32;
  // I8 weights: the F32 scale of each of the n weight rows (element = int8 * scale).
  const float* w_scale = nullptr;
  const float* bias = nullptr;  // [n] or null
  float* y = nullptr;           // [m, n]
  int64_t m = 0, n = 0, k = 0;
};

// Computes y[i0:i1, j0:j1]. Each walks rows of x in register tiles and, for each tile, the
// columns j0..j1, so the weight rows [j0, j1) should fit in L2 (the caller sizes the block).
void linear_block_portable(const LinearProblem& p, int64_t i0, int64_t i1, int64_t j0, int64_t j1);
void linear_block_avx2(const LinearProblem& p, int64_t i0, int64_t i1, int64_t j0, int64_t j1);
void linear_block_avx512(const LinearProblem& p, int64_t i0, int64_t i1, int64_t j0, int64_t j1);

// MatmulPrecision::kBf16 with BF16 weights: activations already rounded to BF16.
struct Bf16LinearProblem {
  const uint16_t* x = nullptr;  // [m, k] BF16
  const uint16_t* w = nullptr;  // [n, k] BF16
  const float* bias = nullptr;  // [n] or null
  float* y = nullptr;           // [m, n]
  int64_t m = 0, n = 0, k = 0;
};
void linear_block_avx512bf16(const Bf16LinearProblem& p, int64_t i0, int64_t i1, int64_t j0,
                             int64_t j1);

// MatmulPrecision::kBf16 with BF16 weights on a CPU with AMX-BF16 (linear_amx_bf16.cpp), k a
// multiple of kAmxBf16TileK: x rounded to BF16 and packed in tiles of 16 rows x 32 elements of
// k, each tile 16 rows of 16 pairs: x_tiles[((mt * (k / 32) + kt) * 16 + pair) * 16 + row] holds
// x[16 mt + row, 32 kt + 2 pair] in its low half and the next element in its high half; rows
// past m are zero.
constexpr int64_t kAmxBf16TileK = 32;
struct AmxBf16LinearProblem {
  const uint32_t* x_tiles = nullptr;  // [ceil(m / 16), k / 32, 16, 16], 64-byte aligned
  const uint16_t* w = nullptr;        // [n, k] BF16
  const float* bias = nullptr;        // [n] or null
  float* y = nullptr;                 // [m, n]
  int64_t m = 0, n = 0, k = 0;
};
// Packs x tile `mt` (rows [16 mt, 16 mt + 16) of x_bf16 [rows, k]) into x_tiles.
void pack_amx_bf16_x(const uint16_t* x_bf16, int64_t rows, int64_t k, int64_t mt,
                     uint32_t* x_tiles);
// i0 must be a multiple of 16.
void linear_block_amx_bf16(const AmxBf16LinearProblem& p, int64_t i0, int64_t i1, int64_t j0,
                           int64_t j1);

// BF16 weights at F32 precision on AVX2 (linear_avx2_bf16.cpp) and AVX-512
// (linear_avx512_bf16_pairs.cpp): x rows reordered so that each chunk of `chunk` elements holds
// its even-indexed elements, then its odd-indexed ones, matching how one vector load of weights
// is split into even and odd lanes.
constexpr int64_t kBf16PairsChunkAvx2 = 16;
constexpr int64_t kBf16PairsChunkAvx512 = 32;
struct Bf16PairsLinearProblem {
  const float* x_pairs = nullptr;  // [m, bf16_pairs_row_floats(k, chunk)]
  const float* x = nullptr;        // [m, k] as given (the k % chunk tail is read from here)
  const uint16_t* w = nullptr;     // [n, k] BF16
  const float* bias = nullptr;     // [n] or null
  float* y = nullptr;              // [m, n]
  int64_t m = 0, n = 0, k = 0;
};
// Floats per reordered x row: k rounded down to a whole chunk.
inline int64_t bf16_pairs_row_floats(int64_t k, int64_t chunk) { return k / chunk * chunk; }
// out[0 .. bf16_pairs_row_floats(k, chunk)) = x's chunks reordered as above.
void deinterleave_bf16_pairs(const float* x, int64_t k, int64_t chunk, float* out);
void linear_block_avx2_bf16(const Bf16PairsLinearProblem& p, int64_t i0, int64_t i1, int64_t j0,
                            int64_t j1);
void linear_block_avx512_bf16_pairs(const Bf16PairsLinearProblem& p, int64_t i0, int64_t i1,
                                    int64_t j0, int64_t j1);

}  // namespace weft::kernels::cpu
