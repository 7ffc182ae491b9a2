#include "model/sentencepiece_merges.h"

#include <algorithm>
#include <cstdint>
#include <string_view>
#include <unordered_map>
#include <unordered_set>

namespace weft {
namespace {

// Characters (code points) in UTF-8 text: bytes that do not continue a sequence.
int64_t char_count(std::string_view s) {
  int64_t n = 0;
  for (unsigned char b : s) n += (b & 0xC0) != 0x80;
  return n;
}

struct Merge {
  std::string_view left, right;
  double score;
  int64_t left_chars, right_chars;
};

}  // namespace

std::vector<std::pair<std::string, std::string>> sentencepiece_merges(
    const std::vector<std::string>& tokens, const std::vector<double>& scores) {
  std::unordered_map<std::string_view, int64_t> id;  // a token's last id
  std::unordered_map<std::string_view, double> score;  // a token's last score
  id.reserve(tokens.size());
  score.reserve(tokens.size());
  for (size_t i = 0; i < tokens.size(); ++i) {
    id[tokens[i]] = static_cast<int64_t>(i);
    score[tokens[i]] = i < scores.size() ? scores[i] : 0.0;
  }
  std::vector<Merge> merges;
  std::unordered_set<std::string_view> seen;
  std::vector<Merge> local;
  for (const std::string& token : tokens) {
    if (!seen.insert(token).second) continue;  // a repeat: its first place counts
    const std::string_view whole(token);
    const double token_score = score[whole];
    local.clear();
    for (size_t cut = 1; cut < whole.size(); ++cut) {
      if ((static_cast<unsigned char>(whole[cut]) & 0xC0) == 0x80) continue;  // inside a character
      const std::string_view left = whole.substr(0, cut), right = whole.substr(cut);
      if (id.count(left) && id.count(right)) {
        local.push_back({left, right, token_score, char_count(left), char_count(right)});
      }
    }
    std::stable_sort(local.begin(), local.end(), [&](const Merge& a, const Merge& b) {
      const int64_t al = id[a.left], bl = id[b.left];
      return al != bl ? al < bl : id[a.right] < id[b.right];
    });
    merges.insert(merges.end(), local.begin(), local.end());
  }
  // Python's sorted(..., reverse=True) is stable: equal keys keep their order.
  std::stable_sort(merges.begin(), merges.end(), [](const Merge& a, const Merge& b) {
    if (a.score != b.score) return a.score > b.score;
    if (a.left_chars != b.left_chars) return a.left_chars > b.left_chars;
    return a.right_chars > b.right_chars;
  });
  std::vector<std::pair<std::string, std::string>> out;
  out.reserve(merges.size());
  for (const Merge& m : merges) out.emplace_back(std::string(m.left), std::string(m.right));
  return out;
}

}  // namespace weft
