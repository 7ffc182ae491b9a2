// What attention weights to record and what a recording holds (model/layers/attention_probe.h):
// plain data shared by the model layers, the step plan and the debugging reports, and the byte
// form records travel in between ranks.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace weft {

struct AttentionSelection {
  std::vector<int> layers;  // global layer indices
  std::vector<int> heads;   // global query-head indices
};

// One sequence's selection in a step plan (StepPlan::record_attention): the rows of the sequence
// whose logits the step wants are recorded for these layers and heads.
struct AttentionRecording {
  int64_t seq_id = 0;
  AttentionSelection selection;
};

// One query row of one head: weights[p] for key positions p in [0, position].
struct AttentionRecord {
  int layer = 0;
  int head = 0;
  int32_t position = 0;  // the query row's position in its sequence
  int64_t seq_id = 0;
  std::vector<float> weights;
};

// Records as bytes (for the gathers to rank 0), and back. The bytes come from other ranks:
// InvalidArgument on a truncated record, a negative layer, head, position or sequence, or a
// weight count other than position + 1.
std::string serialize_attention_records(const std::vector<AttentionRecord>& records);
absl::StatusOr<std::vector<AttentionRecord>> parse_attention_records(const std::string& bytes);

}  // namespace weft
