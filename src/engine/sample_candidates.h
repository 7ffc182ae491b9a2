// The few best (token, logit) pairs of each logits row: what the last pipeline stage returns in
// place of full-vocabulary logits when the coordinator's sampling needs no more (StepPlan::
// sample_candidates). Each tensor-parallel rank selects the best of its vocabulary shard, the TP
// group merges them, and the coordinator expands them back to rows that are -inf elsewhere.
//
// Exactness: candidates are ordered by logit descending, ties to the lower id, which is the
// sampler's own order (sampler.h). So greedy and top_k <= K sampling over the expanded rows pick
// the same token as over the full rows: the top_k set, its maximum and its weights are the same.
// Logprobs need the log-sum-exp of the whole row besides: each shard contributes (max, sum of
// exp(x - max)) and the parts combine (logsumexp_part, combine_logsumexp); it equals the one-row
// value up to float rounding (about 1e-7 relative).
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "core/tensor.h"

namespace weft {

// The largest K a plan may ask for: each TP rank sends K pairs per row instead of its shard.
inline constexpr int32_t kMaxSampleCandidates = 1024;

struct SampleCandidates {
  int32_t per_row = 0;          // K; 0 = none
  std::vector<int32_t> ids;     // [rows * K], row-major; per row best first
  std::vector<float> logits;    // [rows * K]
  std::vector<float> logsumexp; // [rows] when asked for (StepPlan::candidate_logsumexp), else empty

  int64_t rows() const { return per_row > 0 ? static_cast<int64_t>(ids.size()) / per_row : 0; }
  bool empty() const { return per_row == 0; }
};

// The min(k, valid) best entries of row[0, valid), ids offset by `first_id`, best first.
// Fewer than k entries are padded with (id -1, -inf), which merging drops.
void select_row_candidates(const float* row, int64_t valid, int64_t first_id, int32_t k,
                           int32_t* ids_out, float* logits_out);

// Merges `num_parts` candidate lists of `k` entries per row for `rows` rows (part p, row r at
// [(p * rows + r) * k]) into the k best per row. Padding (id < 0) is dropped; a row with fewer
// than k real entries keeps its padding at the end.
SampleCandidates merge_candidates(const std::vector<int32_t>& ids, const std::vector<float>& logits,
                                  int num_parts, int64_t rows, int32_t k);

// One shard's part of a row's log-sum-exp: (max, sum of exp(x - max)) over row[0, valid);
// (-inf, 0) when valid is 0.
std::pair<float, float> logsumexp_part(const float* row, int64_t valid);
// log(sum of exp(x)) over the whole row from its shards' parts.
float combine_logsumexp(const std::vector<std::pair<float, float>>& parts);

// F32 [rows.size(), vocab]: row i is row rows[i] of the candidates, -inf where it has none.
Tensor expand_candidates(const SampleCandidates& candidates, const std::vector<int64_t>& rows,
                         int64_t vocab);

}  // namespace weft
