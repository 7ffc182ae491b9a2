#include "debug_report/report_store.h"

#include <algorithm>

namespace weft {

DebugReportStore::DebugReportStore(size_t capacity) : capacity_(std::max<size_t>(capacity, 1)) {}

void DebugReportStore::put(const std::string& id, Report report) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (reports_.insert_or_assign(id, std::move(report)).second) order_.push_back(id);
  while (order_.size() > capacity_) {
    reports_.erase(order_.front());
    order_.pop_front();
  }
}

std::optional<DebugReportStore::Report> DebugReportStore::get(const std::string& id) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = reports_.find(id);
  if (it == reports_.end()) return std::nullopt;
  return it->second;
}

}  // namespace weft
