// Counter-based random numbers for sampling: Philox4x32-10 (Salmon et al., SC'11, "Parallel
// random numbers: as easy as 1, 2, 3"), bit-compatible with Random123's philox4x32_10.
//
// A draw is a pure function of (seed, stream, step, index): the sampler keys the Philox key with
// the request's 64-bit seed and the counter with the sequence's index inside its request (n > 1
// gives distinct streams), the number of tokens it has generated so far (step) and a draw index
// within the step. So a seeded request's tokens depend only on its own seed and progress, never
// on which other sequences share the batch, their order, or the thread that samples it; the same
// formula can run on a GPU later.
//
// SeedSource hands out seeds for unseeded requests at admission; the engine owns one. The
// sampler itself keeps no generator state.
#pragma once

#include <array>
#include <cstdint>
#include <mutex>
#include <random>

namespace weft {

using PhiloxCounter = std::array<uint32_t, 4>;
using PhiloxKey = std::array<uint32_t, 2>;

// One Philox4x32-10 block: 128 random bits from a 128-bit counter and a 64-bit key.
inline PhiloxCounter philox4x32_10(PhiloxCounter ctr, PhiloxKey key) {
  constexpr uint32_t kMul0 = 0xD2511F53u;
  constexpr uint32_t kMul1 = 0xCD9E8D57u;
  constexpr uint32_t kWeyl0 = 0x9E3779B9u;
  constexpr uint32_t kWeyl1 = 0xBB67AE85u;
  for (int round = 0; round < 10; ++round) {
    if (round > 0) {
      key[0] += kWeyl0;
      key[1] += kWeyl1;
    }
    const uint64_t p0 = static_cast<uint64_t>(kMul0) * ctr[0];
    const uint64_t p1 = static_cast<uint64_t>(kMul1) * ctr[2];
    ctr = {static_cast<uint32_t>(p1 >> 32) ^ ctr[1] ^ key[0], static_cast<uint32_t>(p1),
           static_cast<uint32_t>(p0 >> 32) ^ ctr[3] ^ key[1], static_cast<uint32_t>(p0)};
  }
  return ctr;
}

// The random stream of one sequence at one decoding step. Cheap to construct; copyable.
class SamplingRng {
 public:
  SamplingRng(uint64_t seed, uint32_t stream, uint64_t step)
      : key_{static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32)},
        step_lo_(static_cast<uint32_t>(step)),
        step_hi_(static_cast<uint32_t>(step >> 32)),
        stream_(stream) {}

  // Block `index` of this (seed, stream, step): counter = {index, step_lo, step_hi, stream}.
  PhiloxCounter block(uint32_t index) const {
    return philox4x32_10({index, step_lo_, step_hi_, stream_}, key_);
  }

  // A uniform double in [0, 1) with 53 random bits, from block `index`.
  double uniform(uint32_t index = 0) const {
    const PhiloxCounter r = block(index);
    const uint64_t bits = (static_cast<uint64_t>(r[0] >> 5) << 26) | (r[1] >> 6);
    return static_cast<double>(bits) * (1.0 / 9007199254740992.0);  // 2^-53
  }

 private:
  PhiloxKey key_;
  uint32_t step_lo_;
  uint32_t step_hi_;
  uint32_t stream_;
};

// Seeds for requests that did not bring one. Thread-safe. Seeded from std::random_device
// unless a fixed `base_seed` is given (reproducible test and benchmark runs).
class SeedSource {
 public:
  SeedSource() : engine_(std::random_device{}() ^ (uint64_t{std::random_device{}()} << 32)) {}
  explicit SeedSource(uint64_t base_seed) : engine_(base_seed) {}

  uint64_t next() {
    std::lock_guard<std::mutex> lock(mutex_);
    return engine_();
  }

 private:
  std::mutex mutex_;
  std::mt19937_64 engine_;
};

}  // namespace weft
