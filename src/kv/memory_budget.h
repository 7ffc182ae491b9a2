// How many bytes a KV cache may take: a fixed size, or a fraction of the memory still available
// on this machine (read once when the cache is sized, after the weights are loaded).
#pragma once

#include <cstdint>

namespace weft {

// MemAvailable from /proc/meminfo (what can be allocated without swapping); when that cannot be
// read, physical pages x page size. 0 when neither is known.
int64_t available_host_memory_bytes();

// `fraction` in (0, 1] of available_host_memory_bytes(), or `bytes` when fraction <= 0.
int64_t kv_budget_bytes(int64_t bytes, double fraction);

}  // namespace weft
