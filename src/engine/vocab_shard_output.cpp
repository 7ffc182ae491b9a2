#include "engine/vocab_shard_output.h"

#include <algorithm>
#include <cstring>
#include <tuple>
#include <utility>
#include <vector>

#include "core/status_macros.h"

namespace weft {

absl::StatusOr<Tensor> gather_vocab_logits(const Tensor& local, int64_t vocab, Communicator& tp) {
  const int64_t rows = local.dim(0);
  const int64_t shard = local.dim(1);
  if (tp.size() == 1 && shard == vocab) return local;
  // Gather the vocabulary shards: [tp, rows, shard] -> [rows, vocab], dropping the padding.
  Tensor gathered = Tensor::empty(DType::kF32, Shape{tp.size(), rows, shard});
  WEFT_RETURN_IF_ERROR(tp.all_gather(local.view(), gathered.view()));
  Tensor full = Tensor::empty(DType::kF32, Shape{rows, vocab});
  for (int r = 0; r < tp.size(); ++r) {
    const int64_t begin = r * shard;
    const int64_t count = std::min(shard, vocab - begin);
    if (count <= 0) continue;
    for (int64_t i = 0; i < rows; ++i) {
      std::memcpy(full.data_as<float>() + i * vocab + begin,
                  gathered.data_as<float>() + (r * rows + i) * shard, count * sizeof(float));
    }
  }
  return full;
}

absl::StatusOr<SampleCandidates> vocab_shard_candidates(const Tensor& local, int64_t shard_begin, int64_t vocab,
                                                        int32_t k, bool with_logsumexp, Communicator& tp) {
  const int64_t rows = local.dim(0);
  const int64_t shard = local.dim(1);
  const int64_t valid = std::max<int64_t>(0, std::min(shard, vocab - shard_begin));  // padding excluded
  k = static_cast<int32_t>(std::min<int64_t>(k, vocab));
  // This rank's k best per row as (logit, id) float pairs (ids are exact in a float below 2^24,
  // and vocabularies are smaller), then, when asked, its log-sum-exp part as one more pair: one
  // all-gather over the TP group carries them all.
  const int64_t slots = k + (with_logsumexp ? 1 : 0);
  Tensor mine = Tensor::empty(DType::kF32, Shape{rows, slots, 2});
  std::vector<int32_t> ids(k);
  std::vector<float> logits(k);
  for (int64_t r = 0; r < rows; ++r) {
    const float* row = local.data_as<float>() + r * shard;
    select_row_candidates(row, valid, shard_begin, k, ids.data(), logits.data());
    float* out = mine.data_as<float>() + r * slots * 2;
    for (int32_t j = 0; j < k; ++j) {
      out[2 * j] = logits[j];
      out[2 * j + 1] = static_cast<float>(ids[j]);
    }
    if (with_logsumexp) std::tie(out[2 * k], out[2 * k + 1]) = logsumexp_part(row, valid);
  }
  Tensor all = mine;
  if (tp.size() > 1) {
    all = Tensor::empty(DType::kF32, Shape{tp.size(), rows, slots, 2});
    WEFT_RETURN_IF_ERROR(tp.all_gather(mine.view(), all.view()));
  }
  const int64_t n = static_cast<int64_t>(tp.size()) * rows * k;
  std::vector<int32_t> all_ids(n);
  std::vector<float> all_logits(n);
  std::vector<std::vector<std::pair<float, float>>> parts(rows);
  for (int t = 0; t < tp.size(); ++t) {
    for (int64_t r = 0; r < rows; ++r) {
      const float* in = all.data_as<float>() + (t * rows + r) * slots * 2;
      for (int32_t j = 0; j < k; ++j) {
        all_logits[(t * rows + r) * k + j] = in[2 * j];
        all_ids[(t * rows + r) * k + j] = static_cast<int32_t>(in[2 * j + 1]);
      }
      if (with_logsumexp) parts[r].emplace_back(in[2 * k], in[2 * k + 1]);
    }
  }
  SampleCandidates best = merge_candidates(all_ids, all_logits, tp.size(), rows, k);
  if (with_logsumexp) {
    best.logsumexp.resize(rows);
    for (int64_t r = 0; r < rows; ++r) best.logsumexp[r] = combine_logsumexp(parts[r]);
  }
  return best;
}

absl::StatusOr<StepOutput> vocab_shard_output(const Tensor& local, int64_t shard_begin, int64_t vocab,
                                              int32_t sample_candidates, bool candidate_logsumexp,
                                              Communicator& tp) {
  StepOutput out;
  if (sample_candidates == 0) {
    WEFT_ASSIGN_OR_RETURN(out.logits, gather_vocab_logits(local, vocab, tp));
    return out;
  }
  WEFT_ASSIGN_OR_RETURN(SampleCandidates best,
                        vocab_shard_candidates(local, shard_begin, vocab, sample_candidates, candidate_logsumexp, tp));
  if (best.per_row == 1 && !candidate_logsumexp) {
    out.tokens = std::move(best.ids);  // argmax tokens
  } else {
    out.candidates = std::move(best);
  }
  return out;
}

}  // namespace weft
