// The KV tiers under a real MPI job: `mpirun -np T*P mpi_kv_tiers_check MODEL T P [disk]`; with
// `disk`, the disk tier's checks (mpi_kv_disk_check.cpp). The host tier: a pool
// too small to keep a shared prefix, with --kv-offload-bytes on every rank: the coordinator's
// save / restore / drop instructions ride in the step plans and every rank copies its own slice
// (its layers, its KV heads). The tokens and logprobs must equal a single-process engine without
// prefix caching, and the prefix must come back from the host tier rather than be recomputed.
// Rank 0 prints "N passed, M failed" and the job exits non-zero on any failure.
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>

#include "engine/distributed_engine.h"
#include "kv_tier_workload.h"
#include "mpi_check_util.h"
#include "mpi_kv_tier_check.h"

namespace weft {

golden::TierRuns reference_tier_runs(const TierCheck& check, bool with_fillers) {
  LocalEngineOptions plain_options = check.options.engine;
  plain_options.kv.max_blocks = 256;
  plain_options.kv_tiers = {};
  plain_options.scheduler.enable_prefix_caching = false;
  auto plain = LocalEngine::create(plain_options);
  if (!plain.ok()) throw std::runtime_error("single-process engine: " + std::string(plain.status().message()));
  return golden::run_tier_workload((*plain)->engine(), check.w, with_fillers);
}

int check_host_tier(MpiWorld& world_ref, const TierCheck& check) {
  MpiWorld* world = &world_ref;
  const std::string& name = check.name;
  const golden::TierWorkload& w = check.w;
  DistributedOptions options = check.options;
  options.engine.kv_tiers.host_bytes = 16 << 20;
  auto created = DistributedEngine::create(*world, options);
  if (!created.ok()) {
    std::fprintf(stderr, "rank %d: %s\n", world->rank(), std::string(created.status().message()).c_str());
    return 1;
  }
  DistributedEngine& engine = **created;
  if (serve_unless_coordinator(*world, engine)) return 0;

  Checks checks;
  try {
    {
      const golden::TierRuns expected = reference_tier_runs(check, /*with_fillers=*/true);
      const golden::TierRuns runs = golden::run_tier_workload(engine.engine(), w);
      const std::string diff = golden::compare_tier_runs(runs, expected);
      checks.expect(diff.empty(), name + " with the host tier vs one process without caching: " + diff);
      const KvTierStats& s = engine.engine().kv_tiers()->stats();
      checks.expect(s.restored_blocks > 0, "no block was restored from the host tier");
      checks.expect(runs.second_prefilled ==
                        static_cast<int64_t>(w.second.size()) - w.shared_blocks * golden::kTierBlock,
                    "second prompt prefilled " + std::to_string(runs.second_prefilled) + " tokens");
      std::printf("%s tp=%d pp=%d: %lld blocks saved, %lld restored, %lld dropped; second prompt %zu tokens, %lld "
                  "prefilled\n",
                  name.c_str(), options.tp, options.pp, static_cast<long long>(s.saved_blocks),
                  static_cast<long long>(s.restored_blocks), static_cast<long long>(s.dropped_blocks),
                  w.second.size(), static_cast<long long>(runs.second_prefilled));
    }
  } catch (const std::exception& e) {
    checks.expect(false, e.what());
  }
  absl::Status s = engine.shutdown();
  checks.expect(s.ok(), "shutdown: " + std::string(s.message()));
  std::printf("%s tp=%d pp=%d kv tiers: %d passed, %d failed\n", name.c_str(), options.tp, options.pp, checks.passed,
              checks.failed);
  return checks.failed == 0 ? 0 : 1;
}

namespace {

int run(int argc, char** argv) {
  const bool disk = argc == 5 && std::string(argv[4]) == "disk";
  if (argc != 4 && !disk) {
    std::fprintf(stderr, "usage: mpi_kv_tiers_check MODEL TP PP [disk]\n");
    return 2;
  }
  std::unique_ptr<MpiWorld> world = init_world_or_report(&argc, &argv);
  if (world == nullptr) return 1;
  TierCheck check;
  check.name = argv[1];
  check.layout = check.name + " tp=" + argv[2] + " pp=" + argv[3];
  check.w = golden::tier_workload(golden::load_reference(check.name));
  DistributedOptions& options = check.options;
  options.engine.model_dir = golden::model_dir(check.name);
  options.engine.num_threads = 1;
  options.engine.kv.block_size = golden::kTierBlock;
  options.engine.kv.dtype = DType::kF32;
  options.engine.kv.max_blocks = golden::tight_tier_blocks(check.w);
  options.tp = std::atoi(argv[2]);
  options.pp = std::atoi(argv[3]);
  return disk ? check_disk_tier(*world, check) : check_host_tier(*world, check);
}

}  // namespace
}  // namespace weft

int main(int argc, char** argv) { return weft::run(argc, argv); }
