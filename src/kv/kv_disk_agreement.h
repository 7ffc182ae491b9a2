// The coordinator's side of disk hits in a multi-rank job (plain data, the engine thread only).
//
// Every rank keeps its own disk tier for its slice, so a block rank 0 holds may be missing, torn,
// corrupt or another model's on another rank. A disk hit is therefore planned only after every
// rank loaded the block into its host store:
//
//     start() -> kLoading: a kLoad rides the next plan; every rank reads its file into its store
//                (an empty entry where it missed) and reports (kv/kv_load_report.h)
//     on_report(): loaded on every rank -> kAgreed (take() hands it to the host tier directory,
//                  which then restores it like any host hit)
//                  missed on any rank   -> kRefused, and a kDrop empties every rank's entry: the
//                  prefix is recomputed on all ranks, never half restored
//     end_round(): an entry no waiting sequence asked for in the round (request()) ends; an
//                  agreed one is dropped from the stores; a loading one waits for its report.
//
// Loading and agreed blocks are held in every rank's host store: at most `max_blocks` of them
// (start() refuses past it, and the caller then treats the block as absent: a recompute).
#pragma once

#include <cstdint>
#include <span>
#include <unordered_map>
#include <vector>

#include "absl/status/status.h"
#include "kv/kv_load_report.h"
#include "kv/kv_transfer.h"

namespace weft {

struct KvDiskAgreementStats {
  int64_t loads = 0;     // kLoads sent
  int64_t agreed = 0;    // loaded on every rank
  int64_t refused = 0;   // missed on some rank (rank 0 had it): recomputed on all
  int64_t over_limit = 0;  // start() refused: max_blocks held
  int64_t discarded = 0;   // agreed, then no sequence wanted it
};

class KvDiskAgreement {
 public:
  enum class State { kUnknown, kLoading, kAgreed, kRefused };

  explicit KvDiskAgreement(int64_t max_blocks) : max_blocks_(max_blocks) {}

  // Where `hash` stands; marks it wanted in this round (a known entry only).
  State request(uint64_t hash, uint64_t parent, std::span<const int32_t> tokens);
  // Appends a kLoad of the prefix block to `transfers`: false (nothing appended) when
  // max_blocks are held already.
  bool start(uint64_t hash, uint64_t parent, std::span<const int32_t> tokens, std::vector<KvTransfer>& transfers);
  // The job's report on a plan whose instructions were `plan_transfers`: its kLoads, in order,
  // agree or are refused (a kDrop appended to `transfers` for each refused one). Errors when the
  // report does not fit the plan (a bug).
  absl::Status on_report(const std::vector<KvTransfer>& plan_transfers, const KvLoadReport& report,
                         std::vector<KvTransfer>& transfers);
  // An agreed block of this exact prefix: true, and its entry in the ranks' stores now belongs to
  // the caller (the host tier directory).
  bool take(uint64_t hash, uint64_t parent, std::span<const int32_t> tokens);
  // Ends what nobody asked for since the previous call (a kDrop for each agreed one).
  void end_round(std::vector<KvTransfer>& transfers);
  // Whether a load awaits its report.
  bool loading() const { return num_loading_ > 0; }

  const KvDiskAgreementStats& stats() const { return stats_; }

 private:
  struct Entry {
    State state = State::kLoading;
    uint64_t parent = 0;
    std::vector<int32_t> tokens;
    bool wanted = true;
  };
  int64_t max_blocks_;
  std::unordered_map<uint64_t, Entry> entries_;
  int64_t num_held_ = 0;  // loading or agreed
  int64_t num_loading_ = 0;
  KvDiskAgreementStats stats_;
};

}  // namespace weft
