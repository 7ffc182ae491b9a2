// GGUF files (llama.cpp's model format, https://github.com/ggml-org/ggml/blob/master/docs/gguf.md):
// a little-endian header ("GGUF", version 2 or 3, tensor count, metadata count), typed metadata
// key/values, tensor descriptions (name, dimensions innermost first, ggml type, offset), then the
// tensor data, aligned to general.alignment (32 by default).
//
// The file is untrusted input. Every count, length and offset is checked against the bytes that
// remain before it is used, and against fixed limits (kMax*), so no file makes open() read outside
// the mapping, allocate more than a small multiple of the file's size, or loop long: the integer
// overflows of sizes, huge metadata counts and out-of-range offsets that llama.cpp's GGUF reader
// has had as CVEs are each an error naming the file and the key or tensor.
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

// GGUF metadata value types, with the format's numbering.
enum class GgufType : uint32_t {
  kU8 = 0, kI8 = 1, kU16 = 2, kI16 = 3, kU32 = 4, kI32 = 5, kF32 = 6, kBool = 7,
  kString = 8, kArray = 9, kU64 = 10, kI64 = 11, kF64 = 12,
};
const char* gguf_type_name(GgufType type);

// One metadata value. Integers of every width are held in `integer` (u64 values above INT64_MAX
// are refused at parse time), floats in `real`; an array holds its elements in `items`, all of
// `element_type` (arrays of arrays are refused: no model key uses them).
struct GgufValue {
  GgufType type = GgufType::kU8;
  int64_t integer = 0;
  double real = 0;
  std::string text;
  GgufType element_type = GgufType::kU8;
  std::vector<GgufValue> items;

  bool is_integer() const;
  bool is_float() const { return type == GgufType::kF32 || type == GgufType::kF64; }
};

struct GgufTensorInfo {
  DType dtype;
  // Hugging Face order, outermost first: GGUF's [ne0, ne1] (ne0 innermost) is Shape{ne1, ne0}.
  std::vector<int64_t> shape;
  uint64_t offset = 0;  // into the data section
  uint64_t bytes = 0;
};

class GgufFile {
 public:
  static constexpr uint64_t kMaxTensors = uint64_t{1} << 20;
  static constexpr uint64_t kMaxMetadata = uint64_t{1} << 16;
  static constexpr uint64_t kMaxArrayItems = uint64_t{1} << 24;  // vocabularies hold ~10^5..10^6
  static constexpr uint64_t kMaxStringBytes = uint64_t{1} << 24;  // a chat template is ~10^4
  static constexpr uint64_t kMaxNameBytes = 1024;                 // keys and tensor names
  static constexpr int kMaxRank = 4;

  // Maps the file and validates header, metadata and tensor descriptions. Errors name the file and
  // what was wrong: bad magic or version, a count past its limit or past the file, a string or
  // array running past the end, an unknown value type, a duplicate key or tensor, a tensor of an
  // unsupported ggml type (named), dimensions that overflow or are not whole blocks, data that is
  // misaligned or lies outside the file.
  static absl::StatusOr<std::shared_ptr<GgufFile>> open(const std::filesystem::path& path);

  const std::filesystem::path& path() const { return mapping_.path(); }
  uint32_t version() const { return version_; }
  const std::map<std::string, GgufValue>& metadata() const { return metadata_; }
  const std::map<std::string, GgufTensorInfo>& tensors() const { return tensors_; }
  // nullptr when absent.
  const GgufValue* find(const std::string& key) const;

  // The tensor's bytes as a zero-copy view (shape in Hugging Face order); keeps the mapping alive.
  // Error: NotFound naming the file and tensor.
  absl::StatusOr<Tensor> tensor(const std::string& name) const;
  bool release_pages(const void* data, size_t bytes) const {
    return mapping_.release_pages(data, bytes);
  }
  bool holds(const void* data, size_t bytes) const { return mapping_.holds(data, bytes); }

 private:
  GgufFile() = default;
  MappedFile mapping_;
  uint32_t version_ = 0;
  uint64_t data_offset_ = 0;
  std::map<std::string, GgufValue> metadata_;
  std::map<std::string, GgufTensorInfo> tensors_;
  std::weak_ptr<const GgufFile> self_;
};

// True when `path` names a GGUF file by its first four bytes ("GGUF").
bool is_gguf_file(const std::filesystem::path& path);

}  // namespace weft
