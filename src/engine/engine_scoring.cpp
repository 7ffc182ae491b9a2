// Engine::score: teacher-forced log-probabilities of a token sequence (perplexity, prompt
// scoring). Kept apart from the request loop in engine.cpp: it plans its own steps and never
// samples.
#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "engine/engine.h"

namespace weft {
namespace {

// log softmax(row)[target] in double: the row's maximum is subtracted before exponentiating.
double log_probability(const float* row, int64_t vocab, int32_t target) {
  float max = row[0];
  for (int64_t v = 1; v < vocab; ++v) max = std::max(max, row[v]);
  double sum = 0.0;
  for (int64_t v = 0; v < vocab; ++v) sum += std::exp(static_cast<double>(row[v]) - max);
  return static_cast<double>(row[target]) - max - std::log(sum);
}

}  // namespace

absl::StatusOr<std::vector<double>> Engine::score(const std::vector<int32_t>& token_ids) {
  return score(token_ids, nullptr);
}

absl::StatusOr<std::vector<double>> Engine::score(const std::vector<int32_t>& token_ids,
                                                  const ScoredRowVisitor& on_row) {
  if (has_unfinished()) return absl::FailedPreconditionError("score: requests are still running");
  const int64_t n = static_cast<int64_t>(token_ids.size());
  if (n < 2) return absl::InvalidArgumentError(absl::StrCat("score: needs at least 2 tokens, got ", n));
  for (int32_t t : token_ids) {
    if (t < 0 || t >= config_.vocab_size) {
      return absl::InvalidArgumentError(
          absl::StrCat("score: token id ", t, " is outside the vocabulary [0, ", config_.vocab_size, ")"));
    }
  }
  if (config_.max_model_len > 0 && n > config_.max_model_len) {
    return absl::InvalidArgumentError(
        absl::StrCat("score: ", n, " tokens exceed max_model_len ", config_.max_model_len));
  }
  std::vector<int32_t> block_table;
  if (!blocks_.grow_to(block_table, n)) {
    blocks_.release(block_table);
    return absl::ResourceExhaustedError(absl::StrCat("score: ", n, " tokens need ", blocks_.blocks_for_tokens(n),
                                                     " KV blocks, ", blocks_.num_free_blocks(), " are free"));
  }
  const int64_t seq_id = next_seq_id_++;
  const int64_t chunk_tokens = std::max<int64_t>(1, config_.scheduler.max_num_batched_tokens);
  std::vector<double> logprobs;
  logprobs.reserve(n - 1);
  absl::Status status;
  for (int64_t start = 0; start < n && status.ok(); start += chunk_tokens) {
    const int64_t end = std::min(n, start + chunk_tokens);
    StepPlan plan;
    plan.step_id = scheduler_.take_step_id();
    PlannedChunk chunk;
    chunk.seq_id = seq_id;
    chunk.token_ids.assign(token_ids.begin() + start, token_ids.begin() + end);
    chunk.start_position = static_cast<int32_t>(start);
    chunk.prompt_len = static_cast<int32_t>(n);  // scored as one prompt
    chunk.block_table.assign(block_table.begin(), block_table.begin() + blocks_.blocks_for_tokens(end));
    chunk.logits = LogitsWanted::kAll;
    plan.chunks.push_back(std::move(chunk));
    plan.kv_transfers = blocks_.take_transfers();  // its blocks may have evicted cached ones
    absl::StatusOr<StepOutput> output = executor_.execute(plan);
    if (!output.ok()) {
      status = output.status();
      break;
    }
    status = blocks_.on_load_report(plan.kv_transfers, output->kv_load_report);  // disk loads it carried
    if (!status.ok()) break;
    const Tensor& logits = output->logits;
    if (!logits.defined() || logits.dim(0) != end - start) {
      status = absl::InternalError(absl::StrCat("score: step ", plan.step_id, " returned ", output->rows(),
                                                " logits rows, expected ", end - start));
      break;
    }
    const int64_t vocab = logits.dim(1);
    // Row r predicts token start + r + 1; the last row of the last chunk predicts nothing.
    for (int64_t r = 0; r < end - start && start + r + 1 < n; ++r) {
      const float* row = logits.data_as<float>() + r * vocab;
      logprobs.push_back(log_probability(row, vocab, token_ids[start + r + 1]));
      if (on_row) on_row(start + r + 1, row, vocab);
    }
  }
  blocks_.release(block_table);
  if (!status.ok()) return status;
  return logprobs;
}

}  // namespace weft
