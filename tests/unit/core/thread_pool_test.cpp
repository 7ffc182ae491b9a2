#include "core/thread_pool.h"

#include <gtest/gtest.h>

#include <sched.h>
#include <stdlib.h>

#include <algorithm>
#include <atomic>
#include <mutex>
#include <utility>
#include <chrono>
#include <thread>
#include <vector>

namespace weft {
namespace {

TEST(ThreadPoolTest, CoversEveryIndexOnce) {
  ThreadPool pool(3);
  for (int64_t n : {1, 2, 7, 100, 10007}) {
    std::vector<std::atomic<int>> hits(n);
    pool.parallel_for(n, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) hits[i].fetch_add(1);
    });
    for (int64_t i = 0; i < n; ++i) ASSERT_EQ(hits[i].load(), 1) << "n=" << n << " i=" << i;
  }
}

// The chunks parallel_for hands out, sorted: min_chunk decides whether to split and how small the
// chunks of large jobs may get; a job under min_chunk per thread is split evenly, not min_chunk to
// one thread and the rest to the other.
std::vector<std::pair<int64_t, int64_t>> chunks_of(ThreadPool& pool, int64_t n, int64_t min_chunk) {
  std::mutex mutex;
  std::vector<std::pair<int64_t, int64_t>> chunks;
  pool.parallel_for(
      n,
      [&](int64_t b, int64_t e) {
        std::lock_guard<std::mutex> lock(mutex);
        chunks.emplace_back(b, e);
      },
      min_chunk);
  std::sort(chunks.begin(), chunks.end());
  return chunks;
}

TEST(ThreadPoolTest, ChunksSmallJobsEvenlyAndLargeOnesByMinChunk) {
  using Chunks = std::vector<std::pair<int64_t, int64_t>>;
  ThreadPool pool(2);
  EXPECT_EQ(chunks_of(pool, 5, 5), (Chunks{{0, 5}}));                  // inline
  EXPECT_EQ(chunks_of(pool, 8, 5), (Chunks{{0, 4}, {4, 8}}));          // not 5 + 3
  EXPECT_EQ(chunks_of(pool, 7, 5), (Chunks{{0, 4}, {4, 7}}));
  EXPECT_EQ(chunks_of(pool, 30, 5), (Chunks{{0, 5}, {5, 10}, {10, 15}, {15, 20}, {20, 25}, {25, 30}}));
  EXPECT_EQ(chunks_of(pool, 16, 1), (Chunks{{0, 2}, {2, 4}, {4, 6}, {6, 8}, {8, 10}, {10, 12},
                                            {12, 14}, {14, 16}}));  // a few chunks per thread
}

TEST(ThreadPoolTest, NestedCallsRunInline) {
  ThreadPool pool(2);
  std::atomic<int64_t> total{0};
  pool.parallel_for(8, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      pool.parallel_for(10, [&](int64_t b2, int64_t e2) { total += e2 - b2; });
    }
  });
  EXPECT_EQ(total.load(), 80);
}

TEST(ThreadPoolTest, ManySmallJobs) {
  ThreadPool pool(2);
  int64_t sum = 0;
  for (int j = 0; j < 2000; ++j) {
    std::atomic<int64_t> s{0};
    pool.parallel_for(4, [&](int64_t b, int64_t e) { s += e - b; });
    sum += s.load();
  }
  EXPECT_EQ(sum, 8000);
}

// Both hand-offs: workers that sleep after every job (spin 0) and workers that spin; with
// pauses between jobs longer than the spin, so the workers fall asleep and must be woken
// (a lost wake-up would hang here, and TSan runs this test).
TEST(ThreadPoolTest, JobsAfterSpinningAndAfterSleepingWorkers) {
  for (const auto spin : {std::chrono::microseconds(0), std::chrono::microseconds(50),
                          ThreadPool::kDefaultSpin}) {
    ThreadPool pool(3, spin);
    for (int j = 0; j < 300; ++j) {
      std::vector<std::atomic<int>> hits(9);
      pool.parallel_for(9, [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) hits[i].fetch_add(1);
      });
      for (auto& h : hits) ASSERT_EQ(h.load(), 1) << "spin " << spin.count() << " job " << j;
      if (j % 50 == 0) std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
  }
}

TEST(ThreadPoolTest, DefaultThreadsShareTheHostAmongUnboundMpiRanks) {
  cpu_set_t set;
  ASSERT_EQ(sched_getaffinity(0, sizeof(set), &set), 0);
  const int cpus = CPU_COUNT(&set);
  unsetenv("OMPI_COMM_WORLD_LOCAL_SIZE");
  EXPECT_EQ(default_thread_count(), cpus);
  setenv("OMPI_COMM_WORLD_LOCAL_SIZE", "2", 1);
  // Unbound ranks see every CPU of the host and split them; a rank bound to fewer CPUs than
  // the host has keeps its own.
  const int host = static_cast<int>(std::thread::hardware_concurrency());
  EXPECT_EQ(default_thread_count(), cpus >= host ? std::max(1, cpus / 2) : cpus);
  unsetenv("OMPI_COMM_WORLD_LOCAL_SIZE");
}

}  // namespace
}  // namespace weft
