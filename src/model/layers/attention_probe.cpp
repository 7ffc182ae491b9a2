#include "model/layers/attention_probe.h"

#include <algorithm>
#include <cstring>

#include "absl/strings/str_cat.h"

namespace weft {

AttentionProbe::AttentionProbe(AttentionSelection selection) : selection_(std::move(selection)) {}

bool AttentionProbe::records_layer(int layer) const {
  return std::find(selection_.layers.begin(), selection_.layers.end(), layer) !=
         selection_.layers.end();
}

AttentionProbe::Pass AttentionProbe::begin(const ForwardBatch& batch,
                                           int64_t num_local_heads) const {
  Pass pass;
  pass.row_of_token_.assign(static_cast<size_t>(batch.num_tokens), -1);
  int64_t stride = 0;
  for (int32_t c : batch.context_len) stride = std::max<int64_t>(stride, c);
  for (int32_t token : batch.logit_rows) {
    if (pass.row_of_token_[token] >= 0) continue;
    pass.row_of_token_[token] = static_cast<int32_t>(pass.rows_.size());
    pass.rows_.push_back(token);
  }
  pass.weights_.assign(pass.rows_.size() * static_cast<size_t>(num_local_heads * stride), 0.0f);
  pass.out_.row = pass.row_of_token_.data();
  pass.out_.weights = pass.weights_.data();
  pass.out_.stride = stride;
  return pass;
}

void AttentionProbe::end(const Pass& pass, const ForwardBatch& batch, int layer, int64_t first_head,
                         int64_t num_local_heads) {
  const int64_t stride = pass.out_.stride;
  for (size_t r = 0; r < pass.rows_.size(); ++r) {
    const int32_t token = pass.rows_[r];
    // The token's sequence: the last s with query_start[s] <= token.
    const auto next = std::upper_bound(batch.query_start.begin(), batch.query_start.end(), token);
    const size_t s = static_cast<size_t>(next - batch.query_start.begin()) - 1;
    const int64_t seq_id = s < batch.seq_ids.size() ? batch.seq_ids[s] : 0;
    const int32_t position = batch.positions.data_as<int32_t>()[token];
    for (int head : selection_.heads) {
      const int64_t local = head - first_head;
      if (local < 0 || local >= num_local_heads) continue;
      const float* w = pass.weights_.data() + (r * num_local_heads + local) * stride;
      records_[{seq_id, layer, head, position}] = std::vector<float>(w, w + position + 1);
    }
  }
}

std::vector<AttentionRecord> AttentionProbe::records() const {
  std::vector<AttentionRecord> out;
  out.reserve(records_.size());
  for (const auto& [key, weights] : records_) {
    const auto& [seq_id, layer, head, position] = key;
    out.push_back({layer, head, position, seq_id, weights});
  }
  return out;
}

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
std::string AttentionProbe::serialize(const std::vector<AttentionRecord>& records) {
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

absl::StatusOr<std::vector<AttentionRecord>> AttentionProbe::parse(const std::string& bytes) {
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
