// Paged causal attention for ragged batches of prefill chunks and decode tokens,
// flash-attention-2 style on CUDA cores (a tiled SIMT design with F32 accumulation). For F16 /
// BF16 caches at head_dim 64 and 128, paged_attention_prefill uses the tensor-core kernel of
// paged_attention_prefill_tc.cu instead unless asked for this one (PrefillAttentionKernel::kSimt,
// see paged_attention.h); this kernel serves every other case (I8 caches, the other head dims).
//
// Grid (row tiles, num_kv_heads, num_seqs), 128 threads (4 warps). The rows of sequence s for kv
// head h are the (query j, head-in-group g) pairs, row = j * group + g, so all query heads of a
// GQA group share every K/V tile a block loads (a decode token with group 8 fills 8 rows instead
// of 1). A block owns 32 rows (8 per warp) and walks the keys its last row can see in tiles of
// kTileKeys (64, or 32 for head_dim 256):
//   - Q (pre-scaled by scale * log2(e)), the K tile and the V tile are staged in shared memory as
//     F32, read from the paged cache with 8-element vector loads (128-bit for F16/BF16) and
//     dequantized on the way for I8 caches. K/Q rows are padded to head_dim + 4 floats: for
//     every supported head_dim (8..256) (head_dim + 4) / 4 is odd, which keeps the 128-bit
//     shared loads of 8 consecutive lanes (one per key) on distinct banks.
//   - S = Q K^T: lane l computes the scores of keys l, l+32 for the warp's 8 rows (a 8 x 2
//     register tile; each step reads one float4 of K per key and one broadcast float4 of Q per
//     row for 64 FMAs).
//   - Causal mask (key position <= row position), online softmax per row in registers (warp
//     shuffles for the tile max and sum, exp2f), P goes to shared memory per warp.
//   - O += P V: for head_dim >= 32, lane l owns output dims l, l+32, ... of its warp's 8 rows.
//     A smaller head_dim would leave lanes idle, so the warp splits into 32 / head_dim row
//     groups instead: lane l owns dim l % head_dim of rows r with r % (32 / head_dim) ==
//     l / head_dim (2 rows per lane for head_dim 8, 4 for 16). P rows are then broadcast within
//     each quarter warp and V reads hit head_dim distinct consecutive words.
// Rows past the sequence's last query and keys past the last visible one are masked, and staged
// K/V rows past the visible keys are zero-filled, so no uninitialized value reaches a product.
#include "absl/strings/str_cat.h"
#include "paged_attention_common.cuh"

namespace weft::kernels::cuda {
namespace attn {
namespace {

constexpr int kPrefillThreads = 128;
constexpr int kRowsPerWarp = 8;
constexpr int kTileRows = kRowsPerWarp * (kPrefillThreads / 32);  // 32

__host__ __device__ constexpr int tile_keys(int d) { return d > 128 ? 32 : 64; }
__host__ __device__ constexpr int padded(int d) { return d + 4; }

// Dynamic shared memory of one block, in floats: Q [32][D+4], K [BK][D+4], V [BK][D], P [32][BK].
__host__ __device__ constexpr int prefill_smem_floats(int d) {
  return kTileRows * padded(d) + tile_keys(d) * padded(d) + tile_keys(d) * d +
         kTileRows * tile_keys(d);
}

template <typename T, typename CacheT, int D>
__global__ void __launch_bounds__(kPrefillThreads)
    prefill_kernel(const T* __restrict__ q, const CacheT* __restrict__ k_cache,
                   const CacheT* __restrict__ v_cache, const float* __restrict__ k_scale,
                   const float* __restrict__ v_scale, const int32_t* __restrict__ query_start,
                   const int32_t* __restrict__ context_len,
                   const int32_t* __restrict__ block_tables, int max_blocks_per_seq, int block_size,
                   int num_heads, int num_kv_heads, float scale_log2, T* __restrict__ out) {
  constexpr int kNV = D / kVec;
  constexpr int BK = tile_keys(D);
  constexpr int kKeysPerLane = BK / 32;
  constexpr int kStride = padded(D);
  // P V lane layout (see the file comment): kRowGroups row groups of kLanesPerRow lanes.
  constexpr int kRowGroups = D < 32 ? 32 / D : 1;
  constexpr int kLanesPerRow = 32 / kRowGroups;
  constexpr int kRowsPerLane = kRowsPerWarp / kRowGroups;
  constexpr int kDimsPerLane = (D + kLanesPerRow - 1) / kLanesPerRow;
  static_assert(kRowsPerWarp % kRowGroups == 0 && (D >= 32 || D * kRowGroups == 32),
                "head_dim below 32 must divide 32");
  static_assert((kStride / 4) % 2 == 1, "K/Q row padding must keep 128-bit loads conflict-free");

  extern __shared__ float4 smem4[];
  float* q_s = reinterpret_cast<float*>(smem4);  // [kTileRows][kStride]
  float* k_s = q_s + kTileRows * kStride;        // [BK][kStride]
  float* v_s = k_s + BK * kStride;               // [BK][D]
  float* p_s = v_s + BK * D;                     // [kTileRows][BK]

  const int seq = blockIdx.z;
  const int kvh = blockIdx.y;
  const int q0 = query_start[seq];
  const int ql = query_start[seq + 1] - q0;
  const int group = num_heads / num_kv_heads;
  const int rows = ql * group;
  const int row0 = blockIdx.x * kTileRows;
  if (row0 >= rows) return;                     // uniform over the block
  const int first_pos = context_len[seq] - ql;  // position of query row 0
  const int last_row = min(row0 + kTileRows, rows) - 1;
  const int n_keys = first_pos + last_row / group + 1;  // keys the tile's last row sees

  const int tid = threadIdx.x;
  const int lane = tid & 31;
  const int warp = tid >> 5;
  const int row_group = lane / kLanesPerRow;  // owns the warp's rows i with i % kRowGroups == it
  const int dim_lane = lane % kLanesPerRow;   // owns dims dim_lane, dim_lane + kLanesPerRow, ...
  const int64_t slot_stride = static_cast<int64_t>(num_kv_heads) * D;
  const int32_t* table = block_tables + static_cast<int64_t>(seq) * max_blocks_per_seq;

  // Q tile; rows past the sequence are zero (and fully masked below).
  for (int i = tid; i < kTileRows * kNV; i += kPrefillThreads) {
    const int rr = i / kNV;
    const int v = i % kNV;
    const int r = row0 + rr;
    float f[kVec] = {};
    if (r < rows) {
      const int j = r / group;
      const int head = kvh * group + r % group;
      load8(q + (static_cast<int64_t>(q0 + j) * num_heads + head) * D + v * kVec, f);
    }
    float4* dst = reinterpret_cast<float4*>(q_s + rr * kStride + v * kVec);
    dst[0] =
        make_float4(f[0] * scale_log2, f[1] * scale_log2, f[2] * scale_log2, f[3] * scale_log2);
    dst[1] =
        make_float4(f[4] * scale_log2, f[5] * scale_log2, f[6] * scale_log2, f[7] * scale_log2);
  }

  // Position each of the warp's rows sees up to (-1: padding row, sees nothing).
  int row_pos[kRowsPerWarp];
#pragma unroll
  for (int i = 0; i < kRowsPerWarp; ++i) {
    const int r = row0 + warp * kRowsPerWarp + i;
    row_pos[i] = r < rows ? first_pos + r / group : -1;
  }
  // Softmax state of all the warp's rows (identical in every lane); output accumulators of the
  // lane's own rows: acc[i / kRowGroups] is row i's when i % kRowGroups == row_group.
  float m[kRowsPerWarp];
  float l[kRowsPerWarp];
  float acc[kRowsPerLane][kDimsPerLane];
#pragma unroll
  for (int i = 0; i < kRowsPerWarp; ++i) {
    m[i] = -INFINITY;
    l[i] = 0.0f;
  }
#pragma unroll
  for (int ii = 0; ii < kRowsPerLane; ++ii)
#pragma unroll
    for (int c = 0; c < kDimsPerLane; ++c) acc[ii][c] = 0.0f;
  const float* q_warp = q_s + warp * kRowsPerWarp * kStride;
  float* p_warp = p_s + warp * kRowsPerWarp * BK;

  for (int k0 = 0; k0 < n_keys; k0 += BK) {
    __syncthreads();  // the previous tile's K/V (and on entry Q) stores / reads are done
    for (int i = tid; i < BK * kNV; i += kPrefillThreads) {
      const int t = i / kNV;
      const int v = i % kNV;
      const int pos = k0 + t;
      float kf[kVec] = {};
      float vf[kVec] = {};
      if (pos < n_keys) {
        const int64_t slot = slot_of(table, pos, block_size);
        const int64_t off = slot * slot_stride + static_cast<int64_t>(kvh) * D + v * kVec;
        load8(k_cache + off, kf);
        load8(v_cache + off, vf);
        if constexpr (kQuantized<CacheT>) {
          const float ks = k_scale[slot * num_kv_heads + kvh];
          const float vs = v_scale[slot * num_kv_heads + kvh];
#pragma unroll
          for (int e = 0; e < kVec; ++e) {
            kf[e] *= ks;
            vf[e] *= vs;
          }
        }
      }
      float4* kd = reinterpret_cast<float4*>(k_s + t * kStride + v * kVec);
      kd[0] = make_float4(kf[0], kf[1], kf[2], kf[3]);
      kd[1] = make_float4(kf[4], kf[5], kf[6], kf[7]);
      float4* vd = reinterpret_cast<float4*>(v_s + t * D + v * kVec);
      vd[0] = make_float4(vf[0], vf[1], vf[2], vf[3]);
      vd[1] = make_float4(vf[4], vf[5], vf[6], vf[7]);
    }
    __syncthreads();

    // S = Q K^T for the warp's rows and this lane's keys.
    float s[kRowsPerWarp][kKeysPerLane];
#pragma unroll
    for (int i = 0; i < kRowsPerWarp; ++i)
#pragma unroll
      for (int kk = 0; kk < kKeysPerLane; ++kk) s[i][kk] = 0.0f;
    // Fully unrolled up to head_dim 32 (at most 8 steps): with a partial unroll ptxas spills the
    // head_dim 32 instantiation.
#pragma unroll (D <= 32 ? D / 4 : 4)
    for (int d = 0; d < D; d += 4) {
      float4 kv[kKeysPerLane];
#pragma unroll
      for (int kk = 0; kk < kKeysPerLane; ++kk) {
        kv[kk] = *reinterpret_cast<const float4*>(k_s + (kk * 32 + lane) * kStride + d);
      }
#pragma unroll
      for (int i = 0; i < kRowsPerWarp; ++i) {
        const float4 qv = *reinterpret_cast<const float4*>(q_warp + i * kStride + d);
#pragma unroll
        for (int kk = 0; kk < kKeysPerLane; ++kk) {
          s[i][kk] += qv.x * kv[kk].x + qv.y * kv[kk].y + qv.z * kv[kk].z + qv.w * kv[kk].w;
        }
      }
    }

    // Mask, online softmax, P to shared memory.
#pragma unroll
    for (int i = 0; i < kRowsPerWarp; ++i) {
      float tile_max = -INFINITY;
#pragma unroll
      for (int kk = 0; kk < kKeysPerLane; ++kk) {
        if (k0 + kk * 32 + lane > row_pos[i]) s[i][kk] = -INFINITY;
        tile_max = fmaxf(tile_max, s[i][kk]);
      }
      tile_max = warp_max(tile_max);
      const float m_new = fmaxf(m[i], tile_max);
      // A row that has seen no visible key yet keeps m = -inf; exp2(-inf - -inf) would be NaN.
      const bool empty = m_new == -INFINITY;
      const float corr = empty ? 1.0f : exp2f(m[i] - m_new);
      float p_sum = 0.0f;
#pragma unroll
      for (int kk = 0; kk < kKeysPerLane; ++kk) {
        const float p = empty ? 0.0f : exp2f(s[i][kk] - m_new);
        p_warp[i * BK + kk * 32 + lane] = p;
        p_sum += p;
      }
      p_sum = warp_sum(p_sum);
      l[i] = l[i] * corr + p_sum;
      m[i] = m_new;
      if (i % kRowGroups == row_group) {
#pragma unroll
        for (int c = 0; c < kDimsPerLane; ++c) acc[i / kRowGroups][c] *= corr;
      }
    }
    __syncwarp();

    // O += P V over the visible keys of the tile (rounded up to 4; the rest have p = 0, v = 0).
    const int tile_n = min(BK, (n_keys - k0 + 3) & ~3);
    for (int j = 0; j < tile_n; j += 4) {
      float4 p4[kRowsPerLane];
#pragma unroll
      for (int ii = 0; ii < kRowsPerLane; ++ii) {
        const int i = ii * kRowGroups + row_group;
        p4[ii] = *reinterpret_cast<const float4*>(p_warp + i * BK + j);
      }
#pragma unroll
      for (int c = 0; c < kDimsPerLane; ++c) {
        const int d = dim_lane + kLanesPerRow * c;
        if (d < D) {
          const float v0 = v_s[(j + 0) * D + d];
          const float v1 = v_s[(j + 1) * D + d];
          const float v2 = v_s[(j + 2) * D + d];
          const float v3 = v_s[(j + 3) * D + d];
#pragma unroll
          for (int ii = 0; ii < kRowsPerLane; ++ii) {
            acc[ii][c] += p4[ii].x * v0 + p4[ii].y * v1 + p4[ii].z * v2 + p4[ii].w * v3;
          }
        }
      }
    }
  }

#pragma unroll
  for (int i = 0; i < kRowsPerWarp; ++i) {
    const int r = row0 + warp * kRowsPerWarp + i;
    if (r >= rows || i % kRowGroups != row_group) continue;
    const int head = kvh * group + r % group;
    T* o = out + (static_cast<int64_t>(q0 + r / group) * num_heads + head) * D;
    const float inv = l[i] > 0.0f ? 1.0f / l[i] : 0.0f;
#pragma unroll
    for (int c = 0; c < kDimsPerLane; ++c) {
      const int d = dim_lane + kLanesPerRow * c;
      if (d < D) o[d] = from_float<T>(acc[i / kRowGroups][c] * inv);
    }
  }
}

struct PrefillLaunch {
  template <typename T, typename CacheT, int D>
  static absl::Status run(const Args& a) {
    constexpr const char* kOp = "paged_attention_prefill";
    const absl::StatusOr<dim3> grid = prefill_grid(a, kTileRows, kOp);
    if (!grid.ok()) return grid.status();
    if (grid->x == 0) return absl::OkStatus();
    constexpr size_t kSmem = prefill_smem_floats(D) * sizeof(float);
    auto kernel = prefill_kernel<T, CacheT, D>;
    const absl::Status allowed = allow_shared_memory(kernel, kSmem, kOp);
    if (!allowed.ok()) return allowed;
    kernel<<<*grid, kPrefillThreads, kSmem, a.stream>>>(
        static_cast<const T*>(a.q), static_cast<const CacheT*>(a.cache.k),
        static_cast<const CacheT*>(a.cache.v), a.cache.k_scale, a.cache.v_scale,
        a.batch.query_start, a.batch.context_len, a.batch.block_tables, a.batch.max_blocks_per_seq,
        a.cache.block_size, a.num_heads, a.cache.num_kv_heads, a.scale_log2,
        static_cast<T*>(a.out));
    return launch_status(kOp);
  }
};

}  // namespace
}  // namespace attn

absl::Status paged_attention_prefill(const void* q, DType dtype, int num_heads,
                                     const CudaKvCache& cache, const CudaAttentionBatch& batch,
                                     float scale, void* out, cudaStream_t stream,
                                     PrefillAttentionKernel kernel) {
  constexpr const char* kOp = "paged_attention_prefill";
  absl::Status st = attn::validate(kOp, q, dtype, num_heads, cache, batch, out);
  if (!st.ok() || batch.num_seqs == 0) return st;
  attn::Args a;
  a.dtype = dtype;
  a.q = q;
  a.out = out;
  a.num_heads = num_heads;
  a.scale_log2 = scale * attn::kLog2e;
  a.cache = cache;
  a.batch = batch;
  a.stream = stream;
  if (kernel == PrefillAttentionKernel::kTensorCores && attn::prefill_tc_supported(a)) {
    return attn::launch_prefill_tc(a);
  }
  return attn::dispatch<attn::PrefillLaunch>(a);
}

}  // namespace weft::kernels::cuda
