#include "kv/kv_load_report.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace weft {

absl::Status KvLoadReport::merge(const KvLoadReport& other) {
  if (other.loaded.size() != loaded.size()) {
    return absl::InternalError(absl::StrCat("KV load report: one rank performed ", loaded.size(),
                                            " disk loads, another ", other.loaded.size()));
  }
  disk_writes = disk_writes && other.disk_writes;
  for (size_t i = 0; i < loaded.size(); ++i) loaded[i] = loaded[i] && other.loaded[i];
  return absl::OkStatus();
}

// One byte for disk_writes, then one per load.
std::string KvLoadReport::serialize() const {
  std::string out(1 + loaded.size(), '\0');
  out[0] = disk_writes ? 1 : 0;
  std::transform(loaded.begin(), loaded.end(), out.begin() + 1, [](uint8_t b) { return b ? 1 : 0; });
  return out;
}

absl::StatusOr<KvLoadReport> KvLoadReport::parse(std::string_view bytes) {
  if (bytes.empty()) return absl::DataLossError("KV load report: empty");
  KvLoadReport r;
  r.disk_writes = bytes[0] != 0;
  r.loaded.reserve(bytes.size() - 1);
  for (size_t i = 1; i < bytes.size(); ++i) r.loaded.push_back(bytes[i] != 0 ? 1 : 0);
  return r;
}

bool needs_kv_load_report(const std::vector<KvTransfer>& transfers) {
  return std::any_of(transfers.begin(), transfers.end(), [](const KvTransfer& t) {
    return t.kind == KvTransfer::Kind::kLoad || t.kind == KvTransfer::Kind::kPersist;
  });
}

}  // namespace weft
