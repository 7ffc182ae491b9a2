// The golden models under a real MPI job: `mpirun -np T*P mpi_golden_check MODEL T P [EP]` must give
// transformers' greedy tokens and logits within the single-rank tolerance, for the four prompts
// batched together with chunked prefill, and every rank must hold only its share of the weights.
// Rank 0 prints "N passed, M failed" and the job exits non-zero on any failure.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "engine/distributed_engine.h"
#include "golden_harness.h"
#include "mpi_check_util.h"
#include "model/weight_plan.h"
#include "parallel/world_agreement.h"

namespace weft {
namespace {

using golden::Reference;

constexpr float kTolerance = 2e-3f;  // the single-rank golden tolerance (tests/golden)


// Prompt logprobs (Request::prompt_logprobs) of the four prompts batched, prefill only and then
// followed by greedy tokens, against log_softmax of transformers' prompt logits.
void check_prompt_logprobs(Engine& engine, const Reference& ref, const std::string& what, Checks& checks) {
  for (int max_tokens : {0, 8}) {
    SamplingParams params;
    params.temperature = 0.0f;
    params.max_tokens = max_tokens;
    const golden::PromptLogprobRun run = golden::run_prompt_logprobs(engine, ref.prompts, 3, params);
    for (int i = 0; i < golden::kNumPrompts; ++i) {
      const std::string where = what + " prompt " + std::to_string(i) + " prompt logprobs, max_tokens " +
                                std::to_string(max_tokens);
      const auto& got = run.prompt_logprobs[i][0];
      const std::string diff = got == nullptr ? "none reported"
                                              : golden::check_prompt_logprobs(*got, ref.prompts[i], ref.prompt_logits[i],
                                                                              3, 2 * kTolerance);
      checks.expect(diff.empty(), where + ": " + diff);
      const std::vector<int32_t> expected(ref.greedy_ids[i].begin(), ref.greedy_ids[i].begin() + max_tokens);
      checks.expect(run.ids[i][0] == expected, where + ": greedy tokens after them");
    }
  }
}

int run(int argc, char** argv) {
  if (argc < 4 || argc > 6) {
    std::fprintf(stderr, "usage: mpi_golden_check MODEL TP PP [EP [ngram|draft]]\n");
    return 2;
  }
  // With a speculation method: the greedy checks only, speculating (the model drafts for itself).
  const std::string speculative = argc == 6 ? argv[5] : "";
  const std::string name = argv[1];
  std::unique_ptr<MpiWorld> world = init_world_or_report(&argc, &argv);
  if (world == nullptr) return 1;
  DistributedOptions options =
      golden_job_options(golden::model_dir(name), std::atoi(argv[2]), std::atoi(argv[3]));
  options.ep = argc >= 5 ? std::atoi(argv[4]) : 1;
  if (!speculative.empty()) {
    auto method = parse_speculative_method(speculative);
    if (!method.ok()) {
      std::fprintf(stderr, "%s\n", std::string(method.status().message()).c_str());
      return 2;
    }
    options.engine.speculative.method = *method;
    options.engine.speculative.draft_model = options.engine.model_dir;
    options.engine.speculative.engine.adaptive = false;
  }
  auto created = DistributedEngine::create(*world, options);
  if (!created.ok()) {
    std::fprintf(stderr, "rank %d: %s\n", world->rank(), std::string(created.status().message()).c_str());
    return 1;
  }
  DistributedEngine& engine = **created;

  // Every rank reports its weight bytes to rank 0.
  const ModelConfig& config = engine.model().config;
  // model/weight_plan.h, computed from the config, against the tensors the rank loaded.
  auto sizes = gather_weight_bytes(*world, engine, options.ep, WeightQuantization::kNone);
  if (serve_unless_coordinator(*world, engine)) return 0;

  Checks checks;
  expect_planned_bytes(sizes, checks);
  try {
    const Reference ref = golden::load_reference(name);
    if (!speculative.empty()) {
      // Guesses ride in the plan to every stage as tokens; the coordinator verifies the last
      // stage's rows (argmax tokens without logprobs, gathered rows with).
      for (bool with_logprobs : {true, false}) {
        golden::GreedyRun run = golden::greedy(engine.engine(), ref.prompts, golden::kGreedyTokens, with_logprobs);
        for (int i = 0; i < golden::kNumPrompts; ++i) {
          checks.expect(run.ids[i] == ref.greedy_ids[i], name + " prompt " + std::to_string(i) +
                                                             " greedy tokens, speculating (" + speculative + ")");
        }
      }
      // A prompt-logprobs request's prefill chunks (every row wanted) never carry guesses; its
      // decode steps do, and its tokens stay the greedy ones.
      check_prompt_logprobs(engine.engine(), ref, name + " speculating", checks);
      const SpeculationStats& stats = engine.engine().speculation_stats();
      checks.expect(stats.num_drafts > 0 || speculative == "ngram", "no guesses were verified");
      checks.expect(speculative != "draft" || stats.acceptance_rate() > 0.9,
                    "self-draft acceptance " + std::to_string(stats.acceptance_rate()));
      checks.expect(engine.engine().blocks().num_free_blocks() == engine.engine().blocks().num_blocks(),
                    "KV blocks left held after the runs");
      absl::Status s = engine.shutdown();
      checks.expect(s.ok(), "shutdown: " + std::string(s.message()));
      std::printf("%s tp=%d pp=%d speculating (%s): %d passed, %d failed; %lld guesses, acceptance %.3f\n",
                  name.c_str(), options.tp, options.pp, speculative.c_str(), checks.passed, checks.failed,
                  static_cast<long long>(stats.num_draft_tokens), stats.acceptance_rate());
      return checks.failed == 0 ? 0 : 1;
    }
    for (int64_t budget : {4096, 7}) {
      auto logits = golden::score_prompts(engine.executor(), engine.kv_cache().num_blocks(),
                                          engine.kv_cache().shape().block_size, config.vocab_size,
                                          ref.prompts, budget);
      for (int i = 0; i < golden::kNumPrompts; ++i) {
        const float diff = golden::max_abs_diff(logits[i], ref.prompt_logits[i]);
        checks.expect(diff < kTolerance, name + " prompt " + std::to_string(i) + " budget " +
                                             std::to_string(budget) + ": max |logit diff| " +
                                             std::to_string(diff));
      }
    }
    // With logprobs the coordinator samples from gathered logits; without, the last stage takes
    // the argmax shard by shard and returns only tokens.
    for (bool with_logprobs : {true, false}) {
      golden::GreedyRun run = golden::greedy(engine.engine(), ref.prompts, golden::kGreedyTokens, with_logprobs);
      for (int i = 0; i < golden::kNumPrompts; ++i) {
        checks.expect(run.ids[i] == ref.greedy_ids[i],
                      name + " prompt " + std::to_string(i) + " greedy tokens" +
                          (with_logprobs ? "" : " (argmax on the last stage)"));
      }
    }
    // Prompt logprobs: every row of the prefill chunks gathered from the last stage.
    check_prompt_logprobs(engine.engine(), ref, name, checks);
    // Seeded top-k sampling and greedy with logprobs: the last stage returns each row's
    // candidates (and log-sum-exp) merged over its TP group, and tokens and logprobs equal those
    // from the full gathered logits.
    for (const SamplingParams& params : {golden::top_k_sampling_params(), golden::greedy_logprobs_params()}) {
      const std::string what = name + (params.is_greedy() ? " greedy with logprobs" : " top-k sampling");
      const golden::CandidateSamplingRuns runs =
          golden::sample_both_ways(engine.engine(), ref.prompts, golden::kGreedyTokens, params);
      checks.expect(runs.candidate_rows.candidates == golden::kNumPrompts * golden::kGreedyTokens &&
                        runs.candidate_rows.full_logits == 0 && runs.full_rows.candidates == 0,
                    what + " rows: " + std::to_string(runs.candidate_rows.candidates) + " from candidates, " +
                        std::to_string(runs.full_rows.full_logits) + " from full logits");
      const std::string diff = golden::compare_runs(runs.from_candidates, runs.full, 1e-5f);
      checks.expect(diff.empty(), what + " from candidates vs full logits: " + diff);
    }
  } catch (const std::exception& e) {
    checks.expect(false, e.what());
  }
  absl::Status s = engine.shutdown();
  checks.expect(s.ok(), "shutdown: " + std::string(s.message()));
  std::printf("%s tp=%d pp=%d ep=%d: %d passed, %d failed\n", name.c_str(), options.tp, options.pp,
              options.ep, checks.passed, checks.failed);
  return checks.failed == 0 ? 0 : 1;
}

}  // namespace
}  // namespace weft

int main(int argc, char** argv) { return weft::run(argc, argv); }
