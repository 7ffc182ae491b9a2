// The bound on JSON whitespace (JsonWhitespace::kBounded), kept at run time beside the grammar
// rather than inside it.
//
// Why: xgrammar's own bound is a counted repetition [ \n\r\t]{0,N} at every place JSON allows
// whitespace. Its per-state mask cache cannot decide, at compile time, the many tokens that
// cross such a place (" \"", " {\"", "\n  \"", ...), so every mask fill re-parses them: on the
// 151k-token qwen3 vocabulary that made the median fill 40x slower than unbounded whitespace
// ([ \n\r\t]*, decided at compile time). So a bounded JSON spec compiles with unbounded
// whitespace, and this table refuses the tokens that would make a run too long.
//
// Same language: JSON allows whitespace only between its tokens, outside strings, and two such
// places are never adjacent (a structural character or a value lies between), so a maximal run of
// whitespace outside strings is exactly one place. Refusing every token that would make such a
// run longer than max_run is the counted repetition's language. Whitespace inside strings is
// content and is not bounded (nor was it by the repetition).
//
// A token's effect depends only on where the text before it stands: outside strings (and then
// how long the current whitespace run is), inside a string, or just after a backslash inside a
// string. The table lexes every token from each of the three once, when built.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <vector>

namespace weft {

class GrammarVocabulary;

// Where the JSON text so far stands, and the whitespace run at its end (outside strings only).
struct JsonLexState {
  enum Where : uint8_t { kOutside = 0, kInString = 1, kInEscape = 2 };
  Where where = kOutside;
  int32_t run = 0;
  bool operator==(const JsonLexState&) const = default;
};

class JsonWhitespaceBound {
 public:
  // Lexes every token of `vocabulary` (its token_bytes; stop ids and byte-less ids leave the
  // state as it is). max_run >= 1.
  static std::shared_ptr<const JsonWhitespaceBound> build(const GrammarVocabulary& vocabulary,
                                                          int32_t max_run);

  int32_t max_run() const { return max_run_; }

  // The state after `token` from `from`, or nullopt when the token would make a whitespace run
  // outside strings longer than max_run (its leading whitespace joining `from.run`, or a run
  // inside the token or at its end). `token` must be in [0, vocab size).
  std::optional<JsonLexState> advance(const JsonLexState& from, int32_t token) const;

  // Clears from `row` (a bitmask row, token_bitmask.h) every token advance() refuses from
  // `from`. Returns true when it may have cleared some.
  bool restrict(const JsonLexState& from, std::span<uint32_t> row) const;

  size_t memory_bytes() const;

 private:
  // Per token and start state, packed: bits 0-1 the state after, bit 2 "a run inside or at the
  // end is too long", bit 3 "all whitespace" (outside start only), bit 4 "no bytes" (neutral).
  static constexpr uint8_t kWhereMask = 3, kInnerTooLong = 4, kAllWhitespace = 8, kNeutral = 16;
  struct Lexed {
    std::vector<uint8_t> flags;     // per token
    std::vector<uint16_t> trailing;  // the run at the token's end (outside strings), clamped
  };

  JsonWhitespaceBound() = default;

  int32_t max_run_ = 0;
  int32_t words_ = 0;                        // bitmask words per row
  std::vector<uint16_t> leading_;            // from outside: whitespace before the first other byte
  Lexed from_[3];                            // indexed by JsonLexState::Where
  // allowed_[b]: the tokens allowed from outside with b characters of run left, for b below
  // allowed_.size(); beyond, the tokens in long_leading_ (by leading run, longest first) and
  // too_long_inside_[kOutside] are cleared one by one.
  std::vector<std::vector<uint32_t>> allowed_;
  std::vector<int32_t> long_leading_;
  std::vector<int32_t> too_long_inside_[3];  // tokens with kInnerTooLong, per start state
};

}  // namespace weft
