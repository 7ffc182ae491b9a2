// Shared by the multi-rank check programs (mpi_golden_check, mpi_quantized_check): a pass/fail
// tally printed by rank 0, the check that every rank holds the weight bytes its plan says, and
// the non-coordinator ranks' serving loop.
#pragma once

#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/distributed_engine.h"
#include "model/weight_plan.h"
#include "parallel/mpi_world.h"

namespace weft {

// MpiWorld::init, or null after printing why the world could not start.
inline std::unique_ptr<MpiWorld> init_world_or_report(int* argc, char*** argv) {
  auto world = MpiWorld::init(argc, argv);
  if (!world.ok()) {
    std::fprintf(stderr, "%s\n", std::string(world.status().message()).c_str());
    return nullptr;
  }
  return *std::move(world);
}

// The job the golden checks run: one thread per rank, F32 KV in blocks of 4, 128 blocks.
inline DistributedOptions golden_job_options(const std::filesystem::path& model_dir, int tp, int pp) {
  DistributedOptions options;
  options.engine.model_dir = model_dir;
  options.engine.num_threads = 1;
  options.engine.kv.block_size = 4;
  options.engine.kv.dtype = DType::kF32;
  options.engine.kv.max_blocks = 128;
  options.tp = tp;
  options.pp = pp;
  return options;
}

struct Checks {
  int passed = 0;
  int failed = 0;
  void expect(bool ok, const std::string& what) {
    (ok ? passed : failed)++;
    if (!ok) std::fprintf(stderr, "FAILED: %s\n", what.c_str());
  }
};

// Collective (every rank calls it): gathers on rank 0 each rank's loaded weight bytes and what
// model/weight_plan.h computes for its place in the job from the config.
inline absl::StatusOr<std::vector<std::string>> gather_weight_bytes(
    MpiWorld& world, DistributedEngine& engine, int expert_parallel, WeightQuantization quantization) {
  const int64_t held = static_cast<int64_t>(engine.model().model->weight_bytes());
  const int64_t planned = planned_weight_bytes(engine.model().config, engine.world_config().tp,
                                               expert_parallel, engine.model().model->layout(),
                                               quantization);
  return world.gather_bytes(std::to_string(held) + " " + std::to_string(planned), 0);
}

// Ranks other than the coordinator serve the coordinator's steps until it shuts down (aborting
// the job on an error) and return true; the coordinator returns false at once.
inline bool serve_unless_coordinator(MpiWorld& world, DistributedEngine& engine) {
  if (engine.is_coordinator()) return false;
  const absl::Status s = engine.serve();
  if (!s.ok()) world.abort(1, std::string(s.message()));
  return true;
}

// On rank 0: one check per rank that it holds what was planned.
inline void expect_planned_bytes(const absl::StatusOr<std::vector<std::string>>& sizes, Checks& checks) {
  checks.expect(sizes.ok(), "gathering weight bytes: " + std::string(sizes.status().message()));
  for (size_t r = 0; sizes.ok() && r < sizes->size(); ++r) {
    long long h = 0, e = 0;
    std::sscanf((*sizes)[r].c_str(), "%lld %lld", &h, &e);
    checks.expect(h == e, "rank " + std::to_string(r) + " holds " + std::to_string(h) +
                              " weight bytes, expected " + std::to_string(e));
  }
}

}  // namespace weft
