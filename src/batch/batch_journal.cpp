#include "batch/batch_journal.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "core/bounded_json.h"
#include "core/status_macros.h"
#include "nlohmann/json.hpp"

namespace weft {
namespace {

absl::Status errno_error(const std::string& what, const std::filesystem::path& path) {
  return absl::UnavailableError(absl::StrCat(what, " ", path.string(), ": ", std::strerror(errno)));
}

// Reads `path` whole, truncating bytes after its last '\n'. Calls `on_line` for each line.
template <typename F>
absl::Status scan_file(const std::filesystem::path& path, int64_t& torn, F on_line) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return absl::OkStatus();
  std::ifstream in(path, std::ios::binary);
  if (!in) return errno_error("cannot read", path);
  std::stringstream buf;
  buf << in.rdbuf();
  const std::string data = buf.str();
  const size_t end = data.rfind('\n');
  const size_t keep = end == std::string::npos ? 0 : end + 1;
  if (keep < data.size()) {
    if (::truncate(path.c_str(), static_cast<off_t>(keep)) != 0) return errno_error("cannot truncate", path);
    torn += static_cast<int64_t>(data.size() - keep);
  }
  size_t begin = 0;
  int64_t line_no = 0;
  while (begin < keep) {
    const size_t nl = data.find('\n', begin);
    ++line_no;
    const std::string line = data.substr(begin, nl - begin);
    begin = nl + 1;
    if (line.empty()) continue;
    absl::StatusOr<nlohmann::json> parsed =
        parse_json_bounded<nlohmann::json>(line, "a journal line", request_json_limits());
    if (!parsed.ok() || !parsed->is_object()) {
      return absl::DataLossError(absl::StrCat(path.string(), " line ", line_no,
                                              ": not a batch record; refusing to append to it"));
    }
    on_line(*parsed);
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<JournalState> scan_journal(const std::filesystem::path& output,
                                          const std::filesystem::path& errors) {
  JournalState state;
  WEFT_RETURN_IF_ERROR(scan_file(output, state.torn_bytes, [&](const nlohmann::json& j) {
    // Error records (they carry "line") may share the output file; they do not answer an id.
    auto id = j.find("custom_id");
    if (id != j.end() && id->is_string() && !j.contains("line")) {
      state.done_ids.insert(id->get<std::string>());
    }
    ++state.num_outputs;
  }));
  if (!errors.empty()) {
    WEFT_RETURN_IF_ERROR(scan_file(errors, state.torn_bytes, [&](const nlohmann::json& j) {
      auto line = j.find("line");
      if (line != j.end() && line->is_number_integer()) state.done_lines.insert(line->get<int64_t>());
      ++state.num_errors;
    }));
  }
  return state;
}

absl::StatusOr<RecordFile> RecordFile::open(const std::filesystem::path& path) {
  RecordFile f;
  f.path_ = path;
  f.fd_ = ::open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  if (f.fd_ < 0) return errno_error("cannot open", path);
  return f;
}

RecordFile::RecordFile(RecordFile&& other) noexcept : fd_(other.fd_), path_(std::move(other.path_)) {
  other.fd_ = -1;
}

RecordFile& RecordFile::operator=(RecordFile&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = other.fd_;
    path_ = std::move(other.path_);
    other.fd_ = -1;
  }
  return *this;
}

RecordFile::~RecordFile() {
  if (fd_ >= 0) ::close(fd_);
}

absl::Status RecordFile::append(const std::string& lines) {
  size_t done = 0;
  while (done < lines.size()) {
    const ssize_t n = ::write(fd_, lines.data() + done, lines.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      return errno_error("cannot write", path_);
    }
    done += static_cast<size_t>(n);
  }
  while (::fdatasync(fd_) != 0) {
    if (errno != EINTR) return errno_error("cannot sync", path_);
  }
  return absl::OkStatus();
}

}  // namespace weft
