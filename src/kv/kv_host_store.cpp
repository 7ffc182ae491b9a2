#include "kv/kv_host_store.h"

#include <chrono>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "kv/kv_disk_prefetcher.h"
#include "kv/kv_disk_tier.h"

namespace weft {
namespace {

const char* kind_name(KvTransfer::Kind kind) {
  switch (kind) {
    case KvTransfer::Kind::kSave: return "save";
    case KvTransfer::Kind::kRestore: return "restore";
    case KvTransfer::Kind::kDrop: return "drop";
    case KvTransfer::Kind::kPersist: return "persist";
    case KvTransfer::Kind::kLoad: return "load";
  }
  return "?";
}

// Calls `f(tensor, bytes_per_block)` for each tensor a block has a slice of, in block-bytes order.
template <typename F>
void for_each_block_tensor(const KvCache& cache, F&& f) {
  const KvCacheShape& s = cache.shape();
  const int64_t slots = static_cast<int64_t>(s.block_size) * s.num_kv_heads;
  const int64_t kv_bytes = slots * s.head_dim * static_cast<int64_t>(dtype_size(s.dtype));
  for (int layer = 0; layer < s.num_layers; ++layer) {
    f(cache.keys(layer), kv_bytes);
    f(cache.values(layer), kv_bytes);
    if (s.dtype == DType::kI8) {
      f(cache.key_scales(layer), slots * static_cast<int64_t>(sizeof(float)));
      f(cache.value_scales(layer), slots * static_cast<int64_t>(sizeof(float)));
    }
  }
}

}  // namespace

KvHostStore::KvHostStore(const KvCache& cache, KvDiskTier* disk, KvDiskPrefetcher* prefetcher)
    : cache_(cache), disk_(disk), prefetcher_(prefetcher), block_bytes_(cache.shape().bytes_per_block()) {}

void KvHostStore::copy_out(int32_t block, uint8_t* out) const {
  for_each_block_tensor(cache_, [&](const Tensor& t, int64_t n) {
    std::memcpy(out, t.data_as<uint8_t>() + block * n, static_cast<size_t>(n));
    out += n;
  });
}

void KvHostStore::copy_in(const uint8_t* in, int32_t block) const {
  for_each_block_tensor(cache_, [&](const Tensor& t, int64_t n) {
    std::memcpy(t.data_as<uint8_t>() + block * n, in, static_cast<size_t>(n));
    in += n;
  });
}

void KvHostStore::put(uint64_t hash, std::vector<uint8_t> bytes) {
  Entry& e = entries_[hash];
  e.bytes = std::move(bytes);
  ++e.refs;
}

void KvHostStore::put_missing(uint64_t hash) { ++entries_[hash].refs; }

absl::Status KvHostStore::apply(const std::vector<KvTransfer>& transfers, KvLoadReport* report) {
  for (size_t i = 0; i < transfers.size(); ++i) {
    const KvTransfer& t = transfers[i];
    auto bad = [&](const char* why) {
      return absl::InternalError(absl::StrCat("KV tier instruction ", i, " (", kind_name(t.kind), " hash ",
                                              absl::Hex(t.hash), " block ", t.block, "): ", why));
    };
    if (t.uses_block() && (t.block < 0 || t.block >= cache_.num_blocks())) return bad("block outside the pool");
    const auto started = std::chrono::steady_clock::now();
    auto timed = [&] {
      copied_blocks_.fetch_add(1, std::memory_order_relaxed);
      copy_nanos_.fetch_add(
          std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - started).count(),
          std::memory_order_relaxed);
    };
    switch (t.kind) {
      case KvTransfer::Kind::kSave: {
        std::vector<uint8_t> bytes(static_cast<size_t>(block_bytes_));
        copy_out(t.block, bytes.data());
        put(t.hash, std::move(bytes));
        timed();
        break;
      }
      case KvTransfer::Kind::kRestore: {
        auto it = entries_.find(t.hash);
        if (it == entries_.end()) return bad("the host tier does not hold it");
        if (static_cast<int64_t>(it->second.bytes.size()) != block_bytes_) {
          return bad("its disk load missed on this rank");
        }
        copy_in(it->second.bytes.data(), t.block);
        timed();
        break;
      }
      case KvTransfer::Kind::kDrop: {
        auto it = entries_.find(t.hash);
        if (it == entries_.end()) return bad("the host tier does not hold it");
        if (--it->second.refs == 0) entries_.erase(it);
        break;
      }
      case KvTransfer::Kind::kPersist: {
        if (disk_ == nullptr) return bad("this rank has no disk tier");
        std::vector<uint8_t> bytes(static_cast<size_t>(block_bytes_));
        copy_out(t.block, bytes.data());
        disk_->write_async(t.hash, t.parent, t.tokens, std::move(bytes));
        break;
      }
      case KvTransfer::Kind::kLoad: {
        if (disk_ == nullptr) return bad("this rank has no disk tier");
        const bool loaded = load_from_disk(t.hash, t.parent, t.tokens);
        if (!loaded) put_missing(t.hash);
        if (report != nullptr) report->loaded.push_back(loaded ? 1 : 0);
        break;
      }
    }
  }
  if (report != nullptr) report->disk_writes = disk_ == nullptr || disk_->stats().enabled;
  return absl::OkStatus();
}

bool KvHostStore::disk_contains(uint64_t hash) const { return disk_ != nullptr && disk_->contains(hash); }

bool KvHostStore::load_from_disk(uint64_t hash, uint64_t parent, std::span<const int32_t> tokens) {
  if (disk_ == nullptr) return false;
  if (prefetcher_ != nullptr) {
    std::vector<uint8_t> fetched;
    switch (prefetcher_->take(hash, fetched)) {
      case KvDiskPrefetcher::Taken::kReady:
        put(hash, std::move(fetched));
        return true;
      case KvDiskPrefetcher::Taken::kMissed:
        return false;  // the disk tier counted it and deleted the file
      case KvDiskPrefetcher::Taken::kNotFetched:
        break;
    }
  }
  std::optional<std::vector<uint8_t>> bytes = disk_->load(hash, parent, tokens);
  if (!bytes) return false;
  put(hash, *std::move(bytes));
  return true;
}

}  // namespace weft
