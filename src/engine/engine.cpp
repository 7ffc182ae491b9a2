#include "engine/engine.h"

#include <algorithm>
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
  WEFT_RETURN_IF_ERROR(request.params.validate(config_.vocab_size));
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
    info.seq_ids.push_back(seq.id);
    if (i == 0) {
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
    sequences_.erase(seq_id);
  }
  requests_.erase(it);
}

void Engine::choose_sampling_output(StepPlan& plan) const {
  plan.sample_candidates = 0;
  plan.candidate_logsumexp = false;
  int32_t k = 1;
  bool logsumexp = false;
  for (const PlannedChunk& chunk : plan.chunks) {
    if (chunk.logits == LogitsWanted::kAll) return;
    const Sequence* seq = scheduler_.find(chunk.seq_id);
    if (seq == nullptr) continue;
    const SamplingParams& p = requests_.at(sequences_.at(seq->id).request_id).params;
    const bool min_tokens_met = static_cast<int64_t>(seq->output_ids.size()) >= p.min_tokens;
    if (!p.logit_bias.empty() || p.repetition_penalty != 1.0f || p.presence_penalty != 0.0f ||
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

absl::StatusOr<std::vector<SampleResult>> Engine::sample(const StepOutput& output,
                                                        const std::vector<int64_t>& rows,
                                                        const std::vector<const Sequence*>& seqs) {
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
  Tensor picked;
  if (output.logits.defined()) {
    sampled_from_.full_logits += num_rows;
    const int64_t vocab = output.logits.dim(1);
    picked = Tensor::empty(DType::kF32, Shape{num_rows, vocab});
    for (int64_t i = 0; i < num_rows; ++i) {
      std::memcpy(picked.data_as<float>() + i * vocab,
                  output.logits.data_as<float>() + rows[i] * vocab, vocab * sizeof(float));
    }
  } else {
    sampled_from_.candidates += num_rows;
    picked = expand_candidates(output.candidates, rows, config_.vocab_size);
  }
  std::vector<SequenceSamplingState> states;
  for (size_t i = 0; i < rows.size(); ++i) {
    const Sequence* seq = seqs[i];
    const SequenceInfo& info = sequences_.at(seq->id);
    SequenceSamplingState state;
    state.params = &requests_.at(info.request_id).params;
    state.prompt_ids = seq->prompt_ids;
    state.output_ids = seq->output_ids;
    state.seed = info.seed;
    state.seq_index = static_cast<uint32_t>(info.index);
    state.eos_token_ids = config_.eos_token_ids;
    if (!output.logits.defined() && !output.candidates.logsumexp.empty()) {
      state.raw_logsumexp = output.candidates.logsumexp[rows[i]];
    }
    states.push_back(state);
  }
  return sampler_.sample(picked.view(), states, pool_);
}

absl::StatusOr<std::vector<SequenceOutput>> Engine::step() {
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
    StepPlan next = scheduler_.schedule(share);
    if (next.chunks.empty()) break;
    choose_sampling_output(next);
    WEFT_RETURN_IF_ERROR(executor_.submit(next));
    in_flight_.push_back(std::move(next));
  }
  if (in_flight_.empty()) {
    return absl::InternalError("the scheduler planned an empty step with requests waiting");
  }
  WEFT_ASSIGN_OR_RETURN(StepOutput output, executor_.collect());
  const StepPlan plan = std::move(in_flight_.front());
  in_flight_.pop_front();

  // Which logits rows sample: the last row of each chunk that reaches its sequence's end.
  std::vector<int64_t> sample_rows;
  std::vector<const Sequence*> sample_seqs;
  int64_t row = 0;
  for (const PlannedChunk& chunk : plan.chunks) {
    const Sequence* seq = scheduler_.find(chunk.seq_id);
    const int64_t len = static_cast<int64_t>(chunk.token_ids.size());
    const int64_t rows = chunk.logits == LogitsWanted::kAll ? len
                         : chunk.logits == LogitsWanted::kLast ? 1 : 0;
    row += rows;
    if (seq == nullptr) continue;  // aborted while its step was in flight
    if (seq->is_prefilling()) num_prefilled_tokens_ += len;
    if (chunk.start_position + len == seq->num_tokens() && rows > 0) {
      sample_rows.push_back(row - 1);
      sample_seqs.push_back(seq);
      // The prompt is done: the request's other sequences fork here, sampling from this row.
      const RequestInfo& request = requests_.at(sequences_.at(seq->id).request_id);
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
  WEFT_ASSIGN_OR_RETURN(std::vector<SampleResult> samples, sample(output, sample_rows, sample_seqs));

  std::vector<SampledToken> sampled;
  for (size_t i = 0; i < samples.size(); ++i) sampled.push_back({sample_seqs[i]->id, samples[i].token});
  scheduler_.on_step_done(plan, sampled);
  for (size_t i = 0; i < samples.size(); ++i) {
    if (scheduler_.find(sampled[i].seq_id) != nullptr) continue;
    // A fork waiting for its parent's prompt: it joins now with its own first token.
    SequenceInfo& info = sequences_.at(sampled[i].seq_id);
    RequestInfo& request = requests_.at(info.request_id);
    auto it = std::find_if(request.forks.begin(), request.forks.end(),
                           [&](const Sequence& s) { return s.id == sampled[i].seq_id; });
    Sequence child = std::move(*it);
    request.forks.erase(it);
    child.output_ids.push_back(sampled[i].token);
    scheduler_.fork(request.seq_ids.front(), std::move(child));
  }

  for (size_t i = 0; i < samples.size(); ++i) {
    const int64_t seq_id = sampled[i].seq_id;
    SequenceInfo& info = sequences_.at(seq_id);
    SequenceOutput out;
    out.request_id = info.request_id;
    out.index = info.index;
    out.token_ids.push_back(samples[i].token);
    out.samples.push_back(samples[i]);
    const std::string delta = info.detokenizer ? info.detokenizer->append(samples[i].token) : "";
    StopChecker::Step stop = info.stop->append(samples[i].token, delta);
    out.text = std::move(stop.text);
    out.finish_reason = stop.finish;
    out.stop_string = stop.stop_string;
    out.stop_token = stop.stop_token;
    if (out.finish_reason == FinishReason::kNone &&
        scheduler_.find(seq_id)->num_tokens() >= config_.max_model_len) {
      out.finish_reason = FinishReason::kLength;
    }
    out.finished = out.finish_reason != FinishReason::kNone;
    if (out.finished && !out.stop_string && !out.stop_token && info.detokenizer) {
      out.text += info.detokenizer->finish();
    }
    if (out.finished) {
      scheduler_.remove(seq_id);
      RequestInfo& request = requests_.at(info.request_id);
      request.seq_ids.erase(std::find(request.seq_ids.begin(), request.seq_ids.end(), seq_id));
      if (request.seq_ids.empty()) requests_.erase(info.request_id);
      sequences_.erase(seq_id);
    }
    outputs.push_back(std::move(out));
  }
  return outputs;
}

}  // namespace weft
