#include "engine/scheduler.h"

#include <algorithm>
#include <limits>
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
  chunk.prompt_len = static_cast<int32_t>(seq.rope_prompt_len());
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

bool Scheduler::shares_prefix_cache(const Sequence& seq) const {
  return blocks_.prefix_caching() && (config_.prompt_dependent_kv_above <= 0 ||
                                      seq.rope_prompt_len() <= config_.prompt_dependent_kv_above);
}

void Scheduler::switch_to_long_rope(Sequence& seq) {
  const int64_t o = config_.longrope_switch;
  if (o <= 0 || seq.rope_prompt_len() > o || seq.num_tokens() <= o) return;
  if (!seq.block_table.empty()) blocks_.release(seq.block_table);
  seq.num_computed_tokens = 0;
  seq.num_cached_blocks = 0;
  seq.rope_prompt_tokens = seq.num_tokens();
  ++num_longrope_recomputes_;
}

int64_t Scheduler::guesses_before_rope_switch(const Sequence& seq) const {
  const int64_t o = config_.longrope_switch;
  if (o <= 0 || seq.rope_prompt_len() > o) return std::numeric_limits<int64_t>::max();
  // The guesses sit at positions num_tokens()... and must stay below O.
  return std::max<int64_t>(0, o - seq.num_tokens());
}

bool Scheduler::wants_cached_prefix(const Sequence& seq) const {
  if (!shares_prefix_cache(seq) || !seq.block_table.empty() || seq.num_computed_tokens != 0) return false;
  auto all = all_logits_.find(seq.id);
  return all == all_logits_.end() || !all->second;
}

bool Scheduler::cached_prefix_ready(Sequence& seq) {
  if (!blocks_.prefetches() || !wants_cached_prefix(seq) || seq.recompute_on_readmit) return true;
  return blocks_.prefix_ready(seq.all_tokens(), seq.num_tokens() - 1, seq.block_hashes);
}

void Scheduler::match_cached_prefix(Sequence& seq) {
  seq.num_prefix_hit_tokens = 0;
  if (!wants_cached_prefix(seq)) return;
  const int64_t matched =
      blocks_.match_prefix(seq.all_tokens(), seq.num_tokens() - 1, seq.block_hashes, seq.block_table,
                           /*use_tiers=*/!seq.recompute_on_readmit);
  seq.num_computed_tokens = matched;
  seq.num_cached_blocks = matched / blocks_.block_size();
  seq.num_prefix_hit_tokens = matched;
}

void Scheduler::unshare_partial_block(Sequence& seq) {
  const int bs = blocks_.block_size();
  if (seq.num_computed_tokens % bs == 0) return;
  const int64_t index = seq.num_computed_tokens / bs;
  if (index + 1 != static_cast<int64_t>(seq.block_table.size())) return;
  if (blocks_.ref_count(seq.block_table[index]) <= 1) return;
  blocks_.release_last(seq.block_table);
  seq.num_computed_tokens = index * bs;
  seq.num_cached_blocks = std::min(seq.num_cached_blocks, index);
}

void Scheduler::cache_computed_blocks(Sequence& seq) {
  if (!shares_prefix_cache(seq)) return;
  const int bs = blocks_.block_size();
  const int64_t full = std::min<int64_t>(seq.num_computed_tokens / bs,
                                         static_cast<int64_t>(seq.block_table.size()));
  if (seq.num_cached_blocks >= full) return;
  std::vector<int32_t> tokens(static_cast<size_t>(bs));
  for (int64_t b = seq.num_cached_blocks; b < full; ++b) {
    for (int i = 0; i < bs; ++i) tokens[i] = seq.token_at(b * bs + i);
    if (static_cast<int64_t>(seq.block_hashes.size()) == b) {
      const uint64_t parent = b == 0 ? BlockManager::kRootHash : seq.block_hashes[b - 1];
      seq.block_hashes.push_back(BlockManager::hash_block(parent, tokens.data(), bs));
    }
    const uint64_t parent = b == 0 ? BlockManager::kRootHash : seq.block_hashes[b - 1];
    blocks_.cache_block(seq.block_table[b], seq.block_hashes[b], parent, tokens.data());
  }
  seq.num_cached_blocks = full;
}

void Scheduler::release_blocks_outside_window(Sequence& seq) {
  if (config_.attention_window <= 0) return;
  // The next query sits at num_computed_tokens and sees positions from there - W + 1 on.
  const int64_t first_needed = seq.num_computed_tokens - config_.attention_window + 1;
  if (first_needed <= 0) return;
  blocks_.release_before(seq.block_table, first_needed / blocks_.block_size());
}

void Scheduler::fork(int64_t parent_id, Sequence child) {
  const Sequence& parent = sequences_.at(parent_id);
  child.state = SequenceState::kRunning;
  child.num_computed_tokens = parent.num_computed_tokens;
  child.block_table = parent.block_table;
  child.block_hashes = parent.block_hashes;
  child.num_cached_blocks = parent.num_cached_blocks;
  child.rope_prompt_tokens = parent.rope_prompt_tokens;
  blocks_.share(child.block_table);
  if (auto all = all_logits_.find(parent_id); all != all_logits_.end()) {
    all_logits_[child.id] = all->second;
  }
  running_.push_back(child.id);
  sequences_.emplace(child.id, std::move(child));
}

void Scheduler::preempt(int64_t seq_id) {
  Sequence& seq = sequences_.at(seq_id);
  bool swap = true;
  if (swap_cheaper_) {
    swap = swap_cheaper_(seq);
    seq.recompute_on_readmit = !swap;
    ++(swap ? num_swap_preemptions_ : num_recompute_preemptions_);
  }
  blocks_.release(seq.block_table, /*move_down=*/swap);
  seq.num_computed_tokens = 0;
  seq.num_cached_blocks = 0;
  seq.state = SequenceState::kWaiting;
  ++seq.num_preemptions;
  running_.erase(std::find(running_.begin(), running_.end(), seq_id));
  waiting_.push_back(seq_id);
  last_preempted_.push_back(seq_id);
}

StepPlan Scheduler::schedule(int max_sequences) {
  StepPlan plan;
  plan.step_id = next_step_id_++;
  last_preempted_.clear();
  int64_t budget = config_.max_num_batched_tokens;
  auto plan_full = [&] {
    return max_sequences > 0 && static_cast<int>(plan.chunks.size()) >= max_sequences;
  };

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
    if (in_flight_.count(id)) continue;  // its previous step has not come back yet
    if (budget <= 0 || plan_full()) break;
    if (seq.num_uncomputed_tokens() == 0) continue;  // nothing new until a token is appended
    switch_to_long_rope(seq);
    unshare_partial_block(seq);
    const int64_t uncomputed = seq.num_uncomputed_tokens();
    const int64_t num_new = std::min(uncomputed, budget);
    if (num_new < uncomputed && !config_.chunked_prefill) continue;
    bool self_preempted = false;
    while (!blocks_.grow_to(seq.block_table, seq.num_computed_tokens + num_new)) {
      // The victim: the lowest-priority, latest running sequence not already in this step.
      int64_t victim = -1;
      for (auto it = order.rbegin(); it != order.rend(); ++it) {
        const Sequence& v = sequences_.at(*it);
        if (v.state == SequenceState::kRunning && !in_plan.count(*it) && !in_flight_.count(*it)) {
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
  num_waiting_for_prefetch_ = 0;
  for (int64_t id : waiting_) {
    Sequence& seq = sequences_.at(id);
    switch_to_long_rope(seq);  // a preempted sequence that passed O comes back long
    if (!cached_prefix_ready(seq)) {  // its prefix is being read from disk: the next ones may go
      ++num_waiting_for_prefetch_;
      still_waiting.push_back(id);
      continue;
    }
    admitting = admitting && static_cast<int>(running_.size()) < config_.max_num_seqs && budget > 0 &&
                !plan_full();
    if (admitting) match_cached_prefix(seq);
    const int64_t uncomputed = seq.num_uncomputed_tokens();
    const int64_t num_new = std::min(uncomputed, budget);
    admitting = admitting && num_new > 0 && (num_new == uncomputed || config_.chunked_prefill) &&
                blocks_.grow_to(seq.block_table, seq.num_computed_tokens + num_new);
    if (!admitting) {
      // Cached blocks taken for a sequence that must wait go back (they stay cached).
      if (seq.num_prefix_hit_tokens > 0) {
        blocks_.release(seq.block_table);
        seq.num_computed_tokens = 0;
        seq.num_cached_blocks = 0;
        seq.num_prefix_hit_tokens = 0;
      }
      still_waiting.push_back(id);
      continue;
    }
    seq.state = SequenceState::kRunning;
    seq.recompute_on_readmit = false;
    running_.push_back(id);
    plan.chunks.push_back(make_chunk(seq, num_new));
    budget -= num_new;
  }
  waiting_ = std::move(still_waiting);
  blocks_.end_prefetch_round();
  for (const PlannedChunk& chunk : plan.chunks) in_flight_.insert(chunk.seq_id);
  return plan;
}

bool Scheduler::add_draft_tokens(PlannedChunk& chunk, std::span<const int32_t> drafts) {
  if (drafts.empty()) return true;
  Sequence& seq = sequences_.at(chunk.seq_id);
  const int64_t end = seq.num_computed_tokens + static_cast<int64_t>(chunk.token_ids.size() + drafts.size());
  if (!blocks_.grow_to(seq.block_table, end)) return false;
  chunk.token_ids.insert(chunk.token_ids.end(), drafts.begin(), drafts.end());
  chunk.num_draft_tokens = static_cast<int32_t>(drafts.size());
  chunk.block_table = seq.block_table;
  chunk.logits = LogitsWanted::kAll;
  return true;
}

void Scheduler::on_step_done(const StepPlan& plan, const std::vector<SampledToken>& sampled) {
  std::map<int64_t, int64_t> num_sampled;
  for (const SampledToken& s : sampled) ++num_sampled[s.seq_id];
  for (const PlannedChunk& chunk : plan.chunks) in_flight_.erase(chunk.seq_id);
  // Tokens first: accepted guesses are computed tokens the prefix cache hashes below.
  for (const SampledToken& s : sampled) {
    auto it = sequences_.find(s.seq_id);
    if (it == sequences_.end() || it->second.state != SequenceState::kRunning) continue;
    it->second.output_ids.push_back(s.token);
  }
  for (const PlannedChunk& chunk : plan.chunks) {
    auto it = sequences_.find(chunk.seq_id);
    if (it == sequences_.end() || it->second.state != SequenceState::kRunning) continue;
    int64_t computed = static_cast<int64_t>(chunk.token_ids.size());
    if (chunk.num_draft_tokens > 0) {
      // The known token and the guesses accepted before the first rejection hold valid KV.
      const int64_t accepted = std::max<int64_t>(num_sampled[chunk.seq_id] - 1, 0);
      computed -= chunk.num_draft_tokens - std::min<int64_t>(accepted, chunk.num_draft_tokens);
    }
    it->second.num_computed_tokens += computed;
    cache_computed_blocks(it->second);  // before any block is given back: it registers them
    release_blocks_outside_window(it->second);
  }
  for (const PlannedChunk& chunk : plan.chunks) {
    if (chunk.num_draft_tokens == 0) continue;
    auto it = sequences_.find(chunk.seq_id);
    if (it == sequences_.end() || it->second.state != SequenceState::kRunning) continue;
    // Blocks taken only for rejected guesses go back (their KV is garbage past the tokens).
    release_blocks_past_tokens(it->second);
  }
}

void Scheduler::release_blocks_past_tokens(Sequence& seq) {
  while (static_cast<int64_t>(seq.block_table.size()) > blocks_.blocks_for_tokens(seq.num_tokens())) {
    blocks_.release_last(seq.block_table);
  }
}

void Scheduler::truncate_output(int64_t seq_id, int64_t num_output) {
  Sequence& seq = sequences_.at(seq_id);
  seq.output_ids.resize(num_output);
  const int bs = blocks_.block_size();
  const int64_t n = seq.num_tokens();
  int64_t computed = std::min(seq.num_computed_tokens, n - 1);
  release_blocks_past_tokens(seq);
  // The block the recompute writes into first: never a shared or registered one.
  const int64_t write_block = computed / bs;
  if (write_block < static_cast<int64_t>(seq.block_table.size()) &&
      (write_block < seq.num_cached_blocks || seq.block_table[write_block] == BlockManager::kFreedBlock ||
       blocks_.ref_count(seq.block_table[write_block]) > 1)) {
    while (static_cast<int64_t>(seq.block_table.size()) > write_block) blocks_.release_last(seq.block_table);
    computed = write_block * bs;
  }
  // With an attention window the recomputed queries read back that far; released KV cannot be.
  if (config_.attention_window > 0) {
    const int64_t first_needed = std::max<int64_t>(computed - config_.attention_window + 1, 0) / bs;
    for (int64_t b = first_needed; b < static_cast<int64_t>(seq.block_table.size()); ++b) {
      if (seq.block_table[b] != BlockManager::kFreedBlock) continue;
      blocks_.release(seq.block_table);
      computed = 0;
      break;
    }
  }
  seq.num_computed_tokens = computed;
  seq.num_cached_blocks = std::min(seq.num_cached_blocks, computed / bs);
  seq.block_hashes.resize(std::min<size_t>(seq.block_hashes.size(), static_cast<size_t>(n / bs)));
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
  in_flight_.erase(seq_id);
  finish(seq_id);
  sequences_.erase(seq_id);
  all_logits_.erase(seq_id);
}

}  // namespace weft
