#include "model/attention_selection.h"

#include <cstring>

#include "absl/strings/str_cat.h"

namespace weft {

namespace {

template <typename T>
void put(std::string& out, const T& v) {
  out.append(reinterpret_cast<const char*>(&v), sizeof(T));
}

template <typename T>
bool take(const std::string& in, size_t& at, T& v) {
  if (in.size() - at < sizeof(T)) return false;
  std::memcpy(&v, in.data() + at, sizeof(T));
  at += sizeof(T);
  return true;
}

}  // namespace

// Layout: per record seq_id (i64), layer, head, position (i32 each), count (i64), count F32.
std::string serialize_attention_records(const std::vector<AttentionRecord>& records) {
  std::string out;
  for (const AttentionRecord& r : records) {
    put(out, r.seq_id);
    put(out, static_cast<int32_t>(r.layer));
    put(out, static_cast<int32_t>(r.head));
    put(out, r.position);
    put(out, static_cast<int64_t>(r.weights.size()));
    out.append(reinterpret_cast<const char*>(r.weights.data()), r.weights.size() * sizeof(float));
  }
  return out;
}

absl::StatusOr<std::vector<AttentionRecord>> parse_attention_records(const std::string& bytes) {
  std::vector<AttentionRecord> out;
  size_t at = 0;
  while (at < bytes.size()) {
    AttentionRecord r;
    int32_t layer = 0, head = 0;
    int64_t count = 0;
    if (!take(bytes, at, r.seq_id) || !take(bytes, at, layer) || !take(bytes, at, head) ||
        !take(bytes, at, r.position) || !take(bytes, at, count) || count < 0 ||
        static_cast<uint64_t>(count) > (bytes.size() - at) / sizeof(float)) {
      return absl::InvalidArgumentError(absl::StrCat("attention records: truncated at byte ", at));
    }
    if (layer < 0 || head < 0 || r.position < 0 || r.seq_id < 0 || count != int64_t{r.position} + 1) {
      return absl::InvalidArgumentError(absl::StrCat(
          "attention records: a record at byte ", at, " has layer ", layer, ", head ", head, ", position ",
          r.position, ", sequence ", r.seq_id, " and ", count, " weights (expected position + 1, none negative)"));
    }
    r.layer = layer;
    r.head = head;
    r.weights.resize(static_cast<size_t>(count));
    std::memcpy(r.weights.data(), bytes.data() + at, static_cast<size_t>(count) * sizeof(float));
    at += static_cast<size_t>(count) * sizeof(float);
    out.push_back(std::move(r));
  }
  return out;
}

}  // namespace weft
