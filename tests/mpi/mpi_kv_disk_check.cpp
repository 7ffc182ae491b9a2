// The disk KV tier under a real MPI job: `mpirun -np T*P mpi_kv_tiers_check MODEL T P disk`. Every
// rank keeps its own disk tier (its layers, its KV heads) in its own directory under one
// --kv-disk-cache; the coordinator plans a disk hit only once every rank has loaded the block.
// Several jobs run one after another in the same world over the same directory (each a fresh
// DistributedEngine: fresh disk tiers that index what the earlier jobs wrote):
//   1. writer: a pool too small to keep the shared prefix and no host tier, so the part of the
//      prefix the fillers pushed out comes back from disk within the job;
//   2. reader: a fresh job restores the prefix from disk;
//   3. the last rank's file of the prefix's first block has a byte flipped: the prefix is a miss
//      on every rank (recomputed), the corruption counted on that rank;
//   4. rank 1's file of the prefix's second block is deleted: the first block is restored, the
//      rest recomputed on every rank;
//   5. the last rank's directory is locked by another holder: the job runs without a disk tier
//      on every rank.
// Each job's tokens and logprobs must equal a single-process engine without prefix caching, and
// its KV blocks must all be free once it is idle. Rank 0 prints "N passed, M failed"; the job
// exits non-zero on any failure.
#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>

#include "engine/distributed_engine.h"
#include "kv_tier_workload.h"
#include "mpi_check_util.h"
#include "mpi_kv_tier_check.h"

namespace weft {
namespace {

namespace fs = std::filesystem;

// What a rank's disk tier counted in one job ("hits corrupt absent"; zeros without one).
std::string disk_counts(const DistributedEngine& engine) {
  const KvDiskTierStats s = engine.kv_disk() != nullptr ? engine.kv_disk()->stats() : KvDiskTierStats{};
  return std::to_string(s.hits) + " " + std::to_string(s.misses_corrupt) + " " + std::to_string(s.misses_absent);
}

struct RankCounts {
  long long hits = 0, corrupt = 0, absent = 0;
};
RankCounts parse_counts(const std::string& s) {
  RankCounts c;
  std::sscanf(s.c_str(), "%lld %lld %lld", &c.hits, &c.corrupt, &c.absent);
  return c;
}

void flip_last_byte(const fs::path& file) {
  std::fstream f(file, std::ios::in | std::ios::out | std::ios::binary);
  f.seekg(-1, std::ios::end);
  char c = 0;
  f.get(c);
  f.seekp(-1, std::ios::end);
  f.put(static_cast<char>(c ^ 0x5a));
}

}  // namespace

int check_disk_tier(MpiWorld& world_ref, const TierCheck& check) {
  MpiWorld* world = &world_ref;
  const int last_rank = world->size() - 1;
  const golden::TierWorkload& w = check.w;
  const std::string& layout = check.layout;

  std::string dir_name;
  if (world->rank() == 0) {
    const fs::path dir = fs::temp_directory_path() / ("weft_mpi_kv_disk_" + check.name + "_tp" +
                                                      std::to_string(check.options.tp) + "_pp" +
                                                      std::to_string(check.options.pp) + "_" + std::to_string(::getpid()));
    fs::remove_all(dir);
    dir_name = dir.string();
  }
  if (!world->broadcast_bytes(dir_name, 0).ok()) return 1;
  const fs::path dir = dir_name;
  DistributedOptions options = check.options;
  options.engine.kv_tiers.disk_dir = dir;  // and no host tier: whatever the pool loses comes from disk

  Checks checks;
  golden::TierRuns expected_full, expected_short;
  if (world->rank() == 0) {
    try {
      expected_full = reference_tier_runs(check, /*with_fillers=*/true);
      expected_short = reference_tier_runs(check, /*with_fillers=*/false);
    } catch (const std::exception& e) {
      world->abort(1, e.what());
    }
  }
  // The files of the shared prefix's first two blocks (on the rank that asks).
  const uint64_t hash0 = BlockManager::hash_block(BlockManager::kRootHash, w.first.data(), golden::kTierBlock);
  const uint64_t hash1 = BlockManager::hash_block(hash0, w.first.data() + golden::kTierBlock, golden::kTierBlock);
  fs::path file0, file1;

  // One job: every rank creates the engine, the coordinator runs the workload and `verify`s the
  // tier statistics, the others serve; then each rank's disk counts reach rank 0.
  auto job = [&](const std::string& what, bool with_fillers,
                 const std::function<void(const KvTierDirectory&, const std::vector<RankCounts>&)>& verify) {
    std::vector<RankCounts> counts;
    {
      auto created = DistributedEngine::create(*world, options);
      if (!created.ok()) {
        std::fprintf(stderr, "rank %d: %s: %s\n", world->rank(), what.c_str(),
                     std::string(created.status().message()).c_str());
        world->abort(1, "create failed");
      }
      DistributedEngine& engine = **created;
      if (engine.kv_disk() != nullptr) {
        file0 = engine.kv_disk()->path_of(hash0);
        file1 = engine.kv_disk()->path_of(hash1);
      }
      golden::TierRuns runs;
      if (!serve_unless_coordinator(*world, engine)) {
        try {
          runs = golden::run_tier_workload(engine.engine(), w, with_fillers);
          const std::string diff = golden::compare_tier_runs(runs, with_fillers ? expected_full : expected_short);
          checks.expect(diff.empty(), layout + " " + what + ": vs one process without caching: " + diff);
          checks.expect(engine.engine().blocks().num_free_blocks() == engine.engine().blocks().num_blocks(),
                        layout + " " + what + ": KV blocks left held");
        } catch (const std::exception& e) {
          checks.expect(false, layout + " " + what + ": " + e.what());
        }
        const absl::Status s = engine.shutdown();
        checks.expect(s.ok(), "shutdown: " + std::string(s.message()));
      }
      auto gathered = world->gather_bytes(disk_counts(engine), 0);
      if (!gathered.ok()) world->abort(1, "gather failed");
      for (const std::string& c : *gathered) counts.push_back(parse_counts(c));
      if (engine.is_coordinator()) {
        const KvTierDirectory& tiers = *engine.engine().kv_tiers();
        verify(tiers, counts);
        std::printf("%s %s: second prompt prefilled %lld of %zu tokens; %s\n", layout.c_str(), what.c_str(),
                    static_cast<long long>(runs.second_prefilled), w.second.size(), kv_tier_summary(tiers).c_str());
      }
    }  // every rank's engine (and disk tier: its writes finished, its lock released) is gone
  };

  job("writer", true, [&](const KvTierDirectory& t, const std::vector<RankCounts>&) {
    checks.expect(t.has_disk() && t.agrees_disk_hits(), layout + " writer: no agreed disk tier");
    checks.expect(t.stats().persisted_blocks > 0, layout + " writer: nothing persisted");
    checks.expect(t.stats().disk_hit_blocks > 0, layout + " writer: the shared prefix did not come back from disk");
  });
  job("fresh reader", false, [&](const KvTierDirectory& t, const std::vector<RankCounts>& c) {
    checks.expect(t.stats().disk_hit_blocks >= w.shared_blocks, layout + " reader: no disk hits");
    checks.expect(t.agreement_stats()->refused == 0, layout + " reader: a load was refused");
    for (size_t r = 0; r < c.size(); ++r) {
      checks.expect(c[r].hits > 0, layout + " reader: rank " + std::to_string(r) + " loaded nothing");
    }
  });

  // Corrupt the last rank's copy of the first block: no rank may use the prefix.
  if (world->rank() == last_rank) flip_last_byte(file0);
  job("corrupt on the last rank", false, [&](const KvTierDirectory& t, const std::vector<RankCounts>& c) {
    checks.expect(t.stats().disk_hit_blocks == 0, layout + " corrupt: " + std::to_string(t.stats().disk_hit_blocks) +
                                                      " disk hits, expected none");
    checks.expect(t.agreement_stats()->refused >= 1, layout + " corrupt: no load refused");
    checks.expect(c[last_rank].corrupt >= 1, layout + " corrupt: the last rank counted no corrupt file");
  });

  // Delete rank 1's copy of the second block: the first block alone comes back.
  if (world->rank() == 1) fs::remove(file1);
  job("second block deleted on rank 1", false, [&](const KvTierDirectory& t, const std::vector<RankCounts>& c) {
    checks.expect(t.stats().disk_hit_blocks == 1, layout + " deleted: " + std::to_string(t.stats().disk_hit_blocks) +
                                                      " disk hits, expected 1");
    checks.expect(t.agreement_stats()->refused >= 1, layout + " deleted: no load refused");
    checks.expect(c[1].absent >= 1, layout + " deleted: rank 1 counted no absent file");
  });

  // Another holder of the last rank's lock: that rank cannot open its tier, so no rank has one.
  int lock_fd = -1;
  if (world->rank() == last_rank) {
    lock_fd = ::open((file0.parent_path() / "lock").c_str(), O_RDWR | O_CLOEXEC);
    if (lock_fd < 0 || ::flock(lock_fd, LOCK_EX | LOCK_NB) != 0) world->abort(1, "cannot take the lock");
  }
  job("last rank's directory locked", false, [&](const KvTierDirectory& t, const std::vector<RankCounts>& c) {
    checks.expect(!t.has_disk(), layout + " locked: the coordinator kept a disk tier");
    for (size_t r = 0; r < c.size(); ++r) {
      checks.expect(c[r].hits == 0, layout + " locked: rank " + std::to_string(r) + " used its disk tier");
    }
  });
  if (lock_fd >= 0) ::close(lock_fd);

  if (world->rank() != 0) return 0;
  fs::remove_all(dir);
  std::printf("%s kv disk: %d passed, %d failed\n", layout.c_str(), checks.passed, checks.failed);
  return checks.failed == 0 ? 0 : 1;
}

}  // namespace weft
