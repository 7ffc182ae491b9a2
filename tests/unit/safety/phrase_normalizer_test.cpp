// The matching form: NFKC_Casefold equivalence in decomposed form, built incrementally with the
// unnormalized tail held until the next starter.
#include "safety/phrase_normalizer.h"

#include <gtest/gtest.h>

namespace weft {
namespace {

TEST(PhraseNormalizerTest, FoldsCaseAndCompatibilityForms) {
  EXPECT_EQ(normalize_phrase("Hello"), normalize_phrase("hELLO"));
  EXPECT_EQ(normalize_phrase("\uFF28\uFF45\uFF4C\uFF4C\uFF4F"), normalize_phrase("hello"));  // fullwidth
  EXPECT_EQ(normalize_phrase("\uFB01ne"), normalize_phrase("fine"));                       // the fi ligature
  EXPECT_EQ(normalize_phrase("Stra\u00DFe"), normalize_phrase("STRASSE"));                 // sharp s folds to ss
  EXPECT_EQ(normalize_phrase("caf\u00E9"), normalize_phrase("cafe\u0301"));                // composed / decomposed
  EXPECT_EQ(normalize_phrase("\u2460"), normalize_phrase("1"));                            // circled digit
  EXPECT_EQ(normalize_phrase("a\u00ADb"), normalize_phrase("ab"));                         // soft hyphen ignored
  EXPECT_NE(normalize_phrase("cafe"), normalize_phrase("caf\u00E9"));
  EXPECT_TRUE(normalize_phrase("\u200B").empty());  // only a default ignorable
}

TEST(PhraseNormalizerTest, CombiningMarksAreReorderedCanonically) {
  // dot below (ccc 220) and acute (ccc 230) in either order are canonically equivalent.
  EXPECT_EQ(normalize_phrase("a\u0301\u0323"), normalize_phrase("a\u0323\u0301"));
  EXPECT_EQ(normalize_phrase("\u1EA1\u0301"), normalize_phrase("a\u0301\u0323"));
}

constexpr char32_t kEnd = NormalizedCodePoint::kRunEnd;

TEST(PhraseNormalizerTest, StreamingGivesTheWholeTextsFormWithSourcesAndRunEnds) {
  const std::string text = "x\u0301\u0323Y\uFB01";  // x + acute (1) + dot below (3), Y (5), the fi ligature (6)
  for (size_t cut = 0; cut <= text.size(); ++cut) {
    if (cut < text.size() && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) continue;  // inside a character
    PhraseNormalizer n;
    std::vector<NormalizedCodePoint> cps;
    n.feed(std::string_view(text).substr(0, cut), 0, cps);
    if (cut == 3) EXPECT_EQ(n.pending_source(), 1);  // the acute waits for the run's end
    n.feed(std::string_view(text).substr(cut), static_cast<int64_t>(cut), cps);
    EXPECT_EQ(n.pending_source(), -1);
    n.finish(cps);
    std::vector<std::pair<char32_t, int64_t>> got;
    for (const NormalizedCodePoint& c : cps) got.emplace_back(c.cp, c.cp == kEnd ? -1 : c.source);
    const std::vector<std::pair<char32_t, int64_t>> want = {
        {U'x', 0}, {0x323, 3}, {0x301, 1}, {kEnd, -1},  // the dot below moves before the acute
        {U'y', 5}, {kEnd, -1}, {U'f', 6}, {kEnd, -1}, {U'i', 6}, {kEnd, -1}};
    EXPECT_EQ(got, want) << "cut at " << cut;
  }
}

TEST(PhraseNormalizerTest, MalformedBytesBecomeReplacementCharacters) {
  EXPECT_EQ(normalize_phrase("a\xFF"), normalize_phrase("a\uFFFD"));
}

}  // namespace
}  // namespace weft
