#include "engine/engine.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <limits>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"

namespace weft {

Engine::Engine(const EngineConfig& config, int64_t num_kv_blocks, int block_size,
               StepExecutor& executor, ThreadPool& pool, DetokenizerFactory detokenizers)
    : config_(config),
      blocks_(num_kv_blocks, block_size, config.scheduler.enable_prefix_caching),
      scheduler_(config.scheduler, blocks_),
      executor_(executor),
      pool_(pool),
      detokenizers_(std::move(detokenizers)),
      seeds_(config.seed ? SeedSource(*config.seed) : SeedSource()) {}

absl::StatusOr<int64_t> Engine::add_request(Request request) {
  const int64_t prompt_len = static_cast<int64_t>(request.prompt_ids.size());
  if (prompt_len == 0) return absl::InvalidArgumentError("prompt: must contain at least one token");
  for (int32_t id : request.prompt_ids) {
    if (id < 0 || id >= config_.vocab_size) {
      return absl::InvalidArgumentError(absl::StrCat("prompt: token id ", id,
                                                     " is outside the vocabulary [0, ",
                                                     config_.vocab_size, ")"));
    }
  }
  if (request.prompt_logprobs &&
      (*request.prompt_logprobs < 0 || *request.prompt_logprobs > SamplingParams::kMaxLogprobs)) {
    return absl::InvalidArgumentError(absl::StrCat("prompt_logprobs: must be in [0, ", SamplingParams::kMaxLogprobs,
                                                   "], got ", *request.prompt_logprobs));
  }
  if (request.params.max_tokens == 0 && request.prompt_logprobs) {
    // Prefill only: the prompt's logprobs are the whole answer; nothing is sampled.
    if (request.params.min_tokens > 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("min_tokens: must be <= max_tokens (0), got ", request.params.min_tokens));
    }
    SamplingParams checked = request.params;
    checked.max_tokens = 1;
    WEFT_RETURN_IF_ERROR(checked.validate(config_.vocab_size));
  } else {
    WEFT_RETURN_IF_ERROR(request.params.validate(config_.vocab_size));
  }
  for (const auto& list : request.banned_phrases) {
    if (list == nullptr) return absl::InvalidArgumentError("banned_phrases: a null phrase list");
  }
  if (!request.banned_phrases.empty() && !detokenizers_) {
    return absl::InvalidArgumentError("banned_phrases: this engine produces no text (no tokenizer) to screen");
  }
  const int64_t total = prompt_len + request.params.max_tokens;
  if (total > config_.max_model_len) {
    return absl::InvalidArgumentError(absl::StrCat(
        "this model's maximum context length is ", config_.max_model_len, " tokens; the prompt has ",
        prompt_len, " and max_tokens asks for ", request.params.max_tokens, " more"));
  }
  // A sequence of a sliding-window model holds at most its window plus one step's chunk (and a
  // partial block at either end) at any time.
  int64_t needed = blocks_.blocks_for_tokens(total);
  if (const int64_t window = config_.scheduler.attention_window; window > 0) {
    needed = std::min(needed, blocks_.blocks_for_tokens(window + config_.scheduler.max_num_batched_tokens) + 1);
  }
  if (needed > blocks_.num_blocks()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the prompt (", prompt_len, " tokens) plus max_tokens (", request.params.max_tokens,
        ") needs ", needed, " KV blocks but the cache has only ",
        blocks_.num_blocks(), " (", blocks_.num_blocks() * blocks_.block_size(), " tokens)"));
  }

  const int64_t request_id = next_request_id_++;
  RequestInfo& info = requests_[request_id];
  info.params = std::move(request.params);
  if (info.params.diagnostics) info.record_attention = std::move(request.record_attention);
  if (request.prompt_logprobs) {
    info.prompt_logprobs = request.prompt_logprobs;
    info.prompt_logprob_params.logprobs = *request.prompt_logprobs;
    info.prompt_logprobs_partial.resize(prompt_len);
  }
  const uint64_t seed = info.params.seed ? *info.params.seed : seeds_.next();
  for (int i = 0; i < info.params.n; ++i) {
    Sequence seq;
    seq.id = next_seq_id_++;
    seq.priority = request.priority;
    seq.arrival = seq.id;
    seq.prompt_ids = request.prompt_ids;
    SequenceInfo& s = sequences_[seq.id];
    s.request_id = request_id;
    s.index = i;
    s.seed = seed;
    if (detokenizers_) {
      s.detokenizer = detokenizers_(request.prompt_ids, info.params.skip_special_tokens);
    }
    s.stop = std::make_unique<StopChecker>(info.params, config_.eos_token_ids);
    if (request.constraint) s.constraint = request.constraint->start();
    if (!request.banned_phrases.empty()) s.banned = std::make_unique<BannedPhraseFilter>(request.banned_phrases);
    info.seq_ids.push_back(seq.id);
    if (i == 0) {
      // Every prefill row is wanted (and the prompt is never taken from the prefix cache).
      if (info.prompt_logprobs) scheduler_.set_return_all_logits(seq.id, true);
      scheduler_.add(std::move(seq));
    } else {
      info.forks.push_back(std::move(seq));
    }
  }
  return request_id;
}

void Engine::abort(int64_t request_id) {
  auto it = requests_.find(request_id);
  if (it == requests_.end()) return;
  for (int64_t seq_id : it->second.seq_ids) {
    SequenceOutput out;
    out.request_id = request_id;
    out.index = sequences_.at(seq_id).index;
    out.finished = true;
    out.finish_reason = FinishReason::kAbort;
    pending_.push_back(std::move(out));
    scheduler_.remove(seq_id);
    if (proposer_) proposer_->forget(seq_id);
    erase_sequence(seq_id);
  }
  requests_.erase(it);
}

void Engine::choose_sampling_output(StepPlan& plan) const {
  plan.sample_candidates = 0;
  plan.candidate_logsumexp = false;
  int32_t k = 1;
  bool logsumexp = false;
  for (const PlannedChunk& chunk : plan.chunks) {
    // Every row of a scoring chunk is wanted whole; a speculating chunk's rows are sampled.
    if (chunk.logits == LogitsWanted::kAll && chunk.num_draft_tokens == 0) return;
    const Sequence* seq = scheduler_.find(chunk.seq_id);
    if (seq == nullptr) continue;
    const SamplingParams& p = requests_.at(sequences_.at(seq->id).request_id).params;
    const bool min_tokens_met = static_cast<int64_t>(seq->output_ids.size()) >= p.min_tokens;
    // A constraint or bans may rule out any candidate: they need the whole row (and a fork's, too).
    if (sequences_.at(seq->id).constraint || bans_at_next(*seq) != nullptr) return;
    for (const Sequence& child : requests_.at(sequences_.at(seq->id).request_id).forks) {
      if (sequences_.at(child.id).constraint) return;
    }
    if (p.diagnostics || !p.logit_bias.empty() || p.repetition_penalty != 1.0f || p.presence_penalty != 0.0f ||
        p.frequency_penalty != 0.0f || !min_tokens_met) {
      return;
    }
    // Without an active top_k the sampler draws from the whole vocabulary.
    int64_t needed = p.is_greedy() ? 1 : p.top_k_active(config_.vocab_size) ? p.top_k : config_.vocab_size;
    if (p.logprobs) {
      needed = std::max<int64_t>(needed, *p.logprobs);
      logsumexp = true;
    }
    if (needed > kMaxSampleCandidates) return;
    k = std::max(k, static_cast<int32_t>(needed));
  }
  plan.sample_candidates = k;
  plan.candidate_logsumexp = logsumexp;
}

SequenceSamplingState Engine::sampling_state(const Sequence& seq, std::span<const int32_t> extra,
                                             std::vector<int32_t>& storage) const {
  const SequenceInfo& info = sequences_.at(seq.id);
  SequenceSamplingState state;
  state.params = &requests_.at(info.request_id).params;
  state.prompt_ids = seq.prompt_ids;
  if (extra.empty()) {
    state.output_ids = seq.output_ids;
  } else {
    storage = seq.output_ids;
    storage.insert(storage.end(), extra.begin(), extra.end());
    state.output_ids = storage;
  }
  state.seed = info.seed;
  state.seq_index = static_cast<uint32_t>(info.index);
  state.eos_token_ids = config_.eos_token_ids;
  return state;
}

Tensor Engine::picked_rows(const StepOutput& output, const std::vector<int64_t>& rows) {
  const int64_t num_rows = static_cast<int64_t>(rows.size());
  if (output.logits.defined()) {
    sampled_from_.full_logits += num_rows;
    const int64_t vocab = output.logits.dim(1);
    bool consecutive = num_rows > 0;
    for (int64_t i = 1; i < num_rows && consecutive; ++i) consecutive = rows[i] == rows[0] + i;
    if (consecutive) {  // (every row of a decode batch) the rows as they are, no copy
      return Tensor::wrap(output.logits.data_as<float>() + rows[0] * vocab, DType::kF32, Shape{num_rows, vocab},
                          std::make_shared<Tensor>(output.logits));
    }
    Tensor picked = Tensor::empty(DType::kF32, Shape{num_rows, vocab});
    for (int64_t i = 0; i < num_rows; ++i) {
      std::memcpy(picked.data_as<float>() + i * vocab,
                  output.logits.data_as<float>() + rows[i] * vocab, vocab * sizeof(float));
    }
    return picked;
  }
  sampled_from_.candidates += num_rows;
  return expand_candidates(output.candidates, rows, config_.vocab_size);
}

absl::StatusOr<std::vector<SampleResult>> Engine::sample(const StepOutput& output,
                                                        const std::vector<int64_t>& rows,
                                                        const std::vector<const Sequence*>& seqs,
                                                        std::vector<SequenceSamplingState> states) {
  const int64_t num_rows = static_cast<int64_t>(rows.size());
  if (!output.logits.defined() && output.candidates.empty()) {  // the last stage took the argmax
    sampled_from_.argmax += num_rows;
    std::vector<SampleResult> samples(rows.size());
    for (size_t i = 0; i < rows.size(); ++i) {
      samples[i].token = output.tokens[rows[i]];
      samples[i].logprob = std::numeric_limits<float>::quiet_NaN();
    }
    return samples;
  }
  // The rows to sample from: copies of full logits rows, or candidates spread over rows that are
  // -inf elsewhere (exact for the plans choose_sampling_output makes).
  const Tensor picked = picked_rows(output, rows);
  std::vector<uint32_t> masks;
  if (states.empty()) {
    std::vector<int32_t> unused;
    std::vector<int64_t> seq_ids;
    for (size_t i = 0; i < rows.size(); ++i) {
      SequenceSamplingState state = sampling_state(*seqs[i], {}, unused);
      if (!output.logits.defined() && !output.candidates.logsumexp.empty()) {
        state.raw_logsumexp = output.candidates.logsumexp[rows[i]];
      }
      states.push_back(state);
      seq_ids.push_back(seqs[i]->id);
    }
    WEFT_RETURN_IF_ERROR(apply_constraints(states, seq_ids, masks));
  }
  return sampler_.sample(picked.view(), states, pool_);
}

void Engine::prefetch_masks(const StepPlan& plan) {
  if (!config_.overlap_constraint_masks) return;
  auto start = [&](int64_t seq_id) {
    SequenceInfo& info = sequences_.at(seq_id);
    if (!info.constraint) return;
    if (!mask_prefetcher_) mask_prefetcher_ = std::make_unique<MaskPrefetcher>(mask_words(config_.vocab_size));
    mask_prefetcher_->start(seq_id, info.constraint_version, info.constraint.get());
  };
  // The chunks step() samples from once the output arrives (see there). A speculating chunk's
  // masks were filled with its guesses (constrain_guesses): the prefetcher fills one state per
  // sequence, and which state follows depends on how many guesses stand. A prefill-only request
  // samples nothing.
  for (const PlannedChunk& chunk : plan.chunks) {
    const Sequence* seq = scheduler_.find(chunk.seq_id);
    if (seq == nullptr || chunk.logits == LogitsWanted::kNone || chunk.num_draft_tokens > 0 ||
        chunk.start_position + static_cast<int64_t>(chunk.token_ids.size()) != seq->num_tokens()) {
      continue;
    }
    const RequestInfo& request = requests_.at(sequences_.at(seq->id).request_id);
    if (request.params.max_tokens == 0) continue;
    start(seq->id);
    if (seq->output_ids.empty()) {
      for (const Sequence& child : request.forks) start(child.id);
    }
  }
}

void Engine::erase_sequence(int64_t seq_id) {
  if (mask_prefetcher_) mask_prefetcher_->forget(seq_id);
  sequences_.erase(seq_id);
}

absl::Status Engine::apply_constraints(std::vector<SequenceSamplingState>& states,
                                       const std::vector<int64_t>& seq_ids, std::vector<uint32_t>& masks) {
  // Rows with a grammar, bans at their position, or both (the mask is then their intersection).
  std::vector<size_t> masked;
  std::vector<const std::vector<int32_t>*> bans;
  for (size_t i = 0; i < seq_ids.size(); ++i) {
    const Sequence* seq = scheduler_.find(seq_ids[i]);
    const std::vector<int32_t>* banned = seq != nullptr ? bans_at_next(*seq) : nullptr;
    if (sequences_.at(seq_ids[i]).constraint || banned != nullptr) {
      masked.push_back(i);
      bans.push_back(banned);
    }
  }
  if (masked.empty()) return absl::OkStatus();
  const int32_t words = mask_words(config_.vocab_size);
  masks.assign(masked.size() * static_cast<size_t>(words), 0);
  std::vector<absl::Status> errors(masked.size());
  std::vector<char> restricts(masked.size(), 0);
  std::vector<char> dead(masked.size(), 0);  // bans (and the grammar) leave no token
  // Distinct sequences' constraints on distinct rows: safe to fill in parallel.
  pool_.parallel_for(static_cast<int64_t>(masked.size()), [&](int64_t begin, int64_t end) {
    for (int64_t c = begin; c < end; ++c) {
      const std::span<uint32_t> row(masks.data() + c * words, words);
      bool restricted = false;
      const int64_t seq_id = seq_ids[masked[c]];
      const SequenceInfo& info = sequences_.at(seq_id);
      if (TokenConstraint* constraint = info.constraint.get()) {
        auto filled = mask_prefetcher_ ? mask_prefetcher_->take(seq_id, info.constraint_version, *constraint, row)
                                       : constraint->fill_next_allowed(row);
        if (!filled.ok()) {
          errors[c] = filled.status();
          continue;
        }
        restricted = *filled;
      }
      if (bans[c] == nullptr) {
        restricts[c] = restricted;
        continue;
      }
      if (!restricted) std::fill(row.begin(), row.end(), ~0u);
      for (int32_t token : *bans[c]) row[token >> 5] &= ~(1u << (token & 31));
      restricts[c] = 1;
      dead[c] = std::all_of(row.begin(), row.end(), [](uint32_t w) { return w == 0; });
    }
  });
  for (size_t c = 0; c < masked.size(); ++c) {
    WEFT_RETURN_IF_ERROR(errors[c]);
    if (restricts[c]) states[masked[c]].allowed = std::span<const uint32_t>(masks.data() + c * words, words);
    if (dead[c]) dead_ends_.insert(seq_ids[masked[c]]);
  }
  return absl::OkStatus();
}

void Engine::attach_kv_tiers(std::unique_ptr<KvTierDirectory> tiers, const KvHostStore* coordinator_store) {
  const bool host_tier = tiers && tiers->stats().host_capacity_blocks > 0;
  blocks_.attach_tiers(std::move(tiers));
  coordinator_store_ = coordinator_store;
  if (host_tier && coordinator_store_ != nullptr) {
    const int block_size = blocks_.block_size();
    scheduler_.set_swap_policy([this, block_size](const Sequence&) { return preemption_costs_.swap_cheaper(block_size); });
  }
}

void Engine::record_step_costs(const StepPlan& plan, double seconds) {
  if (coordinator_store_ == nullptr) return;
  const KvHostStore::CopyTiming now = coordinator_store_->copy_timing();
  preemption_costs_.record_copies(now.blocks - copies_seen_.blocks, now.seconds - copies_seen_.seconds);
  copies_seen_ = now;
  // Prefill cost: steps that are mostly prefill, each plan alone on the ranks (one in flight).
  if (executor_.max_in_flight() != 1) return;
  int64_t tokens = 0, prefill = 0;
  for (const PlannedChunk& chunk : plan.chunks) {
    const int64_t n = static_cast<int64_t>(chunk.token_ids.size());
    tokens += n;
    if (chunk.num_draft_tokens == 0 && n > 1) prefill += n;  // a decode runs one known token
  }
  if (tokens >= 2 * blocks_.block_size() && 2 * prefill >= tokens) preemption_costs_.record_prefill(tokens, seconds);
}

absl::StatusOr<std::vector<SequenceOutput>> Engine::step() {
  const auto started = std::chrono::steady_clock::now();
  std::vector<SequenceOutput> outputs = std::move(pending_);
  pending_.clear();
  if (!scheduler_.has_unfinished() && in_flight_.empty()) return outputs;

  // Keep up to max_in_flight() plans going (pipeline micro-batches over disjoint sequences).
  // With several plans in flight, each takes a share of the sequences so every stage has work.
  const int slots = executor_.max_in_flight();
  const int share = slots == 1 ? 0
                               : std::max(1, (scheduler_.num_running() + scheduler_.num_waiting() +
                                              slots - 1) / slots);
  while (static_cast<int>(in_flight_.size()) < slots) {
    InFlight next;
    next.plan = scheduler_.schedule(share);
    // Nothing to run, but disk loads a waiting sequence needs agreed by every rank: a plan of
    // those instructions alone goes out (KvTierDirectory: multi-rank disk hits).
    if (next.plan.chunks.empty() && !blocks_.has_pending_loads()) break;
    if (proposer_) WEFT_RETURN_IF_ERROR(add_proposals(next));
    choose_sampling_output(next.plan);
    plan_attention_recording(next.plan);
    prefetch_masks(next.plan);
    // Last, after everything that may allocate blocks (drafts): the tiers' copies lead the plan.
    next.plan.kv_transfers = blocks_.take_transfers();
    WEFT_RETURN_IF_ERROR(executor_.submit(next.plan));
    in_flight_.push_back(std::move(next));
  }
  if (in_flight_.empty()) {
    // Everything that waits waits for its cached prefix to be read from disk: nothing to run
    // until a read is done.
    // (The read may have finished since the plan was made: then the next plan admits it.)
    if (scheduler_.num_waiting_for_prefetch() > 0) {
      blocks_.wait_for_prefetch();
      return outputs;
    }
    return absl::InternalError("the scheduler planned an empty step with requests waiting");
  }
  WEFT_ASSIGN_OR_RETURN(StepOutput output, executor_.collect());
  const InFlight step = std::move(in_flight_.front());
  in_flight_.pop_front();
  const StepPlan& plan = step.plan;
  WEFT_RETURN_IF_ERROR(blocks_.on_load_report(plan.kv_transfers, output.kv_load_report));
  take_recorded_attention(output.attention);
  record_step_costs(plan, std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count());

  // Which logits rows sample: the last row of each chunk that reaches its sequence's end, and
  // every row of a chunk carrying guesses (verified together).
  std::vector<int64_t> sample_rows;
  std::vector<const Sequence*> sample_seqs;
  std::vector<const PlannedChunk*> spec_chunks;
  std::vector<int64_t> spec_first_rows;
  std::vector<std::pair<const PlannedChunk*, int64_t>> prompt_logprob_chunks;  // with their first rows
  std::vector<int64_t> prefill_only;  // max_tokens 0: sequences whose prompt this step completes
  int64_t row = 0;
  for (const PlannedChunk& chunk : plan.chunks) {
    const Sequence* seq = scheduler_.find(chunk.seq_id);
    const int64_t len = static_cast<int64_t>(chunk.token_ids.size());
    const int64_t rows = chunk.logits == LogitsWanted::kAll ? len
                         : chunk.logits == LogitsWanted::kLast ? 1 : 0;
    const int64_t first_row = row;
    row += rows;
    if (seq == nullptr) continue;  // aborted while its step was in flight
    if (seq->is_prefilling()) num_prefilled_tokens_ += len;
    if (chunk.num_draft_tokens > 0) {
      spec_chunks.push_back(&chunk);
      spec_first_rows.push_back(first_row);
      continue;
    }
    const RequestInfo& request = requests_.at(sequences_.at(seq->id).request_id);
    if (request.prompt_logprobs && !request.prompt_logprobs_done && chunk.logits == LogitsWanted::kAll) {
      prompt_logprob_chunks.emplace_back(&chunk, first_row);
    }
    if (chunk.start_position + len == seq->num_tokens() && rows > 0) {
      if (request.params.max_tokens == 0) {  // prefill only: nothing to sample
        prefill_only.push_back(seq->id);
        continue;
      }
      sample_rows.push_back(row - 1);
      sample_seqs.push_back(seq);
      // The prompt is done: the request's other sequences fork here, sampling from this row.
      if (seq->output_ids.empty()) {
        for (const Sequence& child : request.forks) {
          sample_rows.push_back(row - 1);
          sample_seqs.push_back(&child);
        }
      }
    }
  }
  if (row != output.rows()) {
    return absl::InternalError(absl::StrCat("executor returned ", output.rows(),
                                            " logits rows, the plan wants ", row));
  }
  for (const auto& [chunk, first_row] : prompt_logprob_chunks) {
    WEFT_RETURN_IF_ERROR(collect_prompt_logprobs(*chunk, *scheduler_.find(chunk->seq_id), output, first_row));
  }
  std::vector<Emission> emissions;
  dead_ends_.clear();
  if (!sample_rows.empty()) {
    WEFT_ASSIGN_OR_RETURN(std::vector<SampleResult> samples, sample(output, sample_rows, sample_seqs));
    for (size_t i = 0; i < samples.size(); ++i) emissions.push_back({sample_seqs[i]->id, {samples[i]}});
  }
  int64_t accepted_all = 0, rejected = 0;
  if (!spec_chunks.empty()) {
    WEFT_ASSIGN_OR_RETURN(std::vector<Emission> verified, verify(step, output, spec_chunks, spec_first_rows));
    for (size_t c = 0; c < verified.size(); ++c) {
      const int64_t accepted = static_cast<int64_t>(verified[c].samples.size()) - 1;
      accepted_all += accepted;
      rejected += accepted < spec_chunks[c]->num_draft_tokens;
    }
    for (size_t c = 0; c < verified.size(); ++c) {
      const int64_t accepted = static_cast<int64_t>(verified[c].samples.size()) - 1;
      ++spec_stats_.num_drafts;
      spec_stats_.num_draft_tokens += spec_chunks[c]->num_draft_tokens;
      spec_stats_.num_accepted_tokens += accepted;
      spec_stats_.num_emitted_tokens += accepted + 1;
      for (int64_t j = 0; j < accepted; ++j) ++spec_stats_.accepted_per_position[j];
      // (guess_masks also holds the rows of sequences with bans at their next position.)
      if (auto info = sequences_.find(spec_chunks[c]->seq_id); info != sequences_.end() && info->second.constraint) {
        ++spec_stats_.num_constrained_drafts;
        spec_stats_.num_constrained_draft_tokens += spec_chunks[c]->num_draft_tokens;
        spec_stats_.num_constrained_accepted_tokens += accepted;
      }
      emissions.push_back(std::move(verified[c]));
    }
  }

  // Every step that chose k > 0 counts, with guesses or not (an n-gram lookup may find none):
  // the policy's tokens per step are a mean over all of them.
  if (step.k > 0) {
    policy_->record_acceptance(step.num_decoding, static_cast<int>(spec_chunks.size()), accepted_all, rejected);
  }

  std::vector<SampledToken> sampled;
  for (const Emission& e : emissions) {
    for (const SampleResult& r : e.samples) sampled.push_back({e.seq_id, r.token});
  }
  scheduler_.on_step_done(plan, sampled);
  for (const Emission& e : emissions) {
    if (scheduler_.find(e.seq_id) != nullptr) continue;
    // A fork waiting for its parent's prompt: it joins now with its own first token.
    SequenceInfo& info = sequences_.at(e.seq_id);
    RequestInfo& request = requests_.at(info.request_id);
    auto it = std::find_if(request.forks.begin(), request.forks.end(),
                           [&](const Sequence& s) { return s.id == e.seq_id; });
    Sequence child = std::move(*it);
    request.forks.erase(it);
    child.output_ids.push_back(e.samples.front().token);
    scheduler_.fork(request.seq_ids.front(), std::move(child));
  }

  for (const Emission& e : emissions) outputs.push_back(emit(e));
  // Prefill-only requests end with their prompt: every sequence of the request, forks included
  // (they never joined the scheduler), finishes with "length" and the prompt's logprobs.
  for (int64_t seq_id : prefill_only) {
    const int64_t request_id = sequences_.at(seq_id).request_id;
    RequestInfo& request = requests_.at(request_id);
    for (int64_t id : request.seq_ids) {
      SequenceOutput out;
      out.request_id = request_id;
      out.index = sequences_.at(id).index;
      out.finished = true;
      out.finish_reason = FinishReason::kLength;
      out.prompt_logprobs = request.prompt_logprobs_done;
      scheduler_.remove(id);
      if (proposer_) proposer_->forget(id);
      erase_sequence(id);
      outputs.push_back(std::move(out));
    }
    requests_.erase(request_id);
  }
  if (proposer_) {
    // A model proposer idle while k was 0 catches up on its next proposal: that step's time is
    // not what its k costs, but what exploring from k = 0 costs.
    const bool catching_up = proposer_->runs_a_model() && last_k_ == 0 && step.k > 0;
    if (step.decode_only) {
      const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
      if (catching_up) {
        policy_->record_catch_up(step.num_decoding, step.k, seconds, step.caught_up_tokens);
      } else {
        // A step where no sequence got guesses was a plain step: timed as one.
        policy_->record_time(step.num_decoding, step.proposals.empty() ? 0 : step.k, seconds);
      }
    }
    if (step.num_decoding > 0) last_k_ = step.k;
  }
  return outputs;
}

}  // namespace weft
