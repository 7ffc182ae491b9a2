#include "model/model_identity.h"

#include <algorithm>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "model/model_files.h"

namespace weft {
namespace {

namespace fs = std::filesystem;

// FNV-1a, 64-bit.
struct Fnv64 {
  uint64_t h = 0xcbf29ce484222325ULL;
  void add(const void* data, size_t n) {
    const auto* p = static_cast<const unsigned char*>(data);
    for (size_t i = 0; i < n; ++i) h = (h ^ p[i]) * 0x100000001b3ULL;
  }
  void add(const std::string& s) {
    const uint64_t n = s.size();
    add(&n, sizeof(n));
    add(s.data(), s.size());
  }
};

absl::StatusOr<std::string> read_prefix(const fs::path& path, size_t limit) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat(path.string(), ": cannot open"));
  std::string bytes(limit, '\0');
  in.read(bytes.data(), static_cast<std::streamsize>(limit));
  bytes.resize(static_cast<size_t>(in.gcount()));
  return bytes;
}

}  // namespace

absl::StatusOr<uint64_t> model_identity(const fs::path& model) {
  Fnv64 f;
  std::error_code ec;
  if (std::optional<fs::path> gguf = gguf_model_file(model)) {
    const uint64_t size = fs::file_size(*gguf, ec);
    if (ec) return absl::NotFoundError(absl::StrCat(gguf->string(), ": ", ec.message()));
    f.add(&size, sizeof(size));
    absl::StatusOr<std::string> head = read_prefix(*gguf, size_t{1} << 20);
    if (!head.ok()) return head.status();
    f.add(*head);
    return f.h;
  }
  absl::StatusOr<std::string> config = read_prefix(model / "config.json", size_t{16} << 20);
  if (!config.ok()) return config.status();
  f.add(*config);
  std::vector<fs::path> shards;
  for (fs::directory_iterator it(model, ec), end; !ec && it != end; it.increment(ec)) {
    if (it->path().extension() == ".safetensors") shards.push_back(it->path());
  }
  std::sort(shards.begin(), shards.end());
  for (const fs::path& shard : shards) {
    f.add(shard.filename().string());
    const uint64_t size = fs::file_size(shard, ec);
    f.add(&size, sizeof(size));
    absl::StatusOr<std::string> head = read_prefix(shard, 8);
    if (!head.ok()) return head.status();
    if (head->size() < 8) return absl::DataLossError(absl::StrCat(shard.string(), ": shorter than its header length"));
    uint64_t header_len = 0;
    std::memcpy(&header_len, head->data(), 8);
    header_len = std::min<uint64_t>(header_len, uint64_t{100} << 20);
    absl::StatusOr<std::string> header = read_prefix(shard, static_cast<size_t>(8 + header_len));
    if (!header.ok()) return header.status();
    f.add(*header);
  }
  return f.h;
}

}  // namespace weft
