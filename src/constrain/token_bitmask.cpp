#include "constrain/token_bitmask.h"

#include <algorithm>
#include <bit>
#include <limits>

#include "absl/strings/str_cat.h"

namespace weft {

TokenBitmask::TokenBitmask(int32_t rows, int32_t vocab_size)
    : rows_(rows),
      vocab_size_(vocab_size),
      words_(bitmask_words(vocab_size)),
      words_data_(static_cast<size_t>(rows) * bitmask_words(vocab_size), ~uint32_t{0}) {}

void TokenBitmask::allow_all(int32_t r) { std::ranges::fill(row(r), ~uint32_t{0}); }

int32_t TokenBitmask::count_allowed(int32_t r) const {
  const auto words = row(r);
  int32_t n = 0;
  for (int32_t w = 0; w < words_; ++w) {
    uint32_t bits = words[w];
    // Bits past vocab_size in the last word do not name tokens.
    const int32_t valid = std::min(32, vocab_size_ - w * 32);
    if (valid < 32) bits &= (uint32_t{1} << valid) - 1;
    n += std::popcount(bits);
  }
  return n;
}

void apply_token_bitmask(std::span<float> logits, std::span<const uint32_t> mask_row,
                         int32_t vocab_size) {
  constexpr float kMasked = -std::numeric_limits<float>::infinity();
  const uint32_t masked_bits = std::bit_cast<uint32_t>(kMasked);
  const size_t width = logits.size();
  const size_t covered = std::min(width, static_cast<size_t>(vocab_size));
  const size_t full_words = covered / 32;
  for (size_t w = 0; w < full_words; ++w) {
    const uint32_t bits = mask_row[w];
    if (bits == ~uint32_t{0}) continue;  // the common word under a permissive state
    float* out = logits.data() + w * 32;
    if (bits == 0) {  // the common word under a narrow state
      std::fill(out, out + 32, kMasked);
      continue;
    }
    // A branch-free select per lane (keep = all ones when the bit is set), which the compiler
    // vectorizes; a branch per bit costs about 2 ns a logit on mixed words.
    for (int b = 0; b < 32; ++b) {
      const uint32_t keep = 0u - ((bits >> b) & 1u);
      const uint32_t v = std::bit_cast<uint32_t>(out[b]);
      out[b] = std::bit_cast<float>((v & keep) | (masked_bits & ~keep));
    }
  }
  for (size_t i = full_words * 32; i < covered; ++i)
    if (!((mask_row[i >> 5] >> (i & 31)) & 1u)) logits[i] = kMasked;
  for (size_t i = covered; i < width; ++i) logits[i] = kMasked;
}

absl::Status apply_token_bitmask(std::span<float> logits, int32_t row_width,
                                 const TokenBitmask& mask, std::span<const int32_t> mask_rows) {
  if (row_width <= 0 || logits.size() % static_cast<size_t>(row_width) != 0) {
    return absl::InvalidArgumentError(absl::StrCat("apply_token_bitmask: ", logits.size(),
                                                   " logits are not rows of ", row_width));
  }
  const size_t rows = logits.size() / row_width;
  if (mask_rows.empty() && rows != static_cast<size_t>(mask.rows())) {
    return absl::InvalidArgumentError(absl::StrCat("apply_token_bitmask: ", rows,
                                                   " logits rows but ", mask.rows(), " mask rows"));
  }
  if (!mask_rows.empty() && mask_rows.size() != rows) {
    return absl::InvalidArgumentError(absl::StrCat(
        "apply_token_bitmask: ", rows, " logits rows but ", mask_rows.size(), " mask row indices"));
  }
  for (size_t r = 0; r < rows; ++r) {
    const int32_t m = mask_rows.empty() ? static_cast<int32_t>(r) : mask_rows[r];
    if (m < 0 || m >= mask.rows()) {
      return absl::InvalidArgumentError(
          absl::StrCat("apply_token_bitmask: mask row ", m, " outside [0, ", mask.rows(), ")"));
    }
    apply_token_bitmask(logits.subspan(r * row_width, row_width), mask.row(m), mask.vocab_size());
  }
  return absl::OkStatus();
}

}  // namespace weft
