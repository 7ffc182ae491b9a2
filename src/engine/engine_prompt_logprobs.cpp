// Engine::collect_prompt_logprobs: the logprob of each prompt token given the tokens before it,
// read from the every-row logits of a request's prefill chunks (Request::prompt_logprobs).
#include <cmath>
#include <limits>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "engine/engine.h"

namespace weft {

absl::Status Engine::collect_prompt_logprobs(const PlannedChunk& chunk, const Sequence& seq,
                                             const StepOutput& output, int64_t first_row) {
  RequestInfo& request = requests_.at(sequences_.at(seq.id).request_id);
  const int64_t prompt_len = static_cast<int64_t>(seq.prompt_ids.size());
  const int64_t start = chunk.start_position;
  const int64_t len = static_cast<int64_t>(chunk.token_ids.size());
  if (!output.logits.defined()) {
    // choose_sampling_output asks for full logits whenever a chunk wants every row.
    return absl::InternalError(absl::StrCat("sequence ", seq.id, ": the executor returned no full logits rows for ",
                                            "a prompt-logprobs chunk"));
  }
  PromptLogprobs& into = request.prompt_logprobs_partial;
  // Row r (position start + r) predicts the token at position start + r + 1; the prompt's last
  // row predicts the first generated token, not a prompt token.
  const int64_t count = std::min(start + len, prompt_len - 1) - start;
  if (count > 0) {
    const TensorView rows = output.logits.view().rows(first_row, count);
    SequenceSamplingState state;
    state.params = &request.prompt_logprob_params;
    state.prompt_ids = seq.prompt_ids;
    state.seed = sequences_.at(seq.id).seed;
    const std::vector<SequenceSamplingState> states(static_cast<size_t>(count), state);
    const std::span<const int32_t> targets(seq.prompt_ids.data() + start + 1, static_cast<size_t>(count));
    WEFT_ASSIGN_OR_RETURN(std::vector<SampleResult> results, sampler_.results_for(rows, states, targets, pool_));
    const int64_t vocab = rows.shape[1];
    pool_.parallel_for(count, [&](int64_t begin, int64_t end) {
      for (int64_t r = begin; r < end; ++r) {
        const float* logits = rows.as<const float>() + r * vocab;
        const float own = logits[targets[r]];
        int64_t larger = 0;
        for (int64_t v = 0; v < vocab; ++v) larger += logits[v] > own;
        PromptLogprob& p = into[start + 1 + r];
        p.token = targets[r];
        p.logprob = results[r].logprob;
        p.rank = larger + 1;
        p.top_logprobs = std::move(results[r].top_logprobs);
      }
    });
  }
  if (start + len >= prompt_len) {
    into[0].token = seq.prompt_ids[0];
    into[0].logprob = std::numeric_limits<float>::quiet_NaN();
    into[0].rank = 0;
    into[0].top_logprobs.clear();
    request.prompt_logprobs_done = std::make_shared<const PromptLogprobs>(std::move(into));
    into.clear();
    // Decode steps (and forks, which copy the flag) want only their last row again.
    scheduler_.set_return_all_logits(seq.id, false);
  }
  return absl::OkStatus();
}

}  // namespace weft
