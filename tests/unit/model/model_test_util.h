// Helpers for model_loading_test: temporary directories and raw file bytes.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "parallel/communicator.h"

namespace weft::testing {

// A fresh directory under TMPDIR, removed with its contents on destruction.
class TempDir {
 public:
  TempDir() {
    std::string pattern =
        (std::filesystem::temp_directory_path() / "weft_model_test_XXXXXX").string();
    char* made = mkdtemp(pattern.data());
    EXPECT_NE(made, nullptr);
    path_ = pattern;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::filesystem::path& path() const { return path_; }
  std::filesystem::path operator/(const std::string& name) const { return path_ / name; }

 private:
  std::filesystem::path path_;
};

inline void write_bytes(const std::filesystem::path& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  ASSERT_TRUE(out.good()) << path;
}

inline std::string read_bytes(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// An 8-byte little-endian length followed by `header` and `data`; `declared_length` overrides the
// length field (to describe headers that lie about their size).
inline std::string safetensors_bytes(const std::string& header, const std::string& data,
                                     int64_t declared_length = -1) {
  const uint64_t n = declared_length < 0 ? header.size() : static_cast<uint64_t>(declared_length);
  std::string out(8, '\0');
  for (int i = 0; i < 8; ++i) out[i] = static_cast<char>((n >> (8 * i)) & 0xff);
  return out + header + data;
}

// A TP group member that only knows its place; the reduce is left out (each rank's partial sums
// are compared directly).
class FakeGroup : public weft::Communicator {
 public:
  FakeGroup(int rank, int size) : rank_(rank), size_(size) {}
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  absl::Status all_reduce_sum(const weft::TensorView&) override { return absl::OkStatus(); }
  absl::Status all_reduce_max(const weft::TensorView&) override { return absl::OkStatus(); }
  absl::Status all_gather(const weft::TensorView&, const weft::TensorView&) override {
    return absl::UnimplementedError("all_gather");
  }
  absl::Status send(const weft::TensorView&, int) override { return absl::UnimplementedError("send"); }
  absl::Status recv(const weft::TensorView&, int) override { return absl::UnimplementedError("recv"); }
  absl::Status broadcast(const weft::TensorView&, int) override {
    return absl::UnimplementedError("broadcast");
  }

 private:
  int rank_, size_;
};

}  // namespace weft::testing
