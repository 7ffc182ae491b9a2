// A whole file mapped read-only into memory (weights: safetensors and GGUF files). Only the pages
// that are read become resident; release_pages() drops pages whose bytes were copied elsewhere.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>

#include "absl/status/statusor.h"

namespace weft {

class MappedFile {
 public:
  // Errors: the file cannot be opened or stat'ed (naming it), is not a regular file, or cannot be
  // mapped. An empty file maps to size() 0 and data() null.
  static absl::StatusOr<MappedFile> open(const std::filesystem::path& path);
  MappedFile() = default;
  MappedFile(MappedFile&& other) noexcept;
  MappedFile& operator=(MappedFile&& other) noexcept;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  ~MappedFile();

  const std::filesystem::path& path() const { return path_; }
  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }

  // Drops this process's resident pages of the whole pages inside [data, data + bytes) when that
  // range lies in the mapping (else does nothing and returns false). The mapping is private and
  // never written, so a later read faults the bytes back in from the page cache: only residency
  // is lost. Not for ranges still read every step.
  bool release_pages(const void* data, size_t bytes) const;

  // Whether [data, data + bytes) lies in the mapping.
  bool holds(const void* data, size_t bytes) const;

 private:
  std::filesystem::path path_;
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace weft
