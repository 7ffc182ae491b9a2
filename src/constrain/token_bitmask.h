// Token bitmasks for a batch of rows: bit (id % 32) of word (id / 32) of a row is 1 when token
// `id` is allowed next. The layout is xgrammar's (int32 words, ceil(vocab_size / 32) per row), so
// a row can go to a device kernel as it is.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "absl/status/status.h"

namespace weft {

// 32-bit words per row for `vocab_size` tokens.
inline int32_t bitmask_words(int32_t vocab_size) { return (vocab_size + 31) / 32; }

class TokenBitmask {
 public:
  // `rows` rows over `vocab_size` tokens, every token allowed.
  TokenBitmask(int32_t rows, int32_t vocab_size);

  int32_t rows() const { return rows_; }
  int32_t vocab_size() const { return vocab_size_; }
  int32_t words_per_row() const { return words_; }

  std::span<uint32_t> row(int32_t r) {
    return {words_data_.data() + static_cast<size_t>(r) * words_, static_cast<size_t>(words_)};
  }
  std::span<const uint32_t> row(int32_t r) const {
    return {words_data_.data() + static_cast<size_t>(r) * words_, static_cast<size_t>(words_)};
  }
  // rows() * words_per_row() words, row-major.
  uint32_t* data() { return words_data_.data(); }
  const uint32_t* data() const { return words_data_.data(); }

  bool allowed(int32_t r, int32_t token) const { return (row(r)[token >> 5] >> (token & 31)) & 1u; }
  // Allows every token of row `r` (a sequence without a constraint).
  void allow_all(int32_t r);
  // Number of allowed tokens in row `r`.
  int32_t count_allowed(int32_t r) const;

 private:
  int32_t rows_;
  int32_t vocab_size_;
  int32_t words_;
  std::vector<uint32_t> words_data_;
};

// Sets every logit whose token the mask row disallows to -inf; logits past the mask's
// vocab_size (a padded LM head) are disallowed too. logits.size() is the row width.
void apply_token_bitmask(std::span<float> logits, std::span<const uint32_t> mask_row,
                         int32_t vocab_size);

// The same over a row-major [rows(), row_width] logits buffer: row r of `logits` takes mask row
// mask_rows[r] (empty mask_rows: row r takes mask row r). Errors: InvalidArgument when
// logits.size() is not a multiple of row_width, row counts disagree, or a mask row index is out
// of range.
absl::Status apply_token_bitmask(std::span<float> logits, int32_t row_width,
                                 const TokenBitmask& mask, std::span<const int32_t> mask_rows = {});

}  // namespace weft
