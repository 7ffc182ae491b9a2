// Memory-mapped safetensors files (https://huggingface.co/docs/safetensors): an 8-byte
// little-endian header length N, N bytes of JSON {name: {dtype, shape, data_offsets},
// "__metadata__"}, then the data. Validation follows the format's rules: header at most 100 MB and
// inside the file, every tensor's offsets inside the data section, size = numel * dtype size, no
// overlaps, no duplicate names, at most kMaxRank dimensions, none negative, a known dtype, at most
// kMaxTensors tensors, JSON nested at most kMaxJsonNestingDepth (json_reader.h) deep;
// "__metadata__", if present, is an object of strings. Gaps between tensors are allowed. Every
// error names the file and, where it applies, the tensor. No input makes open() read outside the
// file.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/mapped_file.h"
#include "core/tensor.h"

namespace weft {

struct SafetensorsEntry {
  DType dtype;
  std::vector<int64_t> shape;
  uint64_t begin = 0;  // byte offsets into the data section
  uint64_t end = 0;
};

class SafetensorsFile {
 public:
  static constexpr uint64_t kMaxHeaderBytes = 100ull << 20;
  static constexpr int kMaxRank = 4;  // weft's Shape limit
  // Tensors one file may declare (the largest checkpoints hold tens of thousands in all).
  static constexpr size_t kMaxTensors = size_t{1} << 20;

  // Maps the file read-only and validates its header.
  static absl::StatusOr<std::shared_ptr<SafetensorsFile>> open(const std::filesystem::path& path);

  const std::filesystem::path& path() const { return mapping_.path(); }
  const std::map<std::string, SafetensorsEntry>& entries() const { return entries_; }
  bool contains(const std::string& name) const { return entries_.count(name) != 0; }
  // A Tensor viewing the mapped bytes (no copy); it keeps the mapping alive. The mapping is
  // read-only: writing through the tensor faults. A tensor whose data is not aligned to its
  // element size (the format allows any offset) is returned as an aligned, writable copy
  // instead. Error: NotFound naming the file and tensor.
  // The object is immutable after open(), so any thread may call this.
  absl::StatusOr<Tensor> tensor(const std::string& name) const;

  // MappedFile::release_pages: for bytes already copied elsewhere (fused or sliced weights).
  bool release_pages(const void* data, size_t bytes) const {
    return mapping_.release_pages(data, bytes);
  }
  bool holds(const void* data, size_t bytes) const { return mapping_.holds(data, bytes); }

 private:
  SafetensorsFile() = default;
  MappedFile mapping_;
  std::map<std::string, SafetensorsEntry> entries_;
  uint64_t data_offset_ = 0;
  std::weak_ptr<const SafetensorsFile> self_;
};

// Writes tensors (CPU, any dtype) to a safetensors file. Used by tests and by benchmarks that
// generate models; names are written in map order, data packed in the same order, and the header
// padded with spaces to a multiple of 8 bytes as the reference implementation does.
absl::Status write_safetensors(const std::filesystem::path& path,
                               const std::map<std::string, Tensor>& tensors);

}  // namespace weft
