// Private to kernels/cpu: how the batch-1 (GEMV) tiles of linear() fetch the weights of the tile
// after theirs. Include after the file's target pragma.
#pragma once

#include <immintrin.h>

#include <cstdint>

namespace weft::kernels::cpu {

// The next tile's NR weight rows (adjacent to this tile's), fetched into L1 in address order, a
// slice per step of the k loop: one stream. Fetching the same span of each of the NR rows
// instead (NR streams side by side) ran 15% slower streamed from memory on huge pages (BF16
// weights, 32000 x 768 at batch 1, 2-core Zen 4: 1.64-1.80 -> 1.40-1.52 ms). Rows are short (k
// elements), too short for the hardware prefetchers to ramp up on their own.
class NextRowsPrefetch {
 public:
  // next: the first byte of the next tile's rows; column_bytes: their bytes per element of k
  // (NR x the weight's element size).
  NextRowsPrefetch(const void* next, int64_t column_bytes)
      : next_(static_cast<const char*>(next)), column_bytes_(column_bytes) {}

  // Once the tile has read elements [0, elements) of its rows: fetch as far into the next rows.
  // Addresses past the matrix are fine (a prefetch never faults).
  void through(int64_t elements) {
    for (const int64_t until = column_bytes_ * elements; fetched_ < until; fetched_ += 64) {
      _mm_prefetch(next_ + fetched_, _MM_HINT_T0);
    }
  }

 private:
  const char* next_;
  int64_t column_bytes_;
  int64_t fetched_ = 0;
};

}  // namespace weft::kernels::cpu
