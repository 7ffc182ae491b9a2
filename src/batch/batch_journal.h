// The output and error files of a batch job as a crash-safe journal.
//
// Each call to RecordFile::append writes its records (whole lines) with one write() to a file
// opened O_APPEND, then fdatasync()s it: once append returns they survive kill -9 or a power
// loss, and a record is never half-written except possibly the last line of a file when the
// machine itself went down mid-write. On restart, scan_journal() truncates such a torn tail
// (bytes after the last '\n') and lists what is done, so the job redoes exactly the rest.
#pragma once

#include <cstdint>
#include <filesystem>
#include <set>
#include <string>

#include "absl/status/statusor.h"

namespace weft {

struct JournalState {
  std::set<std::string> done_ids;  // custom_ids with an output record
  std::set<int64_t> done_lines;    // input lines with an error record
  int64_t num_outputs = 0;
  int64_t num_errors = 0;
  int64_t torn_bytes = 0;          // bytes of torn final lines removed
};

// Reads (and repairs) the existing output and error files; missing files are empty. Errors when
// a complete line is not a record (the file is not this job's output: refuse to append to it).
absl::StatusOr<JournalState> scan_journal(const std::filesystem::path& output,
                                          const std::filesystem::path& errors);

class RecordFile {
 public:
  // Opens (creating) `path` for appending.
  static absl::StatusOr<RecordFile> open(const std::filesystem::path& path);
  RecordFile(RecordFile&& other) noexcept;
  RecordFile& operator=(RecordFile&& other) noexcept;
  RecordFile(const RecordFile&) = delete;
  ~RecordFile();

  // Writes `lines` (complete records, each ending in '\n') with one write and syncs the file.
  absl::Status append(const std::string& lines);

 private:
  RecordFile() = default;
  int fd_ = -1;
  std::filesystem::path path_;
};

}  // namespace weft
