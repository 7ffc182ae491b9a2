// The workload the KV-tier checks run (tests/golden/kv_tiers_test.cpp, tests/mpi/
// mpi_kv_tiers_check.cpp): a long shared prefix (prompt 3 + prompt 2), `first` and `second`
// continuing it differently, and fillers (the plain prompts) that push the prefix out of a small
// pool between them. Greedy, kTierTokens per request, blocks of kTierBlock tokens.
#pragma once

#include <string>
#include <vector>

#include "golden_harness.h"

namespace weft::golden {

inline constexpr int kTierBlock = 4;
inline constexpr int kTierTokens = 12;

struct TierWorkload {
  std::vector<int32_t> first, second;
  std::vector<std::vector<int32_t>> fillers;
  int64_t shared_blocks = 0;  // full blocks of second's prompt shared with first (at most len - 1 tokens)
};
TierWorkload tier_workload(const Reference& ref);

// Enough pool blocks for first or second with its output, too few for the prefix to survive the
// fillers.
int64_t tight_tier_blocks(const TierWorkload& w);

// first, then (with_fillers) each filler alone, then second: one GreedyRun per phase, and the
// prompt tokens the engine computed for second.
struct TierRuns {
  std::vector<GreedyRun> phases;
  int64_t second_prefilled = 0;
};
TierRuns run_tier_workload(Engine& engine, const TierWorkload& w, bool with_fillers = true);

// Empty when every phase has the same tokens and logprobs within 1e-4; else what differs first.
std::string compare_tier_runs(const TierRuns& got, const TierRuns& expected);

}  // namespace weft::golden
