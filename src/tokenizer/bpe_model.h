// Byte-pair-encoding model from tokenizer.json ("model": {"type": "BPE", ...}): vocabulary,
// ranked merges, byte_fallback, unk_token (+fuse_unk), ignore_merges, continuing_subword_prefix
// and end_of_word_suffix, with the exact merge order of Hugging Face tokenizers (lowest rank
// first, leftmost first among equal ranks).
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "nlohmann/json.hpp"
#include "tokenizer/json_path.h"

namespace weft {

class BpeModel {
 public:
  // Builds the model from the "model" object at `where`. Errors: a type other than BPE (named),
  // malformed vocab/merges, merges naming tokens that are not in the vocabulary.
  static absl::StatusOr<std::unique_ptr<BpeModel>> from_json(const nlohmann::json& model,
                                                             const JsonPath& where);

  // Appends the ids of one pre-tokenized piece. Thread-safe (the word cache is locked).
  void tokenize(std::string_view word, std::vector<int32_t>& out) const;

  std::optional<int32_t> token_to_id(std::string_view token) const;
  // The vocabulary string of `id`, or nullptr when the model has no such id.
  const std::string* id_to_token(int32_t id) const;
  // One past the largest id in the vocabulary.
  int32_t id_limit() const { return static_cast<int32_t>(id_to_token_.size()); }

 private:
  BpeModel() = default;
  void merge_word(std::string_view word, std::vector<int32_t>& out) const;
  void apply_merges(std::vector<int32_t>& symbols) const;

  struct MergeInfo {
    int32_t rank;
    int32_t new_id;
  };
  static uint64_t pair_key(int32_t a, int32_t b) {
    return (static_cast<uint64_t>(static_cast<uint32_t>(a)) << 32) | static_cast<uint32_t>(b);
  }

  absl::flat_hash_map<std::string, int32_t> vocab_;
  std::vector<std::string> id_to_token_;
  std::vector<bool> has_id_;
  absl::flat_hash_map<uint64_t, MergeInfo> merges_;
  std::optional<std::string> unk_token_;
  std::string continuing_subword_prefix_;
  std::string end_of_word_suffix_;
  bool fuse_unk_ = false;
  bool byte_fallback_ = false;
  bool ignore_merges_ = false;
  std::array<int32_t, 256> byte_fallback_ids_{};

  static constexpr size_t kMaxCachedWordLen = 256;
  static constexpr size_t kMaxCacheEntries = 1 << 17;
  mutable absl::Mutex cache_mu_;
  mutable absl::flat_hash_map<std::string, std::vector<int32_t>> cache_ ABSL_GUARDED_BY(cache_mu_);
};

}  // namespace weft
