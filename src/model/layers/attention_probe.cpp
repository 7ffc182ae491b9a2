#include "model/layers/attention_probe.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace weft {

AttentionProbe::AttentionProbe(AttentionSelection selection) : selection_(std::move(selection)) {}

AttentionProbe AttentionProbe::for_sequences(const std::vector<AttentionRecording>& per_sequence) {
  AttentionProbe probe(AttentionSelection{});
  probe.for_every_sequence_ = false;
  for (const AttentionRecording& r : per_sequence) probe.per_sequence_[r.seq_id] = r.selection;
  return probe;
}

const AttentionSelection* AttentionProbe::selection_of(int64_t seq_id) const {
  if (for_every_sequence_) return &selection_;
  auto it = per_sequence_.find(seq_id);
  return it == per_sequence_.end() ? nullptr : &it->second;
}

int64_t AttentionProbe::seq_of(const ForwardBatch& batch, int32_t token) {
  // The last s with query_start[s] <= token.
  const auto next = std::upper_bound(batch.query_start.begin(), batch.query_start.end(), token);
  const size_t s = static_cast<size_t>(next - batch.query_start.begin()) - 1;
  return s < batch.seq_ids.size() ? batch.seq_ids[s] : 0;
}

bool AttentionProbe::records_layer(int layer) const {
  auto has = [layer](const AttentionSelection& s) {
    return std::find(s.layers.begin(), s.layers.end(), layer) != s.layers.end();
  };
  if (for_every_sequence_) return has(selection_);
  return std::any_of(per_sequence_.begin(), per_sequence_.end(), [&](const auto& kv) { return has(kv.second); });
}

AttentionProbe::Pass AttentionProbe::begin(const ForwardBatch& batch,
                                           int64_t num_local_heads) const {
  Pass pass;
  pass.row_of_token_.assign(static_cast<size_t>(batch.num_tokens), -1);
  int64_t stride = 0;
  for (int32_t c : batch.context_len) stride = std::max<int64_t>(stride, c);
  for (int32_t token : batch.logit_rows) {
    if (pass.row_of_token_[token] >= 0 || selection_of(seq_of(batch, token)) == nullptr) continue;
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
    const int64_t seq_id = seq_of(batch, token);
    const AttentionSelection* selection = selection_of(seq_id);
    if (std::find(selection->layers.begin(), selection->layers.end(), layer) == selection->layers.end()) continue;
    const int32_t position = batch.positions.data_as<int32_t>()[token];
    for (int head : selection->heads) {
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

}  // namespace weft
