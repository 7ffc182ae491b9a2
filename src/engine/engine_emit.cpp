// Engine::emit: what a step's tokens for one sequence become -- grammar, detokenizer,
// banned-phrase screening with rollback, the stop rule -- and the end of a finished sequence.
#include <algorithm>

#include "engine/engine.h"

namespace weft {

const std::vector<int32_t>* Engine::bans_at_next(const Sequence& seq) const {
  auto info = sequences_.find(seq.id);
  if (info == sequences_.end() || info->second.bans.empty()) return nullptr;
  auto it = info->second.bans.find(static_cast<int64_t>(seq.output_ids.size()));
  return it == info->second.bans.end() ? nullptr : &it->second;
}

void Engine::commit_token(SequenceInfo& info, SequenceOutput& out, int64_t prompt_len, int64_t index,
                          int64_t num_accepted, const SampleResult& sample, std::string_view text) {
  out.token_ids.push_back(sample.token);
  out.samples.push_back(sample);
  StopChecker::Step stop = info.stop->append(sample.token, text);
  out.text += stop.text;
  out.finish_reason = stop.finish;
  out.stop_string = stop.stop_string;
  out.stop_token = stop.stop_token;
  ++info.num_committed;
  // A complete grammar output allows nothing after it (ignore_eos included): it ends here. The
  // grammar's state is that after the last token it accepted.
  const bool grammar_done = info.constraint && index + 1 == num_accepted && info.constraint->is_terminated();
  if (out.finish_reason == FinishReason::kNone && grammar_done) out.finish_reason = FinishReason::kStop;
  if (out.finish_reason == FinishReason::kNone && prompt_len + index + 1 >= config_.max_model_len) {
    out.finish_reason = FinishReason::kLength;
  }
}

Engine::Screened Engine::roll_back(int64_t seq_id, SequenceInfo& info, const BannedPhraseFilter::Match& match) {
  const Sequence& seq = *scheduler_.find(seq_id);
  const int64_t keep = match.token;
  // Bans past `keep` were made after tokens that now change; those at `keep` still hold.
  info.bans.erase(info.bans.upper_bound(keep), info.bans.end());
  std::vector<int32_t>& banned = info.bans[keep];
  banned.push_back(seq.output_ids[keep]);
  if (++info.rollbacks > config_.max_banned_phrase_rollbacks ||
      static_cast<int>(banned.size()) > config_.max_bans_per_position) {
    ++banned_stats_.content_filtered;
    info.held.clear();
    return Screened::kContentFilter;
  }
  const int64_t screened = info.banned->num_tokens();  // taken by the grammar and the detokenizer
  banned_stats_.rolled_back_tokens += static_cast<int64_t>(seq.output_ids.size()) - keep;
  if (requests_.at(info.request_id).params.diagnostics) {
    info.diagnostics.rollbacks.push_back(
        {keep, std::vector<int32_t>(seq.output_ids.begin() + keep, seq.output_ids.end()), seq.output_ids[keep]});
  }
  if (info.constraint) {
    // Rolling back what it accepted cannot fail; a failure is a bug worth an error finish.
    ++info.constraint_version;
    if (!info.constraint->rollback(static_cast<int>(screened - keep)).ok()) return Screened::kContentFilter;
  }
  if (info.detokenizer) info.detokenizer->truncate(static_cast<size_t>(keep));
  info.banned->rollback(keep);
  info.held.resize(static_cast<size_t>(keep - info.num_committed));
  scheduler_.truncate_output(seq_id, keep);
  if (proposer_) proposer_->forget(seq_id);
  return Screened::kRolledBack;
}

Engine::Screened Engine::screen_token(int64_t seq_id, SequenceInfo& info, int64_t index, const SampleResult& sample,
                                      std::string text) {
  const Sequence& seq = *scheduler_.find(seq_id);
  const int64_t n = index + 1;
  const FinishReason ends = info.stop->token_finish(sample.token, static_cast<int>(n));
  // The text ends with this token when the token rule, the grammar or the context ends it.
  const bool last = ends != FinishReason::kNone || (info.constraint && info.constraint->is_terminated()) ||
                    static_cast<int64_t>(seq.prompt_ids.size()) + n >= config_.max_model_len;
  if (ends == FinishReason::kStop) text.clear();  // a stop token's own text is never output
  info.held.push_back({sample, text});
  std::optional<BannedPhraseFilter::Match> match = info.banned->append(text);
  if (!match && last) {
    std::string trailing;
    if (ends != FinishReason::kStop && info.detokenizer) trailing = info.detokenizer->finish();
    match = info.banned->finish(trailing);
    info.held.back().text += trailing;
  }
  if (!match) return Screened::kHeld;
  ++banned_stats_.matches;
  return roll_back(seq_id, info, *match);
}

SequenceOutput Engine::emit(const Emission& e) {
  const int64_t seq_id = e.seq_id;
  SequenceInfo& info = sequences_.at(seq_id);
  // Its mask for this step was taken when it sampled; a job left over (none is expected) must not
  // read the constraint while it changes below.
  if (mask_prefetcher_) mask_prefetcher_->forget(seq_id);
  SequenceOutput out;
  out.request_id = info.request_id;
  out.index = info.index;
  if (const RequestInfo& request = requests_.at(info.request_id);
      request.prompt_logprobs_done && !info.prompt_logprobs_sent) {
    out.prompt_logprobs = request.prompt_logprobs_done;
    info.prompt_logprobs_sent = true;
  }
  const Sequence& seq = *scheduler_.find(seq_id);
  const int64_t prompt_len = static_cast<int64_t>(seq.prompt_ids.size());
  // Output index of the step's first token (all of them are already appended).
  const int64_t first = static_cast<int64_t>(seq.output_ids.size() - e.samples.size());
  if (dead_ends_.count(seq_id) && info.banned) {
    // Nothing may follow the tokens so far: ban the last of them, or give up when it is committed.
    Screened screened = Screened::kContentFilter;
    if (first > info.num_committed) {
      screened = roll_back(seq_id, info, BannedPhraseFilter::Match{first - 1, 0, 0});
    } else {
      ++banned_stats_.content_filtered;
    }
    if (screened == Screened::kContentFilter) out.finish_reason = FinishReason::kContentFilter;
  }
  const size_t num_samples = dead_ends_.count(seq_id) && info.banned ? 0 : e.samples.size();
  for (size_t j = 0; j < num_samples && out.finish_reason == FinishReason::kNone; ++j) {
    const SampleResult& sample = e.samples[j];
    const int64_t index = first + static_cast<int64_t>(j);
    if (info.constraint) ++info.constraint_version;
    if (info.constraint && !info.constraint->accept(sample.token)) {
      // The mask left nothing the processors allowed, and nothing the grammar allows was
      // drawn: the constrained output cannot go on.
      out.finish_reason = FinishReason::kError;
      break;
    }
    std::string delta = info.detokenizer ? info.detokenizer->append(sample.token) : "";
    if (!info.banned) {
      commit_token(info, out, prompt_len, index, index + 1, sample, delta);
      continue;  // a finish drops the later tokens
    }
    const Screened screened = screen_token(seq_id, info, index, sample, std::move(delta));
    if (screened == Screened::kRolledBack) break;  // later tokens went with the rollback
    if (screened == Screened::kContentFilter) {
      out.finish_reason = FinishReason::kContentFilter;
      break;
    }
    // What the filter committed goes on, in order; a finish drops the rest.
    while (info.num_committed < info.banned->committed() && out.finish_reason == FinishReason::kNone) {
      const HeldToken held = std::move(info.held.front());
      info.held.pop_front();
      commit_token(info, out, prompt_len, info.num_committed, index + 1, held.sample, held.text);
    }
  }
  out.finished = out.finish_reason != FinishReason::kNone;
  if (requests_.at(info.request_id).params.diagnostics) {
    SequenceDiagnostics& d = out.diagnostics.emplace(std::move(info.diagnostics));
    info.diagnostics = SequenceDiagnostics{};
    d.kv_blocks = static_cast<int64_t>(std::count_if(seq.block_table.begin(), seq.block_table.end(),
                                                     [](int32_t b) { return b != BlockManager::kFreedBlock; }));
  }
  // (Screened sequences took the detokenizer's last text when their text ended: it was screened.)
  if (out.finished && !out.stop_string && !out.stop_token && info.detokenizer && !info.banned) {
    out.text += info.detokenizer->finish();
  }
  if (out.finished) {
    scheduler_.remove(seq_id);
    if (proposer_) proposer_->forget(seq_id);
    RequestInfo& request = requests_.at(info.request_id);
    request.seq_ids.erase(std::find(request.seq_ids.begin(), request.seq_ids.end(), seq_id));
    if (request.seq_ids.empty()) requests_.erase(info.request_id);
    erase_sequence(seq_id);
  }
  return out;
}

}  // namespace weft
