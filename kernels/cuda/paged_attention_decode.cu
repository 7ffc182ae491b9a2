// Paged attention for decode steps (one query row per sequence), flash-decoding style.
//
// Kernel 1, grid (num_heads / heads_per_block, num_seqs, partitions), 128 threads (4 warps):
// one block computes attention of `heads_per_block` query heads that share one kv head over one
// partition of `part_size` cached tokens (16..256, see decode_partition_size: a batch-1 step
// with a short context would otherwise run on a handful of blocks, each walking its tokens with
// one dependent load after another). Heads of a GQA group share the block (up to 8, the
// largest divisor of the group that fits) so each K/V row is read once per block, not per head.
//   - The 128 threads form token groups of L = min(8, head_dim / 8) lanes (8 lanes for head_dim
//     >= 64; 4, 2 and 1 for head_dim 32, 16 and 8, so every lane still issues whole 8-element
//     vector loads and no lane idles on a short row). A token group reads one cached K row with
//     8-element vector loads (128-bit for F16/BF16, 64-bit for I8; lane i takes vectors i, i+L,
//     ...), dots it with every head's query (from shared memory) and sums its L lanes with warp
//     shuffles. Scores go to shared memory (log2 domain).
//   - Each warp takes whole heads for the softmax of the partition (max, exp2, sum).
//   - Token groups read V rows the same way and accumulate p * v in registers; the 32 / L token
//     groups of a warp are summed with shuffles and the 4 warps through shared memory.
//   A sequence with a single partition writes its normalized output directly; otherwise each
//   partition writes its unnormalized output, running max and sum to the workspace.
//
// Kernel 2, grid (num_heads, num_seqs), 128 threads: merges a sequence's partitions with the
// usual rescaling by exp2(max_p - max) (skipped for single-partition sequences). It only runs
// when some context spans more than one partition.
#include <algorithm>

#include "absl/strings/str_cat.h"
#include "paged_attention_common.cuh"

namespace weft::kernels::cuda {
namespace attn {
namespace {

constexpr int kDecodeThreads = 128;
constexpr int kDecodeWarps = kDecodeThreads / 32;
constexpr int kReduceThreads = 128;

// Lanes sharing one cached row: one 8-element vector each up to 8 vectors (head_dim 64), so a
// small head_dim packs more tokens per warp instead of leaving lanes without a vector.
__host__ __device__ constexpr int lanes_per_token(int d) { return d / kVec < 8 ? d / kVec : 8; }
// Vectors of one head row each lane of a token group handles.
__host__ __device__ constexpr int vectors_per_lane(int d) {
  return (d / kVec + lanes_per_token(d) - 1) / lanes_per_token(d);
}
// Heads per block: bounded so the p.v accumulators (heads x vectors_per_lane x 8 floats) stay
// within 64 registers per thread: 8 heads for head_dim 8..64, 4 for 80..128, 2 for 256.
__host__ __device__ constexpr int max_heads_per_block(int d) {
  return 64 / (vectors_per_lane(d) * kVec) > 8   ? 8
         : 64 / (vectors_per_lane(d) * kVec) < 1 ? 1
                                                 : 64 / (vectors_per_lane(d) * kVec);
}

int ceil_div(int a, int b) { return (a + b - 1) / b; }

template <typename T, typename CacheT, int D>
__global__ void __launch_bounds__(kDecodeThreads)
    decode_kernel(const T* __restrict__ q, const CacheT* __restrict__ k_cache,
                  const CacheT* __restrict__ v_cache, const float* __restrict__ k_scale,
                  const float* __restrict__ v_scale, const int32_t* __restrict__ query_start,
                  const int32_t* __restrict__ context_len, const int32_t* __restrict__ block_tables,
                  int max_blocks_per_seq, int block_size, int num_heads, int num_kv_heads,
                  int heads_per_block, float scale_log2, int part_size, int max_partitions,
                  T* __restrict__ out, float* __restrict__ part_out, float* __restrict__ part_max,
                  float* __restrict__ part_sum) {
  constexpr int kNV = D / kVec;
  constexpr int kLanesPerToken = lanes_per_token(D);
  constexpr int kTokenGroups = kDecodeThreads / kLanesPerToken;
  constexpr int kVPL = vectors_per_lane(D);
  constexpr int kMaxHeads = max_heads_per_block(D);
  constexpr int P = kDecodePartitionSize;
  static_assert(kNV * kVec == D && 32 % kLanesPerToken == 0,
                "head_dim must be a multiple of 8, and a power of two below 64");

  __shared__ __align__(16) float q_s[kMaxHeads][D];
  __shared__ float logits[kMaxHeads][P];
  __shared__ __align__(16) float red[kDecodeWarps][kMaxHeads][D];
  __shared__ float m_s[kMaxHeads];
  __shared__ float l_s[kMaxHeads];

  const int seq = blockIdx.y;
  const int part = blockIdx.z;
  const int ctx = context_len[seq];
  const int num_parts = max(1, (ctx + part_size - 1) / part_size);
  if (part >= num_parts) return;  // uniform over the block

  const int tid = threadIdx.x;
  const int lane = tid & 31;
  const int warp = tid >> 5;
  const int tg = tid / kLanesPerToken;
  const int li = tid % kLanesPerToken;
  const int hpb = heads_per_block;
  const int head0 = blockIdx.x * hpb;
  const int kvh = head0 / (num_heads / num_kv_heads);
  const int t_begin = part * part_size;
  const int n = max(0, min(part_size, ctx - t_begin));  // part_size <= P
  const int64_t q_row = query_start[seq];
  const int64_t slot_stride = static_cast<int64_t>(num_kv_heads) * D;
  const int32_t* table = block_tables + static_cast<int64_t>(seq) * max_blocks_per_seq;

  for (int i = tid; i < hpb * kNV; i += kDecodeThreads) {
    const int g = i / kNV;
    const int v = i % kNV;
    float f[kVec];
    load8(q + (q_row * num_heads + head0 + g) * D + v * kVec, f);
#pragma unroll
    for (int e = 0; e < kVec; ++e) q_s[g][v * kVec + e] = f[e] * scale_log2;
  }
  __syncthreads();

  // Scores. The loop bound is uniform over the block so every lane reaches the shuffles.
  for (int t0 = 0; t0 < n; t0 += kTokenGroups) {
    const int t = t0 + tg;
    const bool valid = t < n;
    float kf[kVPL][kVec];
    float kscale = 1.0f;
    if (valid) {
      const int64_t slot = slot_of(table, t_begin + t, block_size);
      const CacheT* kp = k_cache + slot * slot_stride + static_cast<int64_t>(kvh) * D;
#pragma unroll
      for (int i = 0; i < kVPL; ++i) {
        const int v = li + i * kLanesPerToken;
        if (v < kNV) load8(kp + v * kVec, kf[i]);
      }
      if constexpr (kQuantized<CacheT>) kscale = k_scale[slot * num_kv_heads + kvh];
    }
    float dot[kMaxHeads];
#pragma unroll
    for (int g = 0; g < kMaxHeads; ++g) {
      dot[g] = 0.0f;
      if (g < hpb && valid) {
#pragma unroll
        for (int i = 0; i < kVPL; ++i) {
          const int v = li + i * kLanesPerToken;
          if (v < kNV) {
#pragma unroll
            for (int e = 0; e < kVec; ++e) dot[g] += q_s[g][v * kVec + e] * kf[i][e];
          }
        }
      }
#pragma unroll
      for (int off = kLanesPerToken / 2; off > 0; off /= 2) {
        dot[g] += __shfl_xor_sync(0xffffffffu, dot[g], off);
      }
      if (g < hpb && valid && li == 0) logits[g][t] = dot[g] * kscale;
    }
  }
  __syncthreads();

  // Softmax over the partition, one warp per head.
  for (int g = warp; g < hpb; g += kDecodeWarps) {
    float m = -INFINITY;
    for (int t = lane; t < n; t += 32) m = fmaxf(m, logits[g][t]);
    m = warp_max(m);
    float s = 0.0f;
    for (int t = lane; t < n; t += 32) {
      const float p = exp2f(logits[g][t] - m);
      logits[g][t] = p;
      s += p;
    }
    s = warp_sum(s);
    if (lane == 0) {
      m_s[g] = m;
      l_s[g] = s;
    }
  }
  __syncthreads();

  // p . V, accumulated per lane in registers.
  float acc[kMaxHeads][kVPL][kVec];
#pragma unroll
  for (int g = 0; g < kMaxHeads; ++g)
#pragma unroll
    for (int i = 0; i < kVPL; ++i)
#pragma unroll
      for (int e = 0; e < kVec; ++e) acc[g][i][e] = 0.0f;
  for (int t = tg; t < n; t += kTokenGroups) {
    const int64_t slot = slot_of(table, t_begin + t, block_size);
    const CacheT* vp = v_cache + slot * slot_stride + static_cast<int64_t>(kvh) * D;
    float vf[kVPL][kVec];
#pragma unroll
    for (int i = 0; i < kVPL; ++i) {
      const int v = li + i * kLanesPerToken;
      if (v < kNV) load8(vp + v * kVec, vf[i]);
    }
    float vscale = 1.0f;
    if constexpr (kQuantized<CacheT>) vscale = v_scale[slot * num_kv_heads + kvh];
#pragma unroll
    for (int g = 0; g < kMaxHeads; ++g) {
      if (g < hpb) {
        const float p = logits[g][t] * vscale;
#pragma unroll
        for (int i = 0; i < kVPL; ++i) {
          if (li + i * kLanesPerToken < kNV) {
#pragma unroll
            for (int e = 0; e < kVec; ++e) acc[g][i][e] += p * vf[i][e];
          }
        }
      }
    }
  }
  // Sum the token groups of the warp (lanes li, li+L, li+2L, ...), then the warps. hpb is
  // uniform over the block, so skipping unused heads keeps every shuffle warp-converged.
#pragma unroll
  for (int g = 0; g < kMaxHeads; ++g) {
    if (g < hpb) {
#pragma unroll
      for (int i = 0; i < kVPL; ++i)
#pragma unroll
        for (int e = 0; e < kVec; ++e) {
#pragma unroll
          for (int off = kLanesPerToken; off < 32; off *= 2) {
            acc[g][i][e] += __shfl_xor_sync(0xffffffffu, acc[g][i][e], off);
          }
        }
    }
  }
  if (lane < kLanesPerToken) {
#pragma unroll
    for (int g = 0; g < kMaxHeads; ++g) {
      if (g < hpb) {
#pragma unroll
        for (int i = 0; i < kVPL; ++i) {
          const int v = lane + i * kLanesPerToken;
          if (v < kNV) {
#pragma unroll
            for (int e = 0; e < kVec; ++e) red[warp][g][v * kVec + e] = acc[g][i][e];
          }
        }
      }
    }
  }
  __syncthreads();

  const bool direct = num_parts == 1;
  for (int i = tid; i < hpb * D; i += kDecodeThreads) {
    const int g = i / D;
    const int d = i % D;
    float sum = 0.0f;
#pragma unroll
    for (int w = 0; w < kDecodeWarps; ++w) sum += red[w][g][d];
    const int64_t head_row = static_cast<int64_t>(seq) * num_heads + head0 + g;
    if (direct) {
      const float inv = l_s[g] > 0.0f ? 1.0f / l_s[g] : 0.0f;
      out[(q_row * num_heads + head0 + g) * D + d] = from_float<T>(sum * inv);
    } else {
      const int64_t p = head_row * max_partitions + part;
      part_out[p * D + d] = sum;
      if (d == 0) {
        part_max[p] = m_s[g];
        part_sum[p] = l_s[g];
      }
    }
  }
}

template <typename T>
__global__ void __launch_bounds__(kReduceThreads)
    decode_reduce_kernel(const float* __restrict__ part_out, const float* __restrict__ part_max,
                         const float* __restrict__ part_sum,
                         const int32_t* __restrict__ query_start,
                         const int32_t* __restrict__ context_len, int num_heads, int head_dim,
                         int part_size, int max_partitions, T* __restrict__ out) {
  extern __shared__ float weight_s[];  // [max_partitions]
  __shared__ float red_s[kReduceThreads / 32];
  const int head = blockIdx.x;
  const int seq = blockIdx.y;
  const int num_parts = max(1, (context_len[seq] + part_size - 1) / part_size);
  if (num_parts == 1) return;  // the decode kernel wrote this sequence directly
  const int tid = threadIdx.x;
  const int lane = tid & 31;
  const int warp = tid >> 5;
  const int64_t base = (static_cast<int64_t>(seq) * num_heads + head) * max_partitions;

  float m = -INFINITY;
  for (int p = tid; p < num_parts; p += kReduceThreads) m = fmaxf(m, part_max[base + p]);
  m = warp_max(m);
  if (lane == 0) red_s[warp] = m;
  __syncthreads();
  m = red_s[0];
  for (int w = 1; w < kReduceThreads / 32; ++w) m = fmaxf(m, red_s[w]);
  __syncthreads();  // red_s is reused below

  float l = 0.0f;
  for (int p = tid; p < num_parts; p += kReduceThreads) {
    const float pm = part_max[base + p];
    const float w = pm == -INFINITY ? 0.0f : exp2f(pm - m);
    weight_s[p] = w;
    l += w * part_sum[base + p];
  }
  l = warp_sum(l);
  if (lane == 0) red_s[warp] = l;
  __syncthreads();
  l = 0.0f;
  for (int w = 0; w < kReduceThreads / 32; ++w) l += red_s[w];
  const float inv = l > 0.0f ? 1.0f / l : 0.0f;

  const int64_t q_row = query_start[seq];
  for (int d = tid; d < head_dim; d += kReduceThreads) {
    float acc = 0.0f;
    for (int p = 0; p < num_parts; ++p) acc += weight_s[p] * part_out[(base + p) * head_dim + d];
    out[(q_row * num_heads + head) * head_dim + d] = from_float<T>(acc * inv);
  }
}

int num_partitions(int max_context_len, int part_size) {
  return std::max(1, ceil_div(max_context_len, part_size));
}

size_t workspace_bytes_for(int num_seqs, int num_heads, int head_dim, int parts) {
  if (parts == 1 || num_seqs <= 0 || num_heads <= 0) return 0;
  // part_out [seqs, heads, partitions, head_dim], then part_max and part_sum
  // [seqs, heads, partitions], all F32.
  const size_t rows = static_cast<size_t>(num_seqs) * num_heads * parts;
  return rows * (static_cast<size_t>(head_dim) + 2) * sizeof(float);
}

struct DecodeLaunch {
  template <typename T, typename CacheT, int D>
  static absl::Status run(const Args& a) {
    constexpr const char* kOp = "paged_attention_decode";
    const int group = a.num_heads / a.cache.num_kv_heads;
    // The largest divisor of the group that fits a block, so groups of 7, 5 or 3 heads share
    // their K/V reads too (a power-of-two rule would give them one head per block).
    int hpb = std::min(max_heads_per_block(D), group);
    while (group % hpb != 0) --hpb;
    // The preferred partition size, doubled while its partials do not fit the workspace (at
    // kDecodePartitionSize they always do: the caller checked that size's need).
    int part_size = decode_partition_size(a.batch.num_seqs, a.num_heads / hpb,
                                          a.batch.max_context_len);
    while (part_size < kDecodePartitionSize &&
           workspace_bytes_for(a.batch.num_seqs, a.num_heads, D,
                               num_partitions(a.batch.max_context_len, part_size)) >
               a.workspace_bytes) {
      part_size *= 2;
    }
    const int parts = num_partitions(a.batch.max_context_len, part_size);
    float* part_out = nullptr;
    float* part_max = nullptr;
    float* part_sum = nullptr;
    if (parts > 1) {
      const size_t rows = static_cast<size_t>(a.batch.num_seqs) * a.num_heads * parts;
      part_out = static_cast<float*>(a.workspace);
      part_max = part_out + rows * D;
      part_sum = part_max + rows;
    }
    const dim3 grid(a.num_heads / hpb, a.batch.num_seqs, parts);
    decode_kernel<T, CacheT, D><<<grid, kDecodeThreads, 0, a.stream>>>(
        static_cast<const T*>(a.q), static_cast<const CacheT*>(a.cache.k),
        static_cast<const CacheT*>(a.cache.v), a.cache.k_scale, a.cache.v_scale,
        a.batch.query_start, a.batch.context_len, a.batch.block_tables, a.batch.max_blocks_per_seq,
        a.cache.block_size, a.num_heads, a.cache.num_kv_heads, hpb, a.scale_log2, part_size, parts,
        static_cast<T*>(a.out), part_out, part_max, part_sum);
    absl::Status st = launch_status(kOp);
    if (!st.ok() || parts == 1) return st;
    // Padded past `parts`: compute-sanitizer saw the merge's unrolled weight loop read 12 bytes
    // beyond a 10-partition array on sm_90 (its tail loads issued ahead of their guards); the
    // padding keeps every such read inside the allocation, and its values are never used.
    const size_t smem = static_cast<size_t>((parts + 3) / 4 * 4 + 4) * sizeof(float);
    decode_reduce_kernel<T>
        <<<dim3(a.num_heads, a.batch.num_seqs), kReduceThreads, smem, a.stream>>>(
            part_out, part_max, part_sum, a.batch.query_start, a.batch.context_len, a.num_heads, D,
            part_size, parts, static_cast<T*>(a.out));
    return launch_status(kOp);
  }
};

}  // namespace
}  // namespace attn

int decode_partition_size(int num_seqs, int head_blocks, int max_context_len) {
  constexpr int64_t kTargetBlocks = 256;
  for (int size = kDecodePartitionSize; size > kMinDecodePartitionSize; size /= 2) {
    const int64_t blocks = static_cast<int64_t>(num_seqs) * std::max(1, head_blocks) *
                           attn::num_partitions(max_context_len, size);
    if (blocks >= kTargetBlocks) return size;
  }
  return kMinDecodePartitionSize;
}

size_t paged_attention_decode_workspace_bytes(int num_seqs, int num_heads, int head_dim,
                                              int max_context_len) {
  if (num_seqs <= 0 || num_heads <= 0 || head_dim <= 0) return 0;
  // The fewest blocks per sequence a launch can have (the most heads a block takes) gives the
  // smallest partitions, hence the largest need; any smaller batch is covered too.
  const int fewest_head_blocks =
      std::max(1, num_heads / attn::max_heads_per_block(std::min(head_dim, 256)));
  size_t need = attn::workspace_bytes_for(
      num_seqs, num_heads, head_dim, attn::num_partitions(max_context_len, kDecodePartitionSize));
  for (int seqs = 1; seqs <= num_seqs; ++seqs) {
    const int size = decode_partition_size(seqs, fewest_head_blocks, max_context_len);
    need = std::max(need, attn::workspace_bytes_for(seqs, num_heads, head_dim,
                                                    attn::num_partitions(max_context_len, size)));
  }
  return need;
}

absl::Status paged_attention_decode(const void* q, DType dtype, int num_heads,
                                    const CudaKvCache& cache, const CudaAttentionBatch& batch,
                                    float scale, void* out, void* workspace, size_t workspace_bytes,
                                    cudaStream_t stream) {
  constexpr const char* kOp = "paged_attention_decode";
  absl::Status st = attn::validate(kOp, q, dtype, num_heads, cache, batch, out);
  if (!st.ok() || batch.num_seqs == 0) return st;
  // What the largest partitions need; smaller ones are used where the workspace holds them.
  const size_t need = attn::workspace_bytes_for(
      batch.num_seqs, num_heads, cache.head_dim,
      attn::num_partitions(batch.max_context_len, kDecodePartitionSize));
  if (workspace_bytes < need || (need > 0 && workspace == nullptr)) {
    return absl::InvalidArgumentError(absl::StrCat(kOp, ": workspace of ", workspace_bytes,
                                                   " bytes is smaller than the ", need,
                                                   " bytes this batch needs"));
  }
  if (workspace != nullptr && !attn::aligned(workspace, 16)) {
    return absl::InvalidArgumentError(absl::StrCat(kOp, ": workspace must be 16-byte aligned"));
  }
  // The merge kernel keeps one weight per partition in shared memory (48 KiB without opt-in,
  // less its few static bytes).
  constexpr int kMaxPartitions = 12000;
  if (attn::num_partitions(batch.max_context_len, kDecodePartitionSize) > kMaxPartitions) {
    return absl::InvalidArgumentError(
        absl::StrCat(kOp, ": max_context_len ", batch.max_context_len, " exceeds the supported ",
                     kMaxPartitions * kDecodePartitionSize, " tokens"));
  }
  if (batch.num_seqs > 65535) {
    return absl::InvalidArgumentError(
        absl::StrCat(kOp, ": num_seqs ", batch.num_seqs, " exceeds 65535"));
  }
  attn::Args a;
  a.dtype = dtype;
  a.q = q;
  a.out = out;
  a.num_heads = num_heads;
  a.scale_log2 = scale * attn::kLog2e;
  a.cache = cache;
  a.batch = batch;
  a.workspace = workspace;
  a.workspace_bytes = workspace_bytes;
  a.stream = stream;
  return attn::dispatch<attn::DecodeLaunch>(a);
}

}  // namespace weft::kernels::cuda
