// What the ranks of a multi-rank job tell the coordinator about a step plan's disk instructions
// (kv/kv_transfer.h): whether each of its kLoads succeeded on *every* rank, and whether every
// rank's disk tier still writes. Each rank fills one from its own store (KvHostStore::apply);
// the ranks' reports are combined by AND (merge) over the TP group and along the pipeline, and
// the last stage returns the job's report with the step's result (kv/kv_disk_agreement.h uses
// it). A rank that could not load a block it was told to load is thereby never a wrong hit: the
// coordinator has planned no restore from it yet and plans none.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "kv/kv_transfer.h"

namespace weft {

struct KvLoadReport {
  bool disk_writes = true;      // no rank's disk tier was disabled by a failed write
  std::vector<uint8_t> loaded;  // one per kLoad of the plan, in order: 1 = loaded
  bool operator==(const KvLoadReport&) const = default;

  // AND with another rank's report of the same plan (same number of loads, else an error: the
  // ranks performed different plans).
  absl::Status merge(const KvLoadReport& other);
  std::string serialize() const;
  static absl::StatusOr<KvLoadReport> parse(std::string_view bytes);
};

// Whether the ranks report on a plan with these instructions: it loads or persists (a persist is
// where a write may fail). Every rank decides it from the plan alone, so all agree.
bool needs_kv_load_report(const std::vector<KvTransfer>& transfers);

}  // namespace weft
