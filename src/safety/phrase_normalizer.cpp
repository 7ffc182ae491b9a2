#include "safety/phrase_normalizer.h"

#include <utf8proc.h>

#include <algorithm>
#include <numeric>

namespace weft {
namespace {

constexpr auto kOptions =
    static_cast<utf8proc_option_t>(UTF8PROC_DECOMPOSE | UTF8PROC_COMPAT | UTF8PROC_CASEFOLD | UTF8PROC_IGNORE);
constexpr char32_t kReplacement = 0xFFFD;

// The NFKC_Casefold decomposition of one code point (empty for a default ignorable).
int decompose(char32_t cp, utf8proc_int32_t (&buf)[32]) {
  int boundclass = 0;
  const utf8proc_ssize_t n = utf8proc_decompose_char(static_cast<utf8proc_int32_t>(cp), buf, 32, kOptions, &boundclass);
  if (n < 0 || n > 32) {  // not a valid code point (or, never seen, a decomposition past 32)
    buf[0] = static_cast<utf8proc_int32_t>(kReplacement);
    return 1;
  }
  return static_cast<int>(n);
}

int combining_class(char32_t cp) {
  return utf8proc_get_property(static_cast<utf8proc_int32_t>(cp))->combining_class;
}

}  // namespace

void PhraseNormalizer::feed(std::string_view text, int64_t offset, std::vector<NormalizedCodePoint>& out) {
  const auto* bytes = reinterpret_cast<const utf8proc_uint8_t*>(text.data());
  const auto size = static_cast<utf8proc_ssize_t>(text.size());
  utf8proc_int32_t buf[32];
  for (utf8proc_ssize_t i = 0; i < size;) {
    utf8proc_int32_t cp = 0;
    utf8proc_ssize_t len = utf8proc_iterate(bytes + i, size - i, &cp);
    if (len <= 0) {
      cp = static_cast<utf8proc_int32_t>(kReplacement);
      len = 1;
    }
    const int64_t source = offset + i;
    const int n = decompose(static_cast<char32_t>(cp), buf);
    for (int k = 0; k < n; ++k) {
      const auto d = static_cast<char32_t>(buf[k]);
      const int cc = combining_class(d);
      if (cc != 0) {
        marks_.push_back({d, source});
        mark_classes_.push_back(cc);
        continue;
      }
      close_run(out);
      out.push_back({d, source});
      run_open_ = true;
    }
    i += len;
  }
}

void PhraseNormalizer::finish(std::vector<NormalizedCodePoint>& out) { close_run(out); }

int64_t PhraseNormalizer::pending_source() const {
  if (marks_.empty()) return -1;
  int64_t first = marks_.front().source;
  for (const NormalizedCodePoint& m : marks_) first = std::min(first, m.source);
  return first;
}

void PhraseNormalizer::close_run(std::vector<NormalizedCodePoint>& out) {
  if (!marks_.empty()) {
    // Canonical ordering: the marks stably by combining class.
    std::vector<size_t> order(marks_.size());
    std::iota(order.begin(), order.end(), size_t{0});
    std::stable_sort(order.begin(), order.end(),
                     [&](size_t a, size_t b) { return mark_classes_[a] < mark_classes_[b]; });
    for (size_t i : order) out.push_back(marks_[i]);
    marks_.clear();
    mark_classes_.clear();
    run_open_ = true;
  }
  if (run_open_) out.push_back({NormalizedCodePoint::kRunEnd, 0});
  run_open_ = false;
}

std::u32string normalize_phrase(std::string_view phrase) {
  PhraseNormalizer normalizer;
  std::vector<NormalizedCodePoint> cps;
  normalizer.feed(phrase, 0, cps);
  normalizer.finish(cps);
  std::u32string out;
  out.reserve(cps.size());
  for (const NormalizedCodePoint& c : cps) {
    if (c.cp != NormalizedCodePoint::kRunEnd) out.push_back(c.cp);
  }
  return out;
}

}  // namespace weft
