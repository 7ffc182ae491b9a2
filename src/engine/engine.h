// The engine loop on the coordinator (rank 0): requests in, token and text streams out.
//
// step(): the scheduler plans a ragged batch, the executor runs it on every rank, the sampler
// draws one token per finishing chunk, and each sequence's stop checker decides whether it
// ends (eos / stop tokens / stop strings / max_tokens / the model's context). Owned by one
// thread (DESIGN.md section 2); no locks inside.
//
// A request with n > 1 runs its prompt once: sequence 0 prefills it, and when the prompt is
// done the other n - 1 sequences fork from it (sharing its KV blocks, copy-on-write) and each
// samples its own first token from the same logits.
//
// Speculative decoding (enable_speculation): after planning a step, the engine asks a proposer
// for guesses after each decoding sequence of the plan (as many as SpeculationPolicy chooses),
// appends them to the sequence's chunk, and verifies the target's rows for them by rejection
// sampling (sampling/speculative_verifier.h): greedy output is token for token that of plain
// decoding and sampled output follows the target's distribution exactly. A sequence may then
// produce several tokens in one step.
//
// Constrained sequences (a grammar, TokenConstraint) speculate too: before the step their
// guesses are run through the grammar (accept, then rollback), the proposal is cut at the first
// guess it refuses, and the masks of the states after each kept guess are filled for the rows
// that verify them (constrain_guesses), so row j is sampled under the mask plain decoding would
// have there. Their masks are not prefetched (MaskPrefetcher fills one state per sequence); a
// constrained sequence whose proposal comes back empty is prefetched as usual.
//
// Prompt logprobs (Request::prompt_logprobs): the request's prefill chunks want every row
// (Scheduler::set_return_all_logits, so its prompt skips the prefix cache: cached tokens have no
// logits), and when its prompt is done the engine puts every prompt token's raw logprob given the
// tokens before it on the first SequenceOutput of each of its sequences. Such a request may have
// max_tokens 0: it finishes (finish reason length) when its prompt is done, sampling nothing.
//
// Banned phrases (Request::banned_phrases, safety/banned_phrase_filter.h): each sequence screens
// its detokenized text. Tokens whose text could still become part of a phrase are held back --
// neither their text nor their ids and logprobs leave the engine, and the stop checker sees them
// only once committed -- so no output ever contains a phrase, streamed or not. On a match the
// sequence rolls back to the token where the phrase began (Scheduler::truncate_output keeps the
// KV, block tables and prefix-cache hashes consistent; detokenizer, grammar and filter roll back
// too), that token is banned at that position (and so is each further choice that brings the same
// or another phrase back there: bans accumulate per position while the tokens before it stay),
// and the position is sampled again under a mask of the bans, combined with a grammar's; when
// that mask leaves no token (a grammar allowing only banned text there), the token before is
// banned in turn, backtracking as far as the committed text. Bans
// live with the sequence, so a preempted sequence recomputes with them; a seeded sequence draws
// the same uniform at the position again, so equal seeds give equal outputs. A sequence with
// bans at its next position needs full logits rows; it speculates with the bans in the mask of
// its first verified row (constrain_guesses). After
// EngineConfig::max_banned_phrase_rollbacks rollbacks, or more than max_bans_per_position bans at
// one position, it finishes with "content_filter" and the text committed so far.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/thread_pool.h"
#include "engine/incremental_detokenizer.h"
#include "engine/mask_prefetcher.h"
#include "engine/preemption_cost.h"
#include "engine/scheduler.h"
#include "engine/speculative/proposer.h"
#include "engine/speculative/speculation_policy.h"
#include "engine/step_executor.h"
#include "kv/block_manager.h"
#include "kv/kv_host_store.h"
#include "model/attention_selection.h"
#include "safety/banned_phrase_filter.h"
#include "sampling/rng.h"
#include "sampling/sampler.h"
#include "sampling/sampling_params.h"
#include "sampling/stop_checker.h"
#include "sampling/token_constraint.h"

namespace weft {

struct EngineConfig {
  SchedulerConfig scheduler;
  int64_t vocab_size = 0;
  int64_t max_model_len = 0;         // prompt + output tokens at most
  std::vector<int32_t> eos_token_ids;
  std::optional<uint64_t> seed;      // base of seeds for unseeded requests (random if absent)
  // Banned phrases: a sequence finishes with "content_filter" past these (see the header comment).
  int max_banned_phrase_rollbacks = 256;
  int max_bans_per_position = 32;
  // Constrained sequences' next-token masks are filled on a thread of their own while the forward
  // pass of the step that samples them runs (engine/mask_prefetcher.h); off: when the step's
  // output arrives, on the kernel pool. The masks, and so the outputs, are the same either way.
  bool overlap_constraint_masks = true;
};

// Counters since the engine started (weft:banned_phrase_* in /metrics).
struct BannedPhraseStats {
  int64_t matches = 0;              // phrases found in a sequence's text (each rolled back or filtered)
  // Generated tokens rollbacks discarded (for matches, and for positions bans left no token).
  int64_t rolled_back_tokens = 0;
  int64_t content_filtered = 0;     // sequences finished with "content_filter"
};

// Speculative decoding (Engine::enable_speculation).
struct SpeculationOptions {
  static constexpr int kMaxTokens = 16;
  int num_speculative_tokens = 4;  // K: guesses per sequence per step at most, in [1, kMaxTokens]
  bool adaptive = true;            // SpeculationPolicy: per step, as many as pay (0..K); else K
};

// Counters since the engine started (the vLLM names in /metrics: spec_decode_*).
struct SpeculationStats {
  int64_t num_drafts = 0;           // sequence-steps that verified guesses
  int64_t num_draft_tokens = 0;     // guesses verified
  int64_t num_accepted_tokens = 0;  // guesses accepted
  int64_t num_emitted_tokens = 0;   // tokens those sequence-steps produced (accepted + 1 each)
  std::vector<int64_t> accepted_per_position;  // [j]: guesses accepted at position j (0-based)
  int64_t num_steps = 0;            // steps planned while speculation was enabled
  int64_t num_steps_speculating = 0;  // ... in which the policy chose k > 0
  // Of the above, the sequences with a grammar (TokenConstraint): their sequence-steps that
  // verified guesses, the guesses verified and accepted, and the guesses the grammar refused
  // before the step (dropped from the proposal, never run through the target).
  int64_t num_constrained_drafts = 0;
  int64_t num_constrained_draft_tokens = 0;
  int64_t num_constrained_accepted_tokens = 0;
  int64_t num_grammar_dropped_tokens = 0;
  // Sequence-steps whose guesses met banned phrases' last tokens at their next position (the first
  // guess's row masked), and the guesses those bans dropped before the step.
  int64_t num_banned_screened = 0;
  int64_t num_banned_dropped_tokens = 0;
  double acceptance_rate() const {
    return num_draft_tokens > 0 ? static_cast<double>(num_accepted_tokens) / num_draft_tokens : 0.0;
  }
  // Mean tokens a verifying sequence-step produced (1 + accepted guesses).
  double mean_accepted_length() const {
    return num_drafts > 0 ? static_cast<double>(num_emitted_tokens) / num_drafts : 0.0;
  }
};

struct Request {
  std::vector<int32_t> prompt_ids;
  SamplingParams params;
  // A constraint on the output (a grammar, src/constrain/); each sequence starts its own. The
  // engine masks every sampled row with it and advances it with every token taken.
  std::shared_ptr<const TokenConstraintSource> constraint;
  int priority = 0;  // lower runs first
  // vLLM's prompt_logprobs: when set, N in [0, SamplingParams::kMaxLogprobs] alternatives per
  // prompt position (SequenceOutput::prompt_logprobs). params.max_tokens may then be 0.
  std::optional<int> prompt_logprobs;
  // Phrase lists the output must never contain (the server's --banned-phrases and the request's
  // bad_words); empty: none. Needs an engine with detokenizers.
  std::vector<std::shared_ptr<const BannedPhraseSet>> banned_phrases;
  // Set (a "weft_debug" request on weft serve): every rank records these layers' and heads'
  // attention weights for the rows this request's sequences sample from (StepPlan::
  // record_attention), returned in SequenceDiagnostics::attention. Indices outside the model
  // record nothing (the server checks them). Needs params.diagnostics.
  std::optional<AttentionSelection> record_attention;
};

// What a sequence's step looked like inside, for debugging reports (SamplingParams::diagnostics).
struct SequenceDiagnostics {
  // KV blocks the sequence's table held in the pool at the end of the step (prefix blocks shared
  // with other sequences included, blocks a sliding window gave back not), before a finish freed
  // them.
  int64_t kv_blocks = 0;
  // Banned-phrase rollbacks since the last output: the generated tokens withdrawn from output
  // index `at` on (never sent: they were held for screening) and the token banned at `at`.
  struct Rollback {
    int64_t at = 0;
    std::vector<int32_t> token_ids;
    int32_t banned_token = 0;
  };
  std::vector<Rollback> rollbacks;
  // Request::record_attention: the rows recorded since the last output (a row recorded again, as
  // a re-verified guess, comes again; the newest counts).
  std::vector<AttentionRecord> attention;
};

// The logprob of prompt token p given prompt tokens [0, p), with the sampler's conventions for
// raw logprobs (sampler.h: log_softmax of the raw logits row; top_logprobs the N most likely
// tokens, descending, ties to the lower id, the prompt token not added). Position 0 has no
// context: logprob NaN, rank 0, no alternatives.
struct PromptLogprob {
  int32_t token = 0;
  float logprob = 0.0f;
  int64_t rank = 0;  // 1 + the number of tokens with a strictly larger logit (vLLM's rank)
  std::vector<std::pair<int32_t, float>> top_logprobs;
};
using PromptLogprobs = std::vector<PromptLogprob>;  // one per prompt position

// What one sequence produced in one step.
struct SequenceOutput {
  int64_t request_id = 0;
  int index = 0;  // 0 .. n-1 within the request
  std::vector<int32_t> token_ids;     // new tokens (one per step; more with speculation)
  std::vector<SampleResult> samples;  // their sampling results (logprobs)
  std::string text;                   // new text safe to stream
  bool finished = false;
  FinishReason finish_reason = FinishReason::kNone;
  std::optional<std::string> stop_string;
  std::optional<int32_t> stop_token;
  // Request::prompt_logprobs: set on the first output of each sequence of the request (shared by
  // its sequences), one entry per prompt token; null otherwise.
  std::shared_ptr<const PromptLogprobs> prompt_logprobs;
  // With SamplingParams::diagnostics only.
  std::optional<SequenceDiagnostics> diagnostics;
};

class Engine {
 public:
  // Borrows the executor and the pool. `detokenizers` may be empty (token-id mode: no text).
  Engine(const EngineConfig& config, int64_t num_kv_blocks, int block_size,
         StepExecutor& executor, ThreadPool& pool, DetokenizerFactory detokenizers = {});

  // Validates and queues a request; returns its id. Errors: empty prompt, a token id outside the
  // vocabulary, invalid sampling parameters (naming the field; max_tokens 0 is valid only with
  // prompt_logprobs), prompt_logprobs outside [0, kMaxLogprobs], a prompt + max_tokens past
  // max_model_len or past the whole KV cache (stating the limits).
  absl::StatusOr<int64_t> add_request(Request request);
  // Ends every sequence of the request (finish reason "abort") and frees its blocks.
  void abort(int64_t request_id);

  // One engine step. Returns the outputs of the sequences that produced something or finished
  // (aborted sequences report once, in the next step).
  absl::StatusOr<std::vector<SequenceOutput>> step();
  // Scores `token_ids` as one sequence: returns, for i in [1, size), the natural log-probability
  // of token_ids[i] given token_ids[0, i) (what perplexity and prompt scoring need). Runs the
  // prompt in chunks of at most max_num_batched_tokens tokens on every rank, holding KV blocks
  // only for the call. Errors: a call while requests are unfinished, fewer than 2 tokens, a token
  // outside the vocabulary, more tokens than max_model_len or the KV cache holds.
  absl::StatusOr<std::vector<double>> score(const std::vector<int32_t>& token_ids);
  // score() that also shows `on_row` each logits row it scores: (i, row, vocab) for the row that
  // predicts token_ids[i], i in [1, size), in order (on the coordinator; for KL divergences).
  using ScoredRowVisitor = std::function<void(int64_t, const float*, int64_t)>;
  absl::StatusOr<std::vector<double>> score(const std::vector<int32_t>& token_ids,
                                            const ScoredRowVisitor& on_row);

  // Turns speculative decoding on with `proposer`. InvalidArgument when K is out of range.
  absl::Status enable_speculation(std::unique_ptr<Proposer> proposer, const SpeculationOptions& options);
  bool speculating() const { return proposer_ != nullptr; }
  const SpeculationStats& speculation_stats() const { return spec_stats_; }
  const Proposer* proposer() const { return proposer_.get(); }
  const SpeculationPolicy* speculation_policy() const { return policy_.get(); }

  bool has_unfinished() const {
    return scheduler_.has_unfinished() || !pending_.empty() || !in_flight_.empty();
  }

  const Scheduler& scheduler() const { return scheduler_; }
  const BlockManager& blocks() const { return blocks_; }
  // Puts host/disk KV tiers below the pool (before the first request). Every plan the engine
  // submits then carries the tiers' pending instructions (StepPlan::kv_transfers). With a host
  // tier, preemption chooses swap or recompute by measured cost (engine/preemption_cost.h):
  // `coordinator_store` (this process's rank's store, borrowed) times the block copies.
  void attach_kv_tiers(std::unique_ptr<KvTierDirectory> tiers, const KvHostStore* coordinator_store = nullptr);
  const PreemptionCostModel& preemption_costs() const { return preemption_costs_; }
  // Null without tiers.
  const KvTierDirectory* kv_tiers() const { return blocks_.tiers(); }
  const EngineConfig& config() const { return config_; }
  // Prompt tokens run through the model (a prefix taken from the cache is not counted).
  int64_t num_prefilled_tokens() const { return num_prefilled_tokens_; }
  // Prefix-cache statistics: prompt tokens looked up and found (BlockManager).
  int64_t num_prefix_query_tokens() const { return blocks_.prefix_query_tokens(); }
  int64_t num_prefix_hit_tokens() const { return blocks_.prefix_hit_tokens(); }
  // Fraction of KV blocks held by sequences.
  double kv_usage() const { return blocks_.usage(); }
  int64_t num_requests() const { return static_cast<int64_t>(requests_.size()); }
  // Sampled rows by what the last stage returned for them (StepPlan::sample_candidates).
  struct SampledFrom {
    int64_t full_logits = 0;
    int64_t argmax = 0;
    int64_t candidates = 0;
  };
  const SampledFrom& sampled_from() const { return sampled_from_; }
  const BannedPhraseStats& banned_phrase_stats() const { return banned_stats_; }
  // Constrained rows whose mask was filled ahead, during their step's forward pass.
  int64_t num_prefetched_masks() const { return mask_prefetcher_ ? mask_prefetcher_->num_prefetched() : 0; }

 private:
  // A generated token the banned-phrase filter has not committed yet, with its text.
  struct HeldToken {
    SampleResult sample;
    std::string text;
  };
  struct SequenceInfo {
    int64_t request_id = 0;
    int index = 0;
    uint64_t seed = 0;
    std::unique_ptr<IncrementalDetokenizer> detokenizer;
    std::unique_ptr<StopChecker> stop;
    std::unique_ptr<TokenConstraint> constraint;  // null: unconstrained
    uint64_t constraint_version = 0;  // counts the constraint's accepts and rollbacks
    bool prompt_logprobs_sent = false;
    // Banned phrases (null filter: none apply): the output tokens committed (passed to the stop
    // checker and out of the engine), the screened ones after them, the tokens banned at each
    // output position and the rollbacks so far.
    std::unique_ptr<BannedPhraseFilter> banned;
    int64_t num_committed = 0;
    std::deque<HeldToken> held;
    std::map<int64_t, std::vector<int32_t>> bans;
    int rollbacks = 0;
    // SamplingParams::diagnostics: what the next output reports (rollbacks, attention rows).
    SequenceDiagnostics diagnostics;
  };
  struct RequestInfo {
    SamplingParams params;
    std::vector<int64_t> seq_ids;
    std::vector<Sequence> forks;  // n > 1: sequences 1..n-1 until sequence 0's prompt is done
    // Request::prompt_logprobs: N, the positions filled so far (chunk by chunk; a preempted
    // prefill refills them) and, once the prompt is done, the finished list.
    std::optional<int> prompt_logprobs;
    SamplingParams prompt_logprob_params;  // logprobs = N: what the sampler's raw logprobs read
    PromptLogprobs prompt_logprobs_partial;
    std::shared_ptr<const PromptLogprobs> prompt_logprobs_done;
    std::optional<AttentionSelection> record_attention;
  };
  // Adds the plan's chunks that want logits of requests with record_attention to
  // plan.record_attention; takes the step's recorded rows to their sequences.
  void plan_attention_recording(StepPlan& plan) const;
  void take_recorded_attention(std::vector<AttentionRecord>& records);

  // Sets plan.sample_candidates and plan.candidate_logsumexp: the least the last stage may return
  // so that sampling from it is exact. K = 1 (argmax tokens) when every sequence is greedy;
  // otherwise the largest of each sequence's need: 1 for greedy, top_k when sampling with top_k
  // <= kMaxSampleCandidates (top_p and min_p act within those k), the N alternatives of logprobs
  // N (which also ask for each row's log-sum-exp). K = 0 (full logits) when any sequence needs the
  // whole row: diagnostics (weft inspect), logit_bias, penalties, pending min_tokens (eos
  // suppression), sampling without top_k, or a chunk that wants every token's logits.
  void choose_sampling_output(StepPlan& plan) const;
  // The grammar masks of a constrained sequence's verified rows: row j (of guesses + 1) is the
  // mask after the sequence's output and guesses 1..j, filled when the guesses were screened
  // (engine_guess_masks.cpp). restricted[j] == 0: row j is not masked (the grammar allows every
  // token there, or the row follows a drawn guess the grammar refused and is never drawn from).
  struct GuessMasks {
    std::vector<uint32_t> words;  // rows x mask_words(vocab)
    std::vector<char> restricted;
  };
  // A planned step, with the guesses its chunks carry (by sequence) and the k it was planned with.
  struct InFlight {
    StepPlan plan;
    std::map<int64_t, Proposal> proposals;
    // The constrained sequences among `proposals`, and those with bans at their next position.
    std::map<int64_t, GuessMasks> guess_masks;
    int k = 0;
    int num_decoding = 0;      // chunks that decode (one known token each)
    bool decode_only = false;  // no prefill in the plan: the policy may learn from its time
    int64_t caught_up_tokens = 0;  // what a model proposer ran to catch up before guessing
  };
  // Asks the proposer for guesses after the plan's decoding sequences and appends them.
  absl::Status add_proposals(InFlight& step);
  // Screens the guesses of constrained sequences by their grammar (engine_guess_masks.cpp):
  // each proposal is cut at its first guess the grammar refuses -- before it when the guesses
  // are point masses, after it when they were drawn from q (rejection sampling must see the
  // refusal: p(d) = 0 there, and the token emitted is the residual's draw, not p's) -- and the
  // masks of the rows that verify the rest go into `masks`. The constraints end in the state they
  // began in (accept, then rollback); emit() advances them over what is accepted. A sequence
  // with bans at its next position gets row 0's mask without them (with its grammar's, if any);
  // a banned guess 0 is refused the same way, and bans leaving no token drop the proposal.
  absl::Status constrain_guesses(std::span<const ProposalRequest> requests, std::vector<Proposal>& proposals,
                                 std::map<int64_t, GuessMasks>& masks);
  // What one sequence emitted in a step: its tokens in order and their sampling results.
  struct Emission {
    int64_t seq_id = 0;
    std::vector<SampleResult> samples;
  };
  // Verifies the guesses of the chunks of `step` that carry some; `first_rows[i]` is the first
  // output row of the i-th such chunk (in plan order).
  absl::StatusOr<std::vector<Emission>> verify(const InFlight& step, const StepOutput& output,
                                               const std::vector<const PlannedChunk*>& chunks,
                                               const std::vector<int64_t>& first_rows);
  // Starts filling the masks of the plan's constrained sequences that sample in it (with their
  // forks), to overlap the forward pass; apply_constraints takes them.
  void prefetch_masks(const StepPlan& plan);
  // The sequence's entry goes (a finished or aborted sequence): its mask job first.
  void erase_sequence(int64_t seq_id);
  // Fills the constraint masks of the rows whose sequences have one into `masks` (one row of
  // mask_words(vocab) words per state) and points each such state's `allowed` at its row.
  absl::Status apply_constraints(std::vector<SequenceSamplingState>& states,
                                 const std::vector<int64_t>& seq_ids, std::vector<uint32_t>& masks);
  // Output rows `rows` as F32 [rows.size(), vocab] to sample from, read only (candidates
  // expanded to -inf rows; consecutive logits rows seen where they are, without a copy); counts
  // them in sampled_from_.
  Tensor picked_rows(const StepOutput& output, const std::vector<int64_t>& rows);
  // The sampling state of `seq` with `extra` tokens taken as generated after its output
  // (`storage` keeps the concatenation alive).
  SequenceSamplingState sampling_state(const Sequence& seq, std::span<const int32_t> extra,
                                       std::vector<int32_t>& storage) const;
  // Prompt logprobs from the rows of `chunk` (a prefill chunk of `seq` that wants every row,
  // starting at output row `first_row`); when the chunk completes the prompt, the request's list
  // is finished and the sequence's later chunks want only their last row again.
  absl::Status collect_prompt_logprobs(const PlannedChunk& chunk, const Sequence& seq, const StepOutput& output,
                                       int64_t first_row);
  // What a step's tokens for one sequence produce (engine_emit.cpp): each token goes through its
  // grammar, detokenizer, banned-phrase screening (which may roll the sequence back) and, once
  // committed, the stop checker; a finished sequence is removed.
  SequenceOutput emit(const Emission& e);
  // Passes output token `index` (committed: its text is final) to the stop checker.
  void commit_token(SequenceInfo& info, SequenceOutput& out, int64_t prompt_len, int64_t index,
                    int64_t num_accepted, const SampleResult& sample, std::string_view text);
  enum class Screened { kHeld, kRolledBack, kContentFilter };
  // Screens output token `index` (its grammar and detokenizer already took it).
  Screened screen_token(int64_t seq_id, SequenceInfo& info, int64_t index, const SampleResult& sample,
                        std::string text);
  // Rolls the sequence back to where `match` began and bans the token there.
  Screened roll_back(int64_t seq_id, SequenceInfo& info, const BannedPhraseFilter::Match& match);
  // The tokens banned at the sequence's next position (null: none).
  const std::vector<int32_t>* bans_at_next(const Sequence& seq) const;

  // One token per row of `output` named by `rows`, for the sequences `seqs` (or, when given,
  // under `states`, one per row, with seqs unused).
  absl::StatusOr<std::vector<SampleResult>> sample(const StepOutput& output,
                                                   const std::vector<int64_t>& rows,
                                                   const std::vector<const Sequence*>& seqs,
                                                   std::vector<SequenceSamplingState> states = {});

  EngineConfig config_;
  BlockManager blocks_;
  Scheduler scheduler_;
  StepExecutor& executor_;
  ThreadPool& pool_;
  DetokenizerFactory detokenizers_;
  Sampler sampler_;
  SeedSource seeds_;
  std::map<int64_t, RequestInfo> requests_;
  std::map<int64_t, SequenceInfo> sequences_;
  std::vector<SequenceOutput> pending_;  // abort reports
  std::deque<InFlight> in_flight_;       // submitted, not yet collected (oldest first)
  std::unique_ptr<Proposer> proposer_;
  std::unique_ptr<SpeculationPolicy> policy_;
  SpeculationStats spec_stats_;
  int last_k_ = 0;  // the k of the last collected step that had decoding sequences
  int64_t next_request_id_ = 0;
  int64_t next_seq_id_ = 0;
  // Feeds preemption_costs_ from the step just collected (`seconds`: its time).
  void record_step_costs(const StepPlan& plan, double seconds);
  int64_t num_prefilled_tokens_ = 0;
  PreemptionCostModel preemption_costs_;
  const KvHostStore* coordinator_store_ = nullptr;
  KvHostStore::CopyTiming copies_seen_;  // the store's totals when last recorded
  SampledFrom sampled_from_;
  BannedPhraseStats banned_stats_;
  // Sequences whose row this step's bans (with their grammar) left no token at all: what they
  // sampled is void, and the token before it is banned instead (emit).
  std::set<int64_t> dead_ends_;
  // Masks filled ahead (null until the first constrained plan, or when overlap is off). Last: it
  // is destroyed first, while the constraints its jobs read still exist.
  std::unique_ptr<MaskPrefetcher> mask_prefetcher_;
};

}  // namespace weft
