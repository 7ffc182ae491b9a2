#include "tokenizer/added_tokens.h"

#include <utf8proc.h>

#include "tokenizer/utf8.h"

namespace weft {
namespace {

// absl in this toolchain has its own string_view type; heterogeneous lookups need it.
absl::string_view absl_view(std::string_view s) { return absl::string_view(s.data(), s.size()); }

// Rust's char::is_alphanumeric plus '_', the word test of single_word tokens.
bool is_word_char(char32_t cp) {
  if (cp == '_') return true;
  switch (utf8proc_category(static_cast<utf8proc_int32_t>(cp))) {
    case UTF8PROC_CATEGORY_LU:
    case UTF8PROC_CATEGORY_LL:
    case UTF8PROC_CATEGORY_LT:
    case UTF8PROC_CATEGORY_LM:
    case UTF8PROC_CATEGORY_LO:
    case UTF8PROC_CATEGORY_ND:
    case UTF8PROC_CATEGORY_NL:
    case UTF8PROC_CATEGORY_NO:
      return true;
    default:
      return false;
  }
}

// Start offset of the code point that ends at `end` (end > 0).
size_t prev_char_start(std::string_view s, size_t end) {
  size_t p = end - 1;
  while (p > 0 && (static_cast<unsigned char>(s[p]) & 0xC0) == 0x80) --p;
  return p;
}

}  // namespace

void AddedVocabulary::Trie::add(std::string_view pattern, int32_t token_index) {
  if (pattern.empty()) return;
  int32_t node = 0;
  for (const char c : pattern) {
    const uint64_t key = (static_cast<uint64_t>(node) << 8) | static_cast<unsigned char>(c);
    const auto it = edges.find(key);
    if (it != edges.end()) {
      node = it->second;
    } else {
      const auto next = static_cast<int32_t>(terminal.size());
      terminal.push_back(-1);
      edges.emplace(key, next);
      node = next;
    }
  }
  terminal[node] = token_index;
  first_byte[static_cast<unsigned char>(pattern[0])] = true;
}

int32_t AddedVocabulary::Trie::longest_at(std::string_view text, size_t pos, size_t& len) const {
  int32_t best = -1;
  int32_t node = 0;
  for (size_t i = pos; i < text.size(); ++i) {
    const auto it =
        edges.find((static_cast<uint64_t>(node) << 8) | static_cast<unsigned char>(text[i]));
    if (it == edges.end()) break;
    node = it->second;
    if (terminal[node] >= 0) {
      best = terminal[node];
      len = i + 1 - pos;
    }
  }
  return best;
}

absl::StatusOr<AddedVocabulary> AddedVocabulary::from_json(const nlohmann::json& tokens,
                                                           const JsonPath& where,
                                                           const Normalizer* normalizer) {
  AddedVocabulary v;
  if (tokens.is_null()) return v;
  if (!tokens.is_array()) return where.error("expected an array of added tokens");
  for (size_t i = 0; i < tokens.size(); ++i) {
    const JsonPath p = where.index(i);
    const auto& t = tokens[i];
    if (!t.is_object()) return p.error("expected an object");
    AddedToken tok;
    if (!t.contains("id") || !t["id"].is_number_integer() || t["id"].get<int64_t>() < 0 ||
        t["id"].get<int64_t>() > kMaxTokenId) {
      return p.child("id").error(str_cat("expected an integer in [0, ", kMaxTokenId, "]"));
    }
    tok.id = static_cast<int32_t>(t["id"].get<int64_t>());
    auto content = p.get_string(t, "content");
    if (!content.ok()) return content.status();
    tok.content = std::move(*content);
    for (auto [key, field, fallback] :
         {std::tuple{"special", &tok.special, false}, std::tuple{"lstrip", &tok.lstrip, false},
          std::tuple{"rstrip", &tok.rstrip, false},
          std::tuple{"single_word", &tok.single_word, false}}) {
      auto b = p.get_bool(t, key, fallback);
      if (!b.ok()) return b.status();
      *field = *b;
    }
    // tokenizers defaults normalized to !special.
    auto normalized = p.get_bool(t, "normalized", !tok.special);
    if (!normalized.ok()) return normalized.status();
    tok.normalized = *normalized;
    v.by_id_[tok.id] = v.tokens_.size();
    v.by_content_[tok.content] = tok.id;
    v.tokens_.push_back(std::move(tok));
  }
  for (size_t i = 0; i < v.tokens_.size(); ++i) {
    const AddedToken& tok = v.tokens_[i];
    if (tok.normalized) {
      std::string pattern = tok.content;
      if (normalizer) normalizer->normalize(pattern);
      v.normalized_trie_.add(pattern, static_cast<int32_t>(i));
      v.has_normalized_ = true;
    } else {
      v.raw_trie_.add(tok.content, static_cast<int32_t>(i));
      v.has_raw_ = true;
    }
  }
  return v;
}

void AddedVocabulary::split(std::string_view text, bool normalized_pass,
                            std::vector<Segment>& out) const {
  const Trie& trie = normalized_pass ? normalized_trie_ : raw_trie_;
  const bool any = normalized_pass ? has_normalized_ : has_raw_;
  size_t start_offset = 0;
  if (any) {
    size_t pos = 0;
    while (pos < text.size()) {
      if (!trie.first_byte[static_cast<unsigned char>(text[pos])]) {
        ++pos;
        continue;
      }
      size_t len = 0;
      const int32_t index = trie.longest_at(text, pos, len);
      if (index < 0) {
        ++pos;
        continue;
      }
      const AddedToken& tok = tokens_[index];
      size_t start = pos;
      size_t stop = pos + len;
      pos = stop;  // the scan resumes after this match whether or not it is kept
      if (tok.single_word) {
        size_t p = start > 0 ? prev_char_start(text, start) : 0;
        const bool start_ok = start == 0 || !is_word_char(utf8::next_code_point(text, p));
        size_t q = stop;
        const bool stop_ok = stop == text.size() || !is_word_char(utf8::next_code_point(text, q));
        if (!start_ok || !stop_ok) continue;
      }
      if (tok.lstrip) {
        size_t new_start = start;
        while (new_start > 0) {
          const size_t prev = prev_char_start(text, new_start);
          size_t probe = prev;
          if (!utf8::is_whitespace(utf8::next_code_point(text, probe))) break;
          new_start = prev;
        }
        start = std::max(new_start, start_offset);
      }
      if (tok.rstrip) {
        while (stop < text.size()) {
          size_t probe = stop;
          if (!utf8::is_whitespace(utf8::next_code_point(text, probe))) break;
          stop = probe;
        }
        pos = std::max(pos, stop);
      }
      if (start_offset < start) out.push_back({start_offset, start, -1});
      out.push_back({start, stop, tok.id});
      start_offset = stop;
    }
  }
  if (start_offset < text.size()) out.push_back({start_offset, text.size(), -1});
}

const AddedToken* AddedVocabulary::by_id(int32_t id) const {
  const auto it = by_id_.find(id);
  return it == by_id_.end() ? nullptr : &tokens_[it->second];
}

std::optional<int32_t> AddedVocabulary::token_to_id(std::string_view content) const {
  const auto it = by_content_.find(absl_view(content));
  if (it == by_content_.end()) return std::nullopt;
  return it->second;
}

}  // namespace weft
