// Helpers of the KV tier unit tests: a block's tokens, and a list of tier instructions as
// (kind, hash) pairs to compare with what a test expects.
#pragma once

#include <cstdint>
#include <numeric>
#include <utility>
#include <vector>

#include "kv/kv_transfer.h"

namespace weft {

// Tokens first, first + 1, ... (n of them).
inline std::vector<int32_t> tokens_of(int first, int n = 4) {
  std::vector<int32_t> t(n);
  std::iota(t.begin(), t.end(), first);
  return t;
}

inline std::vector<std::pair<KvTransfer::Kind, uint64_t>> kinds(const std::vector<KvTransfer>& ts) {
  std::vector<std::pair<KvTransfer::Kind, uint64_t>> out;
  for (const KvTransfer& t : ts) out.emplace_back(t.kind, t.hash);
  return out;
}

}  // namespace weft
