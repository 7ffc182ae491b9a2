#include "serving/metrics.h"

#include <cstdio>

#include "absl/strings/str_cat.h"

namespace weft {
namespace {

std::string number(double v) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.9g", v);
  return buf;
}

const std::vector<double> kTtftBuckets = {0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5,
                                          0.75,  1.0,   2.5,  5.0,  7.5,  10.0, 20.0, 40.0, 80.0};
const std::vector<double> kItlBuckets = {0.001, 0.005, 0.01, 0.015, 0.02, 0.025, 0.03, 0.04, 0.05, 0.075,
                                         0.1,   0.15,  0.2,  0.3,   0.4,  0.5,   0.75, 1.0,  2.5, 5.0};
const std::vector<double> kE2eBuckets = {0.3,  0.5,  0.8,  1.0,  1.5,  2.0,   2.5,   5.0,  10.0,
                                         15.0, 20.0, 30.0, 40.0, 50.0, 60.0, 120.0, 240.0, 480.0};

}  // namespace

Histogram::Histogram(std::vector<double> upper_bounds)
    : bounds_(std::move(upper_bounds)), counts_(bounds_.size() + 1, 0) {}

void Histogram::observe(double value) {
  size_t i = 0;
  while (i < bounds_.size() && value > bounds_[i]) ++i;
  std::lock_guard<std::mutex> lock(mu_);
  ++counts_[i];
  sum_ += value;
  ++count_;
}

void Histogram::render(std::string& out, std::string_view name, std::string_view help) const {
  std::lock_guard<std::mutex> lock(mu_);
  const std::string n(name);
  absl::StrAppend(&out, "# HELP ", n, " ", std::string(help), "\n# TYPE ", n, " histogram\n");
  uint64_t cumulative = 0;
  for (size_t i = 0; i < bounds_.size(); ++i) {
    cumulative += counts_[i];
    absl::StrAppend(&out, n, "_bucket{le=\"", number(bounds_[i]), "\"} ", cumulative, "\n");
  }
  cumulative += counts_.back();
  absl::StrAppend(&out, n, "_bucket{le=\"+Inf\"} ", cumulative, "\n", n, "_sum ", number(sum_), "\n", n,
                  "_count ", count_, "\n");
}

ServingMetrics::ServingMetrics() : ttft_(kTtftBuckets), itl_(kItlBuckets), e2e_(kE2eBuckets) {}

void ServingMetrics::count_request(std::string_view finished_reason) {
  std::lock_guard<std::mutex> lock(mu_);
  ++requests_[std::string(finished_reason)];
}

namespace {

// Speculative decoding's counters, as weft:spec_decode_* and under vLLM's names (a counter's
// samples carry the _total suffix, as prometheus_client writes them), and the two ratios.
void render_speculation(std::string& out, const SpeculationStats& s) {
  auto counter = [&](const std::string& name, const char* help, int64_t value) {
    absl::StrAppend(&out, "# HELP ", name, " ", help, "\n# TYPE ", name, " counter\n", name, "_total ", value, "\n");
  };
  for (const char* prefix : {"weft:", "vllm:"}) {
    const std::string p = prefix;
    counter(p + "spec_decode_num_drafts", "Sequence-steps that verified speculative guesses.", s.num_drafts);
    counter(p + "spec_decode_num_draft_tokens", "Speculative guesses verified.", s.num_draft_tokens);
    counter(p + "spec_decode_num_accepted_tokens", "Speculative guesses accepted.", s.num_accepted_tokens);
    const std::string per_pos = p + "spec_decode_num_accepted_tokens_per_pos";
    absl::StrAppend(&out, "# HELP ", per_pos, " Speculative guesses accepted, by position in the guess.\n# TYPE ",
                    per_pos, " counter\n");
    for (size_t j = 0; j < s.accepted_per_position.size(); ++j) {
      absl::StrAppend(&out, per_pos, "_total{position=\"", j, "\"} ", s.accepted_per_position[j], "\n");
    }
  }
  // Of the above, the sequences with a grammar (response_format, tools, structured outputs); vLLM
  // has no such series.
  counter("weft:spec_decode_constrained_num_drafts",
          "Sequence-steps of grammar-constrained sequences that verified speculative guesses.",
          s.num_constrained_drafts);
  counter("weft:spec_decode_constrained_num_draft_tokens",
          "Speculative guesses of grammar-constrained sequences verified.", s.num_constrained_draft_tokens);
  counter("weft:spec_decode_constrained_num_accepted_tokens",
          "Speculative guesses of grammar-constrained sequences accepted.", s.num_constrained_accepted_tokens);
  counter("weft:spec_decode_grammar_dropped_tokens",
          "Speculative guesses the grammar refused before verification (never run through the model).",
          s.num_grammar_dropped_tokens);
  counter("weft:spec_decode_banned_screened",
          "Sequence-steps whose speculative guesses met a banned phrase's last token at their next position.",
          s.num_banned_screened);
  counter("weft:spec_decode_banned_dropped_tokens",
          "Speculative guesses banned phrases refused before verification.", s.num_banned_dropped_tokens);
  absl::StrAppend(&out, "# HELP weft:spec_decode_acceptance_rate Accepted / verified speculative guesses.\n",
                  "# TYPE weft:spec_decode_acceptance_rate gauge\nweft:spec_decode_acceptance_rate ",
                  number(s.acceptance_rate()), "\n",
                  "# HELP weft:spec_decode_mean_accepted_length Tokens per verifying sequence-step (1 + accepted).\n",
                  "# TYPE weft:spec_decode_mean_accepted_length gauge\nweft:spec_decode_mean_accepted_length ",
                  number(s.mean_accepted_length()), "\n");
}

// The prefix cache (tokens, also under vLLM's names) and, with tiers, each tier's bytes and hit
// rate in blocks: weft:kv_offload_* for the host tier, weft:kv_disk_* for the disk tier.
void render_kv_tiers(std::string& out, const EngineGauges& g) {
  auto series = [&](const std::string& name, const char* type, const char* help, const std::string& value) {
    absl::StrAppend(&out, "# HELP ", name, " ", help, "\n# TYPE ", name, " ", type, "\n", name,
                    std::string_view(type) == "counter" ? "_total " : " ", value, "\n");
  };
  auto rate = [](int64_t hits, int64_t queries) {
    return number(queries > 0 ? static_cast<double>(hits) / static_cast<double>(queries) : 0.0);
  };
  for (const char* prefix : {"weft:", "vllm:"}) {
    const std::string p = prefix;
    series(p + "prefix_cache_queries", "counter", "Prompt tokens looked up in the prefix cache.",
           std::to_string(g.prefix_query_tokens));
    series(p + "prefix_cache_hits", "counter", "Prompt tokens found in the prefix cache (pool or a lower tier).",
           std::to_string(g.prefix_hit_tokens));
  }
  if (!g.kv_tiers) return;
  const KvTierStats& t = g.kv_tier;
  const int64_t bb = g.kv_tier_block_bytes;
  series("weft:kv_offload_bytes", "gauge", "Bytes of KV blocks in the host tier (the coordinator's slice).",
         std::to_string(t.host_blocks * bb));
  series("weft:kv_offload_capacity_bytes", "gauge", "Host tier budget in whole blocks (the coordinator's slice).",
         std::to_string(t.host_capacity_blocks * bb));
  series("weft:kv_offload_queries", "counter", "Blocks missing from the pool looked up in the host tier.",
         std::to_string(t.host_query_blocks));
  series("weft:kv_offload_hits", "counter", "Blocks found in the host tier.", std::to_string(t.host_hit_blocks));
  series("weft:kv_offload_hit_rate", "gauge", "Host tier hits / queries.", rate(t.host_hit_blocks, t.host_query_blocks));
  series("weft:kv_offload_saved_blocks", "counter", "Pool evictions copied down to the host tier.",
         std::to_string(t.saved_blocks));
  series("weft:kv_offload_restored_blocks", "counter", "Blocks copied back into the pool from a lower tier.",
         std::to_string(t.restored_blocks));
  if (!g.kv_disk) return;
  const KvDiskTierStats& d = *g.kv_disk;
  series("weft:kv_disk_enabled", "gauge", "1 while the disk tier works (0 after a failed write).",
         d.enabled ? "1" : "0");
  series("weft:kv_disk_bytes", "gauge", "Bytes of this model's block files in the disk tier.", std::to_string(d.bytes));
  series("weft:kv_disk_capacity_bytes", "gauge", "Disk tier budget.", std::to_string(d.max_bytes));
  series("weft:kv_disk_queries", "counter", "Blocks missing from the host tier looked up on disk.",
         std::to_string(t.disk_query_blocks));
  series("weft:kv_disk_hits", "counter", "Blocks read back from disk (checked).", std::to_string(t.disk_hit_blocks));
  series("weft:kv_disk_hit_rate", "gauge", "Disk tier hits / queries.", rate(t.disk_hit_blocks, t.disk_query_blocks));
  series("weft:kv_disk_writes", "counter", "Block files written.", std::to_string(d.writes));
  absl::StrAppend(&out, "# HELP weft:kv_disk_misses Disk lookups that found no usable file, by reason.\n",
                  "# TYPE weft:kv_disk_misses counter\n");
  const std::pair<const char*, int64_t> reasons[] = {{"absent", d.misses_absent},
                                                     {"truncated", d.misses_truncated},
                                                     {"corrupt", d.misses_corrupt},
                                                     {"foreign", d.misses_foreign}};
  for (const auto& [reason, n] : reasons) {
    absl::StrAppend(&out, "weft:kv_disk_misses_total{reason=\"", reason, "\"} ", n, "\n");
  }
}

}  // namespace

std::string ServingMetrics::render(const EngineGauges& g) const {
  std::string out;
  auto gauge = [&](const char* name, const char* help, const std::string& value) {
    absl::StrAppend(&out, "# HELP ", name, " ", help, "\n# TYPE ", name, " gauge\n", name, " ", value, "\n");
  };
  auto counter = [&](const char* name, const char* help, int64_t value) {
    absl::StrAppend(&out, "# HELP ", name, " ", help, "\n# TYPE ", name, " counter\n", name, " ", value, "\n");
  };
  gauge("weft:num_requests_running", "Sequences running in the engine.", std::to_string(g.num_running));
  gauge("weft:num_requests_waiting", "Sequences waiting to run.", std::to_string(g.num_waiting));
  const double usage = g.num_kv_blocks > 0
                           ? static_cast<double>(g.num_kv_blocks - g.num_free_kv_blocks) / g.num_kv_blocks
                           : 0.0;
  gauge("weft:kv_cache_usage_perc", "Fraction of KV cache blocks in use (1 = full).", number(usage));
  gauge("weft:num_active_requests", "Requests submitted and not yet finished.",
        std::to_string(g.num_active_requests));
  counter("weft:prompt_tokens_total", "Prompt tokens of admitted requests.", prompt_tokens_.load());
  counter("weft:generation_tokens_total", "Generated tokens.", generation_tokens_.load());
  counter("weft:engine_steps_total", "Engine steps run.", g.num_steps);
  counter("weft:banned_phrase_matches_total",
          "Banned phrases found in generated text (each rolled back, or its sequence filtered).",
          g.banned_phrases.matches);
  counter("weft:banned_phrase_rolled_back_tokens_total", "Generated tokens discarded by banned-phrase rollbacks.",
          g.banned_phrases.rolled_back_tokens);
  counter("weft:banned_phrase_content_filter_total",
          "Sequences finished with content_filter (banned-phrase retries exhausted).", g.banned_phrases.content_filtered);
  {
    std::lock_guard<std::mutex> lock(mu_);
    absl::StrAppend(&out, "# HELP weft:request_success_total Finished requests by finish reason.\n",
                    "# TYPE weft:request_success_total counter\n");
    for (const auto& [reason, count] : requests_) {
      absl::StrAppend(&out, "weft:request_success_total{finished_reason=\"", reason, "\"} ", count, "\n");
    }
  }
  if (g.speculating) render_speculation(out, g.speculation);
  render_kv_tiers(out, g);
  ttft_.render(out, "weft:time_to_first_token_seconds", "Time from request arrival to its first token.");
  itl_.render(out, "weft:inter_token_latency_seconds", "Time between consecutive tokens of a sequence.");
  e2e_.render(out, "weft:e2e_request_latency_seconds", "Time from request arrival to its end.");
  return out;
}

RequestLatency::RequestLatency(ServingMetrics& metrics, std::chrono::steady_clock::time_point submitted, int n)
    : metrics_(metrics), submitted_(submitted), last_token_(static_cast<size_t>(n > 0 ? n : 1)) {}

void RequestLatency::on_event(const StreamEvent& e) {
  using Seconds = std::chrono::duration<double>;
  last_event_ = e.time;
  if (e.output.token_ids.empty()) return;
  metrics_.add_generation_tokens(static_cast<int64_t>(e.output.token_ids.size()));
  if (!first_seen_) {
    first_seen_ = true;
    metrics_.observe_ttft(Seconds(e.time - submitted_).count());
  }
  const size_t i = static_cast<size_t>(e.output.index);
  if (i < last_token_.size()) {
    if (last_token_[i] != std::chrono::steady_clock::time_point{}) {
      metrics_.observe_itl(Seconds(e.time - last_token_[i]).count());
    }
    last_token_[i] = e.time;
  }
}

void RequestLatency::on_finish(std::string_view finished_reason) {
  if (finished_) return;
  finished_ = true;
  const auto end = last_event_ == std::chrono::steady_clock::time_point{} ? std::chrono::steady_clock::now()
                                                                          : last_event_;
  metrics_.observe_e2e(std::chrono::duration<double>(end - submitted_).count());
  metrics_.count_request(finished_reason);
}

}  // namespace weft
