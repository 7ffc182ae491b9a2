#include "tokenizer/normalizers.h"

#include <utf8proc.h>

#include <cstdlib>
#include <vector>

#include "tokenizer/regex.h"
#include "tokenizer/utf8.h"

namespace weft {
namespace {

class UnicodeNormalizer final : public Normalizer {
 public:
  explicit UnicodeNormalizer(utf8proc_option_t options) : options_(options) {}
  void normalize(std::string& text) const override {
    // Pure ASCII is invariant under every normalization form; skip the allocation.
    bool ascii = true;
    for (const char c : text) ascii &= static_cast<unsigned char>(c) < 0x80;
    if (ascii) return;
    utf8proc_uint8_t* out = nullptr;
    const auto n = utf8proc_map(reinterpret_cast<const utf8proc_uint8_t*>(text.data()),
                                static_cast<utf8proc_ssize_t>(text.size()), &out, options_);
    if (n >= 0) text.assign(reinterpret_cast<const char*>(out), static_cast<size_t>(n));
    std::free(out);
  }

 private:
  utf8proc_option_t options_;
};

class PrependNormalizer final : public Normalizer {
 public:
  explicit PrependNormalizer(std::string prefix) : prefix_(std::move(prefix)) {}
  void normalize(std::string& text) const override {
    if (!text.empty()) text.insert(0, prefix_);
  }

 private:
  std::string prefix_;
};

class ReplaceNormalizer final : public Normalizer {
 public:
  ReplaceNormalizer(Pattern pattern, std::string content)
      : pattern_(std::move(pattern)), content_(std::move(content)) {}
  void normalize(std::string& text) const override { pattern_.replace_all(text, content_); }

 private:
  Pattern pattern_;
  std::string content_;
};

class LowercaseNormalizer final : public Normalizer {
 public:
  void normalize(std::string& text) const override {
    std::string out;
    out.reserve(text.size());
    size_t pos = 0;
    while (pos < text.size()) {
      const char32_t cp = utf8::next_code_point(text, pos);
      utf8::append_code_point(
          out, static_cast<char32_t>(utf8proc_tolower(static_cast<utf8proc_int32_t>(cp))));
    }
    text = std::move(out);
  }
};

class StripNormalizer final : public Normalizer {
 public:
  StripNormalizer(bool left, bool right) : left_(left), right_(right) {}
  void normalize(std::string& text) const override {
    size_t begin = 0;
    size_t end = text.size();
    if (left_) {
      while (begin < end) {
        size_t next = begin;
        if (!utf8::is_whitespace(utf8::next_code_point(text, next))) break;
        begin = next;
      }
    }
    if (right_) {
      while (end > begin) {
        size_t start = end - 1;
        while (start > begin && (static_cast<unsigned char>(text[start]) & 0xC0) == 0x80) --start;
        size_t probe = start;
        if (!utf8::is_whitespace(utf8::next_code_point(text, probe))) break;
        end = start;
      }
    }
    text = text.substr(begin, end - begin);
  }

 private:
  bool left_;
  bool right_;
};

class SequenceNormalizer final : public Normalizer {
 public:
  explicit SequenceNormalizer(std::vector<std::unique_ptr<Normalizer>> parts)
      : parts_(std::move(parts)) {}
  void normalize(std::string& text) const override {
    for (const auto& p : parts_) p->normalize(text);
  }

 private:
  std::vector<std::unique_ptr<Normalizer>> parts_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<Normalizer>> make_normalizer(const nlohmann::json& j,
                                                            const JsonPath& where) {
  if (j.is_null()) return std::unique_ptr<Normalizer>();
  auto type = where.get_type(j);
  if (!type.ok()) return type.status();
  const auto stable = static_cast<int>(UTF8PROC_STABLE);
  if (*type == "NFC") {
    return std::make_unique<UnicodeNormalizer>(
        static_cast<utf8proc_option_t>(stable | UTF8PROC_COMPOSE));
  }
  if (*type == "NFD") {
    return std::make_unique<UnicodeNormalizer>(
        static_cast<utf8proc_option_t>(stable | UTF8PROC_DECOMPOSE));
  }
  if (*type == "NFKC") {
    return std::make_unique<UnicodeNormalizer>(
        static_cast<utf8proc_option_t>(stable | UTF8PROC_COMPOSE | UTF8PROC_COMPAT));
  }
  if (*type == "NFKD") {
    return std::make_unique<UnicodeNormalizer>(
        static_cast<utf8proc_option_t>(stable | UTF8PROC_DECOMPOSE | UTF8PROC_COMPAT));
  }
  if (*type == "Prepend") {
    auto prefix = where.get_string(j, "prepend");
    if (!prefix.ok()) return prefix.status();
    return std::make_unique<PrependNormalizer>(std::move(*prefix));
  }
  if (*type == "Replace") {
    if (!j.contains("pattern")) return where.child("pattern").error("missing");
    auto pattern = Pattern::from_json(j["pattern"], where.child("pattern"));
    if (!pattern.ok()) return pattern.status();
    auto content = where.get_string(j, "content");
    if (!content.ok()) return content.status();
    return std::make_unique<ReplaceNormalizer>(std::move(*pattern), std::move(*content));
  }
  if (*type == "Lowercase") return std::make_unique<LowercaseNormalizer>();
  if (*type == "Strip") {
    auto left = where.get_bool(j, "strip_left", true);
    if (!left.ok()) return left.status();
    auto right = where.get_bool(j, "strip_right", true);
    if (!right.ok()) return right.status();
    return std::make_unique<StripNormalizer>(*left, *right);
  }
  if (*type == "Sequence") {
    const auto it = j.find("normalizers");
    if (it == j.end() || !it->is_array())
      return where.child("normalizers").error("expected an array");
    std::vector<std::unique_ptr<Normalizer>> parts;
    for (size_t i = 0; i < it->size(); ++i) {
      auto part = make_normalizer((*it)[i], where.child("normalizers").index(i));
      if (!part.ok()) return part.status();
      if (*part) parts.push_back(std::move(*part));
    }
    return std::make_unique<SequenceNormalizer>(std::move(parts));
  }
  return where.child("type").error(str_cat("unsupported normalizer type \"", *type,
                                           "\" (supported: NFC, NFD, NFKC, NFKD, Prepend, Replace, "
                                           "Lowercase, Strip, Sequence)"));
}

}  // namespace weft
