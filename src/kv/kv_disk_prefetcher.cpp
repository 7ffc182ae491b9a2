#include "kv/kv_disk_prefetcher.h"

namespace weft {

KvDiskPrefetcher::KvDiskPrefetcher(ReadFn read, int64_t block_bytes, int64_t max_bytes)
    : read_(std::move(read)), block_bytes_(block_bytes), max_bytes_(max_bytes) {
  reader_ = std::thread([this] { reader_loop(); });
}

KvDiskPrefetcher::~KvDiskPrefetcher() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  wake_.notify_all();
  reader_.join();
}

KvDiskPrefetcher::State KvDiskPrefetcher::request(uint64_t hash, uint64_t parent, std::span<const int32_t> tokens) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = entries_.find(hash);
  if (it != entries_.end()) {
    it->second.wanted = true;
    return it->second.state;
  }
  if (held_bytes_ + block_bytes_ > max_bytes_) {
    ++stats_.refused;
    return State::kRefused;
  }
  Entry e;
  e.serial = next_serial_++;
  e.parent = parent;
  e.tokens.assign(tokens.begin(), tokens.end());
  queue_.emplace_back(hash, e.serial);
  entries_.emplace(hash, std::move(e));
  held_bytes_ += block_bytes_;
  ++num_pending_;
  ++stats_.requested;
  wake_.notify_one();
  return State::kQueued;
}

void KvDiskPrefetcher::end_locked(std::unordered_map<uint64_t, Entry>::iterator it) {
  if (it->second.state == State::kQueued) {
    --num_pending_;  // a read in progress finds its entry gone and throws its result away
    held_bytes_ -= block_bytes_;
  } else if (it->second.state == State::kReady) {
    held_bytes_ -= block_bytes_;
  }
  entries_.erase(it);
}

KvDiskPrefetcher::Taken KvDiskPrefetcher::take(uint64_t hash, std::vector<uint8_t>& out) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = entries_.find(hash);
  if (it == entries_.end()) {
    ++stats_.not_fetched;
    return Taken::kNotFetched;
  }
  Taken taken = Taken::kNotFetched;
  if (it->second.state == State::kReady) {
    out = std::move(it->second.payload);
    ++stats_.served;
    taken = Taken::kReady;
  } else if (it->second.state == State::kMissed) {
    taken = Taken::kMissed;
  } else {
    ++stats_.not_fetched;
  }
  end_locked(it);
  return taken;
}

void KvDiskPrefetcher::end_round() {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto it = entries_.begin(); it != entries_.end();) {
    auto next = std::next(it);
    if (it->second.wanted) {
      it->second.wanted = false;
    } else {
      ++stats_.discarded;
      end_locked(it);
    }
    it = next;
  }
}

bool KvDiskPrefetcher::pending() const {
  std::lock_guard<std::mutex> lock(mu_);
  return num_pending_ > 0;
}

void KvDiskPrefetcher::wait_for_progress() {
  std::unique_lock<std::mutex> lock(mu_);
  const uint64_t seen = completed_;
  progress_.wait(lock, [&] { return num_pending_ == 0 || completed_ != seen; });
}

KvDiskPrefetchStats KvDiskPrefetcher::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

int64_t KvDiskPrefetcher::bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return held_bytes_;
}

void KvDiskPrefetcher::reader_loop() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    wake_.wait(lock, [&] { return stop_ || !queue_.empty(); });
    if (stop_) return;
    const auto [hash, serial] = queue_.front();
    queue_.pop_front();
    auto it = entries_.find(hash);
    if (it == entries_.end() || it->second.serial != serial || it->second.state != State::kQueued) continue;
    const uint64_t parent = it->second.parent;
    const std::vector<int32_t> tokens = it->second.tokens;
    lock.unlock();
    std::optional<std::vector<uint8_t>> got = read_(hash, parent, tokens);
    lock.lock();
    ++completed_;
    it = entries_.find(hash);
    if (it != entries_.end() && it->second.serial == serial && it->second.state == State::kQueued) {
      --num_pending_;
      if (got) {
        it->second.payload = *std::move(got);
        it->second.state = State::kReady;
        ++stats_.read;
      } else {
        it->second.state = State::kMissed;
        held_bytes_ -= block_bytes_;
        ++stats_.missed;
      }
    }
    progress_.notify_all();
  }
}

}  // namespace weft
