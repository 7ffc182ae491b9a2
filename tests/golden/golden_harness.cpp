#include "golden_harness.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <map>
#include <stdexcept>

#include "engine/local_executor.h"
#include "engine/scheduler.h"
#include "model/safetensors.h"
#include "model/stage_layout.h"
#include "model/weight_plan.h"

namespace weft::golden {
namespace {

std::vector<int32_t> to_ids(const Tensor& t) {
  const int32_t* p = t.data_as<int32_t>();
  return std::vector<int32_t>(p, p + t.numel());
}

Tensor copy_of(const Tensor& t) {
  Tensor out = Tensor::empty(t.dtype(), t.shape());
  std::memcpy(out.data(), t.data(), t.nbytes());
  return out;
}

}  // namespace

std::filesystem::path source_dir() {
  // A relocated test binary (scripts/gpu-bundle.sh) reads its data from the bundle instead.
  if (const char* dir = std::getenv("WEFT_SOURCE_DIR"); dir != nullptr && *dir != '\0') return dir;
  return WEFT_SOURCE_DIR;
}

std::filesystem::path model_dir(const std::string& name) {
  return source_dir() / "tests/golden/models" / name;
}

Reference load_reference(const std::string& name) {
  auto file = SafetensorsFile::open(model_dir(name) / "reference.safetensors");
  if (!file.ok()) throw std::runtime_error(std::string(file.status().message()));
  Reference ref;
  for (const auto& [tensor_name, entry] : (*file)->entries()) {
    ref.extra[tensor_name] = copy_of(*(*file)->tensor(tensor_name));
  }
  for (int i = 0; i < kNumPrompts; ++i) {
    const std::string p = "prompt_" + std::to_string(i);
    ref.prompts.push_back(to_ids(ref.extra.at(p + ".ids")));
    ref.prompt_logits.push_back(ref.extra.at(p + ".logits"));
    ref.greedy_ids.push_back(to_ids(ref.extra.at(p + ".greedy_ids")));
    ref.greedy_logits.push_back(ref.extra.at(p + ".greedy_logits"));
  }
  return ref;
}

std::vector<Tensor> score_prompts(LocalEngine& engine, const std::vector<std::vector<int32_t>>& prompts,
                                  int64_t token_budget) {
  LocalExecutor executor(engine.runner());
  return score_prompts(executor, engine.kv_cache().num_blocks(), engine.kv_cache().shape().block_size,
                       engine.model().config.vocab_size, prompts, token_budget);
}

std::vector<Tensor> score_prompts(StepExecutor& executor, int64_t num_blocks, int block_size,
                                  int64_t vocab, const std::vector<std::vector<int32_t>>& prompts,
                                  int64_t token_budget) {
  BlockManager blocks(num_blocks, block_size);
  SchedulerConfig config;
  config.max_num_batched_tokens = token_budget;
  Scheduler scheduler(config, blocks);
  std::vector<Tensor> out;
  std::vector<int64_t> filled(prompts.size(), 0);
  for (size_t i = 0; i < prompts.size(); ++i) {
    Sequence seq;
    seq.id = static_cast<int64_t>(i);
    seq.arrival = seq.id;
    seq.prompt_ids = prompts[i];
    scheduler.add(std::move(seq));
    scheduler.set_return_all_logits(static_cast<int64_t>(i), true);
    out.push_back(Tensor::zeros(DType::kF32, Shape{static_cast<int64_t>(prompts[i].size()), vocab}));
  }
  for (int step = 0; step < 1000; ++step) {
    const StepPlan plan = scheduler.schedule();
    if (plan.chunks.empty()) break;
    auto output = executor.execute(plan);
    if (!output.ok()) throw std::runtime_error(std::string(output.status().message()));
    const Tensor& logits = output->logits;
    int64_t row = 0;
    for (const PlannedChunk& chunk : plan.chunks) {
      for (size_t t = 0; t < chunk.token_ids.size(); ++t, ++row) {
        std::memcpy(out[chunk.seq_id].data_as<float>() + (chunk.start_position + t) * vocab,
                    logits.data_as<float>() + row * vocab, vocab * sizeof(float));
      }
      filled[chunk.seq_id] += static_cast<int64_t>(chunk.token_ids.size());
    }
    scheduler.on_step_done(plan, {});
  }
  for (size_t i = 0; i < prompts.size(); ++i) {
    if (filled[i] != static_cast<int64_t>(prompts[i].size())) {
      throw std::runtime_error("prompt " + std::to_string(i) + " was not scored completely");
    }
  }
  return out;
}

GreedyRun greedy(Engine& engine, const std::vector<std::vector<int32_t>>& prompts,
                 int num_tokens, bool with_logprobs) {
  SamplingParams params;
  params.temperature = 0.0f;
  if (with_logprobs) params.logprobs = 5;
  return generate(engine, prompts, num_tokens, params);
}

namespace {

// Submits one request per prompt (prompt i seeded params.seed + i when a seed is given); returns
// request id -> prompt index. Throws on a refused request.
std::map<int64_t, size_t> submit_all(Engine& engine, const std::vector<std::vector<int32_t>>& prompts,
                                     const SamplingParams& params, std::optional<int> prompt_logprobs = {}) {
  std::map<int64_t, size_t> index_of;
  for (size_t i = 0; i < prompts.size(); ++i) {
    Request request;
    request.prompt_ids = prompts[i];
    request.params = params;
    request.prompt_logprobs = prompt_logprobs;
    if (params.seed) request.params.seed = *params.seed + i;
    auto id = engine.add_request(request);
    if (!id.ok()) throw std::runtime_error(std::string(id.status().message()));
    index_of[*id] = i;
  }
  return index_of;
}

}  // namespace

GreedyRun generate(Engine& engine, const std::vector<std::vector<int32_t>>& prompts, int num_tokens,
                   SamplingParams params) {
  GreedyRun run;
  run.ids.resize(prompts.size());
  run.logprobs.resize(prompts.size());
  run.top_logprobs.resize(prompts.size());
  params.max_tokens = num_tokens;
  params.ignore_eos = true;
  const std::map<int64_t, size_t> index_of = submit_all(engine, prompts, params);
  while (engine.has_unfinished()) {
    auto outputs = engine.step();
    if (!outputs.ok()) throw std::runtime_error(std::string(outputs.status().message()));
    for (const SequenceOutput& o : *outputs) {
      const size_t i = index_of.at(o.request_id);
      for (size_t t = 0; t < o.token_ids.size(); ++t) {
        run.ids[i].push_back(o.token_ids[t]);
        run.logprobs[i].push_back(o.samples[t].logprob);
        auto top = o.samples[t].top_logprobs;
        run.top_logprobs[i].push_back(top);
      }
    }
  }
  return run;
}

CandidateSamplingRuns sample_both_ways(Engine& engine, const std::vector<std::vector<int32_t>>& prompts,
                                       int num_tokens, SamplingParams params) {
  auto delta = [](const Engine::SampledFrom& after, const Engine::SampledFrom& before) {
    return Engine::SampledFrom{after.full_logits - before.full_logits, after.argmax - before.argmax,
                               after.candidates - before.candidates};
  };
  CandidateSamplingRuns runs;
  Engine::SampledFrom before = engine.sampled_from();
  SamplingParams full = params;
  full.logit_bias[0] = 0.0f;
  runs.full = generate(engine, prompts, num_tokens, full);
  runs.full_rows = delta(engine.sampled_from(), before);
  before = engine.sampled_from();
  runs.from_candidates = generate(engine, prompts, num_tokens, params);
  runs.candidate_rows = delta(engine.sampled_from(), before);
  return runs;
}

SamplingParams top_k_sampling_params() {
  SamplingParams p;
  p.temperature = 0.9f;
  p.top_k = 8;
  p.top_p = 0.95f;
  p.seed = 1234;
  p.logprobs = 2;
  return p;
}

SamplingParams greedy_logprobs_params() {
  SamplingParams p;
  p.temperature = 0.0f;
  p.logprobs = 5;
  return p;
}

std::string compare_runs(const GreedyRun& a, const GreedyRun& b, float tolerance) {
  for (size_t i = 0; i < a.ids.size(); ++i) {
    const std::string at = "prompt " + std::to_string(i);
    if (a.ids[i] != b.ids[i]) return at + ": different tokens";
    for (size_t t = 0; t < a.ids[i].size(); ++t) {
      const std::string step = at + " step " + std::to_string(t);
      if (!(std::fabs(a.logprobs[i][t] - b.logprobs[i][t]) <= tolerance)) {
        return step + ": logprob " + std::to_string(a.logprobs[i][t]) + " vs " + std::to_string(b.logprobs[i][t]);
      }
      const auto& x = a.top_logprobs[i][t];
      const auto& y = b.top_logprobs[i][t];
      if (x.size() != y.size()) return step + ": different numbers of top logprobs";
      for (size_t j = 0; j < x.size(); ++j) {
        if (x[j].first != y[j].first || !(std::fabs(x[j].second - y[j].second) <= tolerance)) {
          return step + ": top logprob " + std::to_string(j) + " differs";
        }
      }
    }
  }
  return "";
}

float max_abs_diff(const Tensor& a, const Tensor& b) {
  if (!(a.shape() == b.shape())) {
    throw std::runtime_error("shape " + a.shape().to_string() + " vs " + b.shape().to_string());
  }
  float m = 0.0f;
  const int64_t n = std::min(a.numel(), b.numel());
  for (int64_t i = 0; i < n; ++i) {
    m = std::max(m, std::fabs(a.data_as<float>()[i] - b.data_as<float>()[i]));
  }
  return m;
}

float max_abs_diff(const std::vector<Tensor>& a, const std::vector<Tensor>& b) {
  float worst = 0.0f;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) worst = std::max(worst, max_abs_diff(a[i], b[i]));
  return worst;
}

int64_t planned_one_rank_weight_bytes(LocalEngine& engine, WeightQuantization quantization, bool quantize_lm_head) {
  const ModelConfig& config = engine.model().config;
  auto layout = stage_layout(static_cast<int>(config.num_hidden_layers), 1, 0);
  if (!layout.ok()) throw std::runtime_error(std::string(layout.status().message()));
  return planned_weight_bytes(config, 1, 1, *layout, quantization, quantize_lm_head);
}

std::vector<float> log_softmax_row(const Tensor& logits, int64_t row) {
  const int64_t vocab = logits.dim(1);
  const float* p = logits.data_as<float>() + row * vocab;
  double mx = *std::max_element(p, p + vocab), sum = 0;
  for (int64_t v = 0; v < vocab; ++v) sum += std::exp(double(p[v]) - mx);
  const double lse = mx + std::log(sum);
  std::vector<float> out(vocab);
  for (int64_t v = 0; v < vocab; ++v) out[v] = static_cast<float>(p[v] - lse);
  return out;
}

PromptLogprobRun run_prompt_logprobs(Engine& engine, const std::vector<std::vector<int32_t>>& prompts, int top,
                                     SamplingParams params) {
  PromptLogprobRun run;
  const size_t n = static_cast<size_t>(params.n);
  run.prompt_logprobs.assign(prompts.size(), std::vector<std::shared_ptr<const PromptLogprobs>>(n));
  run.times_carried.assign(prompts.size(), std::vector<int>(n, 0));
  run.carried_first.assign(prompts.size(), std::vector<bool>(n, false));
  run.ids.assign(prompts.size(), std::vector<std::vector<int32_t>>(n));
  run.finish_reasons.assign(prompts.size(), std::vector<FinishReason>(n, FinishReason::kNone));
  std::vector<std::vector<int>> outputs_seen(prompts.size(), std::vector<int>(n, 0));
  params.ignore_eos = true;
  const std::map<int64_t, size_t> index_of = submit_all(engine, prompts, params, top);
  while (engine.has_unfinished()) {
    auto outputs = engine.step();
    if (!outputs.ok()) throw std::runtime_error(std::string(outputs.status().message()));
    for (const SequenceOutput& o : *outputs) {
      auto known = index_of.find(o.request_id);
      if (known == index_of.end()) continue;  // another caller's request
      const size_t i = known->second;
      const size_t s = static_cast<size_t>(o.index);
      if (o.prompt_logprobs) {
        run.prompt_logprobs[i][s] = o.prompt_logprobs;
        ++run.times_carried[i][s];
        run.carried_first[i][s] = outputs_seen[i][s] == 0;
      }
      ++outputs_seen[i][s];
      run.ids[i][s].insert(run.ids[i][s].end(), o.token_ids.begin(), o.token_ids.end());
      if (o.finished) run.finish_reasons[i][s] = o.finish_reason;
    }
  }
  return run;
}

std::string check_prompt_logprobs(const PromptLogprobs& got, const std::vector<int32_t>& prompt, const Tensor& logits,
                                  int top, float tolerance) {
  if (got.size() != prompt.size()) {
    return "got " + std::to_string(got.size()) + " positions for a prompt of " + std::to_string(prompt.size());
  }
  if (got[0].token != prompt[0] || !std::isnan(got[0].logprob) || got[0].rank != 0 || !got[0].top_logprobs.empty()) {
    return "position 0 is not empty";
  }
  for (size_t p = 1; p < prompt.size(); ++p) {
    const std::vector<float> ref = log_softmax_row(logits, static_cast<int64_t>(p) - 1);
    const PromptLogprob& e = got[p];
    const std::string at = "position " + std::to_string(p) + ": ";
    if (e.token != prompt[p]) return at + "token " + std::to_string(e.token);
    if (!(std::fabs(e.logprob - ref[prompt[p]]) < tolerance)) {
      return at + "logprob " + std::to_string(e.logprob) + ", reference " + std::to_string(ref[prompt[p]]);
    }
    int64_t surely_larger = 0, maybe_larger = 0;
    for (float v : ref) {
      surely_larger += v > ref[prompt[p]] + tolerance;
      maybe_larger += v > ref[prompt[p]] - tolerance;
    }
    if (e.rank < surely_larger + 1 || e.rank > maybe_larger + 1) return at + "rank " + std::to_string(e.rank);
    if (static_cast<int>(e.top_logprobs.size()) != top) return at + std::to_string(e.top_logprobs.size()) + " alternatives";
    std::vector<float> sorted = ref;
    std::sort(sorted.begin(), sorted.end(), std::greater<float>());
    for (size_t j = 0; j < e.top_logprobs.size(); ++j) {
      const auto& [id, lp] = e.top_logprobs[j];
      if (!(std::fabs(lp - ref[id]) < tolerance)) return at + "alternative " + std::to_string(id) + " logprob";
      if (!(std::fabs(lp - sorted[j]) < tolerance)) return at + "alternative " + std::to_string(j) + " is not the next most likely";
      if (j > 0 && lp > e.top_logprobs[j - 1].second) return at + "alternatives not in descending order";
    }
  }
  return "";
}

}  // namespace weft::golden
