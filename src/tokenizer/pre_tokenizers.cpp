#include "tokenizer/pre_tokenizers.h"

#include <utf8proc.h>

#include <algorithm>
#include <utility>

#include "tokenizer/byte_level.h"
#include "tokenizer/regex.h"
#include "tokenizer/utf8.h"

namespace weft {
namespace {

using Ranges = std::vector<std::pair<size_t, size_t>>;

enum class Behavior { kRemoved, kIsolated, kMergedWithPrevious, kMergedWithNext, kContiguous };

// Hugging Face NormalizedString::split: `matches` are the delimiter ranges of `text`; the
// behaviour decides how delimiters and the text between them become pieces.
void split_by_matches(const Piece& piece, const Ranges& matches, bool invert, Behavior behavior,
                      std::vector<Piece>& out) {
  const std::string& text = piece.text;
  struct Span {
    size_t start, end;
    bool is_match;
  };
  std::vector<Span> spans;
  size_t prev = 0;
  for (const auto& [s, e] : matches) {
    if (prev != s) spans.push_back({prev, s, invert});
    spans.push_back({s, e, !invert});
    prev = e;
  }
  if (prev != text.size()) spans.push_back({prev, text.size(), invert});

  std::vector<Span> pieces;
  switch (behavior) {
    case Behavior::kRemoved:
      for (const auto& s : spans)
        if (!s.is_match) pieces.push_back(s);
      break;
    case Behavior::kIsolated:
      pieces.swap(spans);
      break;
    case Behavior::kMergedWithPrevious: {
      bool previous_match = false;
      for (const auto& s : spans) {
        if (s.is_match && !previous_match && !pieces.empty()) {
          pieces.back().end = s.end;
        } else {
          pieces.push_back(s);
        }
        previous_match = s.is_match;
      }
      break;
    }
    case Behavior::kMergedWithNext: {
      bool previous_match = false;
      for (auto it = spans.rbegin(); it != spans.rend(); ++it) {
        if (it->is_match && !previous_match && !pieces.empty()) {
          pieces.back().start = it->start;
        } else {
          pieces.push_back(*it);
        }
        previous_match = it->is_match;
      }
      std::reverse(pieces.begin(), pieces.end());
      break;
    }
    case Behavior::kContiguous: {
      bool previous_match = false;
      for (const auto& s : spans) {
        if (s.is_match == previous_match && !pieces.empty()) {
          pieces.back().end = s.end;
        } else {
          pieces.push_back(s);
        }
        previous_match = s.is_match;
      }
      break;
    }
  }
  for (const auto& s : pieces) {
    if (s.end > s.start)
      out.push_back({text.substr(s.start, s.end - s.start), piece.at_start && s.start == 0});
  }
}

class SplitPreTokenizer final : public PreTokenizer {
 public:
  SplitPreTokenizer(Pattern pattern, Behavior behavior, bool invert)
      : pattern_(std::move(pattern)), behavior_(behavior), invert_(invert) {}
  void pre_tokenize(std::vector<Piece>& pieces) const override {
    std::vector<Piece> out;
    out.reserve(pieces.size() * 4);
    Ranges matches;
    for (const auto& p : pieces) {
      matches.clear();
      pattern_.find_all(p.text, matches);
      split_by_matches(p, matches, invert_, behavior_, out);
    }
    pieces = std::move(out);
  }

 private:
  Pattern pattern_;
  Behavior behavior_;
  bool invert_;
};

constexpr const char* kGpt2Regex =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

class ByteLevelPreTokenizer final : public PreTokenizer {
 public:
  ByteLevelPreTokenizer(bool add_prefix_space, std::shared_ptr<const Regex> regex)
      : add_prefix_space_(add_prefix_space), regex_(std::move(regex)) {}
  void pre_tokenize(std::vector<Piece>& pieces) const override {
    std::vector<Piece> split;
    if (add_prefix_space_) {
      for (auto& p : pieces) {
        if (!p.text.empty() && p.text[0] == ' ') continue;
        std::string prefixed;
        prefixed.reserve(p.text.size() + 1);
        prefixed.push_back(' ');
        prefixed.append(p.text);
        p.text = std::move(prefixed);
      }
    }
    if (regex_) {
      Ranges matches;
      for (const auto& p : pieces) {
        matches.clear();
        regex_->find_all(p.text, matches);
        split_by_matches(p, matches, false, Behavior::kIsolated, split);
      }
    } else {
      split = std::move(pieces);
    }
    pieces.clear();
    for (auto& p : split) {
      if (p.text.empty()) continue;
      Piece mapped{std::string(), p.at_start};
      mapped.text.reserve(p.text.size() * 2);
      byte_level::encode_bytes(p.text, mapped.text);
      pieces.push_back(std::move(mapped));
    }
  }

 private:
  bool add_prefix_space_;
  std::shared_ptr<const Regex> regex_;
};

bool is_numeric(char32_t cp) {
  const auto cat = utf8proc_category(static_cast<utf8proc_int32_t>(cp));
  return cat == UTF8PROC_CATEGORY_ND || cat == UTF8PROC_CATEGORY_NL || cat == UTF8PROC_CATEGORY_NO;
}

class DigitsPreTokenizer final : public PreTokenizer {
 public:
  explicit DigitsPreTokenizer(bool individual) : individual_(individual) {}
  void pre_tokenize(std::vector<Piece>& pieces) const override {
    std::vector<Piece> out;
    Ranges matches;
    for (const auto& p : pieces) {
      matches.clear();
      size_t pos = 0;
      while (pos < p.text.size()) {
        const size_t start = pos;
        if (is_numeric(utf8::next_code_point(p.text, pos))) matches.emplace_back(start, pos);
      }
      split_by_matches(p, matches, false, individual_ ? Behavior::kIsolated : Behavior::kContiguous,
                       out);
    }
    pieces = std::move(out);
  }

 private:
  bool individual_;
};

enum class PrependScheme { kFirst, kAlways, kNever };

class MetaspacePreTokenizer final : public PreTokenizer {
 public:
  MetaspacePreTokenizer(std::string replacement, PrependScheme scheme, bool split)
      : replacement_(std::move(replacement)), scheme_(scheme), split_(split) {}
  void pre_tokenize(std::vector<Piece>& pieces) const override {
    std::vector<Piece> out;
    Ranges matches;
    const Pattern rep = Pattern::literal(replacement_);
    for (auto& p : pieces) {
      const bool starts =
          p.text.empty()
              ? false
              : (p.text[0] == ' ' || p.text.compare(0, replacement_.size(), replacement_) == 0);
      const bool prepend = !starts && (scheme_ == PrependScheme::kAlways ||
                                       (scheme_ == PrependScheme::kFirst && p.at_start));
      std::string text;
      text.reserve(p.text.size() * 2 + replacement_.size());
      if (prepend) text.append(replacement_);
      for (const char c : p.text) {
        if (c == ' ') {
          text.append(replacement_);
        } else {
          text.push_back(c);
        }
      }
      Piece replaced{std::move(text), p.at_start};
      if (split_) {
        matches.clear();
        rep.find_all(replaced.text, matches);
        split_by_matches(replaced, matches, false, Behavior::kMergedWithNext, out);
      } else if (!replaced.text.empty()) {
        out.push_back(std::move(replaced));
      }
    }
    pieces = std::move(out);
  }

 private:
  std::string replacement_;
  PrependScheme scheme_;
  bool split_;
};

class SequencePreTokenizer final : public PreTokenizer {
 public:
  explicit SequencePreTokenizer(std::vector<std::unique_ptr<PreTokenizer>> parts)
      : parts_(std::move(parts)) {}
  void pre_tokenize(std::vector<Piece>& pieces) const override {
    for (const auto& p : parts_) p->pre_tokenize(pieces);
  }

 private:
  std::vector<std::unique_ptr<PreTokenizer>> parts_;
};

absl::StatusOr<Behavior> parse_behavior(const nlohmann::json& j, const JsonPath& where) {
  auto name = where.get_string(j, "behavior");
  if (!name.ok()) return name.status();
  if (*name == "Removed") return Behavior::kRemoved;
  if (*name == "Isolated") return Behavior::kIsolated;
  if (*name == "MergedWithPrevious") return Behavior::kMergedWithPrevious;
  if (*name == "MergedWithNext") return Behavior::kMergedWithNext;
  if (*name == "Contiguous") return Behavior::kContiguous;
  return where.child("behavior")
      .error(str_cat(
          "unknown split behavior \"", *name,
          "\" (expected Removed, Isolated, MergedWithPrevious, MergedWithNext or Contiguous)"));
}

}  // namespace

absl::StatusOr<std::unique_ptr<PreTokenizer>> make_pre_tokenizer(const nlohmann::json& j,
                                                                 const JsonPath& where) {
  if (j.is_null()) return std::unique_ptr<PreTokenizer>();
  auto type = where.get_type(j);
  if (!type.ok()) return type.status();
  if (*type == "ByteLevel") {
    auto prefix = where.get_bool(j, "add_prefix_space", true);
    if (!prefix.ok()) return prefix.status();
    auto use_regex = where.get_bool(j, "use_regex", true);
    if (!use_regex.ok()) return use_regex.status();
    std::shared_ptr<const Regex> regex;
    if (*use_regex) {
      auto re = Regex::compile(kGpt2Regex, where);
      if (!re.ok()) return re.status();
      regex = std::move(*re);
    }
    return std::make_unique<ByteLevelPreTokenizer>(*prefix, std::move(regex));
  }
  if (*type == "Split") {
    if (!j.contains("pattern")) return where.child("pattern").error("missing");
    auto pattern = Pattern::from_json(j["pattern"], where.child("pattern"));
    if (!pattern.ok()) return pattern.status();
    auto behavior = parse_behavior(j, where);
    if (!behavior.ok()) return behavior.status();
    auto invert = where.get_bool(j, "invert", false);
    if (!invert.ok()) return invert.status();
    return std::make_unique<SplitPreTokenizer>(std::move(*pattern), *behavior, *invert);
  }
  if (*type == "Digits") {
    auto individual = where.get_bool(j, "individual_digits", false);
    if (!individual.ok()) return individual.status();
    return std::make_unique<DigitsPreTokenizer>(*individual);
  }
  if (*type == "Metaspace") {
    auto replacement = where.get_string(j, "replacement");
    if (!replacement.ok()) return replacement.status();
    if (replacement->empty() ||
        utf8::char_len(static_cast<unsigned char>((*replacement)[0])) != replacement->size()) {
      return where.child("replacement").error("expected exactly one character");
    }
    PrependScheme scheme = PrependScheme::kAlways;
    auto scheme_name = where.get_optional_string(j, "prepend_scheme");
    if (!scheme_name.ok()) return scheme_name.status();
    if (scheme_name->has_value()) {
      const std::string& s = **scheme_name;
      if (s == "first") {
        scheme = PrependScheme::kFirst;
      } else if (s == "always") {
        scheme = PrependScheme::kAlways;
      } else if (s == "never") {
        scheme = PrependScheme::kNever;
      } else {
        return where.child("prepend_scheme")
            .error(str_cat("unknown prepend scheme \"", s, "\" (expected first, always or never)"));
      }
    } else {
      // Older files carry add_prefix_space instead of prepend_scheme.
      auto add = where.get_bool(j, "add_prefix_space", true);
      if (!add.ok()) return add.status();
      scheme = *add ? PrependScheme::kAlways : PrependScheme::kNever;
    }
    auto split = where.get_bool(j, "split", true);
    if (!split.ok()) return split.status();
    return std::make_unique<MetaspacePreTokenizer>(std::move(*replacement), scheme, *split);
  }
  if (*type == "Sequence") {
    const auto it = j.find("pretokenizers");
    if (it == j.end() || !it->is_array())
      return where.child("pretokenizers").error("expected an array");
    std::vector<std::unique_ptr<PreTokenizer>> parts;
    for (size_t i = 0; i < it->size(); ++i) {
      auto part = make_pre_tokenizer((*it)[i], where.child("pretokenizers").index(i));
      if (!part.ok()) return part.status();
      if (*part) parts.push_back(std::move(*part));
    }
    return std::make_unique<SequencePreTokenizer>(std::move(parts));
  }
  return where.child("type").error(
      str_cat("unsupported pre-tokenizer type \"", *type,
              "\" (supported: ByteLevel, Split, Digits, Metaspace, Sequence)"));
}

}  // namespace weft
