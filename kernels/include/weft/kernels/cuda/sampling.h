// Logits processing and sampling on the GPU: one token (and its logprob) per sequence, computed
// where the logits lie, so only num_seqs ids (and floats) ever reach the host.
//
// Semantics are those of the CPU sampler (src/sampling/sampler.h, logits_processors.h), row by
// row: 1. logit_bias (sparse, added) 2. banned ids set to -inf (min_tokens: the engine lists the
// stop / eos ids while a sequence is shorter than min_tokens) 3. repetition penalty over tokens
// seen in the prompt or the output 4. presence / frequency penalties over output counts;
// greedy rows (temperature < 1e-5) take the argmax (ties to the lowest id); other rows divide by
// the temperature and filter top_k (ties to the lower id), then top_p (a token is kept while the
// mass strictly ahead of it in descending order is < top_p of what top_k kept; the first token
// is always kept), then min_p (keep weight >= min_p * max weight), and draw by inverse CDF over the
// survivors in ascending id order with u = Philox4x32-10 (seed, seq_index, step) exactly as
// SamplingRng(seed, seq_index, step).uniform(0) (src/sampling/rng.h). A row whose processed
// logits are all -inf gets the raw argmax. The logprob is the sampled token's log-softmax of the
// RAW row (vLLM's default, as the CPU sampler).
//
// Differences from the CPU sampler (documented, all at the level of rounding):
//   * weights exp(x - max) use the CPU's Cephes polynomial with the same F32 operations, so they
//     are bit-identical, but masses are summed as exact 2^-F fixed-point integers (F = 62 -
//     ceil(log2 vocab), weights below 2^-F count as 0) where the CPU sums doubles in another
//     order: a top_p cut or a draw can differ only when the cumulative mass lies within ~1e-15
//     (relative) of the threshold.
//   * the raw log-sum-exp for the logprob is accumulated in F32 (CPU: double), ~1e-6 relative.
//   * NaN logits are treated as -inf; -0.0 and +0.0 tie.
//   * top_logprobs (params.logprobs > 0) are not produced here.
// Results are deterministic: the same inputs give the same tokens on every run and batch layout.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "absl/status/status.h"
#include "core/dtype.h"

namespace weft::kernels::cuda {

// Per-sequence parameters (device memory, one per row); the fields mean what the same-named
// SamplingParams / SequenceSamplingState fields mean on the CPU.
struct SamplingRowParams {
  float temperature = 1.0f;  // below 1e-5 (SamplingParams::kGreedyTemperature): greedy
  int32_t top_k = -1;        // <= 0 or >= vocab: off
  float top_p = 1.0f;        // (0, 1]; 1: off
  float min_p = 0.0f;        // [0, 1]; 0: off
  float repetition_penalty = 1.0f;
  float presence_penalty = 0.0f;
  float frequency_penalty = 0.0f;
  uint32_t seq_index = 0;  // RNG stream: the sequence's index inside its request
  uint64_t seed = 0;
  uint64_t step = 0;  // tokens generated so far (the RNG step)
};

// One batched sampling launch. All pointers are device memory; optional ones may be null.
struct SamplingBatch {
  int num_seqs = 0;
  int64_t vocab = 0;  // at most 2^31 - 1
  const void* logits = nullptr;  // [num_seqs, logits_stride] of F32, F16 or BF16; read only
  DType logits_dtype = DType::kF32;
  int64_t logits_stride = 0;  // elements between rows, >= vocab
  const SamplingRowParams* params = nullptr;  // [num_seqs]
  // Penalty inputs. output_counts[s * vocab + t]: times t occurs in sequence s's output (I32;
  // count_output_tokens keeps it current). prompt_mask[s * vocab + t] != 0: t occurs in s's
  // prompt. Without output_counts, presence / frequency penalties are off and repetition looks
  // at prompt_mask alone; without both, repetition is off.
  const int32_t* output_counts = nullptr;
  const uint8_t* prompt_mask = nullptr;
  // logit_bias as CSR: row s adds bias_values[j] to token bias_ids[j] for j in
  // [bias_offsets[s], bias_offsets[s + 1]); ids distinct within a row.
  const int32_t* bias_offsets = nullptr;  // [num_seqs + 1]
  const int32_t* bias_ids = nullptr;
  const float* bias_values = nullptr;
  // Banned ids as CSR (set to -inf after the bias): [banned_offsets[s], banned_offsets[s + 1]).
  const int32_t* banned_offsets = nullptr;  // [num_seqs + 1]
  const int32_t* banned_ids = nullptr;
  // Scratch [num_seqs, vocab] F32. Afterwards row s holds, for a greedy row, the processed
  // logits (steps 1-4); for a sampled row, the temperature-scaled logits with every token that
  // top_k / top_p filtered out set to -inf.
  float* workspace = nullptr;
  int32_t* tokens = nullptr;   // [num_seqs] out
  float* logprobs = nullptr;   // [num_seqs] out, optional
};

// Samples one token per row, asynchronously on `stream` (one thread block per row). Token ids in
// the CSR lists must lie in [0, vocab) (the engine validates them, as Sampler::sample does).
// InvalidArgument for bad sizes, dtypes or missing required pointers; Internal for a failed
// launch.
absl::Status sample_tokens(const SamplingBatch& batch, cudaStream_t stream);

// tokens[r] = argmax of F32 logits row r ([rows, vocab], row stride vocab), ties to the lowest
// id, NaN and -inf skipped, -1 for a row with no finite or +inf value: what sample_tokens gives a
// greedy row with no penalties, bias or bans, in one pass without its scratch. One block per row.
absl::Status argmax_rows(const float* logits, int64_t rows, int64_t vocab, int32_t* tokens,
                         cudaStream_t stream);

// counts[s * vocab + tokens[s]] += 1 for each s with 0 <= tokens[s] < vocab: keeps
// SamplingBatch::output_counts current after each step without leaving the device.
absl::Status count_output_tokens(int32_t* counts, int64_t vocab, const int32_t* tokens,
                                 int num_seqs, cudaStream_t stream);

}  // namespace weft::kernels::cuda
