#include "kv_tier_workload.h"

#include <algorithm>

namespace weft::golden {

TierWorkload tier_workload(const Reference& ref) {
  TierWorkload w;
  std::vector<int32_t> shared = ref.prompts[3];
  shared.insert(shared.end(), ref.prompts[2].begin(), ref.prompts[2].end());
  w.first = w.second = shared;
  w.first.insert(w.first.end(), ref.prompts[1].begin(), ref.prompts[1].end());
  w.second.insert(w.second.end(), ref.prompts[0].begin(), ref.prompts[0].end());
  size_t common = 0;
  while (common < w.first.size() && common < w.second.size() && w.first[common] == w.second[common]) ++common;
  w.shared_blocks = static_cast<int64_t>(std::min(common, w.second.size() - 1)) / kTierBlock;
  w.fillers = ref.prompts;
  return w;
}

int64_t tight_tier_blocks(const TierWorkload& w) {
  return static_cast<int64_t>((std::max(w.first.size(), w.second.size()) + kTierTokens + kTierBlock - 1) /
                              kTierBlock) +
         2;
}

TierRuns run_tier_workload(Engine& engine, const TierWorkload& w, bool with_fillers) {
  TierRuns r;
  r.phases.push_back(greedy(engine, {w.first}, kTierTokens));
  if (with_fillers) {
    for (const auto& f : w.fillers) r.phases.push_back(greedy(engine, {f}, kTierTokens));
  }
  const int64_t before = engine.num_prefilled_tokens();
  r.phases.push_back(greedy(engine, {w.second}, kTierTokens));
  r.second_prefilled = engine.num_prefilled_tokens() - before;
  return r;
}

std::string compare_tier_runs(const TierRuns& got, const TierRuns& expected) {
  if (got.phases.size() != expected.phases.size()) return "a different number of phases";
  for (size_t i = 0; i < got.phases.size(); ++i) {
    if (got.phases[i].ids != expected.phases[i].ids) return "phase " + std::to_string(i) + ": other tokens";
    const std::string diff = compare_runs(got.phases[i], expected.phases[i], 1e-4f);
    if (!diff.empty()) return "phase " + std::to_string(i) + ": " + diff;
  }
  return "";
}

}  // namespace weft::golden
