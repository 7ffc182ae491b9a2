#include "kv/kv_disk_agreement.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace weft {
namespace {

bool same_prefix(uint64_t parent, std::span<const int32_t> tokens, uint64_t other_parent,
                 const std::vector<int32_t>& other_tokens) {
  return parent == other_parent && std::equal(tokens.begin(), tokens.end(), other_tokens.begin(), other_tokens.end());
}

}  // namespace

KvDiskAgreement::State KvDiskAgreement::request(uint64_t hash, uint64_t parent, std::span<const int32_t> tokens) {
  auto it = entries_.find(hash);
  if (it == entries_.end()) return State::kUnknown;
  it->second.wanted = true;
  // Another prefix under the same 64-bit hash: what is held cannot serve this one.
  if (!same_prefix(parent, tokens, it->second.parent, it->second.tokens)) return State::kRefused;
  return it->second.state;
}

bool KvDiskAgreement::start(uint64_t hash, uint64_t parent, std::span<const int32_t> tokens,
                            std::vector<KvTransfer>& transfers) {
  if (entries_.count(hash)) return false;
  if (num_held_ >= max_blocks_) {
    ++stats_.over_limit;
    return false;
  }
  Entry e;
  e.parent = parent;
  e.tokens.assign(tokens.begin(), tokens.end());
  transfers.push_back(KvTransfer::load(hash, parent, e.tokens));
  entries_.emplace(hash, std::move(e));
  ++num_held_;
  ++num_loading_;
  ++stats_.loads;
  return true;
}

absl::Status KvDiskAgreement::on_report(const std::vector<KvTransfer>& plan_transfers, const KvLoadReport& report,
                                        std::vector<KvTransfer>& transfers) {
  const size_t loads = static_cast<size_t>(std::count_if(
      plan_transfers.begin(), plan_transfers.end(), [](const KvTransfer& t) { return t.kind == KvTransfer::Kind::kLoad; }));
  if (loads != report.loaded.size()) {
    return absl::InternalError(absl::StrCat("KV load report: ", report.loaded.size(), " outcomes for a plan with ",
                                            loads, " disk loads"));
  }
  size_t i = 0;
  for (const KvTransfer& t : plan_transfers) {
    if (t.kind != KvTransfer::Kind::kLoad) continue;
    auto it = entries_.find(t.hash);
    if (it == entries_.end() || it->second.state != State::kLoading) {
      return absl::InternalError(absl::StrCat("KV load report: hash ", absl::Hex(t.hash), " was not being loaded"));
    }
    --num_loading_;
    if (report.loaded[i++]) {
      it->second.state = State::kAgreed;
      ++stats_.agreed;
    } else {
      // Every rank holds an entry under the hash (a miss leaves an empty one): all drop it.
      it->second.state = State::kRefused;
      --num_held_;
      transfers.push_back(KvTransfer::drop(t.hash));
      ++stats_.refused;
    }
  }
  return absl::OkStatus();
}

bool KvDiskAgreement::take(uint64_t hash, uint64_t parent, std::span<const int32_t> tokens) {
  auto it = entries_.find(hash);
  if (it == entries_.end() || it->second.state != State::kAgreed ||
      !same_prefix(parent, tokens, it->second.parent, it->second.tokens)) {
    return false;
  }
  entries_.erase(it);
  --num_held_;
  return true;
}

void KvDiskAgreement::end_round(std::vector<KvTransfer>& transfers) {
  for (auto it = entries_.begin(); it != entries_.end();) {
    Entry& e = it->second;
    if (e.wanted || e.state == State::kLoading) {
      e.wanted = false;
      ++it;
      continue;
    }
    if (e.state == State::kAgreed) {
      transfers.push_back(KvTransfer::drop(it->first));
      --num_held_;
      ++stats_.discarded;
    }
    it = entries_.erase(it);
  }
}

}  // namespace weft
