#include "engine/speculative/draft_model_proposer.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "sampling/rng.h"
#include "sampling/speculative_verifier.h"

namespace weft {

absl::StatusOr<std::unique_ptr<DraftModelProposer>> DraftModelProposer::create(
    const std::filesystem::path& model_dir, const KvCacheOptions& kv, int64_t target_vocab_size,
    std::vector<int32_t> eos_token_ids, ThreadPool& pool) {
  std::unique_ptr<DraftModelProposer> p(new DraftModelProposer(pool));
  auto model = load_whole_model(model_dir, p->tp_);
  if (!model.ok()) {
    return absl::Status(model.status().code(),
                        absl::StrCat("--draft-model ", model_dir.string(), ": ", model.status().message()));
  }
  p->model_ = std::move(*model);
  if (p->model_->config.vocab_size > target_vocab_size) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--draft-model ", model_dir.string(), ": its vocabulary has ", p->model_->config.vocab_size,
        " tokens, more than the target's ", target_vocab_size,
        "; a draft must share the target's tokenizer"));
  }
  WEFT_ASSIGN_OR_RETURN(p->kv_, KvCache::allocate(p->model_->kv_shape(kv), p->model_->blocks_fitting(kv)));
  p->blocks_ = std::make_unique<BlockManager>(p->kv_.num_blocks(), kv.block_size);
  p->runner_ = std::make_unique<ModelRunner>(*p->model_->model, p->kv_, p->tp_, pool);
  p->eos_token_ids_ = std::move(eos_token_ids);
  return p;
}

void DraftModelProposer::forget(int64_t seq_id) {
  auto it = sequences_.find(seq_id);
  if (it == sequences_.end()) return;
  blocks_->release(it->second.block_table);
  sequences_.erase(it);
}

bool DraftModelProposer::usable(const ProposalRequest& r) const {
  const int64_t vocab = model_->config.vocab_size;
  auto outside = [vocab](int32_t id) { return id < 0 || id >= vocab; };
  if (std::any_of(r.prompt_ids.begin(), r.prompt_ids.end(), outside) ||
      std::any_of(r.output_ids.begin(), r.output_ids.end(), outside) ||
      std::any_of(r.params->stop_token_ids.begin(), r.params->stop_token_ids.end(), outside) ||
      std::any_of(eos_token_ids_.begin(), eos_token_ids_.end(), outside)) {
    return false;
  }
  for (const auto& [id, bias] : r.params->logit_bias) {
    if (outside(id)) return false;
  }
  return true;
}

absl::StatusOr<StepOutput> DraftModelProposer::run(StepPlan plan) {
  plan.step_id = next_step_id_++;
  ++num_passes_;
  auto r = runner_->execute(plan);
  if (!r.ok()) return absl::Status(r.status().code(), absl::StrCat("draft: ", r.status().message()));
  return r;
}

absl::StatusOr<std::vector<Proposal>> DraftModelProposer::propose(std::span<const ProposalRequest> requests) {
  std::vector<Proposal> out(requests.size());
  // The requests being drafted, with their tokens and how many of them the draft has computed.
  struct Active {
    size_t request = 0;
    std::vector<int32_t> tokens;  // prompt + output + guesses so far
    int64_t known = 0;            // prompt + output
    int64_t computed = 0;
    int32_t rope_prompt_len = 0;  // PlannedChunk::prompt_len of its passes
    std::vector<int32_t> guesses;
  };
  std::vector<Active> active;
  for (size_t r = 0; r < requests.size(); ++r) {
    const ProposalRequest& req = requests[r];
    if (req.max_tokens < 1 || !usable(req)) continue;
    Active a;
    a.request = r;
    a.tokens.assign(req.prompt_ids.begin(), req.prompt_ids.end());
    a.tokens.insert(a.tokens.end(), req.output_ids.begin(), req.output_ids.end());
    a.known = static_cast<int64_t>(a.tokens.size());
    a.rope_prompt_len = static_cast<int32_t>(
        req.rope_prompt_len > 0 ? req.rope_prompt_len : static_cast<int64_t>(req.prompt_ids.size()));
    DraftSequence& seq = sequences_[req.seq_id];
    if (seq.rope_prompt_len != a.rope_prompt_len) {  // its KV was computed with other frequencies
      seq.cached.clear();
      seq.rope_prompt_len = a.rope_prompt_len;
    }
    const auto mismatch = std::mismatch(seq.cached.begin(), seq.cached.end(), a.tokens.begin(), a.tokens.end());
    // At least the last token runs: its logits give the first guess.
    a.computed = std::min<int64_t>(mismatch.first - seq.cached.begin(), static_cast<int64_t>(a.tokens.size()) - 1);
    seq.cached.resize(a.computed);
    while (static_cast<int64_t>(seq.block_table.size()) > blocks_->blocks_for_tokens(a.computed)) {
      blocks_->release_last(seq.block_table);
    }
    // Room for the catch-up and every guess but the last (which is never run). When the draft
    // cache is full, sequences not asked about now (preempted, or waiting in another pipeline
    // micro-batch) give theirs up first.
    const int64_t needed = static_cast<int64_t>(a.tokens.size()) + req.max_tokens - 1;
    bool grown = blocks_->grow_to(seq.block_table, needed);
    for (auto it = sequences_.begin(); !grown && it != sequences_.end();) {
      const int64_t id = it->first;
      ++it;
      const bool asked = std::any_of(requests.begin(), requests.end(),
                                     [id](const ProposalRequest& other) { return other.seq_id == id; });
      if (asked) continue;
      forget(id);
      grown = blocks_->grow_to(seq.block_table, needed);
    }
    if (!grown) {
      forget(req.seq_id);
      continue;
    }
    active.push_back(std::move(a));
  }

  // Draws each active request's next guess from its logits row.
  auto draw_guesses = [&](const StepOutput& output, const std::vector<size_t>& which) -> absl::Status {
    std::vector<SequenceSamplingState> states(which.size());
    std::vector<std::vector<int32_t>> outputs(which.size());
    for (size_t i = 0; i < which.size(); ++i) {
      const Active& a = active[which[i]];
      const ProposalRequest& req = requests[a.request];
      outputs[i].assign(req.output_ids.begin(), req.output_ids.end());
      outputs[i].insert(outputs[i].end(), a.guesses.begin(), a.guesses.end());
      states[i].params = req.params;
      states[i].prompt_ids = req.prompt_ids;
      states[i].output_ids = outputs[i];
      states[i].seed = req.seed;
      states[i].seq_index = req.seq_index;
      states[i].eos_token_ids = eos_token_ids_;
    }
    WEFT_ASSIGN_OR_RETURN(std::vector<TokenDistribution> q, sampler_.distributions(output.logits.view(), states, pool_));
    for (size_t i = 0; i < which.size(); ++i) {
      Active& a = active[which[i]];
      const ProposalRequest& req = requests[a.request];
      int32_t guess;
      if (req.params->is_greedy() || req.params->seed.has_value()) {
        // A point mass at the draft's most probable token: the engine then emits exactly what
        // plain decoding draws (a seeded request keeps its tokens whatever the speculation).
        guess = q[i].ids[std::max_element(q[i].probs.begin(), q[i].probs.end()) - q[i].probs.begin()];
      } else {
        const uint64_t step = outputs[i].size();
        guess = draw_token(q[i], SamplingRng(req.seed, req.seq_index, step).uniform(3));
        out[a.request].q.push_back(std::move(q[i]));
      }
      a.guesses.push_back(guess);
      a.tokens.push_back(guess);
    }
    return absl::OkStatus();
  };

  // Catch up on the tokens the draft has not computed, in passes under the token budget; the
  // pass that reaches a request's last token yields its first guess.
  caught_up_tokens_ = 0;
  for (const Active& a : active) caught_up_tokens_ += a.known - a.computed;
  for (;;) {
    StepPlan plan;
    std::vector<size_t> finishing;
    int64_t budget = kMaxTokensPerPass;
    for (size_t i = 0; i < active.size() && budget > 0; ++i) {
      Active& a = active[i];
      const int64_t known = a.known;
      if (a.computed >= known) continue;
      const int64_t n = std::min(known - a.computed, budget);
      PlannedChunk c;
      c.seq_id = requests[a.request].seq_id;
      c.start_position = static_cast<int32_t>(a.computed);
      c.prompt_len = a.rope_prompt_len;
      c.token_ids.assign(a.tokens.begin() + a.computed, a.tokens.begin() + a.computed + n);
      c.block_table = sequences_[c.seq_id].block_table;
      c.logits = a.computed + n == known ? LogitsWanted::kLast : LogitsWanted::kNone;
      if (c.logits == LogitsWanted::kLast) finishing.push_back(i);
      a.computed += n;
      budget -= n;
      plan.chunks.push_back(std::move(c));
    }
    if (plan.chunks.empty()) break;
    WEFT_ASSIGN_OR_RETURN(StepOutput output, run(std::move(plan)));
    WEFT_RETURN_IF_ERROR(draw_guesses(output, finishing));
  }
  // Then one token per pass: run the latest guess to get the next.
  for (int step = 1;; ++step) {
    StepPlan plan;
    std::vector<size_t> drafting;
    for (size_t i = 0; i < active.size(); ++i) {
      Active& a = active[i];
      if (static_cast<int>(a.guesses.size()) >= requests[a.request].max_tokens) continue;
      PlannedChunk c;
      c.seq_id = requests[a.request].seq_id;
      c.start_position = static_cast<int32_t>(a.computed);
      c.prompt_len = a.rope_prompt_len;
      c.token_ids = {a.tokens.back()};
      c.block_table = sequences_[c.seq_id].block_table;
      c.logits = LogitsWanted::kLast;
      ++a.computed;
      drafting.push_back(i);
      plan.chunks.push_back(std::move(c));
    }
    if (plan.chunks.empty()) break;
    WEFT_ASSIGN_OR_RETURN(StepOutput output, run(std::move(plan)));
    WEFT_RETURN_IF_ERROR(draw_guesses(output, drafting));
  }
  for (Active& a : active) {
    DraftSequence& seq = sequences_[requests[a.request].seq_id];
    seq.cached.assign(a.tokens.begin(), a.tokens.begin() + a.computed);
    out[a.request].tokens = std::move(a.guesses);
  }
  return out;
}

}  // namespace weft
