#include "kv/memory_budget.h"

#include <unistd.h>

#include <fstream>
#include <string>

namespace weft {

int64_t available_host_memory_bytes() {
  std::ifstream meminfo("/proc/meminfo");
  std::string key;
  int64_t value = 0;
  std::string unit;
  while (meminfo >> key >> value >> unit) {
    if (key == "MemAvailable:") return value * 1024;  // reported in kB
  }
  const long pages = sysconf(_SC_PHYS_PAGES);
  const long page = sysconf(_SC_PAGE_SIZE);
  return pages > 0 && page > 0 ? static_cast<int64_t>(pages) * page : 0;
}

int64_t kv_budget_bytes(int64_t bytes, double fraction) {
  if (fraction <= 0) return bytes;
  return static_cast<int64_t>(fraction * static_cast<double>(available_host_memory_bytes()));
}

}  // namespace weft
