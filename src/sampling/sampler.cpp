#include "sampling/sampler.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "sampling/logits_processors.h"
#include "sampling/rng.h"
#include "sampling/row_math.h"

namespace weft {
namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

struct RowScratch {
  std::vector<float> logits;   // processed logits of the row
  std::vector<float> weights;  // exp(logit - max): unnormalised probabilities
  std::vector<int32_t> ids;    // candidate token ids
  std::vector<uint16_t> buckets;  // top_p_by_buckets: each token's bucket
  std::vector<double> mass;       // ... the buckets' masses (two histograms)
  std::vector<int32_t> boundary;  // ... the tokens of the bucket holding the cut
  PenaltyScratch penalties;
};

// Argmax with ties to the lowest id; -1 when no value is above -inf (all -inf or NaN).
int32_t argmax(std::span<const float> v) {
  int32_t best = -1;
  float best_v = kNegInf;
  for (size_t i = 0; i < v.size(); ++i) {
    if (v[i] > best_v) {
      best_v = v[i];
      best = static_cast<int32_t>(i);
    }
  }
  return best;
}

absl::Status check_ids(std::span<const int32_t> ids, int64_t vocab, size_t seq,
                       absl::string_view field) {
  for (size_t j = 0; j < ids.size(); ++j) {
    if (ids[j] < 0 || ids[j] >= vocab) {
      return absl::InvalidArgumentError(absl::StrCat("sequence ", seq, ": ", field, "[", j, "] = ",
                                                     ids[j], " outside vocab [0, ", vocab, ")"));
    }
  }
  return absl::OkStatus();
}

absl::Status check_state(const SequenceSamplingState& s, int64_t vocab, size_t seq) {
  if (s.params == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat("sequence ", seq, ": params is null"));
  }
  if (auto st = check_ids(s.prompt_ids, vocab, seq, "prompt_ids"); !st.ok()) return st;
  if (auto st = check_ids(s.output_ids, vocab, seq, "output_ids"); !st.ok()) return st;
  if (auto st = check_ids(s.eos_token_ids, vocab, seq, "eos_token_ids"); !st.ok()) return st;
  if (auto st = check_ids(s.params->stop_token_ids, vocab, seq, "stop_token_ids"); !st.ok()) {
    return st;
  }
  for (const auto& [id, bias] : s.params->logit_bias) {
    if (id < 0 || id >= vocab) {
      return absl::InvalidArgumentError(absl::StrCat("sequence ", seq, ": logit_bias key ", id,
                                                     " outside vocab [0, ", vocab, ")"));
    }
  }
  return absl::OkStatus();
}

// Descending logit, ties to the lower id.
struct MoreProbable {
  const float* x;
  bool operator()(int32_t a, int32_t b) const { return x[a] > x[b] || (x[a] == x[b] && a < b); }
};

// The k most probable ids of x[0, n) into `out` (unordered). Small k: one pass with a heap whose
// top is the least probable kept id, so most tokens cost one comparison; large k: nth_element.
void select_top_k(const float* x, int64_t n, int64_t k, std::vector<int32_t>& out) {
  const MoreProbable more{x};
  out.clear();
  if (k <= 4096 && k * 16 < n) {
    out.reserve(k);
    for (int32_t i = 0; i < k; ++i) out.push_back(i);
    std::make_heap(out.begin(), out.end(), more);  // front = least probable of the heap
    for (int32_t i = static_cast<int32_t>(k); i < n; ++i) {
      if (!(x[i] > x[out.front()])) continue;  // ties keep the lower id already in the heap
      std::pop_heap(out.begin(), out.end(), more);
      out.back() = i;
      std::push_heap(out.begin(), out.end(), more);
    }
    return;
  }
  out.resize(n);
  std::iota(out.begin(), out.end(), 0);
  std::nth_element(out.begin(), out.begin() + k - 1, out.end(), more);
  out.resize(k);
}

// Keeps the top_p prefix (sampler.h) of `ids` sorted most probable first; `total` is their mass.
void cut_sorted_top_p(const float* w, double target, std::vector<int32_t>& ids) {
  double ahead = 0.0;
  for (size_t i = 0; i < ids.size(); ++i) {
    if (i > 0 && ahead >= target) {
      ids.resize(i);
      return;
    }
    ahead += w[ids[i]];
  }
}

// top_p over the whole vocabulary without sorting it: tokens are bucketed by how far their
// logit lies below the maximum, bucket masses locate the bucket holding the cut, and only that
// bucket is sorted. Writes the kept ids in ascending id order into s.ids.
constexpr int kTopPBuckets = 4096;
constexpr float kTopPBucketsPerNat = 128.0f;  // buckets cover 32 nats; the last one the rest

inline int top_p_bucket(float x, float max) {
  const float d = (max - x) * kTopPBucketsPerNat;
  return d < static_cast<float>(kTopPBuckets - 1) ? static_cast<int>(d) : kTopPBuckets - 1;
}

void top_p_by_buckets(const float* x, const float* w, int64_t n, float max, double target,
                      RowScratch& s) {
  // Each token's bucket is computed once, and the masses go to two histograms (even and odd
  // tokens, summed per bucket after), so neighbouring tokens of one bucket do not wait on each
  // other's add through memory. With the branch-free scans below, a row drawn at T = 0.8 and
  // top_p 0.95 went from 22.7 to 16.0 us at 4096 tokens and from 709 to 532 us at 151936
  // (kernels_bench BM_SampleRows, one Zen 4 core).
  s.buckets.resize(static_cast<size_t>(n));
  uint16_t* bucket = s.buckets.data();
  for (int64_t i = 0; i < n; ++i) bucket[i] = static_cast<uint16_t>(top_p_bucket(x[i], max));
  s.mass.assign(2 * kTopPBuckets, 0.0);
  double* even = s.mass.data();
  double* odd = even + kTopPBuckets;
  int64_t i = 0;
  for (; i + 2 <= n; i += 2) {
    even[bucket[i]] += w[i];
    odd[bucket[i + 1]] += w[i + 1];
  }
  if (i < n) even[bucket[i]] += w[i];
  double ahead = 0.0;
  int cut_bucket = kTopPBuckets - 1;
  for (int b = 0; b < kTopPBuckets; ++b) {
    const double mass = even[b] + odd[b];
    if (ahead + mass >= target) {
      cut_bucket = b;
      break;
    }
    ahead += mass;
  }
  // Buckets before cut_bucket are kept whole (the mass ahead of any of their tokens is below
  // target), buckets after it are dropped; inside it, walk its tokens most probable first.
  // The scans below append every index and advance over the ones that qualify: which ones do
  // is data, so a branch on it mispredicted about every other token.
  std::vector<int32_t>& boundary = s.boundary;
  boundary.resize(static_cast<size_t>(n));
  size_t in_cut = 0;
  for (int64_t j = 0; j < n; ++j) {
    boundary[in_cut] = static_cast<int32_t>(j);
    in_cut += bucket[j] == cut_bucket;
  }
  boundary.resize(in_cut);
  std::sort(boundary.begin(), boundary.end(), MoreProbable{x});
  size_t keep = 0;
  for (; keep < boundary.size(); ++keep) {
    if (ahead >= target && (keep > 0 || cut_bucket > 0)) break;
    ahead += w[boundary[keep]];
  }
  // The cut bucket's dropped tokens move past every kept bucket.
  for (size_t j = keep; j < boundary.size(); ++j) bucket[boundary[j]] = kTopPBuckets;
  s.ids.resize(static_cast<size_t>(n));
  size_t kept = 0;
  for (int64_t j = 0; j < n; ++j) {
    s.ids[kept] = static_cast<int32_t>(j);
    kept += bucket[j] <= cut_bucket;
  }
  s.ids.resize(kept);
}

// The sum of weight(j) over [begin, end) in four accumulators (item j into j % 4, from begin):
// independent adds, where one running sum waited on each.
template <typename Weight>
double sum_weights(int64_t begin, int64_t end, const Weight& weight) {
  double part[4] = {0.0, 0.0, 0.0, 0.0};
  int64_t j = begin;
  for (; j + 4 <= end; j += 4) {
    for (int l = 0; l < 4; ++l) part[l] += weight(j + l);
  }
  for (; j < end; ++j) part[0] += weight(j);
  return (part[0] + part[1]) + (part[2] + part[3]);
}

// Inverse CDF over items [0, count) in order, item j weighing weight(j) (0: not a survivor): the
// first item at which the running sum exceeds `target`; the last item of nonzero weight when
// rounding left the sum at or below target; -1 when nothing weighs anything. The running sum
// steps over whole blocks that cannot reach target (their sums from sum_weights), then adds item
// by item inside the block that does, so it differs from a serial sum in rounding only; a
// 151936-token row at T = 0.8 no longer waits on 151936 dependent adds.
template <typename Weight>
int64_t inverse_cdf(int64_t count, const Weight& weight, double target) {
  constexpr int64_t kBlock = 256;
  double acc = 0.0;
  for (int64_t b0 = 0; b0 < count; b0 += kBlock) {
    const int64_t b1 = std::min(count, b0 + kBlock);
    const double block = sum_weights(b0, b1, weight);
    if (!(acc + block > target)) {
      acc += block;
      continue;
    }
    for (int64_t j = b0; j < b1; ++j) {
      const float wj = weight(j);
      if (wj == 0.0f) continue;
      acc += wj;
      if (acc > target) return j;
    }
  }
  for (int64_t j = count - 1; j >= 0; --j) {
    if (weight(j) != 0.0f) return j;
  }
  return -1;
}

// Inverse CDF over `ids` (ascending) with weights w[id]; -1 when they weigh nothing.
int32_t draw_from(const std::vector<int32_t>& ids, const float* w, double u) {
  const auto weight = [&](int64_t j) { return w[ids[j]]; };
  const int64_t n = static_cast<int64_t>(ids.size());
  const int64_t j = inverse_cdf(n, weight, u * sum_weights(0, n, weight));
  return j < 0 ? -1 : ids[j];
}

// The survivors of top_k / top_p / min_p over the processed, temperature-scaled logits in
// s.logits (see sampler.h, step 3): their ids in ascending order into s.ids, their weights
// exp(logit - max) at s.weights[id]. False when every logit is -inf.
bool filter_survivors(const SamplingParams& p, RowScratch& s) {
  const int64_t vocab = static_cast<int64_t>(s.logits.size());
  const float* x = s.logits.data();
  const float max_logit = row_max(s.logits.data(), static_cast<int64_t>(s.logits.size()));
  if (!(max_logit > kNegInf)) return false;
  s.weights.resize(vocab);
  float* w = s.weights.data();
  // The most probable token has weight exp(0) = 1, so min_p's threshold is min_p itself.
  const float min_p_threshold = p.min_p;
  auto below_min_p = [&](int32_t id) { return !(w[id] >= min_p_threshold) || w[id] == 0.0f; };
  if (p.top_k_active(vocab)) {
    // Only the k candidates need weights.
    select_top_k(x, vocab, p.top_k, s.ids);
    double total = 0.0;
    for (int32_t id : s.ids) total += w[id] = exp_nonpositive(x[id] - max_logit);
    if (p.top_p < 1.0f) {
      std::sort(s.ids.begin(), s.ids.end(), MoreProbable{x});
      cut_sorted_top_p(w, static_cast<double>(p.top_p) * total, s.ids);
    }
    std::erase_if(s.ids, below_min_p);
    std::sort(s.ids.begin(), s.ids.end());
    return true;
  }
  const double total = exp_row(x, max_logit, w, vocab);
  if (p.top_p < 1.0f) {
    top_p_by_buckets(x, w, vocab, max_logit, static_cast<double>(p.top_p) * total, s);
    std::erase_if(s.ids, below_min_p);
    return true;
  }
  s.ids.clear();
  for (int64_t i = 0; i < vocab; ++i) {
    if (!below_min_p(static_cast<int32_t>(i))) s.ids.push_back(static_cast<int32_t>(i));
  }
  return true;
}

// Draws from the processed, temperature-scaled logits in s.logits (see sampler.h, step 3).
int32_t draw(const SamplingParams& p, double u, RowScratch& s) {
  const int64_t vocab = static_cast<int64_t>(s.logits.size());
  if (p.top_k_active(vocab) || p.top_p < 1.0f) {
    if (!filter_survivors(p, s)) return -1;
    return draw_from(s.ids, s.weights.data(), u);
  }
  // Dense path (no id list): survivors are the tokens at or above the min_p threshold, in id
  // order; the same set filter_survivors lists.
  const float* x = s.logits.data();
  const float max_logit = row_max(s.logits.data(), static_cast<int64_t>(s.logits.size()));
  if (!(max_logit > kNegInf)) return -1;
  s.weights.resize(vocab);
  float* w = s.weights.data();
  const float min_p_threshold = p.min_p;
  const double total = exp_row(x, max_logit, w, vocab);
  const auto weight = [&](int64_t i) { return w[i] >= min_p_threshold ? w[i] : 0.0f; };
  const double kept = min_p_threshold > 0.0f ? sum_weights(0, vocab, weight) : total;
  return static_cast<int32_t>(inverse_cdf(vocab, weight, u * kept));
}

void fill_logprobs(std::span<const float> raw, int n_top, float given_lse, RowScratch& s, SampleResult& r) {
  const int64_t vocab = static_cast<int64_t>(raw.size());
  double lse = given_lse;
  if (std::isnan(given_lse)) {
    const float max_raw = row_max(raw.data(), static_cast<int64_t>(raw.size()));
    s.weights.resize(vocab);
    lse = max_raw + std::log(exp_row(raw.data(), max_raw, s.weights.data(), vocab));
  }
  r.logprob = static_cast<float>(raw[r.token] - lse);
  if (n_top <= 0) return;
  n_top = static_cast<int>(std::min<int64_t>(n_top, vocab));
  select_top_k(raw.data(), vocab, n_top, s.ids);
  std::sort(s.ids.begin(), s.ids.end(), MoreProbable{raw.data()});
  r.top_logprobs.reserve(n_top);
  for (int32_t id : s.ids) r.top_logprobs.emplace_back(id, static_cast<float>(raw[id] - lse));
}

// Disallowed tokens (state.allowed) to -inf; ids past the mask are disallowed too.
void apply_allowed(std::span<float> logits, std::span<const uint32_t> allowed) {
  if (allowed.empty()) return;
  const size_t n = std::min(logits.size(), allowed.size() * 32);
  for (size_t i = 0; i < n; ++i) {
    if (!((allowed[i >> 5] >> (i & 31)) & 1u)) logits[i] = kNegInf;
  }
  for (size_t i = n; i < logits.size(); ++i) logits[i] = kNegInf;
}

// The fallback when every processed logit is -inf: the raw argmax among the allowed tokens (the
// processors suppressed them all, e.g. min_tokens holding back the only token a grammar allows),
// else the raw argmax.
int32_t fallback_token(std::span<const float> raw, const SequenceSamplingState& state, RowScratch& s) {
  if (!state.allowed.empty()) {
    s.logits.assign(raw.begin(), raw.end());
    apply_allowed(s.logits, state.allowed);
    if (const int32_t t = argmax(s.logits); t >= 0) return t;
  }
  return std::max(argmax(raw), 0);
}

// s.logits = the row masked (state.allowed) and processed (logits_processors.h); temperature
// applied too unless greedy. Returns the argmax for greedy, -1 otherwise.
int32_t prepare_row(std::span<const float> raw, const SequenceSamplingState& state, RowScratch& s) {
  const SamplingParams& p = *state.params;
  s.logits.assign(raw.begin(), raw.end());
  apply_allowed(s.logits, state.allowed);
  apply_logits_processors(s.logits, state, s.penalties);
  if (p.is_greedy()) return argmax(s.logits);
  apply_temperature(s.logits, p.temperature);
  return -1;
}

TokenDistribution distribution_row(std::span<const float> raw, const SequenceSamplingState& state,
                                   RowScratch& s);

SampleDiagnostics diagnose_row(std::span<const float> raw, const SequenceSamplingState& state, int32_t token) {
  SampleDiagnostics d;
  RowScratch s;
  const float max_raw = row_max(raw.data(), static_cast<int64_t>(raw.size()));
  s.weights.resize(raw.size());
  const double total = exp_row(raw.data(), max_raw, s.weights.data(), static_cast<int64_t>(raw.size()));
  double entropy = 0.0;
  for (size_t i = 0; i < raw.size(); ++i) {
    const double p = s.weights[i] / total;
    if (p > 0.0) entropy -= p * std::log(p);
    if (raw[i] > raw[token] || (raw[i] == raw[token] && static_cast<int32_t>(i) < token)) ++d.raw_rank;
  }
  ++d.raw_rank;
  d.raw_entropy = entropy;
  d.raw_argmax = std::max(argmax(raw), 0);
  prepare_row(raw, state, s);
  d.processed_argmax = argmax(s.logits);
  d.masked = !state.allowed.empty();
  d.sampled_probability = distribution_row(raw, state, s).prob_of(token);
  return d;
}

SampleResult sample_row(std::span<const float> raw, const SequenceSamplingState& state,
                        RowScratch& s) {
  const SamplingParams& p = *state.params;
  SampleResult r;
  int32_t token = prepare_row(raw, state, s);
  if (!p.is_greedy()) {
    const double u = SamplingRng(state.seed, state.seq_index, state.output_ids.size()).uniform(0);
    token = draw(p, u, s);
  }
  if (token < 0) token = fallback_token(raw, state, s);
  r.token = token;
  if (p.logprobs.has_value()) {
    fill_logprobs(raw, *p.logprobs, state.raw_logsumexp, s, r);
  } else {
    r.logprob = std::numeric_limits<float>::quiet_NaN();
  }
  if (p.diagnostics) r.diagnostics = diagnose_row(raw, state, token);
  return r;
}

TokenDistribution distribution_row(std::span<const float> raw, const SequenceSamplingState& state,
                                   RowScratch& s) {
  const SamplingParams& p = *state.params;
  TokenDistribution d;
  int32_t only = prepare_row(raw, state, s);  // the token of a one-point distribution
  if (!p.is_greedy()) {
    if (filter_survivors(p, s)) {
      double total = 0.0;
      for (int32_t id : s.ids) total += s.weights[id];
      d.ids = s.ids;
      d.probs.reserve(d.ids.size());
      for (int32_t id : d.ids) d.probs.push_back(static_cast<float>(s.weights[id] / total));
      return d;
    }
  }
  if (only < 0) only = fallback_token(raw, state, s);  // as sample_row: everything suppressed
  d.ids = {only};
  d.probs = {1.0f};
  return d;
}

// Validates the logits and states of Sampler's calls; returns the vocabulary size.
absl::StatusOr<int64_t> check_inputs(const TensorView& logits,
                                     std::span<const SequenceSamplingState> states) {
  if (logits.dtype != DType::kF32 || logits.device != Device::kCpu) {
    return absl::InvalidArgumentError(absl::StrCat(
        "logits: expected f32 host memory, got ", std::string(dtype_name(logits.dtype)),
        logits.device == Device::kCpu ? " on cpu" : " on a device"));
  }
  const int64_t num_seqs = static_cast<int64_t>(states.size());
  if (logits.shape.rank() != 2 || logits.shape[0] != num_seqs || logits.shape[1] < 1 ||
      logits.data == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat("logits: expected shape [", num_seqs,
                                                   ", vocab], got ", logits.shape.to_string()));
  }
  const int64_t vocab = logits.shape[1];
  for (int64_t i = 0; i < num_seqs; ++i) {
    if (auto st = check_state(states[i], vocab, i); !st.ok()) return st;
  }
  return vocab;
}

}  // namespace

float TokenDistribution::prob_of(int32_t id) const {
  auto it = std::lower_bound(ids.begin(), ids.end(), id);
  return it != ids.end() && *it == id ? probs[it - ids.begin()] : 0.0f;
}

absl::StatusOr<std::vector<TokenDistribution>> Sampler::distributions(
    const TensorView& logits, std::span<const SequenceSamplingState> states, ThreadPool& pool) const {
  WEFT_ASSIGN_OR_RETURN(const int64_t vocab, check_inputs(logits, states));
  std::vector<TokenDistribution> out(states.size());
  const float* data = logits.as<const float>();
  pool.parallel_for(static_cast<int64_t>(states.size()), [&](int64_t begin, int64_t end) {
    RowScratch scratch;
    for (int64_t i = begin; i < end; ++i) {
      out[i] = distribution_row(std::span<const float>(data + i * vocab, vocab), states[i], scratch);
    }
  });
  return out;
}

absl::StatusOr<std::vector<SampleResult>> Sampler::results_for(
    const TensorView& logits, std::span<const SequenceSamplingState> states,
    std::span<const int32_t> tokens, ThreadPool& pool) const {
  WEFT_ASSIGN_OR_RETURN(const int64_t vocab, check_inputs(logits, states));
  if (tokens.size() != states.size()) {
    return absl::InvalidArgumentError(absl::StrCat("tokens: ", tokens.size(), " for ",
                                                   states.size(), " rows"));
  }
  std::vector<SampleResult> out(states.size());
  const float* data = logits.as<const float>();
  pool.parallel_for(static_cast<int64_t>(states.size()), [&](int64_t begin, int64_t end) {
    RowScratch scratch;
    for (int64_t i = begin; i < end; ++i) {
      out[i].token = tokens[i];
      if (states[i].params->logprobs.has_value()) {
        fill_logprobs(std::span<const float>(data + i * vocab, vocab), *states[i].params->logprobs,
                      states[i].raw_logsumexp, scratch, out[i]);
      } else {
        out[i].logprob = std::numeric_limits<float>::quiet_NaN();
      }
    }
  });
  return out;
}

absl::StatusOr<std::vector<SampleResult>> Sampler::sample(
    const TensorView& logits, std::span<const SequenceSamplingState> states,
    ThreadPool& pool) const {
  WEFT_ASSIGN_OR_RETURN(const int64_t vocab, check_inputs(logits, states));
  const int64_t num_seqs = static_cast<int64_t>(states.size());
  std::vector<SampleResult> results(num_seqs);
  const float* data = logits.as<const float>();
  pool.parallel_for(num_seqs, [&](int64_t begin, int64_t end) {
    RowScratch scratch;
    for (int64_t i = begin; i < end; ++i) {
      results[i] = sample_row(std::span<const float>(data + i * vocab, vocab), states[i], scratch);
    }
  });
  return results;
}

}  // namespace weft
