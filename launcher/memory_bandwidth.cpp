#include "launcher/memory_bandwidth.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <vector>

#include "core/tensor.h"

namespace weft {

double measure_read_bandwidth(ThreadPool& pool, int64_t bytes, int repeats) {
  // 64-bit integer words: integer addition is associative, so the compiler may vectorise and
  // interleave the sums freely. (A float sum must keep its order: its add latency then bounds
  // the loop, and on a 2-core EPYC that measured 13-21 GB/s where decode's own GEMV read more.)
  const int64_t n = bytes / static_cast<int64_t>(sizeof(uint64_t));
  Tensor buffer = Tensor::empty(DType::kI64, Shape{n});
  uint64_t* data = buffer.data_as<uint64_t>();
  pool.parallel_for(n, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) data[i] = static_cast<uint64_t>(i);
  }, 1 << 20);
  double best = 0;
  std::vector<uint64_t> sinks(pool.num_threads() * 8, 0);
  for (int r = 0; r < repeats; ++r) {
    const auto start = std::chrono::steady_clock::now();
    pool.parallel_for(pool.num_threads(), [&](int64_t tb, int64_t te) {
      for (int64_t t = tb; t < te; ++t) {
        const int64_t begin = n * t / pool.num_threads(), end = n * (t + 1) / pool.num_threads();
        // Sixteen independent sums: two cache lines per iteration, many loads in flight.
        uint64_t acc[16] = {};
        int64_t i = begin;
        for (; i + 16 <= end; i += 16) {
          for (int k = 0; k < 16; ++k) acc[k] += data[i + k];
        }
        for (; i < end; ++i) acc[0] += data[i];
        uint64_t s = 0;
        for (uint64_t a : acc) s += a;
        sinks[t * 8] = s;
      }
    });
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    best = std::max(best, static_cast<double>(n * sizeof(uint64_t)) / seconds);
  }
  volatile uint64_t keep = sinks[0];
  (void)keep;
  return best;
}

}  // namespace weft
