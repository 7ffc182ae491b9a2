// Engine's part of per-request attention recording (Request::record_attention, a "weft_debug"
// request on weft serve): which plan chunks ask every rank to record, and handing the rows the
// step returned to their sequences' diagnostics.
#include "engine/engine.h"

namespace weft {

void Engine::plan_attention_recording(StepPlan& plan) const {
  for (const PlannedChunk& chunk : plan.chunks) {
    if (chunk.logits == LogitsWanted::kNone) continue;
    auto seq = sequences_.find(chunk.seq_id);
    if (seq == sequences_.end()) continue;
    const RequestInfo& request = requests_.at(seq->second.request_id);
    if (request.record_attention) plan.record_attention.push_back({chunk.seq_id, *request.record_attention});
  }
}

void Engine::take_recorded_attention(std::vector<AttentionRecord>& records) {
  for (AttentionRecord& r : records) {
    auto seq = sequences_.find(r.seq_id);
    if (seq != sequences_.end()) seq->second.diagnostics.attention.push_back(std::move(r));
  }
  records.clear();
}

}  // namespace weft
