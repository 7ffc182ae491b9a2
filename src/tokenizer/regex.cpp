#include "tokenizer/regex.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include "tokenizer/utf8.h"

namespace weft {
namespace {

// One match-data block per thread, large enough for the whole-match offsets we read.
pcre2_match_data* thread_match_data() {
  struct Holder {
    pcre2_match_data* data = pcre2_match_data_create(1, nullptr);
    ~Holder() { pcre2_match_data_free(data); }
  };
  thread_local Holder holder;
  return holder.data;
}

}  // namespace

absl::StatusOr<std::shared_ptr<const Regex>> Regex::compile(std::string_view pattern,
                                                            const JsonPath& where) {
  int error_code = 0;
  PCRE2_SIZE error_offset = 0;
  pcre2_code* code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(),
                                   PCRE2_UTF | PCRE2_UCP, &error_code, &error_offset, nullptr);
  if (code == nullptr) {
    PCRE2_UCHAR message[256];
    pcre2_get_error_message(error_code, message, sizeof(message));
    return where.error(str_cat("invalid regex \"", pattern, "\" at offset ", error_offset, ": ",
                               reinterpret_cast<const char*>(message)));
  }
  const bool jit = pcre2_jit_compile(code, PCRE2_JIT_COMPLETE) == 0;
  return std::shared_ptr<const Regex>(new Regex(code, jit));
}

Regex::~Regex() { pcre2_code_free(static_cast<pcre2_code*>(code_)); }

void Regex::find_all(std::string_view text, std::vector<std::pair<size_t, size_t>>& out) const {
  auto* code = static_cast<pcre2_code*>(code_);
  pcre2_match_data* md = thread_match_data();
  const auto* subject = reinterpret_cast<PCRE2_SPTR>(text.data());
  size_t pos = 0;
  while (pos <= text.size()) {
    const int rc =
        jit_ ? pcre2_jit_match(code, subject, text.size(), pos, 0, md, nullptr)
             : pcre2_match(code, subject, text.size(), pos, PCRE2_NO_UTF_CHECK, md, nullptr);
    if (rc < 0) break;  // PCRE2_ERROR_NOMATCH, or a resource limit: treat the rest as unmatched
    const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(md);
    const size_t start = ov[0];
    const size_t end = ov[1];
    if (end > start) {
      out.emplace_back(start, end);
      pos = end;
    } else {
      // An empty match produces no piece; step over one character to make progress.
      if (start >= text.size()) break;
      pos = start + utf8::char_len(static_cast<unsigned char>(text[start]));
    }
  }
}

absl::StatusOr<Pattern> Pattern::from_json(const nlohmann::json& j, const JsonPath& where) {
  if (!j.is_object() || j.size() != 1) {
    return where.error("expected {\"String\": ...} or {\"Regex\": ...}");
  }
  Pattern p;
  if (j.contains("String")) {
    if (!j["String"].is_string()) return where.child("String").error("expected a string");
    p.literal_ = j["String"].get<std::string>();
    return p;
  }
  if (j.contains("Regex")) {
    if (!j["Regex"].is_string()) return where.child("Regex").error("expected a string");
    auto re = Regex::compile(j["Regex"].get<std::string>(), where.child("Regex"));
    if (!re.ok()) return re.status();
    p.regex_ = std::move(*re);
    return p;
  }
  return where.error("expected {\"String\": ...} or {\"Regex\": ...}");
}

Pattern Pattern::literal(std::string s) {
  Pattern p;
  p.literal_ = std::move(s);
  return p;
}

void Pattern::replace_all(std::string& text, std::string_view content) const {
  std::vector<std::pair<size_t, size_t>> matches;
  find_all(text, matches);
  if (matches.empty()) return;
  std::string out;
  out.reserve(text.size());
  size_t prev = 0;
  for (const auto& [s, e] : matches) {
    out.append(text, prev, s - prev);
    out.append(content);
    prev = e;
  }
  out.append(text, prev, std::string::npos);
  text = std::move(out);
}

void Pattern::find_all(std::string_view text, std::vector<std::pair<size_t, size_t>>& out) const {
  if (regex_) {
    regex_->find_all(text, out);
    return;
  }
  if (literal_.empty()) return;
  size_t pos = 0;
  while ((pos = text.find(literal_, pos)) != std::string_view::npos) {
    out.emplace_back(pos, pos + literal_.size());
    pos += literal_.size();
  }
}

}  // namespace weft
