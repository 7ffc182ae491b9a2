// Iteration-level continuous batching (plain data: no device, no communicator).
//
// Every step the scheduler builds a ragged batch under a token budget and a cap on running
// sequences: first the running sequences (decodes before unfinished prefills, then by priority
// and arrival), each taking all its uncomputed tokens up to the remaining budget (chunked
// prefill), then waiting sequences in (priority, arrival) order while budget, the running cap and
// free KV blocks allow. When a running sequence needs a block and none is free, the
// lowest-priority running sequence not yet in this step is preempted by recompute: its blocks are
// freed and it returns to WAITING with num_computed_tokens = 0 (possibly the sequence itself).
// With a host KV tier its full blocks stay registered and may come back from the tier when it is
// admitted again (a swap) unless the swap policy chose recompute for it (set_swap_policy).
//
// With prefix caching enabled in the BlockManager, a sequence admitted with no KV (new, or
// preempted earlier) first takes the cached blocks matching its leading full blocks: its
// num_computed_tokens starts at the cached prefix (at most num_tokens - 1, so one token is always
// computed to give logits; sequences wanting every token's logits take none), and only the rest
// is planned. Full blocks are registered in the cache once a step has computed them.
//
// With a disk tier that prefetches (kv/kv_disk_prefetcher.h), a waiting sequence whose cached
// prefix is still being read from disk on a background thread is not admitted until the read is
// done (later sequences may go first), so restoring it is a memory copy and no step waits for
// the disk; every waiting sequence's prefix is asked for on every scheduling pass.
//
// With SchedulerConfig::attention_window, blocks that fall wholly outside every layer's window
// are freed after each step (their block-table entries become BlockManager::kFreedBlock).
//
// Forks (n > 1) share their parent's blocks. A sequence about to write into a partially filled
// block that another sequence also holds first gives that block up and recomputes its tokens
// into a block of its own (copy-on-write by recompute: at most block_size - 1 tokens, and no
// device copy in the step plan); the last holder writes in place.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <span>
#include <vector>

#include "engine/sequence.h"
#include "engine/step_plan.h"
#include "kv/block_manager.h"

namespace weft {

struct SchedulerConfig {
  int max_num_seqs = 64;                   // running sequences at most
  int64_t max_num_batched_tokens = 2048;   // tokens per step at most
  bool chunked_prefill = true;             // split prompts longer than the remaining budget
  // Engine only: build its BlockManager with prefix caching (reuse the KV of identical leading
  // blocks across requests). The Scheduler itself follows the BlockManager it is given.
  bool enable_prefix_caching = true;
  // Sliding-window models whose every layer has a window: the largest window W (ModelConfig's
  // kv_window). After each step a sequence gives back the blocks wholly before its next
  // position - W + 1, which no later query reads, so a long generation holds about
  // (W + max_num_batched_tokens) / block_size blocks, not its whole length. 0: keep every block.
  int64_t attention_window = 0;
  // Models whose KV depends on the prompt's length past this many tokens (ModelConfig's
  // prompt_dependent_kv_above: dynamic NTK RoPE): a sequence with a longer prompt neither takes
  // blocks from the prefix cache nor registers its own, since the same tokens in another
  // sequence have other KV. 0: KV depends on the tokens alone.
  int64_t prompt_dependent_kv_above = 0;
  // LongRoPE models: original_max_position_embeddings (O). A sequence whose KV was computed with
  // the short factors is recomputed from scratch with the long ones at the step it first needs
  // position O (it then holds more than O tokens), as transformers' Phi3 generate() drops its
  // cache there; guesses never cross O before that. 0: never.
  int64_t longrope_switch = 0;
};

// A token sampled for a sequence by the step that ran `plan`.
struct SampledToken {
  int64_t seq_id = 0;
  int32_t token = 0;
};

class Scheduler {
 public:
  Scheduler(const SchedulerConfig& config, BlockManager& blocks);

  // Takes a new sequence in WAITING. Its id must be unique.
  void add(Sequence seq);
  // Plans the next step; sequences it preempts are listed by last_preempted(). Sequences of
  // earlier plans still in flight (no on_step_done yet) are left out, so successive plans hold
  // disjoint sequences (pipeline micro-batches).
  // `max_sequences` (> 0) caps the sequences in this plan: the engine splits the running set
  // into micro-batches when a pipeline keeps several plans in flight.
  StepPlan schedule(int max_sequences = 0);
  // Speculative decoding: appends a proposer's guesses `drafts` to `chunk`, a chunk of the plan
  // just made that runs one sequence's single new token (a decode), growing the sequence's blocks
  // to cover them; the chunk then wants every row (PlannedChunk::num_draft_tokens). Returns
  // false, changing nothing, when too few blocks are free: speculation never preempts.
  bool add_draft_tokens(PlannedChunk& chunk, std::span<const int32_t> drafts);
  // Records that `plan` ran: advances each chunk's computed tokens and appends sampled tokens
  // (in order). A chunk with draft tokens lists its accepted guesses, then one more token: its
  // computed tokens advance by the known token plus the accepted guesses, and the blocks past
  // the sequence's tokens (taken for rejected guesses) go back.
  void on_step_done(const StepPlan& plan, const std::vector<SampledToken>& sampled);
  // Adds `child` as a fork of running sequence `parent_id`: RUNNING at once, sharing the
  // parent's blocks and computed tokens. The caller guarantees the child's first
  // num_computed_tokens tokens equal the parent's (same prompt; outputs may differ after). The
  // running cap does not apply (the child belongs to an admitted request).
  void fork(int64_t parent_id, Sequence child);
  // Rolls a sequence that is not in flight back to its first `num_output` output tokens (a banned
  // phrase began at output token num_output): the later tokens go, and the last kept token
  // (or the prompt's last) becomes uncomputed again so the next step recomputes it and yields
  // the logits to sample position num_output anew. Blocks past the kept tokens go back; a block
  // the recompute would write into that another sequence holds or the prefix cache registers is
  // given up too and its tokens recomputed into a block of their own, so shared and cached KV is
  // never overwritten; with an attention window, a rollback that needs KV already released
  // recomputes the whole sequence. Prefix-cache hashes of the kept full blocks stay. Requires
  // num_output < output_ids.size().
  void truncate_output(int64_t seq_id, int64_t num_output);
  // Ends a sequence (whatever the reason: the engine records it) and frees its blocks.
  // Unknown or already finished ids are ignored.
  void finish(int64_t seq_id);
  // Forgets a finished sequence.
  void remove(int64_t seq_id);

  const Sequence* find(int64_t seq_id) const;
  const std::vector<int64_t>& last_preempted() const { return last_preempted_; }
  int num_running() const { return static_cast<int>(running_.size()); }
  int num_waiting() const { return static_cast<int>(waiting_.size()); }
  // Waiting sequences the last schedule() held back because their prefix was being read from disk.
  int num_waiting_for_prefetch() const { return num_waiting_for_prefetch_; }
  bool has_unfinished() const { return !running_.empty() || !waiting_.empty(); }
  const BlockManager& blocks() const { return blocks_; }
  // Takes the next step id for a plan made outside schedule() (Engine::score), so that every
  // plan the executors see has its own increasing id.
  int64_t take_step_id() { return next_step_id_++; }

  // Sequences whose every token's logits are wanted (scoring); default: only the last.
  void set_return_all_logits(int64_t seq_id, bool all);

  // With a host KV tier: asked at each preemption whether the victim's KV should be swapped
  // (its blocks go down to the tier and come back when it is admitted again) rather than
  // recomputed (engine/preemption_cost.h). Unset: swap whatever the tiers hold.
  void set_swap_policy(std::function<bool(const Sequence&)> swap_cheaper) { swap_cheaper_ = std::move(swap_cheaper); }
  int64_t num_swap_preemptions() const { return num_swap_preemptions_; }
  // Sequences recomputed with LongRoPE's long factors (SchedulerConfig::longrope_switch).
  int64_t num_longrope_recomputes() const { return num_longrope_recomputes_; }
  // How many guesses a decoding sequence may add before its next position would need the
  // LongRoPE recompute (no limit: INT64_MAX).
  int64_t guesses_before_rope_switch(const Sequence& seq) const;
  int64_t num_recompute_preemptions() const { return num_recompute_preemptions_; }

 private:
  void preempt(int64_t seq_id);
  // Takes cached prefix blocks for a waiting sequence holding none (prefix caching only).
  void match_cached_prefix(Sequence& seq);
  // False while the prefix match_cached_prefix would take is still being read from disk (asks
  // for the reads).
  bool cached_prefix_ready(Sequence& seq);
  // LongRoPE: drops the short-factor KV of a sequence that now holds more than
  // SchedulerConfig::longrope_switch tokens and makes them one prompt for its RoPE, so that it is
  // recomputed with the long factors.
  void switch_to_long_rope(Sequence& seq);
  // Whether the sequence's KV may be shared through the prefix cache (prefix caching is on and
  // the KV does not depend on its prompt's length: SchedulerConfig::prompt_dependent_kv_above).
  bool shares_prefix_cache(const Sequence& seq) const;
  // Whether the sequence would look for cached prefix blocks (it holds none, wants one row).
  bool wants_cached_prefix(const Sequence& seq) const;
  // Gives up a shared partial block the sequence is about to write into (copy-on-write).
  void unshare_partial_block(Sequence& seq);
  // Registers the sequence's newly computed full blocks in the prefix cache.
  void cache_computed_blocks(Sequence& seq);
  // Gives back the blocks past the sequence's tokens (rejected guesses, rolled-back output).
  void release_blocks_past_tokens(Sequence& seq);
  // Gives back the sequence's blocks that no later query of it reads (attention_window).
  void release_blocks_outside_window(Sequence& seq);
  PlannedChunk make_chunk(const Sequence& seq, int64_t num_new) const;

  SchedulerConfig config_;
  BlockManager& blocks_;
  std::map<int64_t, Sequence> sequences_;
  std::vector<int64_t> running_;
  std::vector<int64_t> waiting_;
  std::map<int64_t, bool> all_logits_;
  std::vector<int64_t> last_preempted_;
  // Sequences in a planned step whose on_step_done has not come yet (several steps may be in
  // flight through a pipeline): they are neither planned again nor preempted until it does.
  std::set<int64_t> in_flight_;
  int64_t next_step_id_ = 0;
  std::function<bool(const Sequence&)> swap_cheaper_;
  int num_waiting_for_prefetch_ = 0;
  int64_t num_swap_preemptions_ = 0;
  int64_t num_recompute_preemptions_ = 0;
  int64_t num_longrope_recomputes_ = 0;
};

}  // namespace weft
