// This machine's memory read bandwidth, measured the way decode uses memory: every thread of the
// pool streams through its share of a buffer much larger than the caches.
#pragma once

#include <cstdint>

#include "core/thread_pool.h"

namespace weft {

// Bytes per second read, best of `repeats` passes over `bytes` bytes.
double measure_read_bandwidth(ThreadPool& pool, int64_t bytes = 1ll << 30, int repeats = 5);

}  // namespace weft
