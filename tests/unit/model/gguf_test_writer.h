// Builds GGUF bytes in tests, field by field, so a test can write a well-formed file or break
// exactly one thing in it (a count, a length, an offset).
#pragma once

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace weft::testing {

class GgufBytes {
 public:
  template <typename T>
  GgufBytes& raw(T value) {
    const size_t at = bytes_.size();
    bytes_.resize(at + sizeof(T));
    std::memcpy(bytes_.data() + at, &value, sizeof(T));
    return *this;
  }
  GgufBytes& string(const std::string& s) {
    raw<uint64_t>(s.size());
    bytes_.insert(bytes_.end(), s.begin(), s.end());
    return *this;
  }
  GgufBytes& header(uint64_t tensors, uint64_t metadata, uint32_t version = 3) {
    return raw<uint32_t>(0x46554747).raw<uint32_t>(version).raw<uint64_t>(tensors).raw<uint64_t>(
        metadata);
  }
  GgufBytes& kv_u32(const std::string& key, uint32_t v) {
    return string(key).raw<uint32_t>(4).raw<uint32_t>(v);
  }
  GgufBytes& kv_f32(const std::string& key, float v) {
    return string(key).raw<uint32_t>(6).raw<float>(v);
  }
  GgufBytes& kv_string(const std::string& key, const std::string& v) {
    return string(key).raw<uint32_t>(8).string(v);
  }
  GgufBytes& kv_string_array(const std::string& key, const std::vector<std::string>& items) {
    string(key).raw<uint32_t>(9).raw<uint32_t>(8).raw<uint64_t>(items.size());
    for (const auto& s : items) string(s);
    return *this;
  }
  // ne innermost first, as GGUF stores them.
  GgufBytes& tensor(const std::string& name, std::vector<uint64_t> ne, uint32_t ggml_type,
                    uint64_t offset) {
    string(name).raw<uint32_t>(static_cast<uint32_t>(ne.size()));
    for (uint64_t n : ne) raw<uint64_t>(n);
    return raw<uint32_t>(ggml_type).raw<uint64_t>(offset);
  }
  GgufBytes& align(size_t alignment = 32) {
    bytes_.resize((bytes_.size() + alignment - 1) / alignment * alignment, 0);
    return *this;
  }
  GgufBytes& data(size_t n, uint8_t fill = 0) {
    bytes_.resize(bytes_.size() + n, fill);
    return *this;
  }
  GgufBytes& f32_data(const std::vector<float>& values) {
    for (float v : values) raw<float>(v);
    return *this;
  }
  const std::vector<uint8_t>& bytes() const { return bytes_; }
  void write(const std::filesystem::path& path) const {
    std::ofstream(path, std::ios::binary)
        .write(reinterpret_cast<const char*>(bytes_.data()), static_cast<std::streamsize>(bytes_.size()));
  }

 private:
  std::vector<uint8_t> bytes_;
};

}  // namespace weft::testing
