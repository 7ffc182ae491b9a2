#include "engine/scheduler.h"

#include <algorithm>
#include <set>
#include <tuple>

namespace weft {

Scheduler::Scheduler(const SchedulerConfig& config, BlockManager& blocks)
    : config_(config), blocks_(blocks) {}

void Scheduler::add(Sequence seq) {
  seq.state = SequenceState::kWaiting;
  waiting_.push_back(seq.id);
  sequences_.emplace(seq.id, std::move(seq));
}

const Sequence* Scheduler::find(int64_t seq_id) const {
  auto it = sequences_.find(seq_id);
  return it == sequences_.end() ? nullptr : &it->second;
}

void Scheduler::set_return_all_logits(int64_t seq_id, bool all) { all_logits_[seq_id] = all; }

PlannedChunk Scheduler::make_chunk(const Sequence& seq, int64_t num_new) const {
  PlannedChunk chunk;
  chunk.seq_id = seq.id;
  chunk.start_position = static_cast<int32_t>(seq.num_computed_tokens);
  chunk.token_ids.reserve(num_new);
  for (int64_t i = 0; i < num_new; ++i) chunk.token_ids.push_back(seq.token_at(seq.num_computed_tokens + i));
  chunk.block_table = seq.block_table;
  const bool reaches_end = seq.num_computed_tokens + num_new == seq.num_tokens();
  auto all = all_logits_.find(seq.id);
  if (all != all_logits_.end() && all->second) {
    chunk.logits = LogitsWanted::kAll;
  } else {
    chunk.logits = reaches_end ? LogitsWanted::kLast : LogitsWanted::kNone;
  }
  return chunk;
}

void Scheduler::preempt(int64_t seq_id) {
  Sequence& seq = sequences_.at(seq_id);
  blocks_.release(seq.block_table);
  seq.num_computed_tokens = 0;
  seq.state = SequenceState::kWaiting;
  ++seq.num_preemptions;
  running_.erase(std::find(running_.begin(), running_.end(), seq_id));
  waiting_.push_back(seq_id);
  last_preempted_.push_back(seq_id);
}

StepPlan Scheduler::schedule() {
  StepPlan plan;
  plan.step_id = next_step_id_++;
  last_preempted_.clear();
  int64_t budget = config_.max_num_batched_tokens;

  auto order_key = [this](int64_t id) {
    const Sequence& s = sequences_.at(id);
    return std::make_tuple(s.is_prefilling(), s.priority, s.arrival);
  };
  std::vector<int64_t> order = running_;
  std::sort(order.begin(), order.end(),
            [&](int64_t a, int64_t b) { return order_key(a) < order_key(b); });
  std::set<int64_t> in_plan;

  for (int64_t id : order) {
    Sequence& seq = sequences_.at(id);
    if (seq.state != SequenceState::kRunning) continue;  // preempted earlier in this loop
    if (budget <= 0) break;
    const int64_t uncomputed = seq.num_uncomputed_tokens();
    if (uncomputed == 0) continue;  // nothing new until a token is appended
    const int64_t num_new = std::min(uncomputed, budget);
    if (num_new < uncomputed && !config_.chunked_prefill) continue;
    bool self_preempted = false;
    while (!blocks_.grow_to(seq.block_table, seq.num_computed_tokens + num_new)) {
      // The victim: the lowest-priority, latest running sequence not already in this step.
      int64_t victim = -1;
      for (auto it = order.rbegin(); it != order.rend(); ++it) {
        const Sequence& v = sequences_.at(*it);
        if (v.state == SequenceState::kRunning && !in_plan.count(*it)) {
          victim = *it;
          break;
        }
      }
      preempt(victim);
      if (victim == id) {
        self_preempted = true;
        break;
      }
    }
    if (self_preempted) continue;
    plan.chunks.push_back(make_chunk(seq, num_new));
    in_plan.insert(id);
    budget -= num_new;
  }

  std::sort(waiting_.begin(), waiting_.end(), [this](int64_t a, int64_t b) {
    const Sequence& x = sequences_.at(a);
    const Sequence& y = sequences_.at(b);
    return std::tie(x.priority, x.arrival) < std::tie(y.priority, y.arrival);
  });
  std::vector<int64_t> still_waiting;
  bool admitting = last_preempted_.empty();  // no admissions in a step that had to preempt
  for (int64_t id : waiting_) {
    Sequence& seq = sequences_.at(id);
    const int64_t uncomputed = seq.num_uncomputed_tokens();
    const int64_t num_new = std::min(uncomputed, budget);
    admitting = admitting && static_cast<int>(running_.size()) < config_.max_num_seqs &&
                num_new > 0 && (num_new == uncomputed || config_.chunked_prefill) &&
                blocks_.grow_to(seq.block_table, seq.num_computed_tokens + num_new);
    if (!admitting) {
      still_waiting.push_back(id);
      continue;
    }
    seq.state = SequenceState::kRunning;
    running_.push_back(id);
    plan.chunks.push_back(make_chunk(seq, num_new));
    budget -= num_new;
  }
  waiting_ = std::move(still_waiting);
  return plan;
}

void Scheduler::on_step_done(const StepPlan& plan, const std::vector<SampledToken>& sampled) {
  for (const PlannedChunk& chunk : plan.chunks) {
    auto it = sequences_.find(chunk.seq_id);
    if (it == sequences_.end() || it->second.state != SequenceState::kRunning) continue;
    it->second.num_computed_tokens += static_cast<int64_t>(chunk.token_ids.size());
  }
  for (const SampledToken& s : sampled) {
    auto it = sequences_.find(s.seq_id);
    if (it == sequences_.end() || it->second.state != SequenceState::kRunning) continue;
    it->second.output_ids.push_back(s.token);
  }
}

void Scheduler::finish(int64_t seq_id) {
  auto it = sequences_.find(seq_id);
  if (it == sequences_.end() || it->second.state == SequenceState::kFinished) return;
  Sequence& seq = it->second;
  blocks_.release(seq.block_table);
  auto drop = [seq_id](std::vector<int64_t>& v) {
    v.erase(std::remove(v.begin(), v.end(), seq_id), v.end());
  };
  drop(running_);
  drop(waiting_);
  seq.state = SequenceState::kFinished;
}

void Scheduler::remove(int64_t seq_id) {
  finish(seq_id);
  sequences_.erase(seq_id);
  all_logits_.erase(seq_id);
}

}  // namespace weft
