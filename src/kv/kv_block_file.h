// The file format of the disk KV tier: one file per block of one rank's slice.
//
//   header  "WEFTKVB1", u32 header_bytes, u32 num_tokens, the key (KvBlockFileKey), u64 hash,
//           u64 parent, u64 payload_bytes, u32 payload_crc32c, i32 tokens[num_tokens],
//           u32 header_crc32c (over everything before it); little-endian
//   payload the block's bytes (kv/kv_host_store.h's layout)
//
// A file is a hit only when its header checks, its key equals the reader's (same model, KV dtype,
// block size and slice), it names the same prefix (hash, parent, tokens) and its payload has the
// recorded size and checksum; anything else is a miss, never a wrong hit.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace weft {

// What must match for a block file to belong to this process: the model (a hash of its files'
// identity, model/model_identity.h), the KV layout and which slice this rank holds.
struct KvBlockFileKey {
  uint64_t model_identity = 0;
  uint32_t dtype = 0;  // DType as an integer
  uint32_t block_size = 0;
  uint32_t num_layers = 0;  // this rank's layers
  uint32_t tp_rank = 0, tp_size = 1, pp_rank = 0, pp_size = 1;
  uint64_t num_kv_heads = 0;  // this rank's
  uint64_t head_dim = 0;
  bool operator==(const KvBlockFileKey&) const = default;
};

struct KvBlockFileHeader {
  KvBlockFileKey key;
  uint64_t hash = 0;
  uint64_t parent = 0;
  uint64_t payload_bytes = 0;
  uint32_t payload_crc = 0;
  std::vector<int32_t> tokens;
};

// Why a file is not a hit.
enum class KvBlockFileProblem { kNone, kTruncated, kCorrupt, kForeign, kOtherPrefix };

// Bytes of the fixed part before the tokens; header_size() = that + 4 * tokens + 4.
inline constexpr size_t kKvBlockFileFixedHeader = 8 + 4 + 4 + 56 + 8 + 8 + 8 + 4;
inline size_t kv_block_file_header_size(size_t num_tokens) { return kKvBlockFileFixedHeader + 4 * num_tokens + 4; }

// The header bytes for `payload` (its crc is computed here).
std::string encode_kv_block_header(KvBlockFileHeader header, std::span<const uint8_t> payload);

// Reads a header from the start of `bytes` (at least the header; the payload may follow). A bad
// magic, a header checksum that fails or too few bytes: kTruncated / kCorrupt in `problem`.
struct DecodedKvBlockHeader {
  KvBlockFileHeader header;
  size_t header_bytes = 0;
  KvBlockFileProblem problem = KvBlockFileProblem::kNone;
};
DecodedKvBlockHeader decode_kv_block_header(std::string_view bytes);

// Checks a whole file's bytes against what the reader expects. kNone: the payload is
// bytes.substr(header_bytes) and may be used.
KvBlockFileProblem check_kv_block_file(std::string_view bytes, const KvBlockFileKey& key, uint64_t hash,
                                       uint64_t parent, std::span<const int32_t> tokens,
                                       uint64_t payload_bytes, size_t* header_bytes);

}  // namespace weft
