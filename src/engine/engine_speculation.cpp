// Engine's speculative decoding: turning it on, adding the proposer's guesses to a step's
// decoding chunks (Engine::add_proposals), and verifying them against the target's rows
// (Engine::verify: greedy and seeded requests by plain sampling of each row, others by rejection
// sampling), which decides the tokens each sequence emits. See engine.h for the contracts.
#include <algorithm>
#include <cstring>
#include <limits>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "engine/engine.h"
#include "sampling/speculative_verifier.h"

namespace weft {

absl::Status Engine::enable_speculation(std::unique_ptr<Proposer> proposer,
                                        const SpeculationOptions& options) {
  if (options.num_speculative_tokens < 1 || options.num_speculative_tokens > SpeculationOptions::kMaxTokens) {
    return absl::InvalidArgumentError(absl::StrCat("--num-speculative-tokens: must be in [1, ",
                                                   SpeculationOptions::kMaxTokens, "], got ",
                                                   options.num_speculative_tokens));
  }
  if (proposer == nullptr) return absl::InvalidArgumentError("speculation needs a proposer");
  proposer_ = std::move(proposer);
  policy_ = std::make_unique<SpeculationPolicy>(options.num_speculative_tokens, options.adaptive);
  spec_stats_.accepted_per_position.assign(options.num_speculative_tokens, 0);
  return absl::OkStatus();
}

absl::Status Engine::add_proposals(InFlight& step) {
  StepPlan& plan = step.plan;
  // Chunks running one known token of a generating sequence. A chunk that wants every row (a
  // prefill of a prompt-logprobs request, even of one token) is never one: its rows are read as
  // they are, and guesses appended to it would be taken for prompt tokens.
  std::vector<size_t> decoding;
  for (size_t i = 0; i < plan.chunks.size(); ++i) {
    const PlannedChunk& chunk = plan.chunks[i];
    const Sequence* seq = scheduler_.find(chunk.seq_id);
    // Constrained sequences speculate with their guesses screened by the grammar, and sequences
    // with bans at their next position with the first row's mask losing the banned tokens
    // (constrain_guesses).
    if (seq != nullptr && chunk.token_ids.size() == 1 && chunk.logits == LogitsWanted::kLast &&
        !seq->is_prefilling() && !seq->output_ids.empty()) {
      decoding.push_back(i);
    }
  }
  step.num_decoding = static_cast<int>(decoding.size());
  step.decode_only = !decoding.empty() && decoding.size() == plan.chunks.size();
  ++spec_stats_.num_steps;
  if (decoding.empty()) return absl::OkStatus();
  step.k = policy_->choose(step.num_decoding);
  if (step.k == 0) return absl::OkStatus();
  ++spec_stats_.num_steps_speculating;

  int64_t budget = config_.scheduler.max_num_batched_tokens - plan.num_tokens();
  std::vector<ProposalRequest> requests;
  std::vector<size_t> chunk_of;
  for (size_t i : decoding) {
    const Sequence& seq = *scheduler_.find(plan.chunks[i].seq_id);
    const SequenceInfo& info = sequences_.at(seq.id);
    const SamplingParams& params = requests_.at(info.request_id).params;
    // Room for every guess plus the token after them: max_tokens and the context both hold.
    const int64_t room = std::min<int64_t>(params.max_tokens - static_cast<int64_t>(seq.output_ids.size()),
                                           config_.max_model_len - seq.num_tokens()) - 1;
    const int cap = static_cast<int>(
        std::min<int64_t>({step.k, room, budget, scheduler_.guesses_before_rope_switch(seq)}));
    if (cap < 1) continue;
    budget -= cap;
    ProposalRequest r;
    r.seq_id = seq.id;
    r.prompt_ids = seq.prompt_ids;
    r.output_ids = seq.output_ids;
    r.params = &params;
    r.seed = info.seed;
    r.seq_index = static_cast<uint32_t>(info.index);
    r.max_tokens = cap;
    r.rope_prompt_len = seq.rope_prompt_len();
    requests.push_back(r);
    chunk_of.push_back(i);
  }
  if (requests.empty()) return absl::OkStatus();
  WEFT_ASSIGN_OR_RETURN(std::vector<Proposal> proposals, proposer_->propose(requests));
  step.caught_up_tokens = proposer_->caught_up_tokens();
  if (proposals.size() != requests.size()) {
    return absl::InternalError(absl::StrCat("proposer ", std::string(proposer_->name()), " returned ", proposals.size(),
                                            " proposals for ", requests.size(), " sequences"));
  }
  for (size_t r = 0; r < requests.size(); ++r) {
    const Proposal& p = proposals[r];
    if (p.tokens.empty()) continue;
    const bool bad_ids = std::any_of(p.tokens.begin(), p.tokens.end(),
                                     [&](int32_t t) { return t < 0 || t >= config_.vocab_size; });
    if (static_cast<int>(p.tokens.size()) > requests[r].max_tokens || bad_ids ||
        (!p.q.empty() && p.q.size() != p.tokens.size())) {
      return absl::InternalError(absl::StrCat("proposer ", std::string(proposer_->name()), ": a malformed proposal for sequence ",
                                              requests[r].seq_id));
    }
  }
  std::map<int64_t, GuessMasks> masks;
  WEFT_RETURN_IF_ERROR(constrain_guesses(requests, proposals, masks));
  for (size_t r = 0; r < requests.size(); ++r) {
    Proposal& p = proposals[r];
    if (p.tokens.empty()) continue;  // (perhaps cut to nothing by the grammar: decodes plainly)
    if (scheduler_.add_draft_tokens(plan.chunks[chunk_of[r]], p.tokens)) {
      step.proposals[requests[r].seq_id] = std::move(p);
      if (auto m = masks.find(requests[r].seq_id); m != masks.end()) {
        step.guess_masks[requests[r].seq_id] = std::move(m->second);
      }
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<Engine::Emission>> Engine::verify(const InFlight& step, const StepOutput& output,
                                                            const std::vector<const PlannedChunk*>& chunks,
                                                            const std::vector<int64_t>& first_rows) {
  std::vector<Emission> emissions(chunks.size());
  auto guesses_of = [](const PlannedChunk& chunk) {
    const int k = chunk.num_draft_tokens;
    return std::span<const int32_t>(chunk.token_ids.data() + chunk.token_ids.size() - k, k);
  };
  if (!output.logits.defined() && output.candidates.empty()) {
    // Argmax rows (every sequence greedy, nothing processed): keep guesses while they are the
    // argmax, then emit the argmax.
    for (size_t c = 0; c < chunks.size(); ++c) {
      const std::span<const int32_t> guesses = guesses_of(*chunks[c]);
      emissions[c].seq_id = chunks[c]->seq_id;
      for (size_t j = 0; j <= guesses.size(); ++j) {
        SampleResult r;
        r.token = output.tokens[first_rows[c] + j];
        r.logprob = std::numeric_limits<float>::quiet_NaN();
        emissions[c].samples.push_back(r);
        if (j == guesses.size() || guesses[j] != r.token) break;
      }
      sampled_from_.argmax += static_cast<int64_t>(emissions[c].samples.size());
    }
    return emissions;
  }
  // Every row of every speculating chunk, with the state it is sampled under (row j: after
  // guesses 1..j), split by how the chunk's guesses were made.
  struct Rows {
    std::vector<size_t> chunks;
    std::vector<int64_t> rows;
    std::vector<SequenceSamplingState> states;
  };
  Rows point, drawn;  // point-mass guesses; guesses drawn from a distribution q
  std::deque<std::vector<int32_t>> storage;  // stable addresses for the states' output ids
  for (size_t c = 0; c < chunks.size(); ++c) {
    const PlannedChunk& chunk = *chunks[c];
    const Sequence& seq = *scheduler_.find(chunk.seq_id);
    const std::span<const int32_t> guesses = guesses_of(chunk);
    Rows& into = step.proposals.at(chunk.seq_id).q.empty() ? point : drawn;
    into.chunks.push_back(c);
    // A constrained sequence's rows, or a sequence's with bans at its next position.
    const auto masks = step.guess_masks.find(chunk.seq_id);
    const int32_t words = mask_words(config_.vocab_size);
    for (size_t j = 0; j <= guesses.size(); ++j) {
      const int64_t row = first_rows[c] + static_cast<int64_t>(j);
      into.rows.push_back(row);
      SequenceSamplingState state = sampling_state(seq, guesses.first(j), storage.emplace_back());
      if (!output.logits.defined() && !output.candidates.logsumexp.empty()) {
        state.raw_logsumexp = output.candidates.logsumexp[row];
      }
      if (masks != step.guess_masks.end() && masks->second.restricted[j]) {
        state.allowed = std::span<const uint32_t>(masks->second.words.data() + j * words, words);
      }
      into.states.push_back(state);
    }
  }
  // Point masses: sample every row as plain decoding would (its draw at that step, with the
  // guesses before it as the prefix) and keep the guesses while they equal the draws. A guess d
  // then stands with the target's probability p(d) and a miss emits a draw from p without d --
  // the rejection rule for q = [d] -- and every emitted token is the very one plain decoding
  // would have drawn.
  if (!point.rows.empty()) {
    WEFT_ASSIGN_OR_RETURN(std::vector<SampleResult> drawn_rows, sample(output, point.rows, {}, point.states));
    size_t first = 0;
    for (size_t c : point.chunks) {
      const std::span<const int32_t> guesses = guesses_of(*chunks[c]);
      emissions[c].seq_id = chunks[c]->seq_id;
      for (size_t j = 0; j <= guesses.size(); ++j) {
        emissions[c].samples.push_back(drawn_rows[first + j]);
        if (j == guesses.size() || guesses[j] != drawn_rows[first + j].token) break;
      }
      first += guesses.size() + 1;
    }
  }
  if (drawn.rows.empty()) return emissions;
  // Guesses drawn from q: rejection sampling (speculative_verifier.h), then the emitted tokens'
  // logprobs from their rows.
  const Tensor picked = picked_rows(output, drawn.rows);
  WEFT_ASSIGN_OR_RETURN(std::vector<TokenDistribution> target,
                        sampler_.distributions(picked.view(), drawn.states, pool_));
  std::vector<int64_t> emitted_rows;  // rows of `picked`
  std::vector<int32_t> emitted_tokens;
  std::vector<SequenceSamplingState> emitted_states;
  std::vector<size_t> emitted_count;
  size_t first = 0;
  for (size_t c : drawn.chunks) {
    const Proposal& proposal = step.proposals.at(chunks[c]->seq_id);
    const size_t k = proposal.tokens.size();
    SpeculativeDraw draw;
    draw.target = std::span<const TokenDistribution>(target.data() + first, k + 1);
    draw.proposed = proposal.tokens;
    draw.proposer = proposal.q;
    draw.seed = drawn.states[first].seed;
    draw.seq_index = drawn.states[first].seq_index;
    draw.first_step = drawn.states[first].output_ids.size();
    const SpeculativeOutcome outcome = verify_speculation(draw);
    for (size_t j = 0; j < outcome.tokens.size(); ++j) {
      emitted_rows.push_back(static_cast<int64_t>(first + j));
      emitted_tokens.push_back(outcome.tokens[j]);
      emitted_states.push_back(drawn.states[first + j]);
    }
    emitted_count.push_back(outcome.tokens.size());
    first += k + 1;
  }
  const int64_t vocab = picked.dim(1);
  Tensor emitted = Tensor::empty(DType::kF32, Shape{static_cast<int64_t>(emitted_rows.size()), vocab});
  for (size_t i = 0; i < emitted_rows.size(); ++i) {
    std::memcpy(emitted.data_as<float>() + i * vocab, picked.data_as<float>() + emitted_rows[i] * vocab,
                vocab * sizeof(float));
  }
  WEFT_ASSIGN_OR_RETURN(std::vector<SampleResult> results,
                        sampler_.results_for(emitted.view(), emitted_states, emitted_tokens, pool_));
  size_t next = 0;
  for (size_t i = 0; i < drawn.chunks.size(); ++i) {
    Emission& e = emissions[drawn.chunks[i]];
    e.seq_id = chunks[drawn.chunks[i]]->seq_id;
    e.samples.assign(results.begin() + next, results.begin() + next + emitted_count[i]);
    next += emitted_count[i];
  }
  return emissions;
}

}  // namespace weft
