// Serving metrics in the Prometheus text format (version 0.0.4), named like vLLM's with the
// `weft:` prefix: request gauges and KV usage (from EngineGauges), token counters, and latency
// histograms (time to first token, inter-token latency, end-to-end latency).
//
// Thread-safe: observations come from the HTTP loop and gRPC threads, render() from either.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "engine/async_engine.h"

namespace weft {

class Histogram {
 public:
  explicit Histogram(std::vector<double> upper_bounds);
  void observe(double value);
  // Appends the _bucket / _sum / _count series of `name`.
  void render(std::string& out, std::string_view name, std::string_view help) const;

 private:
  const std::vector<double> bounds_;
  mutable std::mutex mu_;
  std::vector<uint64_t> counts_;  // per bucket (not cumulative); last is +Inf
  double sum_ = 0;
  uint64_t count_ = 0;
};

class ServingMetrics {
 public:
  ServingMetrics();

  void add_prompt_tokens(int64_t n) { prompt_tokens_ += n; }
  void add_generation_tokens(int64_t n) { generation_tokens_ += n; }
  void observe_ttft(double seconds) { ttft_.observe(seconds); }
  void observe_itl(double seconds) { itl_.observe(seconds); }
  void observe_e2e(double seconds) { e2e_.observe(seconds); }
  // finished_reason: "stop", "length", "abort", "error".
  void count_request(std::string_view finished_reason);

  std::string render(const EngineGauges& gauges) const;

 private:
  std::atomic<int64_t> prompt_tokens_{0};
  std::atomic<int64_t> generation_tokens_{0};
  Histogram ttft_;
  Histogram itl_;
  Histogram e2e_;
  mutable std::mutex mu_;
  std::map<std::string, int64_t, std::less<>> requests_;
};

// Turns one request's StreamEvents into the latency observations: TTFT at its first token, ITL
// between consecutive tokens of each sequence, end-to-end when the request ends.
class RequestLatency {
 public:
  RequestLatency(ServingMetrics& metrics, std::chrono::steady_clock::time_point submitted, int n);
  void on_event(const StreamEvent& event);
  void on_finish(std::string_view finished_reason);

 private:
  ServingMetrics& metrics_;
  std::chrono::steady_clock::time_point submitted_;
  bool first_seen_ = false;
  bool finished_ = false;
  std::chrono::steady_clock::time_point last_event_{};
  std::vector<std::chrono::steady_clock::time_point> last_token_;
};

}  // namespace weft
