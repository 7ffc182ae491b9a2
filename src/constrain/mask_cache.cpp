#include "constrain/mask_cache.h"

#include <algorithm>
#include <string_view>

namespace weft {

std::optional<bool> MaskCache::lookup(const std::string& key, std::span<uint32_t> row) {
  std::lock_guard<std::mutex> lock(mu_);
  const auto it = index_.find(std::string_view(key));
  if (it == index_.end() || it->second->row.size() != row.size()) {
    ++stats_.misses;
    return std::nullopt;
  }
  lru_.splice(lru_.begin(), lru_, it->second);
  std::ranges::copy(it->second->row, row.begin());
  ++stats_.hits;
  return it->second->restricts;
}

void MaskCache::insert(const std::string& key, std::span<const uint32_t> row, bool restricts) {
  Entry entry{key, std::vector<uint32_t>(row.begin(), row.end()), restricts};
  const size_t bytes = entry.bytes();
  std::lock_guard<std::mutex> lock(mu_);
  if (const auto it = index_.find(std::string_view(key)); it != index_.end()) {
    const auto stale = it->second;
    stats_.bytes -= stale->bytes();
    --stats_.entries;
    index_.erase(it);  // before the entry its key views
    lru_.erase(stale);
  }
  if (bytes > max_bytes_) return;
  evict_to(max_bytes_ - bytes);
  lru_.push_front(std::move(entry));
  index_.emplace(std::string_view(lru_.front().key), lru_.begin());
  stats_.bytes += bytes;
  ++stats_.entries;
}

void MaskCache::evict_to(size_t bytes) {
  while (stats_.bytes > bytes && !lru_.empty()) {
    const Entry& victim = lru_.back();
    stats_.bytes -= victim.bytes();
    --stats_.entries;
    ++stats_.evictions;
    index_.erase(std::string_view(victim.key));
    lru_.pop_back();
  }
}

MaskCacheStats MaskCache::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

}  // namespace weft
