#include "kv/kv_disk_tier.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <sstream>

#include "absl/strings/str_cat.h"

namespace weft {
namespace {

namespace fs = std::filesystem;

constexpr int64_t kMaxQueuedBytes = int64_t{256} << 20;
constexpr const char* kSuffix = ".kvb";
constexpr const char* kTempPrefix = ".tmp-";

std::optional<std::string> read_file(const fs::path& path, size_t limit) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::string bytes(limit, '\0');
  in.read(bytes.data(), static_cast<std::streamsize>(limit));
  bytes.resize(static_cast<size_t>(in.gcount()));
  return bytes;
}

// Writes all of `data` to `fd`; false (errno set) on failure.
bool write_all(int fd, const void* data, size_t n) {
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    const ssize_t w = ::write(fd, p, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    p += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}

}  // namespace

fs::path KvDiskTier::path_of(uint64_t hash) const {
  char name[32];
  std::snprintf(name, sizeof(name), "%016llx", static_cast<unsigned long long>(hash));
  return options_.dir / (std::string(name) + kSuffix);
}

absl::StatusOr<std::unique_ptr<KvDiskTier>> KvDiskTier::open(const KvDiskTierOptions& options) {
  std::unique_ptr<KvDiskTier> t(new KvDiskTier(options));
  if (!t->options_.warn) {
    t->options_.warn = [](const std::string& m) { std::cerr << "weft: warning: " << m << "\n"; };
  }
  const fs::path& dir = options.dir;
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return absl::UnavailableError(absl::StrCat("--kv-disk-cache ", dir.string(), ": ", ec.message()));
  const fs::path lock = dir / "lock";
  t->lock_fd_ = ::open(lock.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (t->lock_fd_ < 0) {
    return absl::UnavailableError(absl::StrCat("--kv-disk-cache ", dir.string(), ": cannot open ",
                                               lock.string(), ": ", std::strerror(errno)));
  }
  if (::flock(t->lock_fd_, LOCK_EX | LOCK_NB) != 0) {
    const int err = errno;
    ::close(t->lock_fd_);
    t->lock_fd_ = -1;
    return absl::UnavailableError(absl::StrCat(
        "--kv-disk-cache ", dir.string(), ": ",
        err == EWOULDBLOCK ? "another process is using it (holds its lock)" : std::strerror(err)));
  }
  // Index this key's files, oldest first; remove what a killed writer left.
  struct Found {
    fs::file_time_type mtime;
    uint64_t hash;
    int64_t bytes;
  };
  std::vector<Found> found;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const fs::path& p = it->path();
    const std::string name = p.filename().string();
    if (name.rfind(kTempPrefix, 0) == 0) {
      fs::remove(p, ec);
      ec.clear();
      continue;
    }
    if (p.extension() != kSuffix || !it->is_regular_file(ec)) continue;
    std::optional<std::string> head = read_file(p, kv_block_file_header_size(1024));
    if (!head) continue;
    const DecodedKvBlockHeader d = decode_kv_block_header(*head);
    if (d.problem != KvBlockFileProblem::kNone || !(d.header.key == options.key) ||
        d.header.payload_bytes != static_cast<uint64_t>(options.block_bytes) || p != t->path_of(d.header.hash)) {
      continue;  // not ours (or unreadable): never served, checked again at load anyway
    }
    const int64_t bytes = static_cast<int64_t>(it->file_size(ec));
    if (ec) {
      ec.clear();
      continue;
    }
    found.push_back({it->last_write_time(ec), d.header.hash, bytes});
    ec.clear();
  }
  if (ec) return absl::UnavailableError(absl::StrCat("--kv-disk-cache ", dir.string(), ": ", ec.message()));
  std::sort(found.begin(), found.end(), [](const Found& a, const Found& b) { return a.mtime < b.mtime; });
  t->stats_.max_bytes = options.max_bytes;
  for (const Found& f : found) t->index_locked(f.hash, f.bytes);
  t->stats_.indexed_at_open = static_cast<int64_t>(found.size());
  t->evict_over_budget_locked();
  t->writer_ = std::thread([raw = t.get()] { raw->writer_loop(); });
  return t;
}

KvDiskTier::~KvDiskTier() {
  {
    std::unique_lock<std::mutex> lock(mu_);
    stop_ = true;
  }
  wake_.notify_all();
  if (writer_.joinable()) writer_.join();
  if (lock_fd_ >= 0) ::close(lock_fd_);  // releases the flock
}

void KvDiskTier::index_locked(uint64_t hash, int64_t bytes) {
  forget_locked(hash, /*remove_file=*/false);
  Indexed e;
  e.bytes = bytes;
  e.lru = lru_.insert(lru_.end(), hash);
  index_.emplace(hash, e);
  stats_.files = static_cast<int64_t>(index_.size());
  stats_.bytes += bytes;
}

void KvDiskTier::forget_locked(uint64_t hash, bool remove_file) {
  auto it = index_.find(hash);
  if (it == index_.end()) return;
  stats_.bytes -= it->second.bytes;
  lru_.erase(it->second.lru);
  index_.erase(it);
  stats_.files = static_cast<int64_t>(index_.size());
  if (remove_file) {
    std::error_code ec;
    fs::remove(path_of(hash), ec);
  }
}

void KvDiskTier::evict_over_budget_locked() {
  while (stats_.bytes > options_.max_bytes && !lru_.empty()) {
    forget_locked(lru_.front(), /*remove_file=*/true);
    ++stats_.evicted;
  }
}

void KvDiskTier::write_async(uint64_t hash, uint64_t parent, std::span<const int32_t> tokens,
                             std::vector<uint8_t> payload) {
  {
    std::unique_lock<std::mutex> lock(mu_);
    if (!stats_.enabled || index_.count(hash)) return;
    for (const Pending& p : queue_) {
      if (p.hash == hash) return;
    }
    const int64_t size = static_cast<int64_t>(payload.size());
    if (queued_bytes_ + size > kMaxQueuedBytes) {
      ++stats_.writes_dropped;
      return;
    }
    Pending p;
    p.hash = hash;
    p.header.key = options_.key;
    p.header.hash = hash;
    p.header.parent = parent;
    p.header.tokens.assign(tokens.begin(), tokens.end());
    p.payload = std::move(payload);
    queued_bytes_ += size;
    queue_.push_back(std::move(p));
  }
  wake_.notify_one();
}

bool KvDiskTier::contains(uint64_t hash) const {
  std::unique_lock<std::mutex> lock(mu_);
  if (index_.count(hash)) return true;
  return std::any_of(queue_.begin(), queue_.end(), [&](const Pending& p) { return p.hash == hash; });
}

void KvDiskTier::flush() {
  std::unique_lock<std::mutex> lock(mu_);
  idle_.wait(lock, [&] { return queue_.empty() && !writing_; });
}

void KvDiskTier::writer_loop() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    wake_.wait(lock, [&] { return stop_ || !queue_.empty(); });
    if (queue_.empty()) break;  // stop_ with nothing left to write
    writing_ = true;
    const Pending& p = queue_.front();
    lock.unlock();
    const bool ok = write_file(p);
    lock.lock();
    queued_bytes_ -= static_cast<int64_t>(p.payload.size());
    if (ok) {
      index_locked(p.hash, static_cast<int64_t>(kv_block_file_header_size(p.header.tokens.size()) +
                                                p.payload.size()));
      ++stats_.writes;
      evict_over_budget_locked();
    }
    queue_.pop_front();
    if (!stats_.enabled) {
      queued_bytes_ = 0;
      queue_.clear();
    }
    writing_ = false;
    idle_.notify_all();
  }
  idle_.notify_all();
}

bool KvDiskTier::write_file(const Pending& p) {
  const fs::path final_path = path_of(p.hash);
  const fs::path temp = options_.dir / absl::StrCat(kTempPrefix, final_path.filename().string());
  const std::string header = encode_kv_block_header(p.header, p.payload);
  const int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  bool ok = fd >= 0 && write_all(fd, header.data(), header.size()) &&
            write_all(fd, p.payload.data(), p.payload.size());
  const int err = errno;
  if (fd >= 0 && ::close(fd) != 0) ok = false;
  if (ok && std::rename(temp.c_str(), final_path.c_str()) != 0) ok = false;
  if (ok) return true;
  std::error_code ec;
  fs::remove(temp, ec);
  std::unique_lock<std::mutex> lock(mu_);
  if (stats_.enabled) {
    stats_.enabled = false;
    lock.unlock();
    options_.warn(absl::StrCat("--kv-disk-cache ", options_.dir.string(), ": cannot write ", temp.string(), " (",
                               std::strerror(err != 0 ? err : errno),
                               "); continuing without the disk tier"));
  }
  return false;
}

std::optional<std::vector<uint8_t>> KvDiskTier::load(uint64_t hash, uint64_t parent,
                                                     std::span<const int32_t> tokens) {
  {
    std::unique_lock<std::mutex> lock(mu_);
    for (const Pending& p : queue_) {
      if (p.hash == hash && p.header.parent == parent &&
          std::equal(p.header.tokens.begin(), p.header.tokens.end(), tokens.begin(), tokens.end())) {
        ++stats_.hits;
        return p.payload;
      }
    }
    if (!index_.count(hash)) {
      ++stats_.misses_absent;
      return std::nullopt;
    }
  }
  const size_t expected = kv_block_file_header_size(tokens.size()) + static_cast<size_t>(options_.block_bytes);
  std::optional<std::string> bytes = read_file(path_of(hash), expected + 1);
  size_t header_bytes = 0;
  const KvBlockFileProblem problem =
      bytes ? check_kv_block_file(*bytes, options_.key, hash, parent, tokens,
                                  static_cast<uint64_t>(options_.block_bytes), &header_bytes)
            : KvBlockFileProblem::kTruncated;
  std::unique_lock<std::mutex> lock(mu_);
  switch (problem) {
    case KvBlockFileProblem::kNone: {
      ++stats_.hits;
      auto it = index_.find(hash);
      if (it != index_.end()) {
        lru_.erase(it->second.lru);
        it->second.lru = lru_.insert(lru_.end(), hash);
      }
      return std::vector<uint8_t>(bytes->begin() + static_cast<std::ptrdiff_t>(header_bytes), bytes->end());
    }
    case KvBlockFileProblem::kTruncated: ++stats_.misses_truncated; break;
    case KvBlockFileProblem::kCorrupt: ++stats_.misses_corrupt; break;
    case KvBlockFileProblem::kForeign:
    case KvBlockFileProblem::kOtherPrefix: ++stats_.misses_foreign; break;
  }
  // A file that cannot serve this prefix goes (a colliding prefix's would be rewritten anyway).
  forget_locked(hash, /*remove_file=*/true);
  return std::nullopt;
}

KvDiskTierStats KvDiskTier::stats() const {
  std::unique_lock<std::mutex> lock(mu_);
  return stats_;
}

namespace {

// Adds what `dir` itself holds (its files, not its subdirectories) to `inv`.
absl::Status inventory_one(const fs::path& dir, KvDiskInventory& inv) {
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const fs::path& p = it->path();
    if (p.filename().string().rfind(kTempPrefix, 0) == 0) {
      ++inv.temporary_files;
      continue;
    }
    if (p.extension() != kSuffix) continue;
    std::optional<std::string> head = read_file(p, kv_block_file_header_size(1024));
    const DecodedKvBlockHeader d = head ? decode_kv_block_header(*head) : DecodedKvBlockHeader{};
    if (!head || d.problem != KvBlockFileProblem::kNone) {
      ++inv.bad_headers;
      continue;
    }
    KvDiskInventory::Model& m = inv.by_model[d.header.key.model_identity];
    ++m.files;
    m.bytes += static_cast<int64_t>(it->file_size(ec));
    ec.clear();
  }
  if (ec) return absl::UnavailableError(absl::StrCat("--kv-disk-cache ", dir.string(), ": ", ec.message()));
  const int fd = ::open((dir / "lock").c_str(), O_RDONLY | O_CLOEXEC);
  if (fd >= 0) {
    if (::flock(fd, LOCK_SH | LOCK_NB) != 0) {
      inv.locked = inv.locked || errno == EWOULDBLOCK;
    } else {
      ::flock(fd, LOCK_UN);
    }
    ::close(fd);
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<KvDiskInventory> inventory_kv_disk_cache(const fs::path& dir) {
  KvDiskInventory inv;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) {
    return absl::NotFoundError(absl::StrCat("--kv-disk-cache ", dir.string(), ": not a directory"));
  }
  if (absl::Status s = inventory_one(dir, inv); !s.ok()) return s;
  // The ranks' directories of multi-rank jobs (tp<t>of<T>-pp<p>of<P>, engine/kv_tier_setup.h).
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    if (it->is_directory(ec) && it->path().filename().string().rfind("tp", 0) == 0) {
      if (absl::Status s = inventory_one(it->path(), inv); !s.ok()) return s;
    }
  }
  if (ec) return absl::UnavailableError(absl::StrCat("--kv-disk-cache ", dir.string(), ": ", ec.message()));
  return inv;
}

}  // namespace weft
