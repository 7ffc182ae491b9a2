// One sequence's generation as a debugging report sees it, gathered from the engine's outputs in
// order (weft inspect's step loop, weft serve's stream of a "weft_debug" request): every step's
// choice, the output ids and text, the finishing output, the banned-phrase rollbacks with the
// tokens they withdrew, the sequence's own KV blocks, and the attention rows recorded for it
// (SequenceDiagnostics; the outputs carry it with SamplingParams::diagnostics).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "debug_report/inspect_report.h"

namespace weft {

class GenerationTrace {
 public:
  // `params`: the request's (for the steps' `changed_by`); `tokenizer` may be null (ids only).
  GenerationTrace(const SamplingParams& params, const Tokenizer* tokenizer);

  // The next output of the sequence.
  void add(const SequenceOutput& out);

  const std::vector<int32_t>& output_ids() const { return output_ids_; }
  int64_t num_output() const { return static_cast<int64_t>(output_ids_.size()); }
  const std::string& text() const { return text_; }
  const SequenceOutput& last() const { return last_; }  // the finishing output once finished
  // The most KV blocks the sequence held at the end of a step.
  int64_t kv_blocks_peak() const { return kv_blocks_peak_; }
  // The newest recorded row of each (layer, head, position), in that order.
  std::vector<AttentionRecord> attention() const;

  // Writes "steps", "output_ids", "text" (with a tokenizer) and "rollbacks" into `report`: each
  // rollback's output index, the withdrawn tokens (token_list_json), their text and the token
  // banned at that index.
  void write(ReportJson& report) const;

 private:
  SamplingParams params_;
  const Tokenizer* tokenizer_;
  ReportJson steps_ = ReportJson::array();
  ReportJson rollbacks_ = ReportJson::array();
  std::vector<int32_t> output_ids_;
  std::string text_;
  SequenceOutput last_;
  int64_t kv_blocks_peak_ = 0;
  std::map<std::tuple<int, int, int32_t>, std::vector<float>> attention_;
};

}  // namespace weft
