#include "launcher/memory_bandwidth.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <vector>

#include "core/tensor.h"

namespace weft {

double measure_read_bandwidth(ThreadPool& pool, int64_t bytes, int repeats) {
  const int64_t n = bytes / static_cast<int64_t>(sizeof(float));
  Tensor buffer = Tensor::empty(DType::kF32, Shape{n});
  float* data = buffer.data_as<float>();
  pool.parallel_for(n, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) data[i] = static_cast<float>(i & 1023);
  }, 1 << 20);
  double best = 0;
  std::vector<float> sinks(pool.num_threads() * 64, 0.0f);
  for (int r = 0; r < repeats; ++r) {
    const auto start = std::chrono::steady_clock::now();
    pool.parallel_for(pool.num_threads(), [&](int64_t tb, int64_t te) {
      for (int64_t t = tb; t < te; ++t) {
        const int64_t begin = n * t / pool.num_threads(), end = n * (t + 1) / pool.num_threads();
        // Eight independent sums keep the loads in flight; the compiler vectorises them.
        float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
        int64_t i = begin;
        for (; i + 8 <= end; i += 8) {
          for (int k = 0; k < 8; ++k) acc[k] += data[i + k];
        }
        for (; i < end; ++i) acc[0] += data[i];
        float s = 0;
        for (float a : acc) s += a;
        sinks[t * 64] = s;
      }
    });
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    best = std::max(best, static_cast<double>(bytes) / seconds);
  }
  volatile float keep = sinks[0];
  (void)keep;
  return best;
}

}  // namespace weft
