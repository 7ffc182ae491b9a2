#include "serving/response_id.h"

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <random>

namespace weft {

std::string random_response_id(const char* prefix) {
  static std::atomic<uint64_t> counter{0};
  static const uint64_t salt = std::random_device{}() ^ (static_cast<uint64_t>(std::random_device{}()) << 32);
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%s%016llx%08llx", prefix, static_cast<unsigned long long>(salt),
                static_cast<unsigned long long>(counter.fetch_add(1)));
  return buf;
}

}  // namespace weft
