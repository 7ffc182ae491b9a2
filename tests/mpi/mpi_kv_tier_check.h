// Shared by the KV tier checks of one program (`mpirun -np T*P mpi_kv_tiers_check MODEL T P
// [disk]`): the job's options (a pool too small to keep the workload's shared prefix, F32 KV in
// blocks of golden::kTierBlock, one thread) and the single-process reference.
#pragma once

#include <string>

#include "engine/distributed_engine.h"
#include "kv_tier_workload.h"
#include "parallel/mpi_world.h"

namespace weft {

struct TierCheck {
  std::string name;    // the golden model
  std::string layout;  // "MODEL tp=T pp=P", for messages
  golden::TierWorkload w;
  DistributedOptions options;  // no tiers yet: each check adds its own
};

// The workload's runs (with or without the fillers) by a single-process engine without prefix
// caching, which every tiered job must equal.
golden::TierRuns reference_tier_runs(const TierCheck& check, bool with_fillers);

// The host tier over the job (mpi_kv_tiers_check.cpp) / the disk tier (mpi_kv_disk_check.cpp).
// Every rank calls; rank 0 prints "N passed, M failed"; the result is the process's exit code.
int check_host_tier(MpiWorld& world, const TierCheck& check);
int check_disk_tier(MpiWorld& world, const TierCheck& check);

}  // namespace weft
