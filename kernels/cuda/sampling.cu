// The GPU sampler (see weft/kernels/cuda/sampling.h for the contract). One block of
// kSampleThreads threads per row; the row's F32 working copy lives in the caller's workspace
// (L2-resident for typical vocabularies) and is filtered in place by writing -inf:
//   pass A   raw -> workspace, raw log-sum-exp and raw argmax (fallback token, logprob);
//   sparse   logit_bias, banned ids;
//   pass B   repetition / presence / frequency penalties, then greedy argmax or temperature and
//            the row maximum;
//   top_k    radix select (4 rounds of 8-bit digit histograms) of the k-th largest key, then
//            -inf below it; ties at the k-th value are cut in id order;
//   top_p    the same radix descent over fixed-point mass histograms finds the key of the last
//            kept token (the smallest key whose strictly-greater mass is below the target), then
//            -inf below it; ties there are cut in id order;
//   draw     min_p and inverse CDF in id order: per-thread contiguous chunks, one block scan,
//            and the thread owning the crossing walks its chunk.
// Masses are integers (weights times 2^F), so every sum is exact and order-independent.
#include <cmath>

#include "ops_common.cuh"
#include "sampling_primitives.cuh"
#include "weft/kernels/cuda/sampling.h"

namespace weft::kernels::cuda {
namespace {

using namespace detail;  // NOLINT: the sampler's own device building blocks

constexpr float kGreedyTemperature = 1e-5f;  // SamplingParams::kGreedyTemperature

struct SampleShared {
  unsigned long long hist_mass[256];
  unsigned int hist_cnt[256];
  unsigned long long scan[kSampleWarps + 1];
  ArgMax argmax[kSampleWarps + 1];
  Lse lse[kSampleWarps + 1];
  float fmax[kSampleWarps + 1];
  int32_t imax[kSampleWarps + 1];
  // Broadcast of one radix round's decision.
  unsigned int digit;
  unsigned int digit_cnt;
  unsigned long long digit_above;
  int32_t token;
};

struct Radix {
  uint32_t key;           // the selected key
  unsigned long long above;  // count (top_k) or mass (top_p) of keys strictly greater
  unsigned int equal;     // how many tokens have exactly this key
};

__device__ __forceinline__ float max_op(float a, float b) { return a > b ? a : b; }

// The k-th largest key of x[0, n) (1 <= k <= n).
__device__ Radix radix_select_kth(const float* x, int64_t n, unsigned int k, SampleShared& sh) {
  uint32_t prefix = 0, mask = 0;
  unsigned long long above = 0;
  unsigned int equal = 0;
  for (int shift = 24; shift >= 0; shift -= 8) {
    if (threadIdx.x < 256) sh.hist_cnt[threadIdx.x] = 0;
    __syncthreads();
    for (int64_t i = threadIdx.x; i < n; i += kSampleThreads) {
      const uint32_t key = order_key(x[i]);
      if ((key & mask) == prefix) atomicAdd(&sh.hist_cnt[(key >> shift) & 255u], 1u);
    }
    __syncthreads();
    if (threadIdx.x == 0) {
      unsigned long long cum = 0;
      for (int d = 255; d >= 0; --d) {
        const unsigned int c = sh.hist_cnt[d];
        if (cum + c >= k - above) {
          sh.digit = d;
          sh.digit_cnt = c;
          sh.digit_above = cum;
          break;
        }
        cum += c;
      }
    }
    __syncthreads();
    prefix |= sh.digit << shift;
    mask |= 255u << shift;
    above += sh.digit_above;
    equal = sh.digit_cnt;
  }
  return {prefix, above, equal};
}

__device__ __forceinline__ unsigned long long to_fixed(float w, double scale) {
  return static_cast<unsigned long long>(static_cast<double>(w) * scale);
}

// The key of the last token top_p keeps: the smallest key whose strictly-greater mass is below
// `target` (target >= 1, so the largest key always qualifies).
__device__ Radix radix_select_top_p(const float* x, int64_t n, float mx, double scale,
                                    unsigned long long target, SampleShared& sh) {
  uint32_t prefix = 0, mask = 0;
  unsigned long long above = 0;
  unsigned int equal = 0;
  for (int shift = 24; shift >= 0; shift -= 8) {
    if (threadIdx.x < 256) {
      sh.hist_cnt[threadIdx.x] = 0;
      sh.hist_mass[threadIdx.x] = 0;
    }
    __syncthreads();
    for (int64_t i = threadIdx.x; i < n; i += kSampleThreads) {
      const float v = x[i];
      const uint32_t key = order_key(v);
      if ((key & mask) == prefix) {
        const unsigned int d = (key >> shift) & 255u;
        atomicAdd(&sh.hist_cnt[d], 1u);
        const unsigned long long m = to_fixed(exp_nonpositive(__fsub_rn(v, mx)), scale);
        if (m != 0) atomicAdd(&sh.hist_mass[d], m);
      }
    }
    __syncthreads();
    if (threadIdx.x == 0) {
      unsigned long long s = above;
      for (int d = 255; d >= 0; --d) {
        if (sh.hist_cnt[d] == 0) continue;
        if (s >= target) break;
        sh.digit = d;
        sh.digit_cnt = sh.hist_cnt[d];
        sh.digit_above = s;
        s += sh.hist_mass[d];
      }
    }
    __syncthreads();
    prefix |= sh.digit << shift;
    mask |= 255u << shift;
    above = sh.digit_above;
    equal = sh.digit_cnt;
  }
  return {prefix, above, equal};
}

// Sets x[i] = -inf for every key below `kappa`, and for the tokens with key == kappa beyond the
// first `keep` of them in id order.
__device__ void cut_below(float* x, int64_t n, uint32_t kappa, unsigned int keep,
                          unsigned int equal, SampleShared& sh) {
  if (keep >= equal) {
    for (int64_t i = threadIdx.x; i < n; i += kSampleThreads) {
      if (order_key(x[i]) < kappa) x[i] = -INFINITY;
    }
  } else {
    // Ranks among the equal keys need id order: contiguous chunks and one scan of their counts.
    const int64_t chunk = (n + kSampleThreads - 1) / kSampleThreads;
    const int64_t begin = min(n, threadIdx.x * chunk), end = min(n, begin + chunk);
    unsigned long long mine = 0;
    for (int64_t i = begin; i < end; ++i) mine += order_key(x[i]) == kappa;
    unsigned long long total;
    unsigned long long rank = block_exclusive_scan(mine, sh.scan, &total);
    for (int64_t i = begin; i < end; ++i) {
      const uint32_t key = order_key(x[i]);
      if (key < kappa) {
        x[i] = -INFINITY;
      } else if (key == kappa) {
        if (rank >= keep) x[i] = -INFINITY;
        ++rank;
      }
    }
  }
  __syncthreads();
}

// Inverse CDF over the survivors (weight >= min_p and > 0) in ascending id order; -1 if none.
__device__ int32_t draw(const float* x, int64_t n, float mx, float min_p, double scale, double u,
                        SampleShared& sh) {
  const int64_t chunk = (n + kSampleThreads - 1) / kSampleThreads;
  const int64_t begin = min(n, threadIdx.x * chunk), end = min(n, begin + chunk);
  unsigned long long mine = 0;
  int32_t last = -1;
  for (int64_t i = begin; i < end; ++i) {
    const float w = exp_nonpositive(__fsub_rn(x[i], mx));
    if (w >= min_p && w != 0.0f) {
      mine += to_fixed(w, scale);
      last = static_cast<int32_t>(i);
    }
  }
  unsigned long long total;
  const unsigned long long before = block_exclusive_scan(mine, sh.scan, &total);
  const int32_t last_all = block_reduce(last, sh.imax, [](int32_t a, int32_t b) {
    return a > b ? a : b;
  });
  if (threadIdx.x == 0) sh.token = last_all;  // rounding left the target at the very top
  __syncthreads();
  const double target = u * static_cast<double>(total);
  if (mine != 0 && static_cast<double>(before) <= target &&
      static_cast<double>(before + mine) > target) {
    unsigned long long acc = before;
    for (int64_t i = begin; i < end; ++i) {
      const float w = exp_nonpositive(__fsub_rn(x[i], mx));
      if (!(w >= min_p && w != 0.0f)) continue;
      acc += to_fixed(w, scale);
      if (static_cast<double>(acc) > target) {
        sh.token = static_cast<int32_t>(i);
        break;
      }
    }
  }
  __syncthreads();
  return sh.token;
}

__global__ void __launch_bounds__(kSampleThreads)
    argmax_kernel(const float* __restrict__ logits, int64_t vocab, int32_t* __restrict__ tokens) {
  __shared__ ArgMax scratch[kSampleWarps + 1];
  const float* row = logits + blockIdx.x * vocab;
  ArgMax best;
  best.init();
  for (int64_t i = threadIdx.x; i < vocab; i += kSampleThreads) {
    best.add(row[i], static_cast<int32_t>(i));
  }
  best = block_reduce(best, scratch, [](const ArgMax& a, const ArgMax& c) { return better(a, c); });
  if (threadIdx.x == 0) tokens[blockIdx.x] = best.valid() ? best.index : -1;
}

template <typename T>
__global__ void __launch_bounds__(kSampleThreads)
    sample_kernel(SamplingBatch b, double scale) {
  __shared__ SampleShared sh;
  const int row = blockIdx.x;
  const int64_t n = b.vocab;
  const SamplingRowParams p = b.params[row];
  const T* raw = static_cast<const T*>(b.logits) + row * b.logits_stride;
  float* x = b.workspace + row * n;

  // Pass A.
  Lse lse;
  lse.init();
  ArgMax raw_best;
  raw_best.init();
  for (int64_t i = threadIdx.x; i < n; i += kSampleThreads) {
    const float v = to_float(raw[i]);
    x[i] = v;
    lse.add(v);
    raw_best.add(v, static_cast<int32_t>(i));
  }
  lse = block_reduce(lse, sh.lse, [](const Lse& a, const Lse& c) { return combine(a, c); });
  raw_best = block_reduce(raw_best, sh.argmax, [](const ArgMax& a, const ArgMax& c) {
    return better(a, c);
  });

  // Sparse edits, each after the previous one is visible (block_reduce ended with a barrier).
  if (b.bias_offsets != nullptr) {
    for (int32_t j = b.bias_offsets[row] + threadIdx.x; j < b.bias_offsets[row + 1];
         j += kSampleThreads) {
      x[b.bias_ids[j]] += b.bias_values[j];
    }
    __syncthreads();
  }
  if (b.banned_offsets != nullptr) {
    for (int32_t j = b.banned_offsets[row] + threadIdx.x; j < b.banned_offsets[row + 1];
         j += kSampleThreads) {
      x[b.banned_ids[j]] = -INFINITY;
    }
    __syncthreads();
  }

  // Pass B.
  const int32_t* counts = b.output_counts != nullptr ? b.output_counts + row * n : nullptr;
  const uint8_t* prompt = b.prompt_mask != nullptr ? b.prompt_mask + row * n : nullptr;
  const bool repetition =
      p.repetition_penalty != 1.0f && (counts != nullptr || prompt != nullptr);
  const bool pres_freq =
      (p.presence_penalty != 0.0f || p.frequency_penalty != 0.0f) && counts != nullptr;
  const bool greedy = p.temperature < kGreedyTemperature;
  ArgMax best;
  best.init();
  float mx = -INFINITY;
  for (int64_t i = threadIdx.x; i < n; i += kSampleThreads) {
    float v = x[i];
    const int32_t c = counts != nullptr ? counts[i] : 0;
    if (repetition && (c > 0 || (prompt != nullptr && prompt[i] != 0))) {
      v = v > 0.0f ? v / p.repetition_penalty : v * p.repetition_penalty;
    }
    if (pres_freq && c > 0) {
      v = __fsub_rn(v, __fadd_rn(__fmul_rn(static_cast<float>(c), p.frequency_penalty),
                                 p.presence_penalty));
    }
    if (greedy) {
      best.add(v, static_cast<int32_t>(i));
    } else {
      v = __fdiv_rn(v, p.temperature);
      mx = max_op(mx, v);
    }
    x[i] = v;
  }

  int32_t token = -1;
  if (greedy) {
    best = block_reduce(best, sh.argmax, [](const ArgMax& a, const ArgMax& c) {
      return better(a, c);
    });
    if (best.valid()) token = best.index;
  } else {
    mx = block_reduce(mx, sh.fmax, max_op);
    if (mx > -INFINITY) {
      if (p.top_k > 0 && p.top_k < n) {
        const Radix r = radix_select_kth(x, n, static_cast<unsigned int>(p.top_k), sh);
        cut_below(x, n, r.key, static_cast<unsigned int>(p.top_k - r.above), r.equal, sh);
      }
      if (p.top_p < 1.0f) {
        unsigned long long mine = 0;
        for (int64_t i = threadIdx.x; i < n; i += kSampleThreads) {
          mine += to_fixed(exp_nonpositive(__fsub_rn(x[i], mx)), scale);
        }
        unsigned long long total;
        block_exclusive_scan(mine, sh.scan, &total);
        // ahead < top_p * total  <=>  ahead < ceil(top_p * total) for integer ahead; at least 1
        // so the most probable token is always kept.
        unsigned long long target = static_cast<unsigned long long>(
            ceil(static_cast<double>(p.top_p) * static_cast<double>(total)));
        if (target < 1) target = 1;
        const Radix r = radix_select_top_p(x, n, mx, scale, target, sh);
        // Tokens sharing the boundary key weigh the same w: the j-th of them (in id order) has
        // r.above + j * w ahead of it.
        const unsigned long long w =
            to_fixed(exp_nonpositive(__fsub_rn(key_value(r.key), mx)), scale);
        unsigned int keep = r.equal;
        if (w != 0) {
          const unsigned long long fit = (target - r.above + w - 1) / w;
          if (fit < keep) keep = static_cast<unsigned int>(fit);
        }
        cut_below(x, n, r.key, keep, r.equal, sh);
      }
      const double u = philox_uniform(p.seed, p.seq_index, p.step);
      token = draw(x, n, mx, p.min_p, scale, u, sh);
    }
  }
  if (token < 0) token = raw_best.valid() ? raw_best.index : 0;
  if (threadIdx.x == 0) {
    b.tokens[row] = token;
    if (b.logprobs != nullptr) {
      b.logprobs[row] = to_float(raw[token]) - (lse.max + logf(lse.sum));
    }
  }
}

__global__ void count_kernel(int32_t* counts, int64_t vocab, const int32_t* tokens, int num_seqs) {
  const int s = blockIdx.x * blockDim.x + threadIdx.x;
  if (s >= num_seqs) return;
  const int32_t t = tokens[s];
  if (t >= 0 && t < vocab) counts[s * vocab + t] += 1;  // one row per sequence: no races
}

}  // namespace

absl::Status sample_tokens(const SamplingBatch& b, cudaStream_t stream) {
  const char* op = "sample_tokens";
  if (b.num_seqs < 0 || b.vocab <= 0 || b.vocab > INT32_MAX || b.logits_stride < b.vocab) {
    return absl::InvalidArgumentError(absl::StrCat(op, ": bad sizes num_seqs=", b.num_seqs,
                                                   " vocab=", b.vocab,
                                                   " logits_stride=", b.logits_stride));
  }
  if (b.num_seqs == 0) return absl::OkStatus();
  if (b.logits == nullptr || b.params == nullptr || b.workspace == nullptr ||
      b.tokens == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat(op, ": logits, params, workspace and tokens are required"));
  }
  if ((b.bias_offsets != nullptr) && (b.bias_ids == nullptr || b.bias_values == nullptr)) {
    return absl::InvalidArgumentError(absl::StrCat(op, ": bias_offsets without ids / values"));
  }
  if (b.banned_offsets != nullptr && b.banned_ids == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat(op, ": banned_offsets without banned_ids"));
  }
  // Fixed-point masses: vocab weights of at most 1 sum below 2^62.
  int log2_vocab = 0;
  while ((int64_t{1} << log2_vocab) < b.vocab) ++log2_vocab;
  const double scale = std::ldexp(1.0, 62 - log2_vocab);
  return detail::dispatch_float(b.logits_dtype, op, "logits dtype", [&](auto tag) {
    using T = typename decltype(tag)::type;
    sample_kernel<T><<<static_cast<unsigned>(b.num_seqs), kSampleThreads, 0, stream>>>(b, scale);
    return detail::launch_status("sample_tokens");
  });
}

absl::Status argmax_rows(const float* logits, int64_t rows, int64_t vocab, int32_t* tokens,
                         cudaStream_t stream) {
  if (rows < 0 || rows > 0x7fffffff || vocab <= 0 || vocab > 0x7fffffff) {
    return absl::InvalidArgumentError(
        absl::StrCat("argmax_rows: bad sizes rows=", rows, " vocab=", vocab));
  }
  if (rows == 0) return absl::OkStatus();
  if (logits == nullptr || tokens == nullptr) {
    return absl::InvalidArgumentError("argmax_rows: logits and tokens must be non-null");
  }
  argmax_kernel<<<static_cast<unsigned>(rows), kSampleThreads, 0, stream>>>(logits, vocab, tokens);
  return detail::launch_status("argmax_rows");
}

absl::Status count_output_tokens(int32_t* counts, int64_t vocab, const int32_t* tokens,
                                 int num_seqs, cudaStream_t stream) {
  if (num_seqs < 0 || vocab <= 0) {
    return absl::InvalidArgumentError(absl::StrCat("count_output_tokens: bad sizes num_seqs=",
                                                   num_seqs, " vocab=", vocab));
  }
  if (num_seqs == 0) return absl::OkStatus();
  count_kernel<<<detail::grid_1d(num_seqs, 256), 256, 0, stream>>>(counts, vocab, tokens,
                                                                   num_seqs);
  return detail::launch_status("count_output_tokens");
}

}  // namespace weft::kernels::cuda
