#include "engine/async_engine.h"

#include <unordered_set>

#include "absl/strings/str_cat.h"

namespace weft {

using Clock = std::chrono::steady_clock;

RequestStream::RequestStream(uint64_t key, int n, int64_t num_prompt_tokens)
    : key_(key), n_(n), num_prompt_tokens_(num_prompt_tokens), submitted_at_(Clock::now()) {}

RequestStream::Batch RequestStream::take() {
  std::lock_guard<std::mutex> lock(mu_);
  Batch b;
  b.events.swap(events_);
  b.admitted = admitted_;
  admitted_reported_ = admitted_;
  b.finished = done_;
  done_reported_ = done_;
  b.status = status_;
  return b;
}

void RequestStream::wait(std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait_for(lock, timeout, [&] {
    return !events_.empty() || admitted_ != admitted_reported_ || done_ != done_reported_;
  });
}

void RequestStream::set_notify(std::function<void()> notify) {
  std::lock_guard<std::mutex> lock(notify_mu_);
  notify_ = std::move(notify);
}

void RequestStream::push(StreamEvent event) {
  std::lock_guard<std::mutex> lock(mu_);
  if (done_) return;
  if (event.output.finished && ++num_finished_ >= n_) done_ = true;
  events_.push_back(std::move(event));
}

void RequestStream::admit() {
  std::lock_guard<std::mutex> lock(mu_);
  admitted_ = true;
}

void RequestStream::fail(absl::Status status) {
  std::lock_guard<std::mutex> lock(mu_);
  if (done_) return;
  status_ = std::move(status);
  done_ = true;
}

void RequestStream::notify() {
  cv_.notify_all();
  std::lock_guard<std::mutex> lock(notify_mu_);
  if (notify_) notify_();
}

AsyncEngine::AsyncEngine(std::shared_ptr<void> owner, Engine& engine, AsyncEngineOptions options)
    : owner_(std::move(owner)), engine_(engine), options_(options) {
  gauges_.num_kv_blocks = engine_.blocks().num_blocks();
  gauges_.num_free_kv_blocks = engine_.blocks().num_free_blocks();
}

AsyncEngine::~AsyncEngine() {
  stop();
  if (thread_.joinable()) thread_.join();
}

absl::StatusOr<std::shared_ptr<RequestStream>> AsyncEngine::submit(Request request) {
  const int n = request.params.n > 0 ? request.params.n : 1;
  auto stream = std::make_shared<RequestStream>(next_key_.fetch_add(1), n,
                                                static_cast<int64_t>(request.prompt_ids.size()));
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_) return absl::UnavailableError("the engine is shutting down");
    if (failed_) return absl::UnavailableError("the engine failed and accepts no more requests");
    const int waiting = gauges_.num_waiting + static_cast<int>(submissions_.size());
    if (options_.max_waiting > 0 && waiting >= options_.max_waiting) {
      return absl::ResourceExhaustedError(absl::StrCat(
          "the waiting queue is full (", options_.max_waiting, " requests); retry later"));
    }
    submissions_.push_back({stream, std::move(request)});
    ++gauges_.num_active_requests;
  }
  cv_.notify_one();
  return stream;
}

void AsyncEngine::abort(uint64_t key) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    aborts_.push_back(key);
  }
  cv_.notify_one();
}

void AsyncEngine::start() {
  thread_ = std::thread([this] { run(); });
}

void AsyncEngine::stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
}

EngineGauges AsyncEngine::gauges() const {
  std::lock_guard<std::mutex> lock(mu_);
  EngineGauges g = gauges_;
  g.num_waiting += static_cast<int>(submissions_.size());
  return g;
}

void AsyncEngine::admit(std::vector<Submission>& submissions) {
  for (Submission& s : submissions) {
    if (failed_) {
      s.stream->fail(absl::UnavailableError("the engine failed and accepts no more requests"));
      s.stream->notify();
      continue;
    }
    auto id = engine_.add_request(std::move(s.request));
    if (!id.ok()) {
      s.stream->fail(id.status());
      s.stream->notify();
      continue;
    }
    s.stream->admit();
    key_of_request_[*id] = s.stream->key();
    request_of_key_[s.stream->key()] = *id;
    by_key_[s.stream->key()] = s.stream;
    s.stream->notify();
  }
}

void AsyncEngine::dispatch(std::vector<SequenceOutput>& outputs) {
  const Clock::time_point now = Clock::now();
  std::unordered_set<RequestStream*> touched;
  std::vector<std::shared_ptr<RequestStream>> to_notify;
  for (SequenceOutput& out : outputs) {
    auto k = key_of_request_.find(out.request_id);
    if (k == key_of_request_.end()) continue;
    auto s = by_key_.find(k->second);
    if (s == by_key_.end()) continue;
    std::shared_ptr<RequestStream> stream = s->second;
    stream->push({std::move(out), now});
    if (touched.insert(stream.get()).second) to_notify.push_back(stream);
  }
  for (const auto& stream : to_notify) {
    bool done = false;
    {
      std::lock_guard<std::mutex> lock(stream->mu_);
      done = stream->done_;
    }
    if (done) {
      const uint64_t key = stream->key();
      key_of_request_.erase(request_of_key_[key]);
      request_of_key_.erase(key);
      by_key_.erase(key);
    }
    stream->notify();
  }
}

void AsyncEngine::fail_all(const absl::Status& status) {
  for (auto& [key, stream] : by_key_) {
    stream->fail(status);
    stream->notify();
  }
  by_key_.clear();
  key_of_request_.clear();
  request_of_key_.clear();
}

void AsyncEngine::publish() {
  std::lock_guard<std::mutex> lock(mu_);
  gauges_.num_running = engine_.scheduler().num_running();
  gauges_.num_waiting = engine_.scheduler().num_waiting();
  gauges_.num_kv_blocks = engine_.blocks().num_blocks();
  gauges_.num_free_kv_blocks = engine_.blocks().num_free_blocks();
  gauges_.num_active_requests = static_cast<int>(by_key_.size() + submissions_.size());
  gauges_.healthy = !failed_;
  gauges_.speculating = engine_.speculating();
  gauges_.speculation = engine_.speculation_stats();
  gauges_.banned_phrases = engine_.banned_phrase_stats();
  gauges_.prefix_query_tokens = engine_.num_prefix_query_tokens();
  gauges_.prefix_hit_tokens = engine_.num_prefix_hit_tokens();
  if (const KvTierDirectory* tiers = engine_.kv_tiers()) {
    gauges_.kv_tiers = true;
    gauges_.kv_tier = tiers->stats();
    gauges_.kv_tier_block_bytes = tiers->block_bytes();
    gauges_.kv_disk = tiers->disk_stats();
  }
}

void AsyncEngine::run() {
  for (;;) {
    std::vector<Submission> submissions;
    std::vector<uint64_t> aborts;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] {
        return stopping_ || !submissions_.empty() || !aborts_.empty() ||
               (!failed_ && engine_.has_unfinished());
      });
      if (stopping_) break;
      submissions.swap(submissions_);
      aborts.swap(aborts_);
      // Taken submissions stay counted as waiting until publish() reads the scheduler, so submit()
      // never sees a queue emptier than it is while they are being admitted.
      gauges_.num_waiting += static_cast<int>(submissions.size());
    }
    admit(submissions);
    for (uint64_t key : aborts) {
      auto it = request_of_key_.find(key);
      if (it != request_of_key_.end()) engine_.abort(it->second);
    }
    if (!failed_ && engine_.has_unfinished()) {
      auto outputs = engine_.step();
      if (!outputs.ok()) {
        {
          std::lock_guard<std::mutex> lock(mu_);
          failed_ = true;
        }
        for (auto& [key, id] : request_of_key_) engine_.abort(id);
        fail_all(absl::Status(outputs.status().code(),
                              absl::StrCat("engine step failed: ", outputs.status().message())));
      } else {
        dispatch(*outputs);
        std::lock_guard<std::mutex> lock(mu_);
        ++gauges_.num_steps;
      }
    }
    publish();
  }
  std::vector<Submission> submissions;
  {
    std::lock_guard<std::mutex> lock(mu_);
    submissions.swap(submissions_);
  }
  for (Submission& s : submissions) {
    s.stream->fail(absl::UnavailableError("the engine stopped"));
    s.stream->notify();
  }
  for (auto& [key, id] : request_of_key_) engine_.abort(id);
  fail_all(absl::UnavailableError("the engine stopped"));
  publish();
}

}  // namespace weft
