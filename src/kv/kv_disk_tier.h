// The disk KV tier of one process: a directory of block files (kv/kv_block_file.h) named by
// prefix-cache hash, at most `max_bytes` of them, least recently used deleted first.
//
// - open() creates the directory, takes an exclusive flock on DIR/lock (a second process gets an
//   error and runs without a disk tier), deletes temporary files a killed writer left, and
//   indexes the files whose key is this process's (oldest modification first), so a fresh
//   process finds the prefixes an earlier one wrote. Files of other keys are left alone and not
//   counted in the budget.
// - write_async() queues a block; one writer thread writes it to a temporary name and renames it
//   (a reader never sees a partial file under the final name; a torn file from a crash is caught
//   by the checksums). A queue past 256 MiB drops new blocks (counted). The first failed write
//   (a full disk, an unwritable directory) disables the tier with one warning.
// - load() reads and checks a file (key, prefix, size, checksums); any problem is a miss, counted
//   by kind, and the bad file is deleted. A block still queued is served from the queue.
//
// Thread-safe (the engine thread loads, the step thread queues, the writer writes).
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <filesystem>
#include <functional>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "absl/status/statusor.h"
#include "kv/kv_block_file.h"

namespace weft {

struct KvDiskTierOptions {
  std::filesystem::path dir;
  int64_t max_bytes = 0;
  KvBlockFileKey key;
  int64_t block_bytes = 0;  // payload bytes of every block
  // Where the one warning goes (a failed write); default: standard error.
  std::function<void(const std::string&)> warn;
};

struct KvDiskTierStats {
  bool enabled = true;
  int64_t files = 0;
  int64_t bytes = 0;  // of the indexed files
  int64_t max_bytes = 0;
  int64_t indexed_at_open = 0;  // files found by open()
  int64_t hits = 0;
  int64_t misses_absent = 0;
  int64_t misses_truncated = 0;
  int64_t misses_corrupt = 0;
  int64_t misses_foreign = 0;  // another model, layout or prefix
  int64_t writes = 0;
  int64_t writes_dropped = 0;  // queue full
  int64_t evicted = 0;
};

class KvDiskTier {
 public:
  // Errors (the caller runs without a disk tier and says so) when the directory cannot be
  // created or read, or another process holds its lock.
  static absl::StatusOr<std::unique_ptr<KvDiskTier>> open(const KvDiskTierOptions& options);
  // Writes what is queued, then stops the writer and releases the lock.
  ~KvDiskTier();

  void write_async(uint64_t hash, uint64_t parent, std::span<const int32_t> tokens, std::vector<uint8_t> payload);
  // The payload of block `hash` if a checked file (or the queue) holds this exact prefix.
  std::optional<std::vector<uint8_t>> load(uint64_t hash, uint64_t parent, std::span<const int32_t> tokens);
  // Whether the index or the queue names `hash` (no file is read).
  bool contains(uint64_t hash) const;
  // Waits until the queue is empty (tests; the destructor does it too).
  void flush();

  KvDiskTierStats stats() const;
  const std::filesystem::path& dir() const { return options_.dir; }
  // The file block `hash` is stored in.
  std::filesystem::path path_of(uint64_t hash) const;

 private:
  explicit KvDiskTier(KvDiskTierOptions options) : options_(std::move(options)) {}
  struct Pending {
    uint64_t hash = 0;
    KvBlockFileHeader header;
    std::vector<uint8_t> payload;
  };
  struct Indexed {
    int64_t bytes = 0;
    std::list<uint64_t>::iterator lru;
  };
  void writer_loop();
  bool write_file(const Pending& p);  // false: the tier is disabled
  void index_locked(uint64_t hash, int64_t bytes);
  void forget_locked(uint64_t hash, bool remove_file);
  void evict_over_budget_locked();

  KvDiskTierOptions options_;
  int lock_fd_ = -1;
  mutable std::mutex mu_;
  std::condition_variable wake_, idle_;
  std::deque<Pending> queue_;
  int64_t queued_bytes_ = 0;
  bool writing_ = false;
  bool stop_ = false;
  std::unordered_map<uint64_t, Indexed> index_;
  std::list<uint64_t> lru_;  // least recently used first
  KvDiskTierStats stats_;
  std::thread writer_;
};

// What a disk tier directory holds, read without taking its lock (weft info): block files by
// model identity, files whose header does not check, leftover temporary files, and whether a
// process holds the lock now; the per-rank subdirectories of multi-rank jobs included.
struct KvDiskInventory {
  struct Model {
    int64_t files = 0;
    int64_t bytes = 0;
  };
  std::map<uint64_t, Model> by_model;
  int64_t bad_headers = 0;
  int64_t temporary_files = 0;
  bool locked = false;
};
absl::StatusOr<KvDiskInventory> inventory_kv_disk_cache(const std::filesystem::path& dir);

}  // namespace weft
