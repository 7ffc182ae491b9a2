// Filled next-token masks of one compiled grammar, shared by every matcher of it. Most parser
// states fill their mask in microseconds from xgrammar's per-state token classes; the states
// that leave thousands of tokens to its byte-by-byte check (inside length-bounded strings,
// string formats such as email) take 0.1 to 40 ms. Those recur in every request with the same
// schema, so their rows are kept here, keyed by the matcher's parser state written without
// absolute positions (xgrammar's GrammarMatcher::_GetMaskStateKey, a weft patch): equal keys
// fill equal rows, so a hit is exact.
//
// Bounded in bytes (keys and rows), least recently used evicted. Thread-safe: the batched fill
// runs matchers of one grammar on several threads.
#pragma once

#include <cstddef>
#include <cstdint>
#include <list>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace weft {

struct MaskCacheStats {
  int64_t hits = 0;
  int64_t misses = 0;     // keyed fills that were not cached (each then inserted)
  int64_t evictions = 0;  // rows dropped for space
  int64_t entries = 0;
  size_t bytes = 0;
};

class MaskCache {
 public:
  // `max_bytes` 0 keeps nothing (every lookup misses). Fills faster than `min_fill_seconds` are
  // not worth a row (see worth_storing).
  explicit MaskCache(size_t max_bytes, double min_fill_seconds = kDefaultMinFillSeconds)
      : max_bytes_(max_bytes), min_fill_seconds_(min_fill_seconds) {}

  // The default of min_fill_seconds: about ten times what a hit costs (copying a 151k-token row
  // and the key). Fills below it are left to xgrammar every time.
  static constexpr double kDefaultMinFillSeconds = 20e-6;
  MaskCache(const MaskCache&) = delete;
  MaskCache& operator=(const MaskCache&) = delete;

  // On a hit, copies the row stored under `key` into `row` and returns its "restricts" flag (see
  // GrammarMatcher::fill_next_token_bitmask); nullopt on a miss or when the stored row's width
  // differs from row.size().
  std::optional<bool> lookup(const std::string& key, std::span<uint32_t> row);
  // Stores `row` under `key` (replacing an entry with that key), evicting least recently used
  // rows until the cache fits; a row larger than the whole bound is not stored.
  void insert(const std::string& key, std::span<const uint32_t> row, bool restricts);

  // Whether a fill that took `fill_seconds` should be stored. The parser state does not predict
  // a fill's cost well (a whole subtree of tokens is often refused by its first byte), so the
  // cost is measured: which rows get stored depends on timing, what a row holds never does.
  bool worth_storing(double fill_seconds) const { return fill_seconds >= min_fill_seconds_; }

  size_t max_bytes() const { return max_bytes_; }
  MaskCacheStats stats() const;

 private:
  struct Entry {
    std::string key;
    std::vector<uint32_t> row;
    bool restricts = false;
    size_t bytes() const { return key.size() + row.size() * sizeof(uint32_t) + sizeof(Entry); }
  };
  void evict_to(size_t bytes);  // caller holds mu_

  const size_t max_bytes_;
  const double min_fill_seconds_;
  mutable std::mutex mu_;
  std::list<Entry> lru_;  // most recently used first
  std::unordered_map<std::string_view, std::list<Entry>::iterator> index_;  // views into lru_
  MaskCacheStats stats_;
};

}  // namespace weft
