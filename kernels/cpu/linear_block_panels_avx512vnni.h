// Private to kernels/cpu: the AVX512-VNNI tiles of linear_block_quantized() and of W8A8
// (linear_block_avx512vnni.cpp).
//
// Arithmetic (the same whatever the batch, the tile or the weights' source, so every output is
// bit-identical to its row multiplied alone): for output (i, j), with u, a and c row j's decoded
// values, scales and zero-folded offsets (block_unpack.h, folded as block_rows_of folds them) and
// D_g = sum over group g (16 elements) of u_t xq_t, an exact int32,
//   acc_q = fma(float(D_g), a_g * xd_g, acc_q)  for g = 0, 1, 2, ... with q = g % 4,
//   off_q = fma(c_g, xs_g, off_q)               likewise,
//   y     = ((acc_0 + acc_1) + (acc_2 + acc_3)) + ((off_0 + off_1) + (off_2 + off_3))  (+ bias).
// Each group's products are summed as integers before any rounding, so the scales cost one
// multiply, one conversion and two multiply-adds per group (the row-at-a-time tile this replaced
// spent them on every four products).
//
// Two tiles compute it:
// - panel_tile, for more than 4 activation rows: the weights of 16 adjacent output rows laid
//   out as a panel, group by group: chunk c of a group (elements 4c..4c+3) of row l is dword l
//   of one register, so vpdpbusd with an activation dword broadcast to every lane sums four
//   products of all 16 rows at once, and four of them give each row's D_g in its own lane. The
//   panel is built once (BlockPanels from the blocks of every block type, I8Panels) and
//   multiplied with every activation row of the tile: about 2x the previous tile at 16 rows.
// - quad_tile, for up to 4 (a decode step's few): four weight rows read in order, each decoded
//   in registers (FusedRow), so the weights stream as the memory system likes (a panel's 16
//   rows side by side streamed at 0.6-0.9x the rate); D_g comes from an integer reduction of
//   each row's vpdpbusd lanes, with lanes (q, l) = (group g % 4, row l) for the float operations.
//
// Include after the file's target pragma.
#pragma once

#include <immintrin.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "cpu/block_unpack.h"
#include "cpu/linear_block.h"
#include "cpu/linear_block_avx512.h"
#include "cpu/linear_block_fused_avx512.h"

namespace weft::kernels::cpu {
namespace {

constexpr int kPanelRows = 16;
// BlockPanels fetches the panel this many panels ahead of the one it builds (measured streaming
// at batch 1, when this tile took it: 1 or 4 ahead no better than 2; into L1 instead of L2
// 0.5-0.8x the rate).
constexpr int64_t kPanelsAhead = 2;

// One group of a panel: u[c] bytes 4l..4l+3 are elements 4c..4c+3 of row l; a[l], c[l] its scale
// and offset. Rows past the matrix's last are zero (they add nothing and are never stored).
struct alignas(64) PanelGroup {
  uint8_t u[4][64];
  float a[kPanelRows];
  float c[kPanelRows];
};

// Read for the rows past a panel's last.
alignas(64) inline constexpr uint8_t kZeroBytes[64] = {};

inline int32_t i32_at(const int8_t* p) {
  int32_t v;
  std::memcpy(&v, p, sizeof(v));
  return v;
}

// The four chunk registers of one group from 16 rows' group bytes src(l) (16 bytes each): a 4 x 4
// dword transpose in every 128-bit lane. Lane r of z[q] takes row 4r + q, so that after the
// transpose dword 4r + q of chunk c is row 4r + q's: the rows in order.
template <class Source>
[[gnu::always_inline]] inline void transpose_group(const Source& src, PanelGroup& out) {
  __m512i z[4];
  for (int q = 0; q < 4; ++q) {
    __m512i v = _mm512_castsi128_si512(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src(q))));
    v = _mm512_inserti32x4(v, _mm_loadu_si128(reinterpret_cast<const __m128i*>(src(4 + q))), 1);
    v = _mm512_inserti32x4(v, _mm_loadu_si128(reinterpret_cast<const __m128i*>(src(8 + q))), 2);
    z[q] = _mm512_inserti32x4(v, _mm_loadu_si128(reinterpret_cast<const __m128i*>(src(12 + q))), 3);
  }
  const __m512i t0 = _mm512_unpacklo_epi32(z[0], z[1]), t1 = _mm512_unpackhi_epi32(z[0], z[1]);
  const __m512i t2 = _mm512_unpacklo_epi32(z[2], z[3]), t3 = _mm512_unpackhi_epi32(z[2], z[3]);
  _mm512_store_si512(out.u[0], _mm512_unpacklo_epi64(t0, t2));
  _mm512_store_si512(out.u[1], _mm512_unpackhi_epi64(t0, t2));
  _mm512_store_si512(out.u[2], _mm512_unpacklo_epi64(t1, t3));
  _mm512_store_si512(out.u[3], _mm512_unpackhi_epi64(t1, t3));
}

// A row decoded by unpack_row_of into scratch (zero past k), read as FusedRow is.
using UnpackedRow = Avx512Kernel::ScratchRow;

// Four rows of any block type decoded by unpack_row_of into scratch rows (zero past k), their
// offsets folded: quad_tile's rows where a row is not whole 64-element steps (FusedRow's).
template <DType D>
class UnpackedRows {
 public:
  static constexpr int kRows = 4;

  explicit UnpackedRows(const BlockLinearProblem& p)
      : p_(p),
        u_(static_cast<size_t>(kRows * p.k_pad), 0),
        a_(static_cast<size_t>(kRows * p.groups), 0.0f),
        c_(a_) {}

  // Rows j..j + rows (rows <= 4) decoded into the scratch rows 0..rows, the others zero.
  void unpack(int64_t j, int rows) {
    const int64_t real_groups = p_.k / kUnpackGroup;
    const float offset = static_cast<float>(-unpack_zero(D));
    for (int l = 0; l < kRows; ++l) {
      uint8_t* u = u_.data() + l * p_.k_pad;
      float* a = a_.data() + l * p_.groups;
      float* c = c_.data() + l * p_.groups;
      if (l >= rows) {  // zero from the constructor, or from a fuller quad: clear once
        if (l < last_rows_) {
          std::fill(u, u + p_.k_pad, 0);
          std::fill(a, a + p_.groups, 0.0f);
          std::fill(c, c + p_.groups, 0.0f);
        }
        continue;
      }
      unpack_row_of<D>(p_.w + static_cast<size_t>(j + l) * p_.w_row_bytes, p_.k, u, a, c);
      // sum_t (a (u_t - zero) + c) qx_t = a sum u_t qx_t + (c - zero a) sum qx_t.
      for (int64_t g = 0; g < real_groups; ++g) c[g] += offset * a[g];
    }
    last_rows_ = rows;
  }

  // Scratch row l as unpack() left it.
  UnpackedRow row(int l) const {
    return {u_.data() + l * p_.k_pad, a_.data() + l * p_.groups, c_.data() + l * p_.groups};
  }

 private:
  const BlockLinearProblem& p_;
  std::vector<uint8_t> u_;  // kRows rows of k_pad (zero past k)
  std::vector<float> a_, c_;
  int last_rows_ = kRows;
};

// Builds panels of kI8 rows (W8A8: int8 per output channel, one F32 scale each, k a multiple of
// 64): u = q + 128 (q ^ 0x80), a = the row's scale for every group, c = -128 a, as I8Row reads them.
class I8Panels {
 public:
  explicit I8Panels(const BlockLinearProblem& p) : p_(p) {}

  void build(int64_t j, int rows, PanelGroup* panel) const {
    const __mmask16 mask = static_cast<__mmask16>((1u << rows) - 1);
    const __m512 a = _mm512_maskz_loadu_ps(mask, p_.w_row_scale + j);
    const __m512 c = _mm512_mul_ps(_mm512_set1_ps(-128.0f), a);
    const uint8_t* base = p_.w + static_cast<size_t>(j) * p_.w_row_bytes;
    const __m512i flip = _mm512_set1_epi8(static_cast<char>(0x80));
    for (int64_t g = 0; g < p_.groups; ++g) {
      transpose_group([&](int l) { return l < rows ? base + l * p_.w_row_bytes + g * kUnpackGroup : kZeroBytes; },
                      panel[g]);
      for (int q = 0; q < 4; ++q) {
        // Rows past the last stay zero: 0 ^ 0x80 would be a value with a zero scale, harmless,
        // but zero keeps the panel's contract.
        const __m512i v = _mm512_load_si512(panel[g].u[q]);
        _mm512_store_si512(panel[g].u[q], _mm512_mask_xor_epi32(v, mask, v, flip));
      }
      _mm512_store_ps(panel[g].a, a);
      _mm512_store_ps(panel[g].c, c);
    }
  }

 private:
  const BlockLinearProblem& p_;
};

// Builds panels straight from the blocks of every block type, 16 rows a block at a time: each
// 16-byte run of packed values is transposed once (transpose_group) and split into the groups it
// holds; the scales come from gathers, one dword per row, and are decoded in the lanes. The same
// u, a and c as unpack_block_of and the fold in UnpackedRows, bit for bit (the fold's product
// with the type's zero, a power of two, is exact, so fused or not it rounds once).
template <DType D>
class BlockPanels {
 public:
  static_assert(D == DType::kQ8_0 || nibble_layout<D>().half > 0 || D == DType::kQ5_0 ||
                D == DType::kQ5_1 || D == DType::kQ4_K || D == DType::kQ5_K || D == DType::kQ6_K);
  static constexpr int64_t kBlockElems = dtype_block_elems(D);
  static constexpr int64_t kBlockBytes = static_cast<int64_t>(dtype_block_bytes(D));
  static constexpr int kGroups = static_cast<int>(kBlockElems / kUnpackGroup);

  explicit BlockPanels(const BlockLinearProblem& p) : p_(p) {
    row_offsets_ = _mm512_mullo_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
                                      _mm512_set1_epi32(static_cast<int>(p.w_row_bytes)));
  }

  // Rows j..j + rows (rows <= 16) into panel[0..groups).
  void build(int64_t j, int rows, PanelGroup* panel) {
    base_ = p_.w + static_cast<size_t>(j) * p_.w_row_bytes;
    rows_ = static_cast<__mmask16>((1u << rows) - 1);
    for (int l = 0; l < kPanelRows; ++l) rows_at_[l] = l < rows ? base_ + l * p_.w_row_bytes : nullptr;
    // 16 rows read side by side are more streams than the hardware prefetchers follow: the
    // panel kPanelsAhead on (the rows are adjacent) is fetched into L2 in order, a slice per
    // block (into L1 it evicted the panel being read).
    const int64_t panel_bytes = kPanelRows * static_cast<int64_t>(p_.w_row_bytes);
    const char* ahead = reinterpret_cast<const char*>(base_) + kPanelsAhead * panel_bytes;
    const int64_t blocks = p_.k / kBlockElems;
    int64_t fetched = 0;
    for (int64_t b = 0; b < blocks; ++b) {
      for (const int64_t until = panel_bytes * (b + 1) / blocks; fetched < until; fetched += 64) {
        _mm_prefetch(ahead + fetched, _MM_HINT_T1);
      }
      block(b, panel + b * kGroups);
    }
  }

 private:
  // Block b of the panel's rows: groups kGroups * b... into out[0..kGroups).
  [[gnu::always_inline]] void block(int64_t b, PanelGroup* out) {
    const int64_t at = b * kBlockBytes;
    const auto bytes = [this, at](int64_t offset) {
      return [this, at, offset](int l) -> const uint8_t* {
        return rows_at_[l] != nullptr ? rows_at_[l] + at + offset : kZeroBytes;
      };
    };
    const uint8_t* block0 = base_ + at;
    if constexpr (D == DType::kQ8_0) {
      for (int h = 0; h < 2; ++h) {
        transpose_group(bytes(2 + 16 * h), out[h]);
        for (int c = 0; c < 4; ++c) {
          _mm512_store_si512(out[h].u[c], _mm512_xor_si512(_mm512_load_si512(out[h].u[c]),
                                                           _mm512_set1_epi8(static_cast<char>(0x80))));
        }
      }
      const __m512 a = low_halves(gather(block0, 0));
      store_scales(out, 2, a, _mm512_setzero_ps());
    } else if constexpr (nibble_layout<D>().half > 0 || D == DType::kQ5_0 || D == DType::kQ5_1) {
      // Q5_0 / Q5_1 are Q4_0 / Q4_1 with a 32-bit qh between the scales and the nibbles (at
      // byte 2 / 4): its bit j adds 16 to element j.
      constexpr bool kFifthBits = D == DType::kQ5_0 || D == DType::kQ5_1;
      constexpr int kQh = D == DType::kQ5_0 ? 2 : 4;
      constexpr NibbleLayout L = kFifthBits ? NibbleLayout{kQh + 4, 16} : nibble_layout<D>();
      for (int piece = 0; piece < L.half / 16; ++piece) {
        split_nibbles(bytes(L.values + 16 * piece), out[piece], out[piece + L.half / 16]);
      }
      if constexpr (kFifthBits) {
        const __m512i qh = gather(block0, kQh);  // 0 past the last row: nothing added
        add_qh_bits(qh, 0, out[0]);
        add_qh_bits(qh, 16, out[1]);
      }
      __m512 a, c;
      if constexpr (D == DType::kI4G32F || D == DType::kI4G64F || D == DType::kI4G128F) {
        a = _mm512_castsi512_ps(gather(block0, 0));
        c = _mm512_castsi512_ps(gather(block0, 4));
      } else {
        const __m512i fields = gather(block0, 0);  // f16 scale, then (Q4_1, Q5_1, I4G*) f16 minimum
        a = low_halves(fields);
        c = D == DType::kQ4_0 || D == DType::kQ5_0 ? _mm512_setzero_ps()
                                                   : low_halves(_mm512_srli_epi32(fields, 16));
      }
      store_scales(out, kGroups, a, c);
    } else if constexpr (D == DType::kQ4_K || D == DType::kQ5_K) {
      // 4 runs of 32 bytes: run s's low nibbles are elements 64s..64s+31, its high ones the next
      // 32. Q5_K: element 64s + i (i < 32) adds 16 where bit 2s of qh byte i is set, element
      // 64s + 32 + i where bit 2s + 1 is: qh's 32 bytes transposed as the values are.
      constexpr int kValues = D == DType::kQ4_K ? 16 : 48;
      PanelGroup qh[2];
      if constexpr (D == DType::kQ5_K) {
        transpose_group(bytes(16), qh[0]);
        transpose_group(bytes(32), qh[1]);
      }
      for (int piece = 0; piece < 8; ++piece) {
        const int s = piece / 2, half = piece % 2;
        split_nibbles(bytes(kValues + 16 * piece), out[4 * s + half], out[4 * s + 2 + half]);
        if constexpr (D == DType::kQ5_K) {
          add_sixteen_where(qh[half], static_cast<uint8_t>(1u << (2 * s)), out[4 * s + half]);
          add_sixteen_where(qh[half], static_cast<uint8_t>(2u << (2 * s)), out[4 * s + 2 + half]);
        }
      }
      k4_scales(block0, out);
    } else {
      static_assert(D == DType::kQ6_K);
      q6_k_values(bytes, out);
      q6_k_scales(block0, out);
    }
  }

  // The dword at block + offset of each of the panel's rows (0 past its last row).
  [[gnu::always_inline]] __m512i gather(const uint8_t* block, int64_t offset) const {
    return _mm512_mask_i32gather_epi32(_mm512_setzero_si512(), rows_, row_offsets_, block + offset, 1);
  }

  // The F16 values in the low half of each dword.
  [[gnu::always_inline]] static __m512 low_halves(__m512i v) {
    return _mm512_cvtph_ps(_mm512_cvtepi32_epi16(v));
  }

  // a and c (before the fold) for `groups` groups sharing them.
  [[gnu::always_inline]] static void store_scales(PanelGroup* out, int groups, __m512 a, __m512 c) {
    const __m512 folded = _mm512_fmadd_ps(_mm512_set1_ps(static_cast<float>(-unpack_zero(D))), a, c);
    for (int g = 0; g < groups; ++g) {
      _mm512_store_ps(out[g].a, a);
      _mm512_store_ps(out[g].c, folded);
    }
  }

  // 16 bytes of nibbles per row: low nibbles into `low`, high nibbles into `high`.
  template <class Source>
  [[gnu::always_inline]] static void split_nibbles(const Source& src, PanelGroup& low, PanelGroup& high) {
    transpose_group(src, low);
    const __m512i mask = _mm512_set1_epi8(0x0F);
    for (int c = 0; c < 4; ++c) {
      const __m512i v = _mm512_load_si512(low.u[c]);
      _mm512_store_si512(low.u[c], _mm512_and_si512(v, mask));
      _mm512_store_si512(high.u[c], _mm512_and_si512(_mm512_srli_epi16(v, 4), mask));
    }
  }

  // Q5_0 / Q5_1: 16 added to the group's element i (u[c] byte 4l + e, i = 4c + e, row l) where
  // bit first + i of row l's qh (lane l) is set: each lane's bits first + 4c.. spread over its
  // four bytes, byte e tested against bit e.
  [[gnu::always_inline]] static void add_qh_bits(__m512i qh, int first, PanelGroup& group) {
    const __m512i byte0 = _mm512_set4_epi32(0x0C0C0C0C, 0x08080808, 0x04040404, 0x00000000);
    const __m512i bit_e = _mm512_set1_epi32(0x08040201);
    for (int c = 0; c < 4; ++c) {
      const __m512i bits = _mm512_shuffle_epi8(_mm512_srli_epi32(qh, first + 4 * c), byte0);
      const __mmask64 set = _mm512_test_epi8_mask(bits, bit_e);
      const __m512i u = _mm512_load_si512(group.u[c]);
      _mm512_store_si512(group.u[c], _mm512_mask_add_epi8(u, set, u, _mm512_set1_epi8(16)));
    }
  }

  // Q5_K: 16 added to each byte of `group` whose byte in `bits` (laid out as the group's) has
  // `bit` set.
  [[gnu::always_inline]] static void add_sixteen_where(const PanelGroup& bits, uint8_t bit, PanelGroup& group) {
    for (int c = 0; c < 4; ++c) {
      const __mmask64 set = _mm512_test_epi8_mask(_mm512_load_si512(bits.u[c]), _mm512_set1_epi8(static_cast<char>(bit)));
      const __m512i u = _mm512_load_si512(group.u[c]);
      _mm512_store_si512(group.u[c], _mm512_mask_add_epi8(u, set, u, _mm512_set1_epi8(16)));
    }
  }

  // Q4_K: a = d * scale, c = -(dmin * min) for each sub-block of 32 (k4_sub_block_scale), in lanes.
  [[gnu::always_inline]] void k4_scales(const uint8_t* block, PanelGroup* out) const {
    const __m512i dd = gather(block, 0);
    const __m512 d = low_halves(dd), dmin = low_halves(_mm512_srli_epi32(dd, 16));
    const __m512i q0 = gather(block, 4), q1 = gather(block, 8), q2 = gather(block, 12);
    const __m512i six = _mm512_set1_epi32(63), four = _mm512_set1_epi32(15), two = _mm512_set1_epi32(3);
    for (int sub = 0; sub < 8; ++sub) {
      __m512i scale, min;
      if (sub < 4) {
        scale = _mm512_and_si512(_mm512_srli_epi32(q0, 8 * sub), six);
        min = _mm512_and_si512(_mm512_srli_epi32(q1, 8 * sub), six);
      } else {
        const int s = 8 * (sub - 4);
        scale = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi32(q2, s), four),
                                _mm512_slli_epi32(_mm512_and_si512(_mm512_srli_epi32(q0, s + 6), two), 4));
        min = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi32(q2, s + 4), four),
                              _mm512_slli_epi32(_mm512_and_si512(_mm512_srli_epi32(q1, s + 6), two), 4));
      }
      const __m512 a = _mm512_mul_ps(d, _mm512_cvtepi32_ps(scale));
      const __m512 min_products = _mm512_mul_ps(dmin, _mm512_cvtepi32_ps(min));
      const __m512 c = _mm512_castsi512_ps(  // -(dmin * min), a zero's sign included
          _mm512_xor_si512(_mm512_castps_si512(min_products), _mm512_set1_epi32(static_cast<int>(0x80000000u))));
      store_scales(out + 2 * sub, 2, a, c);
    }
  }

  // Q6_K (unpack_q6_k): half n of the block takes ql[64n..64n+64) and qh[32n..32n+32); for the
  // 16 elements at 16q of each 32 (q = 0, 1), groups 8n + q, + 2, + 4, + 6 are the low nibbles of
  // ql run q, of run q + 2, the high nibbles of run q, of run q + 2, with qh's bit pairs 0-1,
  // 2-3, 4-5, 6-7 above them.
  template <class Bytes>
  [[gnu::always_inline]] static void q6_k_values(const Bytes& bytes, PanelGroup* out) {
    const __m512i low4 = _mm512_set1_epi8(0x0F), low2 = _mm512_set1_epi8(3);
    for (int n = 0; n < 2; ++n) {
      for (int q = 0; q < 2; ++q) {
        PanelGroup& g0 = out[8 * n + q];
        PanelGroup& g2 = out[8 * n + 2 + q];
        PanelGroup& g4 = out[8 * n + 4 + q];
        PanelGroup& g6 = out[8 * n + 6 + q];
        transpose_group(bytes(64 * n + 16 * q), g0);       // ql run q
        transpose_group(bytes(64 * n + 32 + 16 * q), g2);  // ql run q + 2
        transpose_group(bytes(128 + 32 * n + 16 * q), g4);  // qh
        for (int c = 0; c < 4; ++c) {
          const __m512i l0 = _mm512_load_si512(g0.u[c]), l2 = _mm512_load_si512(g2.u[c]);
          const __m512i h = _mm512_load_si512(g4.u[c]);
          const auto high = [&](int shift) {
            return _mm512_slli_epi16(_mm512_and_si512(_mm512_srli_epi16(h, shift), low2), 4);
          };
          _mm512_store_si512(g0.u[c], _mm512_or_si512(_mm512_and_si512(l0, low4), high(0)));
          _mm512_store_si512(g2.u[c], _mm512_or_si512(_mm512_and_si512(l2, low4), high(2)));
          _mm512_store_si512(g4.u[c], _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(l0, 4), low4), high(4)));
          _mm512_store_si512(g6.u[c], _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(l2, 4), low4), high(6)));
        }
      }
    }
  }

  // Q6_K: a = d * sc[g] for its 16 int8 sub-scales, c = 0 before the fold.
  [[gnu::always_inline]] void q6_k_scales(const uint8_t* block, PanelGroup* out) const {
    // d is the block's last 2 bytes: read as the high half of the dword at 206, not past the block.
    const __m512 d = low_halves(_mm512_srli_epi32(gather(block, 206), 16));
    for (int q = 0; q < 4; ++q) {
      const __m512i sc = gather(block, 192 + 4 * q);
      for (int byte = 0; byte < 4; ++byte) {
        // Byte `byte` of each dword, sign-extended.
        const __m512i v = _mm512_srai_epi32(_mm512_slli_epi32(sc, 24 - 8 * byte), 24);
        store_scales(out + 4 * q + byte, 1, _mm512_mul_ps(d, _mm512_cvtepi32_ps(v)), _mm512_setzero_ps());
      }
    }
  }

  const BlockLinearProblem& p_;
  __m512i row_offsets_;
  const uint8_t* base_ = nullptr;
  const uint8_t* rows_at_[kPanelRows] = {};  // null past the panel's last row
  __mmask16 rows_ = 0;
};

// MR activation rows i.. by one panel: the sums of the contract above, one lane per weight row.
template <int MR>
[[gnu::always_inline]] inline void panel_tile(const BlockLinearProblem& p, const PanelGroup* panel,
                                              int64_t i, int64_t j, __mmask16 rows) {
  __m512 acc[MR][4], off[MR][4];
  const int8_t* x[MR];
  const float *xd[MR], *xs[MR];
  for (int r = 0; r < MR; ++r) {
    for (int q = 0; q < 4; ++q) acc[r][q] = off[r][q] = _mm512_setzero_ps();
    x[r] = p.xq + (i + r) * p.k_pad;
    xd[r] = p.xd + (i + r) * p.groups;
    xs[r] = p.xs + (i + r) * p.groups;
  }
  for (int64_t g0 = 0; g0 < p.groups; g0 += 4) {
#pragma GCC unroll 4
    for (int q = 0; q < 4; ++q) {
      const int64_t g = g0 + q;
      const PanelGroup& group = panel[g];
      const __m512i w0 = _mm512_load_si512(group.u[0]), w1 = _mm512_load_si512(group.u[1]);
      const __m512i w2 = _mm512_load_si512(group.u[2]), w3 = _mm512_load_si512(group.u[3]);
      const __m512 a = _mm512_load_ps(group.a);
#pragma GCC unroll 8
      for (int r = 0; r < MR; ++r) {
        const int8_t* xg = x[r] + g * kUnpackGroup;
        __m512i d = _mm512_dpbusd_epi32(_mm512_setzero_si512(), w0, _mm512_set1_epi32(i32_at(xg)));
        d = _mm512_dpbusd_epi32(d, w1, _mm512_set1_epi32(i32_at(xg + 4)));
        d = _mm512_dpbusd_epi32(d, w2, _mm512_set1_epi32(i32_at(xg + 8)));
        d = _mm512_dpbusd_epi32(d, w3, _mm512_set1_epi32(i32_at(xg + 12)));
        const __m512 scale = _mm512_mul_ps(a, _mm512_set1_ps(xd[r][g]));
        acc[r][q] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(d), scale, acc[r][q]);
      }
    }
  }
  // The offsets in a pass of their own: with them, 4 rows' accumulators would not fit the registers.
  for (int64_t g0 = 0; g0 < p.groups; g0 += 4) {
#pragma GCC unroll 4
    for (int q = 0; q < 4; ++q) {
      const __m512 c = _mm512_load_ps(panel[g0 + q].c);
#pragma GCC unroll 8
      for (int r = 0; r < MR; ++r) off[r][q] = _mm512_fmadd_ps(c, _mm512_set1_ps(xs[r][g0 + q]), off[r][q]);
    }
  }
  const __m512 bias = p.bias ? _mm512_maskz_loadu_ps(rows, p.bias + j) : _mm512_setzero_ps();
  for (int r = 0; r < MR; ++r) {
    const __m512 sums = _mm512_add_ps(_mm512_add_ps(acc[r][0], acc[r][1]), _mm512_add_ps(acc[r][2], acc[r][3]));
    const __m512 offsets = _mm512_add_ps(_mm512_add_ps(off[r][0], off[r][1]), _mm512_add_ps(off[r][2], off[r][3]));
    const __m512 y = _mm512_add_ps(sums, offsets);
    _mm512_mask_storeu_ps(p.y + (i + r) * p.n + j, rows, p.bias ? _mm512_add_ps(y, bias) : y);
  }
}

// y[i0:i1, j0:j1], one panel of 16 weight rows at a time, made by Panels::build and multiplied
// with every activation row of the tile, 4 at a time.
template <class Panels>
void panel_rows(const BlockLinearProblem& p, Panels& panels, int64_t i0, int64_t i1, int64_t j0,
                int64_t j1) {
  std::vector<PanelGroup> panel(static_cast<size_t>(p.groups));
  for (int64_t j = j0; j < j1; j += kPanelRows) {
    const int rows = static_cast<int>(std::min<int64_t>(kPanelRows, j1 - j));
    panels.build(j, rows, panel.data());
    const __mmask16 mask = static_cast<__mmask16>((1u << rows) - 1);
    int64_t i = i0;
    for (; i + 4 <= i1; i += 4) panel_tile<4>(p, panel.data(), i, j, mask);
    switch (i1 - i) {
      case 3: panel_tile<3>(p, panel.data(), i, j, mask); break;
      case 2: panel_tile<2>(p, panel.data(), i, j, mask); break;
      case 1: panel_tile<1>(p, panel.data(), i, j, mask); break;
      default: break;
    }
  }
}

// How quad_tile reads Row's scales: kByLoad through load(), one row at a time, or four rows'
// F16 values at once (FusedRow::kPairedF16Blocks, FusedRow::kWholeBlockF16).
enum class QuadScales { kByLoad, kPairedF16Blocks, kWholeBlockF16 };
template <class Row>
constexpr QuadScales kQuadScales = [] {
  if constexpr (requires { Row::kPairedF16Blocks; }) {
    if constexpr (Row::kPairedF16Blocks) return QuadScales::kPairedF16Blocks;
    if constexpr (Row::kWholeBlockF16) return QuadScales::kWholeBlockF16;
  }
  return QuadScales::kByLoad;
}();

// MR activation rows (a decode step's few) by four weight rows read in order, each a stream as
// the hardware prefetchers like it (a panel's 16 side by side streamed at 0.6-0.9x this rate):
// the same sums as panel_tile, in lanes (q, l) = (group g % 4 of a 64-element step, row l). Each
// row's product is summed within its groups of 16 (an exact integer reduction), then the float
// operations run on four groups of four rows at once. Row::load is FusedRow's contract
// (linear_block_fused_avx512.h): 64 u bytes, the four groups' scales and folded offsets.
template <int MR, class Row>
[[gnu::always_inline]] inline void quad_tile(const BlockLinearProblem& p, Row* rows, int64_t i, int64_t j,
                                             int count, int64_t j_end) {
  // (q, l) from a register of the four rows' [group 0..3] side by side, lane 4l + q.
  const __m512i by_group = _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
  const __m512i spread = _mm512_setr_epi32(0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3);
  __m512 acc[MR], off[MR];
  for (int r = 0; r < MR; ++r) acc[r] = off[r] = _mm512_setzero_ps();
  // The next four rows (adjacent to these), fetched in order a slice per step: four rows read
  // side by side defeat both the hardware prefetchers and a fetch ahead of each row. The slice
  // is rounded down (no division per step); the last step fetches what is left. Nothing past
  // the tile's last row (j_end): those rows are another task's, or past the matrix.
  const int64_t quad_bytes = j + 4 < j_end ? 4 * static_cast<int64_t>(p.w_row_bytes) : 0;
  const int64_t slice = quad_bytes * 64 / p.k_pad;
  const char* next = reinterpret_cast<const char*>(p.w) + (j + 4) * static_cast<int64_t>(p.w_row_bytes);
  int64_t fetched = 0, until = 0;
  for (int64_t t = 0; t < p.k_pad; t += 64) {
    until = t + 64 < p.k_pad ? until + slice : quad_bytes;
    for (; fetched < until; fetched += 64) _mm_prefetch(next + fetched, _MM_HINT_T0);
    __m512i w[4];
    __m512 a, c;
    if constexpr (kQuadScales<Row> != QuadScales::kByLoad) {
      // The four rows' F16 words converted at once: lane 2l + h is half h of row l's word.
      const auto converted = [&](int offset) {
        const __m128i h = _mm_setr_epi32(static_cast<int>(rows[0].halves(t, offset)), static_cast<int>(rows[1].halves(t, offset)),
                                         static_cast<int>(rows[2].halves(t, offset)), static_cast<int>(rows[3].halves(t, offset)));
        return _mm512_castps256_ps512(_mm256_cvtph_ps(h));
      };
      for (int l = 0; l < 4; ++l) w[l] = rows[l].quants(t);
      __m512 minimum = _mm512_setzero_ps();
      if constexpr (kQuadScales<Row> == QuadScales::kPairedF16Blocks) {
        // Halves are the two blocks: lane (q, l) takes block q / 2.
        const __m512i by_block = _mm512_setr_epi32(0, 2, 4, 6, 0, 2, 4, 6, 1, 3, 5, 7, 1, 3, 5, 7);
        a = _mm512_permutexvar_ps(by_block, converted(0));
        if constexpr (Row::kHasMinimum) minimum = _mm512_permutexvar_ps(by_block, converted(2));
      } else {
        // Halves are the block's scale and minimum, the same for every group q.
        const __m512 both = converted(0);
        a = _mm512_permutexvar_ps(_mm512_setr_epi32(0, 2, 4, 6, 0, 2, 4, 6, 0, 2, 4, 6, 0, 2, 4, 6), both);
        minimum = _mm512_permutexvar_ps(_mm512_setr_epi32(1, 3, 5, 7, 1, 3, 5, 7, 1, 3, 5, 7, 1, 3, 5, 7), both);
      }
      // c = fma(-zero, a, minimum), as FusedRow::load folds it lane by lane.
      c = _mm512_fmadd_ps(_mm512_set1_ps(static_cast<float>(-unpack_zero(Row::kDType))), a, minimum);
    } else {
      __m128 a4[4], c4[4];
      for (int l = 0; l < 4; ++l) rows[l].load(t, w[l], a4[l], c4[l]);
      const auto by_rows = [&](const __m128* v) {
        __m512 z = _mm512_castps128_ps512(v[0]);
        z = _mm512_insertf32x4(z, v[1], 1);
        z = _mm512_insertf32x4(z, v[2], 2);
        return _mm512_permutexvar_ps(by_group, _mm512_insertf32x4(z, v[3], 3));
      };
      a = by_rows(a4);
      c = by_rows(c4);
    }
    const int64_t g = t / kUnpackGroup;
#pragma GCC unroll 4
    for (int r = 0; r < MR; ++r) {
      const __m512i x = _mm512_loadu_si512(p.xq + (i + r) * p.k_pad + t);
      __m512i d[4];
      for (int l = 0; l < 4; ++l) d[l] = _mm512_dpbusd_epi32(_mm512_setzero_si512(), w[l], x);
      // Lanes 4q..4q+3 of d[l] are group q's four partial sums; sum them per row into (q, l).
      const __m512i d01 = _mm512_add_epi32(_mm512_unpacklo_epi32(d[0], d[1]), _mm512_unpackhi_epi32(d[0], d[1]));
      const __m512i d23 = _mm512_add_epi32(_mm512_unpacklo_epi32(d[2], d[3]), _mm512_unpackhi_epi32(d[2], d[3]));
      const __m512i dots = _mm512_add_epi32(_mm512_unpacklo_epi64(d01, d23), _mm512_unpackhi_epi64(d01, d23));
      const __m512 xd = _mm512_permutexvar_ps(spread, _mm512_castps128_ps512(_mm_loadu_ps(p.xd + (i + r) * p.groups + g)));
      const __m512 xs = _mm512_permutexvar_ps(spread, _mm512_castps128_ps512(_mm_loadu_ps(p.xs + (i + r) * p.groups + g)));
      acc[r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(dots), _mm512_mul_ps(a, xd), acc[r]);
      off[r] = _mm512_fmadd_ps(c, xs, off[r]);
    }
  }
  const __mmask16 mask = static_cast<__mmask16>((1u << count) - 1);
  const __m128 bias = p.bias ? _mm_maskz_loadu_ps(mask, p.bias + j) : _mm_setzero_ps();
  for (int r = 0; r < MR; ++r) {
    // ((q0 + q1) + (q2 + q3)) per row, as panel_tile sums its four accumulators.
    const auto fold = [](__m512 v) {
      v = _mm512_add_ps(v, _mm512_shuffle_f32x4(v, v, _MM_SHUFFLE(2, 3, 0, 1)));
      return _mm512_castps512_ps128(_mm512_add_ps(v, _mm512_shuffle_f32x4(v, v, _MM_SHUFFLE(1, 0, 3, 2))));
    };
    const __m128 y = _mm_add_ps(fold(acc[r]), fold(off[r]));
    _mm_mask_storeu_ps(p.y + (i + r) * p.n + j, mask, p.bias ? _mm_add_ps(y, bias) : y);
  }
}

// y[i:i + MR, j0:j1] four weight rows at a time from make_row(j) (rows past j1 repeat the last).
template <int MR, class MakeRow>
void quad_rows(const BlockLinearProblem& p, int64_t i, int64_t j0, int64_t j1, const MakeRow& make_row) {
  for (int64_t j = j0; j < j1; j += 4) {
    const int count = static_cast<int>(std::min<int64_t>(4, j1 - j));
    decltype(make_row(j)) rows[4] = {make_row(j), make_row(j + std::min(1, count - 1)),
                                     make_row(j + std::min(2, count - 1)), make_row(j + std::min(3, count - 1))};
    quad_tile<MR>(p, rows, i, j, count, j1);
  }
}

// quad_rows for any block type: in registers (FusedRow) where the row is whole 64-element steps,
// else from rows decoded into scratch.
template <int MR, DType D>
void quad_block_rows(const BlockLinearProblem& p, int64_t i, int64_t j0, int64_t j1) {
  if (p.k_pad == p.k) {
    quad_rows<MR>(p, i, j0, j1, [&](int64_t j) { return FusedRow<D>(p.w + static_cast<size_t>(j) * p.w_row_bytes); });
    return;
  }
  UnpackedRows<D> scratch(p);
  for (int64_t j = j0; j < j1; j += 4) {
    const int count = static_cast<int>(std::min<int64_t>(4, j1 - j));
    scratch.unpack(j, count);
    UnpackedRow rows[4];
    for (int l = 0; l < 4; ++l) rows[l] = scratch.row(std::min(l, count - 1));
    quad_tile<MR>(p, rows, i, j, count, j1);
  }
}

// The tile for block type D: four weight rows at a time for up to 4 activation rows, else
// panels built from the blocks.
template <DType D>
void block_panel_rows(const BlockLinearProblem& p, int64_t i0, int64_t i1, int64_t j0, int64_t j1) {
  switch (i1 - i0) {
    case 1: return quad_block_rows<1, D>(p, i0, j0, j1);
    case 2: return quad_block_rows<2, D>(p, i0, j0, j1);
    case 3: return quad_block_rows<3, D>(p, i0, j0, j1);
    case 4: return quad_block_rows<4, D>(p, i0, j0, j1);
    default: break;
  }
  BlockPanels<D> panels(p);
  panel_rows(p, panels, i0, i1, j0, j1);
}

// W8A8 (kI8 rows with their scales): the same tiles as block_panel_rows.
inline void i8_panel_rows(const BlockLinearProblem& p, int64_t i0, int64_t i1, int64_t j0, int64_t j1) {
  const auto make_row = [&](int64_t j) { return I8Row(p.w + static_cast<size_t>(j) * p.w_row_bytes, p.w_row_scale[j]); };
  switch (i1 - i0) {
    case 1: return quad_rows<1>(p, i0, j0, j1, make_row);
    case 2: return quad_rows<2>(p, i0, j0, j1, make_row);
    case 3: return quad_rows<3>(p, i0, j0, j1, make_row);
    case 4: return quad_rows<4>(p, i0, j0, j1, make_row);
    default: break;
  }
  I8Panels panels(p);
  panel_rows(p, panels, i0, i1, j0, j1);
}

}  // namespace
}  // namespace weft::kernels::cpu
