#include "constrain/json_whitespace_bound.h"

#include <algorithm>
#include <limits>
#include <string_view>

#include "constrain/grammar_vocabulary.h"

namespace weft {
namespace {

// Per-budget masks are kept for budgets below this; larger budgets clear the few tokens with a
// longer leading run one by one (a mask is 19 KB on a 151k vocabulary).
constexpr int32_t kMaxBudgetMasks = 64;

bool is_json_whitespace(char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }

uint16_t clamp16(int64_t v) {
  return static_cast<uint16_t>(std::min<int64_t>(v, std::numeric_limits<uint16_t>::max()));
}

void clear_bit(std::span<uint32_t> row, int32_t token) {
  row[token >> 5] &= ~(uint32_t{1} << (token & 31));
}

// How `bytes` lexes from `start`.
struct TokenLex {
  JsonLexState::Where end = JsonLexState::kOutside;
  int64_t leading = 0;   // outside start: whitespace before the first other byte
  int64_t trailing = 0;  // the whitespace run outside strings at the end (0 inside a string)
  int64_t longest_inner = 0;  // the longest run outside strings that ends inside the token
  bool all_whitespace = false;
};

TokenLex lex(std::string_view bytes, JsonLexState::Where start) {
  TokenLex out;
  JsonLexState::Where where = start;
  bool leading = start == JsonLexState::kOutside;
  int64_t run = 0;
  for (const char c : bytes) {
    switch (where) {
      case JsonLexState::kOutside:
        if (is_json_whitespace(c)) {
          ++(leading ? out.leading : run);
          break;
        }
        if (!leading) out.longest_inner = std::max(out.longest_inner, run);
        leading = false;
        run = 0;
        if (c == '"') where = JsonLexState::kInString;
        break;
      case JsonLexState::kInString:
        if (c == '\\') {
          where = JsonLexState::kInEscape;
        } else if (c == '"') {
          where = JsonLexState::kOutside;
          leading = false;
          run = 0;
        }
        break;
      case JsonLexState::kInEscape:
        where = JsonLexState::kInString;
        break;
    }
  }
  out.end = where;
  out.all_whitespace = leading && !bytes.empty();
  out.trailing = where == JsonLexState::kOutside && !leading ? run : 0;
  return out;
}

}  // namespace

std::shared_ptr<const JsonWhitespaceBound> JsonWhitespaceBound::build(
    const GrammarVocabulary& vocabulary, int32_t max_run) {
  std::shared_ptr<JsonWhitespaceBound> t(new JsonWhitespaceBound());
  const int32_t n = vocabulary.vocab_size();
  t->max_run_ = max_run;
  t->words_ = (n + 31) / 32;
  t->leading_.assign(n, 0);
  int64_t longest_leading = 0;
  for (int w = 0; w < 3; ++w) {
    Lexed& l = t->from_[w];
    l.flags.assign(n, 0);
    l.trailing.assign(n, 0);
    for (int32_t id = 0; id < n; ++id) {
      const std::string_view bytes = vocabulary.token_bytes(id);
      if (bytes.empty()) {
        l.flags[id] = kNeutral | static_cast<uint8_t>(w);
        continue;
      }
      const TokenLex x = lex(bytes, static_cast<JsonLexState::Where>(w));
      uint8_t f = static_cast<uint8_t>(x.end);
      if (x.longest_inner > max_run || x.trailing > max_run) f |= kInnerTooLong;
      if (x.all_whitespace) f |= kAllWhitespace;
      l.flags[id] = f;
      l.trailing[id] = clamp16(x.trailing);
      if (f & kInnerTooLong) t->too_long_inside_[w].push_back(id);
      if (w == JsonLexState::kOutside) {
        t->leading_[id] = clamp16(x.leading);
        longest_leading = std::max(longest_leading, x.leading);
      }
    }
  }
  // Budget b (characters the run may still grow by) refuses the tokens whose leading run is
  // longer; budgets at or past the longest leading run refuse only the too-long-inside ones.
  const int64_t masks =
      std::min<int64_t>({int64_t{max_run} + 1, longest_leading, kMaxBudgetMasks});
  t->allowed_.assign(masks, std::vector<uint32_t>(t->words_, ~0u));
  const int32_t tail = n & 31;
  for (auto& mask : t->allowed_) {
    if (tail) mask.back() = (uint32_t{1} << tail) - 1;
    for (const int32_t id : t->too_long_inside_[JsonLexState::kOutside]) clear_bit(mask, id);
  }
  for (int32_t id = 0; id < n; ++id) {
    if (t->from_[JsonLexState::kOutside].flags[id] & kNeutral) continue;
    const int64_t lead = t->leading_[id];
    for (int64_t b = 0; b < std::min<int64_t>(lead, masks); ++b) clear_bit(t->allowed_[b], id);
    if (lead > masks) t->long_leading_.push_back(id);
  }
  std::ranges::sort(t->long_leading_, [&](int32_t a, int32_t b) {
    return t->leading_[a] > t->leading_[b];
  });
  return t;
}

std::optional<JsonLexState> JsonWhitespaceBound::advance(const JsonLexState& from,
                                                         int32_t token) const {
  const uint8_t f = from_[from.where].flags[token];
  if (f & kNeutral) return from;
  if (from.where == JsonLexState::kOutside) {
    const int64_t run = int64_t{from.run} + leading_[token];
    if (run > max_run_) return std::nullopt;
    if (f & kAllWhitespace) return JsonLexState{JsonLexState::kOutside, static_cast<int32_t>(run)};
  }
  if (f & kInnerTooLong) return std::nullopt;
  return JsonLexState{static_cast<JsonLexState::Where>(f & kWhereMask),
                      from_[from.where].trailing[token]};
}

bool JsonWhitespaceBound::restrict(const JsonLexState& from, std::span<uint32_t> row) const {
  const std::vector<int32_t>& too_long = too_long_inside_[from.where];
  if (from.where != JsonLexState::kOutside) {
    for (const int32_t id : too_long) clear_bit(row, id);
    return !too_long.empty();
  }
  const int64_t budget = std::max<int64_t>(0, int64_t{max_run_} - from.run);
  if (budget < static_cast<int64_t>(allowed_.size())) {
    const std::vector<uint32_t>& allowed = allowed_[budget];
    for (size_t i = 0; i < row.size(); ++i) row[i] &= allowed[i];
    return true;
  }
  bool cleared = !too_long.empty();
  for (const int32_t id : too_long) clear_bit(row, id);
  for (const int32_t id : long_leading_) {
    if (leading_[id] <= budget) break;
    clear_bit(row, id);
    cleared = true;
  }
  return cleared;
}

size_t JsonWhitespaceBound::memory_bytes() const {
  size_t bytes = leading_.size() * sizeof(uint16_t) + long_leading_.size() * sizeof(int32_t);
  for (const Lexed& l : from_) bytes += l.flags.size() + l.trailing.size() * sizeof(uint16_t);
  for (const auto& v : too_long_inside_) bytes += v.size() * sizeof(int32_t);
  bytes += allowed_.size() * static_cast<size_t>(words_) * sizeof(uint32_t);
  return bytes;
}

}  // namespace weft
