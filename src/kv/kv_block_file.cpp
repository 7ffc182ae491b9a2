#include "kv/kv_block_file.h"

#include <algorithm>
#include <cstring>
#include <type_traits>

#include "core/crc32c.h"

namespace weft {
namespace {

constexpr char kMagic[8] = {'W', 'E', 'F', 'T', 'K', 'V', 'B', '1'};
// A block is at most 1024 tokens (--block-size); anything larger is not a header of ours.
constexpr uint32_t kMaxTokens = 1024;

template <typename T>
void put(std::string& out, T v) {
  char b[sizeof(T)];
  std::memcpy(b, &v, sizeof(T));  // little-endian hosts only (x86-64, aarch64)
  out.append(b, sizeof(T));
}

template <typename T>
T get(const char*& p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  p += sizeof(T);
  return v;
}

// The fixed fields after the two counts, in file order; `f` is called with a reference to each
// (`pad` stands for the 4 bytes of padding). One list for the writer and the reader.
template <typename Header, typename F>
void for_each_fixed_field(Header& h, uint32_t& pad, F&& f) {
  auto& k = h.key;
  f(k.model_identity);
  f(k.dtype);
  f(k.block_size);
  f(k.num_layers);
  f(k.tp_rank);
  f(k.tp_size);
  f(k.pp_rank);
  f(k.pp_size);
  f(pad);
  f(k.num_kv_heads);
  f(k.head_dim);
  f(h.hash);
  f(h.parent);
  f(h.payload_bytes);
  f(h.payload_crc);
}

}  // namespace

std::string encode_kv_block_header(KvBlockFileHeader h, std::span<const uint8_t> payload) {
  h.payload_bytes = payload.size();
  h.payload_crc = crc32c(payload.data(), payload.size());
  std::string out(kMagic, sizeof(kMagic));
  put<uint32_t>(out, static_cast<uint32_t>(kv_block_file_header_size(h.tokens.size())));
  put<uint32_t>(out, static_cast<uint32_t>(h.tokens.size()));
  uint32_t pad = 0;
  for_each_fixed_field(h, pad, [&](auto& field) { put(out, field); });
  for (int32_t t : h.tokens) put(out, t);
  put<uint32_t>(out, crc32c(out.data(), out.size()));
  return out;
}

DecodedKvBlockHeader decode_kv_block_header(std::string_view bytes) {
  DecodedKvBlockHeader d;
  if (bytes.size() < 16) {
    d.problem = KvBlockFileProblem::kTruncated;
    return d;
  }
  const char* p = bytes.data();
  if (std::memcmp(p, kMagic, sizeof(kMagic)) != 0) {
    d.problem = KvBlockFileProblem::kCorrupt;
    return d;
  }
  p += sizeof(kMagic);
  const uint32_t header_bytes = get<uint32_t>(p);
  const uint32_t num_tokens = get<uint32_t>(p);
  if (num_tokens > kMaxTokens || header_bytes != kv_block_file_header_size(num_tokens)) {
    d.problem = KvBlockFileProblem::kCorrupt;
    return d;
  }
  if (bytes.size() < header_bytes) {
    d.problem = KvBlockFileProblem::kTruncated;
    return d;
  }
  uint32_t stored_crc;
  std::memcpy(&stored_crc, bytes.data() + header_bytes - 4, 4);
  if (crc32c(bytes.data(), header_bytes - 4) != stored_crc) {
    d.problem = KvBlockFileProblem::kCorrupt;
    return d;
  }
  KvBlockFileHeader& h = d.header;
  uint32_t pad = 0;
  for_each_fixed_field(h, pad, [&](auto& field) { field = get<std::remove_reference_t<decltype(field)>>(p); });
  h.tokens.resize(num_tokens);
  for (uint32_t i = 0; i < num_tokens; ++i) h.tokens[i] = get<int32_t>(p);
  d.header_bytes = header_bytes;
  return d;
}

KvBlockFileProblem check_kv_block_file(std::string_view bytes, const KvBlockFileKey& key, uint64_t hash,
                                       uint64_t parent, std::span<const int32_t> tokens,
                                       uint64_t payload_bytes, size_t* header_bytes) {
  const DecodedKvBlockHeader d = decode_kv_block_header(bytes);
  if (d.problem != KvBlockFileProblem::kNone) return d.problem;
  const KvBlockFileHeader& h = d.header;
  if (!(h.key == key) || h.payload_bytes != payload_bytes) return KvBlockFileProblem::kForeign;
  if (h.hash != hash || h.parent != parent ||
      !std::equal(h.tokens.begin(), h.tokens.end(), tokens.begin(), tokens.end())) {
    return KvBlockFileProblem::kOtherPrefix;
  }
  if (bytes.size() != d.header_bytes + payload_bytes) {
    return bytes.size() < d.header_bytes + payload_bytes ? KvBlockFileProblem::kTruncated
                                                        : KvBlockFileProblem::kCorrupt;
  }
  if (crc32c(bytes.data() + d.header_bytes, payload_bytes) != h.payload_crc) return KvBlockFileProblem::kCorrupt;
  *header_bytes = d.header_bytes;
  return KvBlockFileProblem::kNone;
}

}  // namespace weft
