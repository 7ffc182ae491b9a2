// The CPU sampler: turns one step's logits into one token per sequence.
//
// Per sequence (row r of `logits`, F32 [num_seqs, vocab], host memory):
//   1. copy the row and apply the logits processors (logits_processors.h: logit_bias,
//      min_tokens, repetition / presence / frequency penalties);
//   2. greedy (params.is_greedy()): token = argmax, ties to the lowest id;
//   3. otherwise divide by temperature, take probabilities p = softmax, then filter in this order
//      (HF's warper order): top_k (the k most probable; ties to the lower id), top_p (the
//      shortest most-probable prefix whose mass reaches top_p of what top_k kept: a token is kept
//      while the mass strictly ahead of it is < top_p), min_p (keep p >= min_p * max p);
//      renormalise the survivors and draw by inverse CDF over the survivors in ascending token-id
//      order with one uniform u = SamplingRng(seed, seq_index, output_ids.size()).uniform(0).
//      The token is the first survivor whose cumulative (renormalised) mass exceeds u.
//   0. (state.allowed, a constraint's mask) disallowed tokens are set to -inf first.
//   If every processed logit is -inf (all tokens suppressed), the token is the raw argmax among
//   the allowed tokens (the raw argmax when there is no mask or it allows none).
//
// Logprobs (vLLM's default, "raw logprobs"): when params.logprobs is set, `logprob` is the
// sampled token's log_softmax of the RAW row (before bias, penalties, temperature, filtering;
// its log-sum-exp is state.raw_logsumexp when that is a number),
// and `top_logprobs` the params.logprobs most likely tokens under that same distribution
// (descending, ties to the lower id); the sampled token is not added to that list. Without
// params.logprobs, `logprob` is NaN and `top_logprobs` empty (no extra pass over the vocab).
//
// Determinism: a row's result depends only on its own logits row and state, not on the batch or
// the thread pool: rows are processed independently and sequentially within a row.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "core/tensor.h"
#include "core/thread_pool.h"
#include "sampling/sequence_sampling_state.h"

namespace weft {

// What weft inspect shows of one sampled row (SamplingParams::diagnostics): the raw distribution
// (the row as the model produced it) against the one the token was drawn from.
struct SampleDiagnostics {
  int32_t raw_rank = 0;          // 1-based rank of the token in the raw row (ties to the lower id)
  double raw_entropy = 0.0;      // of softmax(raw row), in nats
  int32_t raw_argmax = 0;        // the token the raw row ranks first
  int32_t processed_argmax = 0;  // ... after the mask and the logits processors (-1: all -inf)
  float sampled_probability = 0.0f;  // the probability the token was drawn with (greedy: 1)
  bool masked = false;               // a constraint / banned-phrase mask applied to the row
};

struct SampleResult {
  int32_t token = 0;
  float logprob = 0.0f;
  std::vector<std::pair<int32_t, float>> top_logprobs;
  std::optional<SampleDiagnostics> diagnostics;  // with SamplingParams::diagnostics only
};

// The distribution a row is sampled from after processing, temperature and filtering: the
// surviving ids in ascending order with their probabilities (summing to 1). A greedy row (or one
// whose every processed logit is -inf) is the one point the sampler would pick. Speculative
// decoding verifies proposals against it (speculative_verifier.h).
struct TokenDistribution {
  std::vector<int32_t> ids;
  std::vector<float> probs;
  float prob_of(int32_t id) const;  // 0 for an id that is not a survivor
};

class Sampler {
 public:
  // `logits`: F32, CPU, shape [states.size(), vocab]. Rows are spread over `pool` by sequence.
  // InvalidArgument when the dtype, device or shape disagrees, a state has no params, or a
  // token id in a state (prompt, output, eos, stop_token_ids, logit_bias keys) lies outside
  // [0, vocab); the message names the sequence and the field.
  absl::StatusOr<std::vector<SampleResult>> sample(const TensorView& logits,
                                                   std::span<const SequenceSamplingState> states,
                                                   ThreadPool& pool) const;
  // The distribution sample() draws row i from, with the same checks: sample() returns token t
  // with probability distributions()[i].prob_of(t).
  absl::StatusOr<std::vector<TokenDistribution>> distributions(
      const TensorView& logits, std::span<const SequenceSamplingState> states, ThreadPool& pool) const;
  // The SampleResult sample() would give had it drawn tokens[i] from row i: its logprob and
  // top_logprobs when params.logprobs is set (raw logprobs, as above), else NaN.
  absl::StatusOr<std::vector<SampleResult>> results_for(
      const TensorView& logits, std::span<const SequenceSamplingState> states,
      std::span<const int32_t> tokens, ThreadPool& pool) const;
};

}  // namespace weft
