#include "engine/speculative/ngram_proposer.h"

#include <algorithm>

namespace weft {

std::vector<int32_t> NgramProposer::lookup(std::span<const int32_t> tokens, int min_n, int max_n,
                                           int max_tokens) {
  const int64_t len = static_cast<int64_t>(tokens.size());
  for (int64_t n = std::min<int64_t>(max_n, len - 1); n >= min_n; --n) {
    const int32_t* suffix = tokens.data() + len - n;
    // Most recent occurrence starting at i < len - n (so at least one token follows it).
    for (int64_t i = len - n - 1; i >= 0; --i) {
      if (!std::equal(suffix, suffix + n, tokens.data() + i)) continue;
      const int64_t from = i + n;
      const int64_t count = std::min<int64_t>(max_tokens, len - from);
      return std::vector<int32_t>(tokens.begin() + from, tokens.begin() + from + count);
    }
  }
  return {};
}

absl::StatusOr<std::vector<Proposal>> NgramProposer::propose(std::span<const ProposalRequest> requests) {
  std::vector<Proposal> out(requests.size());
  std::vector<int32_t> tokens;
  for (size_t r = 0; r < requests.size(); ++r) {
    const ProposalRequest& req = requests[r];
    tokens.assign(req.prompt_ids.begin(), req.prompt_ids.end());
    tokens.insert(tokens.end(), req.output_ids.begin(), req.output_ids.end());
    out[r].tokens = lookup(tokens, min_n_, max_n_, req.max_tokens);
  }
  return out;
}

}  // namespace weft
