#include "debug_report/generation_trace.h"

#include <algorithm>

#include "tokenizer/tokenizer.h"

namespace weft {

GenerationTrace::GenerationTrace(const SamplingParams& params, const Tokenizer* tokenizer)
    : params_(params), tokenizer_(tokenizer) {}

void GenerationTrace::add(const SequenceOutput& out) {
  if (out.diagnostics) {
    const SequenceDiagnostics& d = *out.diagnostics;
    kv_blocks_peak_ = std::max(kv_blocks_peak_, d.kv_blocks);
    for (const SequenceDiagnostics::Rollback& r : d.rollbacks) {
      rollbacks_.push_back({{"at", r.at},
                            {"tokens", token_list_json(r.token_ids, tokenizer_)},
                            {"text", tokenizer_ != nullptr ? ReportJson(tokenizer_->decode(r.token_ids, false))
                                                           : ReportJson(nullptr)},
                            {"banned_token", token_list_json({r.banned_token}, tokenizer_).front()}});
    }
    for (const AttentionRecord& r : d.attention) attention_[{r.layer, r.head, r.position}] = r.weights;
  }
  for (size_t i = 0; i < out.token_ids.size() && i < out.samples.size(); ++i) {
    steps_.push_back(step_json(num_output(), out.samples[i], params_, tokenizer_));
    output_ids_.push_back(out.token_ids[i]);
  }
  text_ += out.text;
  if (out.finished) last_ = out;
}

std::vector<AttentionRecord> GenerationTrace::attention() const {
  std::vector<AttentionRecord> out;
  out.reserve(attention_.size());
  for (const auto& [key, weights] : attention_) {
    const auto& [layer, head, position] = key;
    out.push_back({layer, head, position, 0, weights});
  }
  return out;
}

void GenerationTrace::write(ReportJson& report) const {
  report["steps"] = steps_;
  report["output_ids"] = output_ids_;
  if (tokenizer_ != nullptr) report["text"] = text_;
  report["rollbacks"] = rollbacks_;
}

}  // namespace weft
