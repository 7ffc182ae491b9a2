// The debugging reports of the most recent "weft_debug" requests of a server, by response id, so
// their HTML page can be fetched after the response (GET /v1/debug/reports/{id}). Bounded: the
// oldest report goes when a new one would pass `capacity`. Thread-safe.
#pragma once

#include <cstddef>
#include <deque>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>

namespace weft {

class DebugReportStore {
 public:
  struct Report {
    std::string json;  // the report JSON as the response carried it
    std::string html;  // the page drawn from it (debug_report/inspect_html.h)
  };

  explicit DebugReportStore(size_t capacity);

  // Stores (or replaces) the report of `id`; evicts the oldest beyond capacity.
  void put(const std::string& id, Report report);
  std::optional<Report> get(const std::string& id) const;
  size_t capacity() const { return capacity_; }

 private:
  const size_t capacity_;
  mutable std::mutex mutex_;
  std::deque<std::string> order_;  // oldest first
  std::unordered_map<std::string, Report> reports_;
};

}  // namespace weft
