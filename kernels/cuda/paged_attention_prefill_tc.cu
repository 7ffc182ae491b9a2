// Paged causal attention for ragged batches of prefill chunks and decode tokens on tensor cores
// (nvcuda::wmma 16x16x16 fragments, 16-bit inputs, F32 accumulators), flash-attention-2 style.
// Same contract as the SIMT kernel in paged_attention_prefill.cu, which paged_attention_prefill
// uses for everything this one does not cover: it covers T = CacheT = F16 or BF16 and head_dim
// 64 or 128 (see prefill_tc_supported).
//
// Grid (row tiles, num_kv_heads, num_seqs), 128 threads (4 warps). Rows are the SIMT kernel's
// (query j, head-in-group g) pairs, row = j * group + g, so one K/V tile serves every query head
// of a GQA group. A block owns kTileRows = 64 rows, warp w the 16 rows [16w, 16w + 16); row tiles
// run in reverse blockIdx.x order so the blocks with the most keys (the last rows) start first.
// The block walks the keys its last row can see in tiles of kTileKeys = 64:
//   - Q is used as given, not pre-scaled (rounding scale * log2(e) * q to 16 bits would put
//     relative errors up to 2^-8 for BF16 into the logits, hence into the exponents). It is
//     staged once through shared memory into each warp's matrix_a fragments, which stay in
//     registers for the whole key loop.
//   - The K and V tiles [64][D] are copied from the paged cache into shared memory as T with
//     128-bit loads; keys past the block's last visible key are zero-filled (the cache holds
//     arbitrary bits there, and 0 * NaN would poison the P V product).
//   - S = Q K^T: each warp computes its 16 x 64 strip (K read as a col_major matrix_b, i.e. K^T)
//     into F32 fragments and stores them to its private F32 scratch [16][72].
//   - Softmax on shared memory: accumulator fragments map elements to rows in an unspecified
//     way, so the row-wise work is done by plain threads. Lanes 2r and 2r + 1 own row r of the
//     strip (32 keys each; two passes over the scratch, max then exp2, rather than 32 more
//     registers), scale S by scale * log2(e) in F32, apply the causal mask (key
//     position <= row position; rows past the sequence see nothing), update the running max m
//     and sum l (F32, in registers, the same in both lanes) and write P = exp2(s - m) rounded to
//     T to the warp's P scratch [16][72] (l sums the unrounded F32 p, as flash-attention does).
//   - O (16 x D per warp) lives in F32 accumulator fragments across the key loop. When some row's
//     max grew (corr = exp2(m_old - m_new) != 1 for any row of the warp: frequent in the first
//     tiles, rare later) the strip goes through the F32 scratch 64 columns at a time, its rows
//     are scaled by plain threads, and it is reloaded; store / load_matrix_sync round trips are
//     exact. Then O += P V (P as matrix_a, V as a row_major matrix_b).
//   - A warp skips the 16-key sub-tiles none of its rows can see, and a whole tile when it sees
//     none of it (the causal diagonal, padding rows).
//   - O / l is rounded once to T through the scratch, 128-bit stores.
// Shared memory (bytes): K and V tiles 2 * 64 * (D + 8) * 2, S/O scratch 4 * 16 * 72 * 4 = 18432,
// P scratch 4 * 16 * 72 * 2 = 9216; the Q staging tile 64 * (D + 8) * 2 reuses the scratch. D = 64:
// 46080 (4 blocks per H100/H200 SM); D = 128: 62464 (3 blocks).
// Padding: 16-bit tiles use D + 8 elements per row and the P scratch 72, F32 scratch 72 floats;
// every WMMA pointer is then 32-byte aligned and every leading dimension a multiple of 8 (16-bit)
// or 4 (F32). With 72-float rows, the softmax's 128-bit reads (lane 2r + h reads 16-byte chunks
// 2i + h of row r) hit 8 distinct 16-byte bank groups per quarter warp: (18 r + 2 i + h) mod 8.
// Every __syncthreads sits outside warp- or thread-dependent branches; warps share only the K/V
// tiles (and the Q staging tile at the start), everything else is warp-private (__syncwarp).
#include <mma.h>

#include "absl/strings/str_cat.h"
#include "paged_attention_common.cuh"

namespace weft::kernels::cuda {
namespace attn {
namespace {

namespace wmma = nvcuda::wmma;

constexpr int kTcThreads = 128;
constexpr int kTcWarps = kTcThreads / 32;
constexpr int kM = 16;                          // WMMA tile edge (m = n = k = 16)
constexpr int kTileRows = kM * kTcWarps;        // 64 rows per block, 16 per warp
constexpr int kTileKeys = 64;                   // keys per K/V tile
constexpr int kSubTiles = kTileKeys / kM;       // 16-key sub-tiles per key tile
constexpr int kScratchStride = kTileKeys + 8;   // F32 scratch and P scratch row length
constexpr int kChunk = 64;                      // O columns per trip through the F32 scratch

__host__ __device__ constexpr int tc_stride(int d) { return d + 8; }  // 16-bit K/V/Q rows

constexpr size_t kScratchF32Bytes = size_t{kTcWarps} * kM * kScratchStride * sizeof(float);
constexpr size_t kScratchPBytes = size_t{kTcWarps} * kM * kScratchStride * 2;

__host__ __device__ constexpr size_t kv_tile_bytes(int d) {
  return size_t{kTileKeys} * tc_stride(d) * 2;
}
__host__ __device__ constexpr size_t q_stage_bytes(int d) {
  return size_t{kTileRows} * tc_stride(d) * 2;
}
// Dynamic shared memory of one block: K tile, V tile, F32 scratch, P scratch (Q staging aliases
// the two scratches).
__host__ __device__ constexpr size_t prefill_tc_smem_bytes(int d) {
  return 2 * kv_tile_bytes(d) + kScratchF32Bytes + kScratchPBytes;
}

// 16-byte copies of shared/global data (T is 16-bit, so 8 elements).
__device__ __forceinline__ uint4 load16(const void* p) { return *static_cast<const uint4*>(p); }
__device__ __forceinline__ void store16(void* p, uint4 v) { *static_cast<uint4*>(p) = v; }

// F32 values rounded to T (nearest even), packed: two into 4 bytes, four into 8.
__device__ __forceinline__ uint32_t pack2(__half, float a, float b) {
  const __half2 h = __floats2half2_rn(a, b);
  return *reinterpret_cast<const uint32_t*>(&h);
}
__device__ __forceinline__ uint32_t pack2(__nv_bfloat16, float a, float b) {
  const __nv_bfloat162 h = __floats2bfloat162_rn(a, b);
  return *reinterpret_cast<const uint32_t*>(&h);
}
template <typename T>
__device__ __forceinline__ uint2 pack4(float a, float b, float c, float d) {
  return make_uint2(pack2(T(), a, b), pack2(T(), c, d));
}

// Blocks per SM the shared memory allows on an H100 / H200 (228 KiB per SM, 1 KiB of it reserved
// per block): asking ptxas for as many keeps registers from being the tighter limit (it caps
// them at 128 per thread for 4 blocks, 168 for 3; sm_90 builds use 121 and 166, no spills).
__host__ __device__ constexpr int tc_min_blocks(int d) { return d == 64 ? 4 : 3; }

template <typename T, int D>
__global__ void __launch_bounds__(kTcThreads, tc_min_blocks(D))
    prefill_tc_kernel(const T* __restrict__ q, const T* __restrict__ k_cache,
                      const T* __restrict__ v_cache, const int32_t* __restrict__ query_start,
                      const int32_t* __restrict__ context_len,
                      const int32_t* __restrict__ block_tables, int max_blocks_per_seq,
                      int block_size, int num_heads, int num_kv_heads, float scale_log2,
                      T* __restrict__ out) {
  static_assert(D % kChunk == 0, "O goes through the F32 scratch in 64-column chunks");
  constexpr int kNV = D / kVec;      // 16-byte vectors per head row
  constexpr int kStride = tc_stride(D);
  constexpr int kDSteps = D / kM;    // k-steps of S = Q K^T, column fragments of O
  static_assert(q_stage_bytes(D) <= kScratchF32Bytes + kScratchPBytes,
                "the Q staging tile must fit in the scratch it aliases");
  static_assert((kTileKeys * kNV) % kTcThreads == 0, "K/V tile copy must split evenly");

  // WMMA pointers need 32-byte alignment: the base is aligned to 128 and every offset below is a
  // multiple of 32 bytes.
  extern __shared__ __align__(128) uint4 smem_tc[];
  T* k_s = reinterpret_cast<T*>(smem_tc);                                   // [64][kStride]
  T* v_s = k_s + kTileKeys * kStride;                                       // [64][kStride]
  float* f_s = reinterpret_cast<float*>(v_s + kTileKeys * kStride);         // [4][16][72] F32
  T* p_s = reinterpret_cast<T*>(f_s + kTcWarps * kM * kScratchStride);      // [4][16][72] T
  T* q_stage = reinterpret_cast<T*>(f_s);                                   // [64][kStride]

  const int seq = blockIdx.z;
  const int kvh = blockIdx.y;
  const int q0 = query_start[seq];
  const int ql = query_start[seq + 1] - q0;
  const int group = num_heads / num_kv_heads;
  const int rows = ql * group;
  const int row0 = (gridDim.x - 1 - blockIdx.x) * kTileRows;
  if (row0 >= rows) return;                     // uniform over the block
  const int first_pos = context_len[seq] - ql;  // position of query row 0
  const int n_keys = first_pos + (min(row0 + kTileRows, rows) - 1) / group + 1;

  const int tid = threadIdx.x;
  const int lane = tid & 31;
  const int warp = tid >> 5;
  const int64_t slot_stride = static_cast<int64_t>(num_kv_heads) * D;
  const int32_t* table = block_tables + static_cast<int64_t>(seq) * max_blocks_per_seq;

  // The warp's rows: keys they can see at all (0 when all are padding).
  const int warp_row0 = row0 + warp * kM;
  const int warp_keys =
      warp_row0 < rows ? first_pos + (min(warp_row0 + kM, rows) - 1) / group + 1 : 0;
  // This lane's softmax row (lanes 2r and 2r + 1 share row r of the strip) and side of it.
  const int my_row = lane >> 1;
  const int side = lane & 1;
  const int r_global = warp_row0 + my_row;
  const int row_pos = r_global < rows ? first_pos + r_global / group : -1;  // -1: sees nothing

  float* f_w = f_s + warp * kM * kScratchStride;  // the warp's F32 scratch [16][72]
  T* p_w = p_s + warp * kM * kScratchStride;      // the warp's P scratch [16][72]

  // Q tile, staged through the scratch; rows past the sequence are zero (and masked below).
  for (int i = tid; i < kTileRows * kNV; i += kTcThreads) {
    const int rr = i / kNV;
    const int v = i % kNV;
    const int r = row0 + rr;
    uint4 val = make_uint4(0, 0, 0, 0);
    if (r < rows) {
      const int head = kvh * group + r % group;
      val = load16(q + (static_cast<int64_t>(q0 + r / group) * num_heads + head) * D + v * kVec);
    }
    store16(q_stage + rr * kStride + v * kVec, val);
  }
  __syncthreads();
  wmma::fragment<wmma::matrix_a, kM, kM, kM, T, wmma::row_major> q_frag[kDSteps];
#pragma unroll
  for (int kk = 0; kk < kDSteps; ++kk) {
    wmma::load_matrix_sync(q_frag[kk], q_stage + warp * kM * kStride + kk * kM, kStride);
  }
  wmma::fragment<wmma::accumulator, kM, kM, kM, float> o_frag[kDSteps];
#pragma unroll
  for (int n = 0; n < kDSteps; ++n) wmma::fill_fragment(o_frag[n], 0.0f);
  float m = -INFINITY;  // running max of this lane's row (log2 domain), the same in both lanes
  float l = 0.0f;       // running sum of exp2(s - m)

  for (int k0 = 0; k0 < n_keys; k0 += kTileKeys) {
    // Every warp is done with the previous K/V tile (on entry: with the Q staging tile, which
    // the scratch writes below overwrite).
    __syncthreads();
#pragma unroll
    for (int it = 0; it < kTileKeys * kNV / kTcThreads; ++it) {
      const int i = tid + it * kTcThreads;
      const int t = i / kNV;
      const int v = i % kNV;
      const int pos = k0 + t;
      uint4 kv = make_uint4(0, 0, 0, 0);
      uint4 vv = make_uint4(0, 0, 0, 0);
      if (pos < n_keys) {
        const int64_t off =
            slot_of(table, pos, block_size) * slot_stride + static_cast<int64_t>(kvh) * D + v * kVec;
        kv = load16(k_cache + off);
        vv = load16(v_cache + off);
      }
      store16(k_s + t * kStride + v * kVec, kv);
      store16(v_s + t * kStride + v * kVec, vv);
    }
    __syncthreads();

    if (warp_keys <= k0) continue;  // warp-uniform: none of the warp's rows sees this tile
    // 16-key sub-tiles some row of the warp can see (1..4).
    const int n_sub = min(kSubTiles, (warp_keys - k0 + kM - 1) / kM);

    // S = Q K^T for the warp's 16 rows, into the F32 scratch. Columns of skipped sub-tiles keep
    // stale values; the softmax masks them (their keys lie past every row's position).
#pragma unroll
    for (int n = 0; n < kSubTiles; ++n) {
      if (n < n_sub) {
        wmma::fragment<wmma::accumulator, kM, kM, kM, float> s_frag;
        wmma::fill_fragment(s_frag, 0.0f);
#pragma unroll
        for (int kk = 0; kk < kDSteps; ++kk) {
          // K^T as a col_major matrix_b: element (d, key) at k_s[key * kStride + d].
          wmma::fragment<wmma::matrix_b, kM, kM, kM, T, wmma::col_major> k_frag;
          wmma::load_matrix_sync(k_frag, k_s + n * kM * kStride + kk * kM, kStride);
          wmma::mma_sync(s_frag, q_frag[kk], k_frag, s_frag);
        }
        wmma::store_matrix_sync(f_w + n * kM, s_frag, kScratchStride, wmma::mem_row_major);
      }
    }
    __syncwarp();

    // Mask and online softmax of row my_row; this lane reads 16-byte chunks 2i + side. Two passes
    // over the scratch (max, then exp2) rather than 32 scores held in registers next to the Q and
    // O fragments. The mask is a select, not arithmetic: stale scratch bits (even NaN) of skipped
    // sub-tiles never survive it.
    const float* s_row = f_w + my_row * kScratchStride;
    float tile_max = -INFINITY;
#pragma unroll
    for (int i = 0; i < kTileKeys / 8; ++i) {
      const int col = (2 * i + side) * 4;
      const float4 v = *reinterpret_cast<const float4*>(s_row + col);
      const float vals[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        if (k0 + col + e <= row_pos) tile_max = fmaxf(tile_max, vals[e] * scale_log2);
      }
    }
    tile_max = fmaxf(tile_max, __shfl_xor_sync(0xffffffffu, tile_max, 1));
    const float m_new = fmaxf(m, tile_max);
    // A row that has seen no visible key yet keeps m = -inf; exp2(-inf - -inf) would be NaN.
    const bool empty = m_new == -INFINITY;
    const float corr = empty ? 1.0f : exp2f(m - m_new);
    float p_sum = 0.0f;
#pragma unroll
    for (int i = 0; i < kTileKeys / 8; ++i) {
      const int col = (2 * i + side) * 4;
      const float4 v = *reinterpret_cast<const float4*>(s_row + col);
      const float vals[4] = {v.x, v.y, v.z, v.w};
      float p[4];
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        p[e] = k0 + col + e <= row_pos ? exp2f(vals[e] * scale_log2 - m_new) : 0.0f;
        p_sum += p[e];
      }
      *reinterpret_cast<uint2*>(p_w + my_row * kScratchStride + col) =
          pack4<T>(p[0], p[1], p[2], p[3]);
    }
    p_sum += __shfl_xor_sync(0xffffffffu, p_sum, 1);
    l = l * corr + p_sum;
    m = m_new;
    const bool rescale = __any_sync(0xffffffffu, corr != 1.0f);
    __syncwarp();  // P written; S reads done (the rescale below reuses the F32 scratch)

    if (rescale) {  // warp-uniform
#pragma unroll
      for (int c = 0; c < D / kChunk; ++c) {
#pragma unroll
        for (int f = 0; f < kChunk / kM; ++f) {
          wmma::store_matrix_sync(f_w + f * kM, o_frag[c * (kChunk / kM) + f], kScratchStride,
                                  wmma::mem_row_major);
        }
        __syncwarp();
#pragma unroll
        for (int i = 0; i < kChunk / 8; ++i) {
          float4* p4 =
              reinterpret_cast<float4*>(f_w + my_row * kScratchStride + (2 * i + side) * 4);
          float4 v = *p4;
          v.x *= corr;
          v.y *= corr;
          v.z *= corr;
          v.w *= corr;
          *p4 = v;
        }
        __syncwarp();
#pragma unroll
        for (int f = 0; f < kChunk / kM; ++f) {
          wmma::load_matrix_sync(o_frag[c * (kChunk / kM) + f], f_w + f * kM, kScratchStride,
                                 wmma::mem_row_major);
        }
        __syncwarp();  // loads done before the next chunk's stores
      }
    }

    // O += P V over the sub-tiles the warp can see (P is 0 and V is finite elsewhere).
#pragma unroll
    for (int kk = 0; kk < kSubTiles; ++kk) {
      if (kk < n_sub) {
        wmma::fragment<wmma::matrix_a, kM, kM, kM, T, wmma::row_major> p_frag;
        wmma::load_matrix_sync(p_frag, p_w + kk * kM, kScratchStride);
#pragma unroll
        for (int n = 0; n < kDSteps; ++n) {
          wmma::fragment<wmma::matrix_b, kM, kM, kM, T, wmma::row_major> v_frag;
          wmma::load_matrix_sync(v_frag, v_s + kk * kM * kStride + n * kM, kStride);
          wmma::mma_sync(o_frag[n], p_frag, v_frag, o_frag[n]);
        }
      }
    }
  }

  // O / l, rounded once to T, through the scratch (the warp's own: no block barrier needed; the
  // loop's last scratch accesses were this warp's own P loads and rescale).
  __syncwarp();
  const float inv = l > 0.0f ? 1.0f / l : 0.0f;
  T* o_row = nullptr;
  if (r_global < rows) {
    const int head = kvh * group + r_global % group;
    o_row = out + (static_cast<int64_t>(q0 + r_global / group) * num_heads + head) * D;
  }
#pragma unroll
  for (int c = 0; c < D / kChunk; ++c) {
#pragma unroll
    for (int f = 0; f < kChunk / kM; ++f) {
      wmma::store_matrix_sync(f_w + f * kM, o_frag[c * (kChunk / kM) + f], kScratchStride,
                              wmma::mem_row_major);
    }
    __syncwarp();
    if (o_row != nullptr) {
      // This lane writes columns [side * 32, side * 32 + 32) of the chunk, 8 at a time.
#pragma unroll
      for (int i = 0; i < kChunk / 16; ++i) {
        const int col = side * (kChunk / 2) + i * 8;
        const float4 a = *reinterpret_cast<const float4*>(f_w + my_row * kScratchStride + col);
        const float4 b = *reinterpret_cast<const float4*>(f_w + my_row * kScratchStride + col + 4);
        const uint2 lo = pack4<T>(a.x * inv, a.y * inv, a.z * inv, a.w * inv);
        const uint2 hi = pack4<T>(b.x * inv, b.y * inv, b.z * inv, b.w * inv);
        store16(o_row + c * kChunk + col, make_uint4(lo.x, lo.y, hi.x, hi.y));
      }
    }
    __syncwarp();  // reads done before the next chunk's stores
  }
}

struct PrefillTcLaunch {
  template <typename T, int D>
  static absl::Status run(const Args& a) {
    constexpr const char* kOp = "paged_attention_prefill";
    const absl::StatusOr<dim3> grid = prefill_grid(a, kTileRows, kOp);
    if (!grid.ok()) return grid.status();
    if (grid->x == 0) return absl::OkStatus();
    constexpr size_t kSmem = prefill_tc_smem_bytes(D);
    auto kernel = prefill_tc_kernel<T, D>;
    const absl::Status allowed = allow_shared_memory(kernel, kSmem, kOp);
    if (!allowed.ok()) return allowed;
    kernel<<<*grid, kTcThreads, kSmem, a.stream>>>(
        static_cast<const T*>(a.q), static_cast<const T*>(a.cache.k),
        static_cast<const T*>(a.cache.v), a.batch.query_start, a.batch.context_len,
        a.batch.block_tables, a.batch.max_blocks_per_seq, a.cache.block_size, a.num_heads,
        a.cache.num_kv_heads, a.scale_log2, static_cast<T*>(a.out));
    return launch_status(kOp);
  }
};

template <typename T>
absl::Status launch_head_dim(const Args& a) {
  switch (a.cache.head_dim) {
    case 64:
      return PrefillTcLaunch::run<T, 64>(a);
    case 128:
      return PrefillTcLaunch::run<T, 128>(a);
    default:
      return absl::InternalError(absl::StrCat("paged_attention_prefill: head_dim ",
                                              a.cache.head_dim,
                                              " has no tensor-core kernel (prefill_tc_supported)"));
  }
}

}  // namespace

bool prefill_tc_supported(const Args& a) {
  return a.cache.dtype == a.dtype && (a.dtype == DType::kF16 || a.dtype == DType::kBF16) &&
         (a.cache.head_dim == 64 || a.cache.head_dim == 128);
}

absl::Status launch_prefill_tc(const Args& a) {
  return a.dtype == DType::kF16 ? launch_head_dim<__half>(a) : launch_head_dim<__nv_bfloat16>(a);
}

}  // namespace attn
}  // namespace weft::kernels::cuda
