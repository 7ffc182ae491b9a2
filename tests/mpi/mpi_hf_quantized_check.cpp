// A Hugging Face quantized checkpoint (tests/golden/models/ct_*) under a real MPI job:
// `mpirun -np TP mpi_hf_quantized_check MODEL TP`. Each rank cuts its shard of the weights as weft
// holds them (int4 blocks cut only at group edges, int8 rows with their scales); the job's logits
// and greedy tokens / top-5 logprobs must match transformers' float32 forward within the
// tolerances of tests/golden/hf_quantized_checks.h, and every rank must hold its planned bytes.
#include <cstdio>
#include <cstdlib>
#include <string>

#include "engine/distributed_engine.h"
#include "golden_harness.h"
#include "hf_quantized_checks.h"
#include "mpi_check_util.h"

namespace weft {
namespace {

int run(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: mpi_hf_quantized_check MODEL TP\n");
    return 2;
  }
  const std::string name = argv[1];
  std::unique_ptr<MpiWorld> world = init_world_or_report(&argc, &argv);
  if (world == nullptr) return 1;
  const DistributedOptions options = golden_job_options(golden::model_dir(name), std::atoi(argv[2]), 1);
  auto created = DistributedEngine::create(*world, options);
  if (!created.ok()) {
    std::fprintf(stderr, "rank %d: %s\n", world->rank(), std::string(created.status().message()).c_str());
    return 1;
  }
  DistributedEngine& engine = **created;
  auto sizes = gather_weight_bytes(*world, engine, 1, WeightQuantization::kNone);
  if (serve_unless_coordinator(*world, engine)) return 0;

  Checks checks;
  expect_planned_bytes(sizes, checks);
  try {
    const golden::Reference ref = golden::load_reference(name);
    const golden::QuantizedTolerance tolerance = golden::quantized_tolerance(engine.model().config.checkpoint_quantization);
    auto logits = golden::score_prompts(engine.executor(), engine.kv_cache().num_blocks(),
                                        engine.kv_cache().shape().block_size,
                                        engine.model().config.vocab_size, ref.prompts, 7);
    const float worst_logit = golden::max_abs_diff(logits, ref.prompt_logits);
    checks.expect(worst_logit < tolerance.logits,
                  name + ": max |logit diff| " + std::to_string(worst_logit));
    const golden::GreedyRun run = golden::greedy(engine.engine(), ref.prompts, golden::kGreedyTokens);
    int compared = 0;
    float worst_logprob = 0;
    for (const std::string& f :
         golden::compare_greedy_to_reference(run, ref, tolerance, &compared, &worst_logprob)) {
      checks.expect(false, name + " " + f);
    }
    checks.expect(compared >= 4 * golden::kNumPrompts,
                  name + ": only " + std::to_string(compared) + " greedy steps compared");
    std::printf("%s tp=%d: max |logit diff| %.4g, %d greedy steps compared, max top-5 |logprob "
                "diff| %.4g\n",
                name.c_str(), options.tp, worst_logit, compared, worst_logprob);
  } catch (const std::exception& e) {
    checks.expect(false, e.what());
  }
  absl::Status s = engine.shutdown();
  checks.expect(s.ok(), "shutdown: " + std::string(s.message()));
  std::printf("%s tp=%d: %d passed, %d failed\n", name.c_str(), options.tp, checks.passed,
              checks.failed);
  return checks.failed == 0 ? 0 : 1;
}

}  // namespace
}  // namespace weft

int main(int argc, char** argv) { return weft::run(argc, argv); }
