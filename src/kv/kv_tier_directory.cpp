#include "kv/kv_tier_directory.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace weft {

KvTierDirectory::KvTierDirectory(int64_t host_capacity_blocks, int64_t block_bytes, KvDiskLookup disk_lookup,
                                 const KvDiskTier* disk)
    : capacity_(std::max<int64_t>(host_capacity_blocks, 0)),
      block_bytes_(block_bytes),
      disk_lookup_(std::move(disk_lookup)),
      disk_(disk) {
  stats_.host_capacity_blocks = capacity_;
  if (disk_lookup_ && disk_lookup_.agreement_max_blocks > 0) {
    agreement_ = std::make_unique<KvDiskAgreement>(disk_lookup_.agreement_max_blocks);
  }
}

std::optional<KvDiskAgreementStats> KvTierDirectory::agreement_stats() const {
  if (!agreement_) return std::nullopt;
  return agreement_->stats();
}

KvDiskPrefetchStats KvTierDirectory::prefetch_stats() const {
  return reads_ahead() ? disk_lookup_.prefetcher->stats() : KvDiskPrefetchStats{};
}

std::optional<KvDiskTierStats> KvTierDirectory::disk_stats() const {
  if (disk_ == nullptr) return std::nullopt;
  KvDiskTierStats s = disk_->stats();
  s.enabled = s.enabled && !disk_off_;
  return s;
}

bool KvTierDirectory::entry_matches(const Entry& e, uint64_t parent, std::span<const int32_t> tokens) const {
  return e.parent == parent && std::equal(e.tokens.begin(), e.tokens.end(), tokens.begin(), tokens.end());
}

void KvTierDirectory::touch(Entry& e, uint64_t hash) {
  lru_.erase(e.lru);
  e.lru = lru_.insert(lru_.end(), hash);
}

void KvTierDirectory::insert(uint64_t hash, uint64_t parent, std::span<const int32_t> tokens) {
  Entry e;
  e.parent = parent;
  e.tokens.assign(tokens.begin(), tokens.end());
  e.lru = lru_.insert(lru_.end(), hash);
  entries_.emplace(hash, std::move(e));
}

void KvTierDirectory::drop_over_capacity() {
  while (static_cast<int64_t>(entries_.size()) > capacity_) {
    const uint64_t victim = lru_.front();
    lru_.pop_front();
    entries_.erase(victim);
    transfers_.push_back(KvTransfer::drop(victim));
    ++stats_.dropped_blocks;
  }
  stats_.host_blocks = static_cast<int64_t>(entries_.size());
}

void KvTierDirectory::on_pool_evict(int32_t block, uint64_t hash, uint64_t parent,
                                    std::span<const int32_t> tokens) {
  if (capacity_ == 0) return;  // no host tier (what was persisted stays on disk)
  auto it = entries_.find(hash);
  if (it != entries_.end()) {
    // The host tier still holds this prefix (the block was restored from it): nothing to copy.
    if (entry_matches(it->second, parent, tokens)) {
      touch(it->second, hash);
      return;
    }
    // A 64-bit collision between two prefixes: the older one goes.
    lru_.erase(it->second.lru);
    entries_.erase(it);
    transfers_.push_back(KvTransfer::drop(hash));
    ++stats_.dropped_blocks;
  }
  transfers_.push_back(KvTransfer::save(hash, block));
  ++stats_.saved_blocks;
  insert(hash, parent, tokens);
  drop_over_capacity();
}

void KvTierDirectory::on_pool_cached(int32_t block, uint64_t hash, uint64_t parent,
                                     std::span<const int32_t> tokens) {
  if (!disk_usable()) return;
  transfers_.push_back(KvTransfer::persist(hash, block, parent, std::vector<int32_t>(tokens.begin(), tokens.end())));
  ++stats_.persisted_blocks;
}

bool KvTierDirectory::may_hold(uint64_t hash) const {
  return entries_.count(hash) != 0 || (disk_usable() && disk_lookup_.contains(hash));
}

bool KvTierDirectory::find(uint64_t hash, uint64_t parent, std::span<const int32_t> tokens) {
  if (capacity_ > 0) {
    ++stats_.host_query_blocks;
    auto it = entries_.find(hash);
    if (it != entries_.end() && entry_matches(it->second, parent, tokens)) {
      touch(it->second, hash);
      ++stats_.host_hit_blocks;
      return true;
    }
  }
  if (!disk_usable() || entries_.count(hash)) return false;
  ++stats_.disk_query_blocks;
  // Single process, the lookup puts the block into the host store at once; multi-rank, every
  // rank's store holds it once agreed. Either way, from here it is a host entry like any other.
  const bool hit = agreement_ ? agreement_->take(hash, parent, tokens) : disk_lookup_.load(hash, parent, tokens);
  if (!hit) return false;
  ++stats_.disk_hit_blocks;
  insert(hash, parent, tokens);
  return true;
}

void KvTierDirectory::restore(uint64_t hash, int32_t block) {
  transfers_.push_back(KvTransfer::restore(hash, block));
  ++stats_.restored_blocks;
  // With no host tier the staged disk block goes right after its restore.
  drop_over_capacity();
}

TierReadiness KvTierDirectory::prepare(uint64_t hash, uint64_t parent, std::span<const int32_t> tokens) {
  auto it = entries_.find(hash);
  if (it != entries_.end()) {
    // A colliding host entry makes find() miss without asking the disk.
    return capacity_ > 0 && entry_matches(it->second, parent, tokens) ? TierReadiness::kReady : TierReadiness::kAbsent;
  }
  if (!prefetches() || !disk_usable() || !disk_lookup_.contains(hash)) return TierReadiness::kAbsent;
  if (agreement_) return prepare_agreed(hash, parent, tokens);
  switch (disk_lookup_.prefetcher->request(hash, parent, tokens)) {
    case KvDiskPrefetcher::State::kQueued:
      return TierReadiness::kPending;
    case KvDiskPrefetcher::State::kMissed:
      return TierReadiness::kAbsent;
    case KvDiskPrefetcher::State::kReady:
    case KvDiskPrefetcher::State::kRefused:
      break;
  }
  return TierReadiness::kReady;
}

TierReadiness KvTierDirectory::prepare_agreed(uint64_t hash, uint64_t parent, std::span<const int32_t> tokens) {
  switch (agreement_->request(hash, parent, tokens)) {
    case KvDiskAgreement::State::kAgreed: return TierReadiness::kReady;
    case KvDiskAgreement::State::kLoading: return TierReadiness::kPending;
    case KvDiskAgreement::State::kRefused: return TierReadiness::kAbsent;
    case KvDiskAgreement::State::kUnknown: break;
  }
  // The coordinator reads its own file ahead first (its kLoad then takes the bytes from memory);
  // a block it cannot read itself is no hit on any rank.
  if (disk_lookup_.prefetcher != nullptr) {
    switch (disk_lookup_.prefetcher->request(hash, parent, tokens)) {
      case KvDiskPrefetcher::State::kQueued: return TierReadiness::kPending;
      case KvDiskPrefetcher::State::kMissed: return TierReadiness::kAbsent;
      case KvDiskPrefetcher::State::kReady:
      case KvDiskPrefetcher::State::kRefused: break;
    }
  }
  return agreement_->start(hash, parent, tokens, transfers_) ? TierReadiness::kPending : TierReadiness::kAbsent;
}

bool KvTierDirectory::prefetch_pending() const {
  return (disk_lookup_.prefetcher != nullptr && disk_lookup_.prefetcher->pending()) ||
         (agreement_ && agreement_->loading());
}

void KvTierDirectory::wait_for_prefetch() {
  // An agreed load is answered by its plan's result (Engine::step collects it), not waited for.
  if (disk_lookup_.prefetcher != nullptr) disk_lookup_.prefetcher->wait_for_progress();
}

void KvTierDirectory::end_prefetch_round() {
  if (disk_lookup_.prefetcher != nullptr) disk_lookup_.prefetcher->end_round();
  if (agreement_) agreement_->end_round(transfers_);
}

bool KvTierDirectory::has_pending_loads() const {
  return std::any_of(transfers_.begin(), transfers_.end(),
                     [](const KvTransfer& t) { return t.kind == KvTransfer::Kind::kLoad; });
}

absl::Status KvTierDirectory::on_load_report(const std::vector<KvTransfer>& plan_transfers,
                                             const std::optional<KvLoadReport>& report) {
  if (!agreement_ || !needs_kv_load_report(plan_transfers)) return absl::OkStatus();
  if (!report) {
    return absl::InternalError("a step carried disk KV instructions and came back without the ranks' report");
  }
  // A rank's tier warned when its write failed; from now on no rank persists or loads.
  if (!report->disk_writes) disk_off_ = true;
  return agreement_->on_report(plan_transfers, *report, transfers_);
}

std::vector<KvTransfer> KvTierDirectory::take_transfers() {
  std::vector<KvTransfer> out;
  out.swap(transfers_);
  return out;
}

std::string kv_tier_summary(const KvTierDirectory& tiers) {
  const KvTierStats& s = tiers.stats();
  std::string out = absl::StrCat("kv tiers: host ", s.host_blocks, "/", s.host_capacity_blocks, " blocks (",
                                 s.host_blocks * tiers.block_bytes(), " bytes), ", s.host_hit_blocks, "/",
                                 s.host_query_blocks, " lookups hit; ", s.saved_blocks, " saved, ",
                                 s.restored_blocks, " restored");
  if (const std::optional<KvDiskTierStats> d = tiers.disk_stats()) {
    absl::StrAppend(&out, "; disk ", d->enabled ? "" : "(disabled) ", d->files, " files (", d->bytes, "/",
                    d->max_bytes, " bytes, ", d->indexed_at_open, " found at start), ", s.disk_hit_blocks, "/",
                    s.disk_query_blocks, " lookups hit, misses: ", d->misses_absent, " absent, ", d->misses_corrupt,
                    " corrupt, ", d->misses_truncated, " truncated, ", d->misses_foreign, " foreign; ", d->writes,
                    " written, ", d->writes_dropped, " dropped (queue full)");
  }
  if (const std::optional<KvDiskAgreementStats> a = tiers.agreement_stats()) {
    absl::StrAppend(&out, "; ranks: ", a->agreed, "/", a->loads, " disk loads agreed, ", a->refused,
                    " refused (missing or bad on some rank), ", a->over_limit, " over the limit, ", a->discarded,
                    " discarded");
  }
  if (tiers.reads_ahead()) {
    const KvDiskPrefetchStats p = tiers.prefetch_stats();
    absl::StrAppend(&out, "; prefetch: ", p.read, " read ahead, ", p.served, " restored from them, ",
                    p.not_fetched, " read on the engine thread, ", p.refused, " refused (memory), ", p.discarded,
                    " discarded");
  }
  return out;
}

}  // namespace weft
