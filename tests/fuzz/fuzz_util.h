// Helpers shared by the libFuzzer targets (tests/fuzz/README in docs/hardening.md).
#pragma once

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>

namespace weft::fuzz {

// Aborts (a crash libFuzzer reports, with the input) when a property the target checks fails.
#define WEFT_FUZZ_CHECK(cond)                                                    \
  do {                                                                           \
    if (!(cond)) {                                                               \
      std::fprintf(stderr, "%s:%d: fuzz property failed: %s\n", __FILE__, __LINE__, #cond); \
      std::abort();                                                              \
    }                                                                            \
  } while (0)

// A directory private to this process, removed at exit. Under /dev/shm when it exists so the
// per-input file writes stay in memory.
inline const std::filesystem::path& scratch_dir() {
  static const std::filesystem::path dir = [] {
    std::filesystem::path base = std::filesystem::exists("/dev/shm")
                                     ? std::filesystem::path("/dev/shm")
                                     : std::filesystem::temp_directory_path();
    std::string templ = (base / "weft-fuzz-XXXXXX").string();
    if (mkdtemp(templ.data()) == nullptr) {
      std::perror("mkdtemp");
      std::abort();
    }
    std::filesystem::path made(templ);
    std::atexit([] {
      std::error_code ec;
      std::filesystem::remove_all(scratch_dir(), ec);
    });
    return made;
  }();
  return dir;
}

inline void write_file(const std::filesystem::path& path, std::string_view bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  out.close();
  if (!out) {
    std::fprintf(stderr, "cannot write %s\n", path.c_str());
    std::abort();
  }
}

inline void remove_file(const std::filesystem::path& path) {
  std::error_code ec;
  std::filesystem::remove(path, ec);
}

// Splits `data` at the first occurrence of `separator`: {before, after}; no separator gives
// {data, nullopt-like empty view} with `found` false.
struct Split {
  std::string_view first;
  std::string_view second;
  bool found = false;
};
inline Split split_at(std::string_view data, std::string_view separator) {
  const size_t at = data.find(separator);
  if (at == std::string_view::npos) return {data, {}, false};
  return {data.substr(0, at), data.substr(at + separator.size()), true};
}

}  // namespace weft::fuzz
