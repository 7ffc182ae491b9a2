// Which input lines a batch job had handed to the engine when it died, so that a line that
// kills the engine (a crash, an abort, a step past its deadline) cannot stop the job forever.
//
// Before a line is prepared, its number is appended to `<output>.inflight` (one write(2) each:
// it survives the process dying, which is all this needs; a machine crash is not the line's
// fault). On restart, lines started but without a record in the journal were in flight when the
// previous run died:
//   - *suspects*: the next run runs each of them alone.
//   - *poisoned*: lines during whose solo run the job died kPoisonStrikes times. The next run
//     writes an error record for each and skips it. Two strikes, not one: a job killed from
//     outside (kill -9, a node failure) at the wrong moment should not cost a good line.
// A run that ends normally (finished, or stopped by a signal) removes the file: lines it
// abandoned were not at fault.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <set>
#include <string>

#include "absl/status/statusor.h"
#include "batch/batch_journal.h"

namespace weft {

class InflightLog {
 public:
  static constexpr int kPoisonStrikes = 2;

  // Reads what an earlier run left in `path` (missing: nothing), classifies its lines against
  // `journal` (what has a record), and rewrites the file with the suspects and poisoned lines
  // still without a record, so a run that dies before reaching them keeps them so. Errors name
  // the file.
  static absl::StatusOr<InflightLog> open(const std::filesystem::path& path, const JournalState& journal);
  InflightLog(InflightLog&& other) noexcept;
  InflightLog& operator=(InflightLog&&) = delete;
  InflightLog(const InflightLog&) = delete;
  ~InflightLog();

  const std::set<int64_t>& suspects() const { return suspects_; }
  const std::set<int64_t>& poisoned() const { return poisoned_; }

  // Records that input line `line` (its custom_id, if it has one) goes to the engine now;
  // `alone`: with nothing else in flight.
  absl::Status started(int64_t line, const std::string& custom_id, bool alone);
  // The run ended normally: removes the file.
  absl::Status finished();

 private:
  InflightLog() = default;
  std::filesystem::path path_;
  int fd_ = -1;
  std::set<int64_t> suspects_;
  std::set<int64_t> poisoned_;
  std::map<int64_t, int> strikes_;  // suspects: solo runs the job has died in so far
};

}  // namespace weft
