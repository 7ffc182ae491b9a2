#include "engine/step_plan_codec.h"

#include <climits>
#include <cmath>
#include <cstring>
#include <set>
#include <unordered_set>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "kv/block_manager.h"
#include "model/attention_selection.h"
#include "proto/step_plan.pb.h"

namespace weft {
namespace {

// Sampled log-probabilities are <= 0 up to rounding.
constexpr float kMaxLogprob = 1e-3f;

absl::Status parse(std::string_view bytes, google::protobuf::MessageLite& msg, const char* what) {
  if (bytes.size() > static_cast<size_t>(INT_MAX)) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": ", bytes.size(), " bytes is larger than a message may be (2 GiB)"));
  }
  if (!msg.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
    return absl::InvalidArgumentError(absl::StrCat(what, ": ", bytes.size(),
                                                   " bytes are not a valid ", msg.GetTypeName(),
                                                   " protobuf message"));
  }
  return absl::OkStatus();
}

proto::LogitsWanted to_proto(LogitsWanted w) {
  switch (w) {
    case LogitsWanted::kNone: return proto::LOGITS_NONE;
    case LogitsWanted::kLast: return proto::LOGITS_LAST;
    case LogitsWanted::kAll: return proto::LOGITS_ALL;
  }
  return proto::LOGITS_NONE;
}

void to_proto(const StepPlan& plan, proto::StepPlan& out) {
  out.set_step_id(plan.step_id);
  out.set_sample_candidates(plan.sample_candidates);
  out.set_candidate_logsumexp(plan.candidate_logsumexp);
  out.mutable_chunks()->Reserve(static_cast<int>(plan.chunks.size()));
  for (const PlannedChunk& c : plan.chunks) {
    proto::PlannedChunk* pc = out.add_chunks();
    pc->set_seq_id(c.seq_id);
    pc->mutable_token_ids()->Add(c.token_ids.begin(), c.token_ids.end());
    pc->set_start_position(c.start_position);
    pc->mutable_block_table()->Add(c.block_table.begin(), c.block_table.end());
    pc->set_logits(to_proto(c.logits));
    pc->set_num_draft_tokens(c.num_draft_tokens);
    pc->set_prompt_len(c.prompt_len);
  }
  for (const AttentionRecording& r : plan.record_attention) {
    proto::AttentionRecording* pr = out.add_record_attention();
    pr->set_seq_id(r.seq_id);
    pr->mutable_layers()->Add(r.selection.layers.begin(), r.selection.layers.end());
    pr->mutable_heads()->Add(r.selection.heads.begin(), r.selection.heads.end());
  }
  out.mutable_kv_transfers()->Reserve(static_cast<int>(plan.kv_transfers.size()));
  for (const KvTransfer& t : plan.kv_transfers) {
    proto::KvTransfer* pt = out.add_kv_transfers();
    pt->set_kind(static_cast<proto::KvTransfer::Kind>(t.kind));
    pt->set_hash(t.hash);
    pt->set_block(t.block);
    pt->set_parent(t.parent);
    pt->mutable_tokens()->Add(t.tokens.begin(), t.tokens.end());
  }
}

// The attention recordings of a decoded plan (its chunks already decoded): each names a sequence
// of the plan once, with layers and heads >= 0 (their range is the model's).
absl::Status record_attention_from_proto(const proto::StepPlan& in, const std::string& where, StepPlan& plan) {
  std::set<int64_t> in_plan;
  for (const PlannedChunk& c : plan.chunks) in_plan.insert(c.seq_id);
  std::set<int64_t> seen;
  for (int i = 0; i < in.record_attention_size(); ++i) {
    const proto::AttentionRecording& pr = in.record_attention(i);
    const std::string at = absl::StrCat(where, ", record_attention[", i, "]");
    if (!in_plan.count(pr.seq_id()) || !seen.insert(pr.seq_id()).second) {
      return absl::InvalidArgumentError(absl::StrCat(at, ": seq_id ", pr.seq_id(),
                                                     " is not a sequence of the plan, or is named twice"));
    }
    AttentionRecording r;
    r.seq_id = pr.seq_id();
    for (int32_t layer : pr.layers()) {
      if (layer < 0) return absl::InvalidArgumentError(absl::StrCat(at, ": layer ", layer, ", expected >= 0"));
      r.selection.layers.push_back(layer);
    }
    for (int32_t head : pr.heads()) {
      if (head < 0) return absl::InvalidArgumentError(absl::StrCat(at, ": head ", head, ", expected >= 0"));
      r.selection.heads.push_back(head);
    }
    plan.record_attention.push_back(std::move(r));
  }
  return absl::OkStatus();
}

// The tier instructions of a decoded plan: known kinds, block ids >= 0 where one is used, at most
// kMaxPlanTokens tokens in all (their range is the store's and check_step_plan's business).
absl::Status kv_transfers_from_proto(const proto::StepPlan& in, const std::string& where, StepPlan& plan) {
  if (in.kv_transfers_size() > kMaxPlanChunks) {
    return absl::InvalidArgumentError(absl::StrCat(where, ": ", in.kv_transfers_size(),
                                                   " KV transfers, at most ", kMaxPlanChunks, " are accepted"));
  }
  int64_t tokens = 0;
  plan.kv_transfers.reserve(in.kv_transfers_size());
  for (int i = 0; i < in.kv_transfers_size(); ++i) {
    const proto::KvTransfer& pt = in.kv_transfers(i);
    const std::string at = absl::StrCat(where, ", kv_transfers[", i, "]");
    if (pt.kind() < proto::KvTransfer::KV_SAVE || pt.kind() > proto::KvTransfer::KV_LOAD) {
      return absl::InvalidArgumentError(
          absl::StrCat(at, ": kind is ", static_cast<int>(pt.kind()), ", expected 0..4"));
    }
    KvTransfer t;
    t.kind = static_cast<KvTransfer::Kind>(pt.kind());
    if (t.uses_block() && pt.block() < 0) {
      return absl::InvalidArgumentError(absl::StrCat(at, ": block is ", pt.block(), ", expected >= 0"));
    }
    tokens += pt.tokens_size();
    if (tokens > kMaxPlanTokens) {
      return absl::InvalidArgumentError(absl::StrCat(where, ": more than ", kMaxPlanTokens, " KV transfer tokens"));
    }
    t.hash = pt.hash();
    t.block = pt.block();
    t.parent = pt.parent();
    t.tokens.assign(pt.tokens().begin(), pt.tokens().end());
    plan.kv_transfers.push_back(std::move(t));
  }
  return absl::OkStatus();
}

absl::StatusOr<StepPlan> from_proto(const proto::StepPlan& in) {
  if (in.step_id() < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("step plan: step_id is ", in.step_id(), ", expected >= 0"));
  }
  const std::string where = absl::StrCat("step plan ", in.step_id());
  // A plan of tier instructions alone carries disk loads the coordinator waits for while nothing
  // else can run (Engine::step).
  if (in.chunks_size() == 0 && in.kv_transfers_size() == 0) {
    return absl::InvalidArgumentError(absl::StrCat(where, ": has no chunks (and no KV transfers)"));
  }
  if (in.chunks_size() > kMaxPlanChunks) {
    return absl::InvalidArgumentError(absl::StrCat(where, ": ", in.chunks_size(),
                                                   " chunks, at most ", kMaxPlanChunks,
                                                   " are accepted"));
  }
  StepPlan plan;
  plan.step_id = in.step_id();
  if (in.sample_candidates() < 0 || in.sample_candidates() > kMaxSampleCandidates) {
    return absl::InvalidArgumentError(absl::StrCat(where, ": sample_candidates is ", in.sample_candidates(),
                                                   ", expected 0..", kMaxSampleCandidates));
  }
  plan.sample_candidates = in.sample_candidates();
  if (in.candidate_logsumexp() && in.sample_candidates() == 0) {
    return absl::InvalidArgumentError(absl::StrCat(where, ": candidate_logsumexp without sample_candidates"));
  }
  plan.candidate_logsumexp = in.candidate_logsumexp();
  plan.chunks.reserve(in.chunks_size());
  std::unordered_set<int64_t> seen;
  int64_t total_tokens = 0;
  for (int i = 0; i < in.chunks_size(); ++i) {
    const proto::PlannedChunk& pc = in.chunks(i);
    const std::string at = absl::StrCat(where, ", chunk ", i, " (seq_id ", pc.seq_id(), ")");
    if (pc.seq_id() < 0) {
      return absl::InvalidArgumentError(absl::StrCat(at, ": seq_id must be >= 0"));
    }
    if (!seen.insert(pc.seq_id()).second) {
      return absl::InvalidArgumentError(
          absl::StrCat(at, ": the sequence appears in more than one chunk"));
    }
    if (pc.token_ids_size() == 0) {
      return absl::InvalidArgumentError(absl::StrCat(at, ": token_ids is empty"));
    }
    if (pc.start_position() < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat(at, ": start_position is ", pc.start_position(), ", expected >= 0"));
    }
    const int64_t end = static_cast<int64_t>(pc.start_position()) + pc.token_ids_size();
    if (end > kMaxSequencePosition) {
      return absl::InvalidArgumentError(absl::StrCat(at, ": start_position ",
                                                     pc.start_position(), " + ",
                                                     pc.token_ids_size(), " tokens exceeds ",
                                                     kMaxSequencePosition));
    }
    total_tokens += pc.token_ids_size();
    if (total_tokens > kMaxPlanTokens) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, ": more than ", kMaxPlanTokens, " tokens in all"));
    }
    for (int j = 0; j < pc.token_ids_size(); ++j) {
      if (pc.token_ids(j) < 0) {
        return absl::InvalidArgumentError(
            absl::StrCat(at, ": token_ids[", j, "] is ", pc.token_ids(j), ", expected >= 0"));
      }
    }
    if (pc.block_table_size() > end) {
      return absl::InvalidArgumentError(absl::StrCat(at, ": block_table has ",
                                                     pc.block_table_size(),
                                                     " blocks for only ", end, " positions"));
    }
    for (int j = 0; j < pc.block_table_size(); ++j) {
      if (pc.block_table(j) < 0 && pc.block_table(j) != BlockManager::kFreedBlock) {
        return absl::InvalidArgumentError(absl::StrCat(at, ": block_table[", j, "] is ",
                                                       pc.block_table(j), ", expected >= 0 or ",
                                                       BlockManager::kFreedBlock, " (freed)"));
      }
    }
    if (pc.num_draft_tokens() < 0 || pc.num_draft_tokens() >= pc.token_ids_size() ||
        (pc.num_draft_tokens() > 0 && pc.logits() != proto::LOGITS_ALL)) {
      return absl::InvalidArgumentError(absl::StrCat(
          at, ": num_draft_tokens is ", pc.num_draft_tokens(), " for ", pc.token_ids_size(),
          " tokens, expected fewer than the tokens (and logits = all when above 0)"));
    }
    if (pc.prompt_len() < 0 || pc.prompt_len() > kMaxSequencePosition) {
      return absl::InvalidArgumentError(absl::StrCat(at, ": prompt_len is ", pc.prompt_len(),
                                                     ", expected 0..", kMaxSequencePosition));
    }
    PlannedChunk c;
    c.seq_id = pc.seq_id();
    c.num_draft_tokens = pc.num_draft_tokens();
    c.prompt_len = pc.prompt_len();
    c.token_ids.assign(pc.token_ids().begin(), pc.token_ids().end());
    c.start_position = pc.start_position();
    c.block_table.assign(pc.block_table().begin(), pc.block_table().end());
    switch (pc.logits()) {
      case proto::LOGITS_NONE: c.logits = LogitsWanted::kNone; break;
      case proto::LOGITS_LAST: c.logits = LogitsWanted::kLast; break;
      case proto::LOGITS_ALL: c.logits = LogitsWanted::kAll; break;
      default:
        return absl::InvalidArgumentError(absl::StrCat(
            at, ": logits is ", static_cast<int>(pc.logits()), ", expected 0 (none), 1 (last) "
                                                               "or 2 (all)"));
    }
    plan.chunks.push_back(std::move(c));
  }
  WEFT_RETURN_IF_ERROR(kv_transfers_from_proto(in, where, plan));
  WEFT_RETURN_IF_ERROR(record_attention_from_proto(in, where, plan));
  return plan;
}

}  // namespace

std::string encode_step_plan(const StepPlan& plan) {
  proto::StepPlan msg;
  to_proto(plan, msg);
  return msg.SerializeAsString();
}

absl::StatusOr<StepPlan> decode_step_plan(std::string_view bytes) {
  proto::StepPlan msg;
  if (absl::Status s = parse(bytes, msg, "step plan"); !s.ok()) return s;
  return from_proto(msg);
}

absl::Status check_step_plan(const StepPlan& plan, const PlanLimits& limits) {
  for (size_t i = 0; i < plan.chunks.size(); ++i) {
    const PlannedChunk& c = plan.chunks[i];
    const std::string at =
        absl::StrCat("step plan ", plan.step_id, ", chunk ", i, " (seq_id ", c.seq_id, ")");
    if (limits.vocab_size > 0) {
      for (size_t j = 0; j < c.token_ids.size(); ++j) {
        if (c.token_ids[j] < 0 || c.token_ids[j] >= limits.vocab_size) {
          return absl::InvalidArgumentError(absl::StrCat(at, ": token_ids[", j, "] = ",
                                                         c.token_ids[j], " is outside [0, ",
                                                         limits.vocab_size, ")"));
        }
      }
    }
    if (limits.num_blocks > 0) {
      for (size_t j = 0; j < c.block_table.size(); ++j) {
        // Freed entries (sliding windows) are checked against the model by build_forward_batch.
        if (c.block_table[j] == BlockManager::kFreedBlock) continue;
        if (c.block_table[j] < 0 || c.block_table[j] >= limits.num_blocks) {
          return absl::InvalidArgumentError(absl::StrCat(at, ": block_table[", j, "] = ",
                                                         c.block_table[j], " is outside [0, ",
                                                         limits.num_blocks, ")"));
        }
      }
    }
    if (limits.block_size > 0) {
      const int64_t positions = static_cast<int64_t>(c.start_position) +
                                static_cast<int64_t>(c.token_ids.size());
      const int64_t needed = (positions + limits.block_size - 1) / limits.block_size;
      if (static_cast<int64_t>(c.block_table.size()) < needed) {
        return absl::InvalidArgumentError(absl::StrCat(
            at, ": block_table has ", c.block_table.size(), " blocks, ", needed, " of ",
            limits.block_size, " tokens are needed for ", positions, " positions"));
      }
    }
  }
  return absl::OkStatus();
}

namespace {

// The candidates of a step result: K in 0..kMaxSampleCandidates, as many ids as logits, a whole
// number of rows (at most kMaxResultRows), ids in [0, kMaxResultVocab) (padding: -1), logits not
// NaN and not +inf; log-sum-exps none or one per row, not NaN and not +inf.
absl::StatusOr<SampleCandidates> decode_candidates(const proto::StepResult& msg, const std::string& where) {
  SampleCandidates out;
  const int32_t k = msg.candidates_per_row();
  if (k < 0 || k > kMaxSampleCandidates) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, ": candidates_per_row is ", k, ", expected 0..", kMaxSampleCandidates));
  }
  const int64_t n = msg.candidate_ids_size();
  if (msg.candidate_logits_size() != n || (k == 0 && n != 0) || (k > 0 && (n % k != 0 || n / k > kMaxResultRows))) {
    return absl::InvalidArgumentError(absl::StrCat(where, ": ", n, " candidate ids and ", msg.candidate_logits_size(),
                                                   " candidate logits do not make whole rows of ", k));
  }
  for (int64_t i = 0; i < n; ++i) {
    const int32_t id = msg.candidate_ids(static_cast<int>(i));
    const float logit = msg.candidate_logits(static_cast<int>(i));
    if (id < -1 || id >= kMaxResultVocab || std::isnan(logit) || logit == INFINITY) {
      return absl::InvalidArgumentError(absl::StrCat(where, ", candidate ", i, ": id ", id, " logit ", logit,
                                                     ", expected an id in -1..", kMaxResultVocab - 1,
                                                     " and a logit that is a number below +inf"));
    }
  }
  const int64_t rows = k > 0 ? n / k : 0;
  if (msg.candidate_logsumexp_size() != 0 && msg.candidate_logsumexp_size() != rows) {
    return absl::InvalidArgumentError(absl::StrCat(where, ": ", msg.candidate_logsumexp_size(),
                                                   " candidate log-sum-exps for ", rows, " rows"));
  }
  for (float lse : msg.candidate_logsumexp()) {
    if (std::isnan(lse) || lse == INFINITY) {
      return absl::InvalidArgumentError(absl::StrCat(where, ": a candidate log-sum-exp is ", lse));
    }
  }
  out.per_row = k;
  out.logsumexp.assign(msg.candidate_logsumexp().begin(), msg.candidate_logsumexp().end());
  out.ids.assign(msg.candidate_ids().begin(), msg.candidate_ids().end());
  out.logits.assign(msg.candidate_logits().begin(), msg.candidate_logits().end());
  return out;
}

}  // namespace

std::string encode_step_result(const StepResult& result) {
  proto::StepResult msg;
  msg.set_step_id(result.step_id);
  if (result.logits.defined()) {
    // Rank 2 is [rows, vocab]; rank 1 is a single row.
    const Shape& s = result.logits.shape();
    msg.set_rows(static_cast<int32_t>(s.rank() >= 2 ? s[0] : 1));
    msg.set_vocab(static_cast<int32_t>(s.rank() >= 1 ? s[s.rank() - 1] : 1));
    const float* p = result.logits.data_as<float>();
    msg.mutable_logits()->Add(p, p + result.logits.numel());
  }
  msg.mutable_sampled()->Reserve(static_cast<int>(result.sampled.size()));
  for (const SampledTokenResult& t : result.sampled) {
    proto::SampledToken* pt = msg.add_sampled();
    pt->set_seq_id(t.seq_id);
    pt->set_token(t.token);
    pt->set_logprob(t.logprob);
  }
  const SampleCandidates& c = result.candidates;
  if (!c.empty()) {
    msg.set_candidates_per_row(c.per_row);
    msg.mutable_candidate_ids()->Add(c.ids.begin(), c.ids.end());
    msg.mutable_candidate_logits()->Add(c.logits.begin(), c.logits.end());
    msg.mutable_candidate_logsumexp()->Add(c.logsumexp.begin(), c.logsumexp.end());
  }
  if (!result.attention.empty()) msg.set_attention(serialize_attention_records(result.attention));
  if (result.kv_load_report) msg.set_kv_load_report(result.kv_load_report->serialize());
  msg.set_error(result.error);
  return msg.SerializeAsString();
}

absl::StatusOr<StepResult> decode_step_result(std::string_view bytes) {
  proto::StepResult msg;
  if (absl::Status s = parse(bytes, msg, "step result"); !s.ok()) return s;
  const std::string where = absl::StrCat("step result ", msg.step_id());
  if (msg.step_id() < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("step result: step_id is ", msg.step_id(), ", expected >= 0"));
  }
  if (msg.rows() < 0 || msg.rows() > kMaxResultRows) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, ": rows is ", msg.rows(), ", expected 0..", kMaxResultRows));
  }
  if (msg.vocab() < 0 || msg.vocab() > kMaxResultVocab) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, ": vocab is ", msg.vocab(), ", expected 0..", kMaxResultVocab));
  }
  const int64_t expected = static_cast<int64_t>(msg.rows()) * msg.vocab();
  if (msg.logits_size() != expected) {
    return absl::InvalidArgumentError(absl::StrCat(where, ": ", msg.logits_size(),
                                                   " logits for rows ", msg.rows(), " x vocab ",
                                                   msg.vocab(), " = ", expected));
  }
  StepResult out;
  out.step_id = msg.step_id();
  if (msg.rows() > 0 || msg.vocab() > 0) {
    out.logits = Tensor::empty(DType::kF32, Shape{msg.rows(), msg.vocab()});
    if (expected > 0) {
      std::memcpy(out.logits.data(), msg.logits().data(), expected * sizeof(float));
    }
  }
  out.sampled.reserve(msg.sampled_size());
  for (int i = 0; i < msg.sampled_size(); ++i) {
    const proto::SampledToken& t = msg.sampled(i);
    const std::string at = absl::StrCat(where, ", sampled[", i, "]");
    if (t.seq_id() < 0) {
      return absl::InvalidArgumentError(absl::StrCat(at, ": seq_id is ", t.seq_id(),
                                                     ", expected >= 0"));
    }
    if (t.token() < 0) {
      return absl::InvalidArgumentError(absl::StrCat(at, ": token is ", t.token(),
                                                     ", expected >= 0"));
    }
    if (std::isnan(t.logprob()) || t.logprob() > kMaxLogprob) {
      return absl::InvalidArgumentError(absl::StrCat(at, ": logprob is ", t.logprob(),
                                                     ", expected a number <= 0"));
    }
    out.sampled.push_back(SampledTokenResult{t.seq_id(), t.token(), t.logprob()});
  }
  WEFT_ASSIGN_OR_RETURN(out.candidates, decode_candidates(msg, where));
  if (!msg.attention().empty()) {
    auto attention = parse_attention_records(msg.attention());
    if (!attention.ok()) return absl::InvalidArgumentError(absl::StrCat(where, ": ", attention.status().message()));
    out.attention = *std::move(attention);
  }
  if (!msg.kv_load_report().empty()) {
    auto report = KvLoadReport::parse(msg.kv_load_report());
    if (!report.ok()) return absl::InvalidArgumentError(absl::StrCat(where, ": ", report.status().message()));
    out.kv_load_report = *std::move(report);
  }
  out.error = msg.error();
  return out;
}

std::string encode_control(const ControlMessage& message) {
  proto::Control msg;
  if (message.kind == ControlKind::kShutdown) {
    msg.set_kind(proto::Control::SHUTDOWN);
  } else {
    msg.set_kind(proto::Control::STEP);
    to_proto(message.plan, *msg.mutable_plan());
  }
  return msg.SerializeAsString();
}

absl::StatusOr<ControlMessage> decode_control(std::string_view bytes) {
  proto::Control msg;
  if (absl::Status s = parse(bytes, msg, "control message"); !s.ok()) return s;
  ControlMessage out;
  switch (msg.kind()) {
    case proto::Control::STEP: {
      out.kind = ControlKind::kStep;
      if (!msg.has_plan()) {
        return absl::InvalidArgumentError("control message: kind STEP without a plan");
      }
      absl::StatusOr<StepPlan> plan = from_proto(msg.plan());
      if (!plan.ok()) return plan.status();
      out.plan = *std::move(plan);
      return out;
    }
    case proto::Control::SHUTDOWN:
      out.kind = ControlKind::kShutdown;
      return out;
    default:
      return absl::InvalidArgumentError(absl::StrCat("control message: kind is ",
                                                     static_cast<int>(msg.kind()),
                                                     ", expected 1 (STEP) or 2 (SHUTDOWN)"));
  }
}

}  // namespace weft
