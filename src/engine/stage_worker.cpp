#include "engine/stage_worker.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "engine/step_plan_codec.h"
#include "model/attention_selection.h"

namespace weft {

absl::Status broadcast_bytes(Communicator& comm, std::string& bytes, int root) {
  Tensor size = Tensor::empty(DType::kI64, Shape{1});
  size.data_as<int64_t>()[0] = static_cast<int64_t>(bytes.size());
  WEFT_RETURN_IF_ERROR(comm.broadcast(size.view(), root));
  const int64_t n = size.data_as<int64_t>()[0];
  if (n < 0 || n > (int64_t{1} << 34)) {
    return absl::DataLossError(absl::StrCat("broadcast of an absurd size ", n));
  }
  bytes.resize(static_cast<size_t>(n));
  if (n == 0) return absl::OkStatus();
  TensorView payload{bytes.data(), DType::kU8, Shape{n}, Device::kCpu};
  return comm.broadcast(payload, root);
}

absl::StatusOr<std::vector<std::string>> all_gather_bytes(Communicator& comm, const std::string& mine) {
  const int n = comm.size();
  Tensor size = Tensor::empty(DType::kI64, Shape{1});
  size.data_as<int64_t>()[0] = static_cast<int64_t>(mine.size());
  Tensor sizes = Tensor::empty(DType::kI64, Shape{n});
  WEFT_RETURN_IF_ERROR(comm.all_gather(size.view(), sizes.view()));
  int64_t longest = 0;
  for (int r = 0; r < n; ++r) {
    const int64_t len = sizes.data_as<int64_t>()[r];
    if (len < 0 || len > (int64_t{1} << 34)) return absl::DataLossError(absl::StrCat("all-gather of an absurd size ", len));
    longest = std::max(longest, len);
  }
  std::vector<std::string> out(static_cast<size_t>(n));
  if (longest == 0) return out;
  std::string padded = mine;
  padded.resize(static_cast<size_t>(longest));
  std::string all(static_cast<size_t>(longest * n), '\0');
  TensorView in{padded.data(), DType::kU8, Shape{longest}, Device::kCpu};
  TensorView gathered{all.data(), DType::kU8, Shape{n, longest}, Device::kCpu};
  WEFT_RETURN_IF_ERROR(comm.all_gather(in, gathered));
  for (int r = 0; r < n; ++r) {
    out[r] = all.substr(static_cast<size_t>(r * longest), static_cast<size_t>(sizes.data_as<int64_t>()[r]));
  }
  return out;
}

StageWorker::StageWorker(const WorldConfig& world, StageRunner& runner, Communicator& tp,
                         PipelineChannel& pipeline, StepWatchdog* watchdog,
                         std::chrono::milliseconds step_deadline)
    : world_(world),
      runner_(runner),
      tp_(tp),
      pipeline_(pipeline),
      watchdog_(watchdog),
      step_deadline_(step_deadline) {}

absl::StatusOr<std::string> StageWorker::receive_control() {
  if (world_.is_first_stage()) {
    std::string bytes;
    WEFT_RETURN_IF_ERROR(broadcast_bytes(tp_, bytes, 0));
    return bytes;
  }
  return pipeline_.recv_control();
}

absl::StatusOr<std::vector<AttentionRecord>> StageWorker::recorded_attention() {
  std::vector<AttentionRecord> records;
  if (!world_.is_first_stage()) {  // the earlier stages', after the hidden states
    WEFT_ASSIGN_OR_RETURN(std::string bytes, pipeline_.recv_control());
    WEFT_ASSIGN_OR_RETURN(records, parse_attention_records(bytes));
  }
  std::vector<AttentionRecord> mine = runner_.take_recorded_attention();
  if (tp_.size() == 1) {
    records.insert(records.end(), std::make_move_iterator(mine.begin()), std::make_move_iterator(mine.end()));
    return records;
  }
  WEFT_ASSIGN_OR_RETURN(std::vector<std::string> parts, all_gather_bytes(tp_, serialize_attention_records(mine)));
  for (const std::string& bytes : parts) {
    WEFT_ASSIGN_OR_RETURN(std::vector<AttentionRecord> part, parse_attention_records(bytes));
    records.insert(records.end(), std::make_move_iterator(part.begin()), std::make_move_iterator(part.end()));
  }
  return records;
}

absl::Status StageWorker::combine_over_tp(KvLoadReport& report) {
  if (tp_.size() == 1) return absl::OkStatus();
  WEFT_ASSIGN_OR_RETURN(std::vector<std::string> parts, all_gather_bytes(tp_, report.serialize()));
  for (const std::string& bytes : parts) {
    WEFT_ASSIGN_OR_RETURN(KvLoadReport part, KvLoadReport::parse(bytes));
    WEFT_RETURN_IF_ERROR(report.merge(part));
  }
  return absl::OkStatus();
}

absl::Status StageWorker::merge_earlier_report(KvLoadReport& report) {
  if (world_.is_first_stage()) return absl::OkStatus();
  WEFT_ASSIGN_OR_RETURN(std::string bytes, pipeline_.recv_control());
  WEFT_ASSIGN_OR_RETURN(KvLoadReport earlier, KvLoadReport::parse(bytes));
  return report.merge(earlier);
}

absl::StatusOr<bool> StageWorker::handle(const std::string& control_bytes, StepOutput* output) {
  WEFT_ASSIGN_OR_RETURN(ControlMessage message, decode_control(control_bytes));
  if (message.kind == ControlKind::kShutdown) {
    if (pipeline_.has_next()) WEFT_RETURN_IF_ERROR(pipeline_.send_control(control_bytes));
    WEFT_RETURN_IF_ERROR(pipeline_.flush_results());
    return false;
  }
  const StepPlan& plan = message.plan;
  // The coordinator's executor arms its watchdog around the whole step, result included.
  const bool watched = watchdog_ != nullptr && !world_.is_coordinator();
  if (watched) watchdog_->arm(plan.step_id, step_deadline_);
  // Tier copies first: a restored block is read by this plan, a saved one may be written by it.
  // A later stage does its copies before waiting for the hidden states, beside the earlier
  // stages' compute. Disk instructions are reported on: this TP group's outcomes are combined
  // here, the earlier stages' arrive after the hidden states (and attention rows), and the last
  // stage returns the job's report with the step's output.
  const bool reports = needs_kv_load_report(plan.kv_transfers);
  KvLoadReport report;
  WEFT_RETURN_IF_ERROR(runner_.transfer_kv(plan, reports ? &report : nullptr));
  if (reports) WEFT_RETURN_IF_ERROR(combine_over_tp(report));
  // A plan of tier instructions alone (disk loads a waiting sequence needs) runs no layers.
  const bool forward = !plan.chunks.empty();
  if (forward) {
    WEFT_RETURN_IF_ERROR(runner_.begin_step(plan));
    if (!world_.is_first_stage()) {
      WEFT_ASSIGN_OR_RETURN(TensorView incoming, runner_.incoming_hidden());
      WEFT_RETURN_IF_ERROR(pipeline_.recv_hidden(incoming));
    }
  }
  const auto compute_start = std::chrono::steady_clock::now();
  if (forward) {
    if (world_.is_first_stage()) WEFT_RETURN_IF_ERROR(runner_.embed());
    WEFT_RETURN_IF_ERROR(runner_.run_layers());
  }
  auto add_compute_time = [&] {
    compute_seconds_ +=
        std::chrono::duration<double>(std::chrono::steady_clock::now() - compute_start).count();
  };
  if (pipeline_.has_next()) {
    add_compute_time();
    WEFT_RETURN_IF_ERROR(pipeline_.send_control(control_bytes));
    if (forward) {
      WEFT_ASSIGN_OR_RETURN(TensorView outgoing, runner_.outgoing_hidden());
      WEFT_RETURN_IF_ERROR(pipeline_.send_hidden(outgoing));
    }
    if (!plan.record_attention.empty()) {
      WEFT_ASSIGN_OR_RETURN(std::vector<AttentionRecord> attention, recorded_attention());
      WEFT_RETURN_IF_ERROR(pipeline_.send_control(serialize_attention_records(attention)));
    }
    if (reports) {
      WEFT_RETURN_IF_ERROR(merge_earlier_report(report));
      WEFT_RETURN_IF_ERROR(pipeline_.send_control(report.serialize()));
    }
  } else {
    StepOutput step_output;
    if (forward) {
      WEFT_ASSIGN_OR_RETURN(step_output, runner_.output());
    }
    add_compute_time();
    if (!plan.record_attention.empty()) {
      WEFT_ASSIGN_OR_RETURN(step_output.attention, recorded_attention());
    }
    if (reports) {
      WEFT_RETURN_IF_ERROR(merge_earlier_report(report));
      step_output.kv_load_report = std::move(report);
    }
    if (world_.is_coordinator()) {
      *output = std::move(step_output);
    } else if (pipeline_.returns_results()) {
      StepResult result;
      result.step_id = plan.step_id;
      result.logits = std::move(step_output.logits);
      result.candidates = std::move(step_output.candidates);
      result.attention = std::move(step_output.attention);
      result.kv_load_report = std::move(step_output.kv_load_report);
      // Greedy tokens travel as sampled tokens, one per logits row, tagged with the row's sequence.
      size_t row = 0;
      for (const PlannedChunk& chunk : plan.chunks) {
        const size_t rows = chunk.logits == LogitsWanted::kAll ? chunk.token_ids.size()
                            : chunk.logits == LogitsWanted::kLast ? 1 : 0;
        for (size_t i = 0; i < rows && row < step_output.tokens.size(); ++i, ++row) {
          result.sampled.push_back({chunk.seq_id, step_output.tokens[row], 0.0f});
        }
      }
      WEFT_RETURN_IF_ERROR(pipeline_.post_result(encode_step_result(result)));
    }
  }
  if (watched) watchdog_->disarm();
  return true;
}

absl::Status StageWorker::serve() {
  for (;;) {
    WEFT_ASSIGN_OR_RETURN(std::string bytes, receive_control());
    WEFT_ASSIGN_OR_RETURN(bool keep_going, handle(bytes, nullptr));  // workers return nothing
    if (!keep_going) return absl::OkStatus();
  }
}

}  // namespace weft
