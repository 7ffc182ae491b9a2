// Runs the golden models (tests/golden/models, dumped by generate.py with Hugging Face
// transformers) through the engine's own pieces, for the golden and multi-rank tests.
#pragma once

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "core/tensor.h"
#include "engine/local_engine.h"

namespace weft::golden {

inline constexpr int kNumPrompts = 4;
inline constexpr int kGreedyTokens = 32;

// The source tree the golden data is read from: $WEFT_SOURCE_DIR when set (a relocated binary),
// else the tree this binary was built from.
std::filesystem::path source_dir();

std::filesystem::path model_dir(const std::string& name);

// The reference dump of a model: prompt_{i}.ids / .logits / .greedy_ids / .greedy_logits.
struct Reference {
  std::vector<std::vector<int32_t>> prompts;
  std::vector<Tensor> prompt_logits;     // [len, vocab] each
  std::vector<std::vector<int32_t>> greedy_ids;
  std::vector<Tensor> greedy_logits;     // [32, vocab] each
  std::map<std::string, Tensor> extra;   // everything else by name
};
Reference load_reference(const std::string& name);

// Scores the given prompts with all-position logits, scheduled together under a per-step token
// budget (so long prompts are prefilled in chunks) and run by `executor` (one process or a whole
// job). Returns [len, vocab] logits per prompt.
std::vector<Tensor> score_prompts(StepExecutor& executor, int64_t num_blocks, int block_size,
                                  int64_t vocab, const std::vector<std::vector<int32_t>>& prompts,
                                  int64_t token_budget);
std::vector<Tensor> score_prompts(LocalEngine& engine, const std::vector<std::vector<int32_t>>& prompts,
                                  int64_t token_budget);

// Greedy generation of `num_tokens` per prompt (eos ignored), all prompts submitted together.
// Returns the ids and, with logprobs, per step the top-5 alternatives' raw logprobs. Without
// logprobs the engine takes the argmax on the last stage (StepPlan::sample_candidates 1).
struct GreedyRun {
  std::vector<std::vector<int32_t>> ids;
  std::vector<std::vector<float>> logprobs;  // the sampled tokens' (NaN without logprobs)
  std::vector<std::vector<std::vector<std::pair<int32_t, float>>>> top_logprobs;
};
GreedyRun greedy(Engine& engine, const std::vector<std::vector<int32_t>>& prompts,
                 int num_tokens, bool with_logprobs = true);
// The same with any sampling parameters (max_tokens and ignore_eos are set here; prompt i gets
// seed params.seed + i).
GreedyRun generate(Engine& engine, const std::vector<std::vector<int32_t>>& prompts, int num_tokens,
                   SamplingParams params);

// Generates the prompts with `params` twice: with a logit_bias of 0 on token 0 added, which
// changes no logit but makes the last stage return full logits, and as given, which lets it
// return only each row's candidates (StepPlan::sample_candidates). `*_rows`: rows sampled by each
// path during that run (Engine::sampled_from).
struct CandidateSamplingRuns {
  GreedyRun full;
  GreedyRun from_candidates;
  Engine::SampledFrom full_rows;
  Engine::SampledFrom candidate_rows;
};
CandidateSamplingRuns sample_both_ways(Engine& engine, const std::vector<std::vector<int32_t>>& prompts,
                                       int num_tokens, SamplingParams params);
// Seeded top-k sampling (temperature 0.9, top_k 8, top_p 0.95, logprobs 2), and greedy with
// logprobs 5: the parameters the candidate checks run with.
SamplingParams top_k_sampling_params();
SamplingParams greedy_logprobs_params();
// Empty when the two runs agree: same tokens and top-logprob ids, logprobs within `tolerance`;
// otherwise what differs first.
std::string compare_runs(const GreedyRun& a, const GreedyRun& b, float tolerance);

// Runs each prompt as one request with Request::prompt_logprobs = `top` and `params` (max_tokens as
// given, 0 for prefill only; ignore_eos set; prompt i gets seed params.seed + i), all submitted
// together. Per prompt and sequence: the prompt logprobs its outputs carried (the first output),
// how many outputs carried them, and its generated tokens.
struct PromptLogprobRun {
  std::vector<std::vector<std::shared_ptr<const PromptLogprobs>>> prompt_logprobs;  // [prompt][seq]
  std::vector<std::vector<int>> times_carried;                                       // [prompt][seq]
  std::vector<std::vector<bool>> carried_first;  // [prompt][seq]: on the sequence's first output
  std::vector<std::vector<std::vector<int32_t>>> ids;                                // [prompt][seq]
  std::vector<std::vector<FinishReason>> finish_reasons;                             // [prompt][seq]
};
PromptLogprobRun run_prompt_logprobs(Engine& engine, const std::vector<std::vector<int32_t>>& prompts, int top,
                                     SamplingParams params);
// Empty when `got` holds, for each position p >= 1 of `prompt`, log_softmax(logits[p - 1])[prompt[p]]
// within `tolerance`, a rank consistent with it, and the `top` most likely alternatives (their
// logprobs within `tolerance`, none missing beyond near-ties); position 0 empty. Otherwise what
// differs first.
std::string check_prompt_logprobs(const PromptLogprobs& got, const std::vector<int32_t>& prompt, const Tensor& logits,
                                  int top, float tolerance);

// max |a - b| over two F32 tensors of the same shape.
float max_abs_diff(const Tensor& a, const Tensor& b);
// The largest max_abs_diff(a[i], b[i]) over the prompts.
float max_abs_diff(const std::vector<Tensor>& a, const std::vector<Tensor>& b);

// What weft info prints for the engine's model on one rank under `quantization` (and
// --quantize-lm-head) (model/weight_plan.h); the golden quantization tests hold the loaded bytes
// to it.
int64_t planned_one_rank_weight_bytes(LocalEngine& engine, WeightQuantization quantization,
                                      bool quantize_lm_head = false);
// Row r of a [rows, vocab] F32 tensor, log-softmaxed.
std::vector<float> log_softmax_row(const Tensor& logits, int64_t row);

}  // namespace weft::golden
