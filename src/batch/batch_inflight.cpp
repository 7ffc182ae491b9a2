#include "batch/batch_inflight.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <algorithm>
#include <map>

#include "absl/strings/str_cat.h"
#include "core/bounded_json.h"

namespace weft {
namespace {

absl::Status errno_error(const char* what, const std::filesystem::path& path) {
  return absl::InternalError(absl::StrCat(what, " ", path.string(), ": ", std::strerror(errno)));
}

absl::Status write_all(int fd, const std::string& text, const std::filesystem::path& path) {
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return errno_error("cannot write", path);
    done += static_cast<size_t>(n);
  }
  return absl::OkStatus();
}

std::string entry(int64_t line, const std::string& custom_id, bool alone, int strikes) {
  return nlohmann::json{{"line", line}, {"custom_id", custom_id}, {"alone", alone}, {"strikes", strikes}}
             .dump() +
         "\n";
}

struct Started {
  std::string custom_id;
  bool alone = false;  // the last run that started it ran it alone
  int strikes = 0;     // earlier runs that died during its solo run
};

}  // namespace

absl::StatusOr<InflightLog> InflightLog::open(const std::filesystem::path& path, const JournalState& journal) {
  InflightLog log;
  log.path_ = path;
  std::map<int64_t, Started> started;
  if (std::ifstream in(path); in) {
    std::string text;
    while (std::getline(in, text)) {
      // A torn last line (the process died mid-write) is dropped: that line never started.
      auto parsed = parse_json_bounded<nlohmann::json>(text, path.string(), request_json_limits());
      if (!parsed.ok() || !parsed->is_object() || !(*parsed)["line"].is_number_integer()) continue;
      Started& s = started[(*parsed)["line"].get<int64_t>()];
      if ((*parsed)["custom_id"].is_string()) s.custom_id = (*parsed)["custom_id"].get<std::string>();
      s.alone = s.alone || ((*parsed)["alone"].is_boolean() && (*parsed)["alone"].get<bool>());
      if ((*parsed)["strikes"].is_number_integer()) s.strikes = std::max(s.strikes, (*parsed)["strikes"].get<int>());
    }
  }
  std::string keep;
  for (const auto& [line, s] : started) {
    const bool done = journal.done_lines.count(line) > 0 ||
                      (!s.custom_id.empty() && journal.done_ids.count(s.custom_id) > 0);
    if (done) continue;
    const int strikes = s.strikes + (s.alone ? 1 : 0);  // the job died during its solo run
    if (strikes >= kPoisonStrikes) {
      log.poisoned_.insert(line);
    } else {
      log.suspects_.insert(line);
      log.strikes_[line] = strikes;
    }
    keep += entry(line, s.custom_id, false, strikes);  // until its record is written
  }
  log.fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0644);
  if (log.fd_ < 0) return errno_error("cannot open", path);
  if (absl::Status s = write_all(log.fd_, keep, path); !s.ok()) return s;
  return log;
}

InflightLog::InflightLog(InflightLog&& other) noexcept
    : path_(std::move(other.path_)),
      fd_(other.fd_),
      suspects_(std::move(other.suspects_)),
      poisoned_(std::move(other.poisoned_)),
      strikes_(std::move(other.strikes_)) {
  other.fd_ = -1;
}

InflightLog::~InflightLog() {
  if (fd_ >= 0) ::close(fd_);
}

absl::Status InflightLog::started(int64_t line, const std::string& custom_id, bool alone) {
  auto it = strikes_.find(line);
  return write_all(fd_, entry(line, custom_id, alone, it == strikes_.end() ? 0 : it->second), path_);
}

absl::Status InflightLog::finished() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  std::error_code ec;
  std::filesystem::remove(path_, ec);
  if (ec) return absl::InternalError(absl::StrCat("cannot remove ", path_.string(), ": ", ec.message()));
  return absl::OkStatus();
}

}  // namespace weft
