// The text form banned phrases are matched in: Unicode NFKC_Casefold equivalence (utf8proc's
// NFKC_Casefold: compatibility decomposition, case folding, default ignorables removed), taken
// in its decomposed form and produced incrementally from a stream of UTF-8 pieces.
//
// Why decomposed: two strings have the same NFKC form exactly when they have the same NFKD form
// (NFKC is the canonical composition of NFKD), and the decomposed form of a concatenation is the
// concatenation of the per-code-point decompositions up to the canonical reordering of each run
// of combining marks. So the stream is normalized one code point at a time, except that the
// combining marks after a starter are held (the unnormalized tail) until the run ends -- the next
// starter arrives or the text ends -- and then emitted in canonical order. NFKC's composition of a
// run never reaches past it.
//
// Every normalized code point remembers the byte offset (in the raw stream) of the code point it
// came from, so a match in normalized text maps back to the raw text and to the token that
// produced it. The end of each run is emitted too (kRunEnd): a match must end at the end of a run
// (a phrase ending in "e" does not match the "e" of "e" + U+0301, which NFKC composes to "é").
//
// Copyable value type (the banned-phrase filter snapshots it per token).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace weft {

struct NormalizedCodePoint {
  // Past Unicode: the code point before this entry ends its run (no combining mark follows it).
  static constexpr char32_t kRunEnd = 0x110000;
  char32_t cp = 0;
  int64_t source = 0;  // raw byte offset of the code point this one came from
};

class PhraseNormalizer {
 public:
  // Appends raw UTF-8 `text` whose first byte sits at raw offset `offset` (offsets of successive
  // calls must continue each other). The code points (and kRunEnd markers) now final are
  // appended to `out`. Malformed UTF-8 bytes count as U+FFFD each.
  void feed(std::string_view text, int64_t offset, std::vector<NormalizedCodePoint>& out);
  // The text ended: the pending marks and the last run's end are emitted.
  void finish(std::vector<NormalizedCodePoint>& out);
  // Raw offset of the first combining mark held back; -1 when none is.
  int64_t pending_source() const;

 private:
  void close_run(std::vector<NormalizedCodePoint>& out);

  bool run_open_ = false;                   // code points were emitted since the last kRunEnd
  std::vector<NormalizedCodePoint> marks_;  // held: decomposed, not yet reordered
  std::vector<int> mark_classes_;           // their combining classes
};

// A whole phrase in the matching form (the code points of PhraseNormalizer over the phrase
// alone). Empty when the phrase is empty or only default ignorables.
std::u32string normalize_phrase(std::string_view phrase);

}  // namespace weft
