#include "tokenizer/decoders.h"

#include <vector>

#include "tokenizer/byte_level.h"
#include "tokenizer/regex.h"
#include "tokenizer/utf8.h"

namespace weft {
namespace {

class ByteLevelDecoder final : public Decoder {
 public:
  void decode_chain(std::vector<std::string>& tokens) const override {
    std::string bytes;
    for (const auto& t : tokens) {
      // Tokens outside the byte alphabet (e.g. added tokens with non-Latin-1 text) pass through.
      if (!byte_level::decode_token(t, bytes)) bytes.append(t);
    }
    tokens.assign(1, utf8::from_bytes_lossy(bytes));
  }
  void decode_token_bytes(std::string& token, bool& fused) const override {
    std::string bytes;
    if (byte_level::decode_token(token, bytes)) token = std::move(bytes);
    fused = true;
  }
};

class ReplaceDecoder final : public Decoder {
 public:
  ReplaceDecoder(Pattern pattern, std::string content)
      : pattern_(std::move(pattern)), content_(std::move(content)) {}
  void decode_chain(std::vector<std::string>& tokens) const override {
    for (auto& t : tokens) pattern_.replace_all(t, content_);
  }
  void decode_token_bytes(std::string& token, bool& fused) const override {
    pattern_.replace_all(token, content_);
  }

 private:
  Pattern pattern_;
  std::string content_;
};

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

// The byte a "<0xHH>" token stands for, or -1.
int fallback_byte(const std::string& t) {
  if (t.size() == 6 && t.compare(0, 3, "<0x") == 0 && t[5] == '>' && hex_digit(t[3]) >= 0 &&
      hex_digit(t[4]) >= 0) {
    return hex_digit(t[3]) * 16 + hex_digit(t[4]);
  }
  return -1;
}

class ByteFallbackDecoder final : public Decoder {
 public:
  void decode_chain(std::vector<std::string>& tokens) const override {
    std::vector<std::string> out;
    std::string pending;
    auto flush = [&] {
      if (pending.empty()) return;
      if (utf8::is_valid(pending)) {
        out.push_back(pending);
      } else {
        // tokenizers emits one U+FFFD per byte when a byte run is not valid UTF-8.
        for (size_t i = 0; i < pending.size(); ++i) out.emplace_back(utf8::kReplacementUtf8);
      }
      pending.clear();
    };
    for (auto& t : tokens) {
      if (const int byte = fallback_byte(t); byte >= 0) {
        pending.push_back(static_cast<char>(byte));
        continue;
      }
      flush();
      out.push_back(std::move(t));
    }
    flush();
    tokens = std::move(out);
  }
  void decode_token_bytes(std::string& token, bool& fused) const override {
    if (const int byte = fallback_byte(token); byte >= 0) token.assign(1, static_cast<char>(byte));
  }
};

class FuseDecoder final : public Decoder {
 public:
  void decode_chain(std::vector<std::string>& tokens) const override {
    std::string all;
    for (const auto& t : tokens) all.append(t);
    tokens.assign(1, std::move(all));
  }
  void decode_token_bytes(std::string& token, bool& fused) const override { fused = true; }
};

class StripDecoder final : public Decoder {
 public:
  StripDecoder(char32_t content, size_t start, size_t stop)
      : content_(content), start_(start), stop_(stop) {}
  void decode_chain(std::vector<std::string>& tokens) const override {
    for (auto& t : tokens) strip(t);
  }
  // Once the tokens are one text, Strip acts on its ends, which a mid-sequence token is not.
  void decode_token_bytes(std::string& token, bool& fused) const override {
    if (!fused) strip(token);
  }

 private:
  void strip(std::string& t) const {
    std::vector<size_t> starts;  // byte offset of each code point
    std::vector<char32_t> cps;
    size_t pos = 0;
    while (pos < t.size()) {
      starts.push_back(pos);
      cps.push_back(utf8::next_code_point(t, pos));
    }
    size_t begin = 0;
    for (size_t i = 0; i < start_ && i < cps.size() && cps[i] == content_; ++i) begin = i + 1;
    size_t end = cps.size();
    for (size_t i = 0; i < stop_ && i < cps.size(); ++i) {
      const size_t index = cps.size() - i - 1;
      if (cps[index] != content_) break;
      end = index;
    }
    if (end < begin) end = begin;
    const size_t b = begin < cps.size() ? starts[begin] : t.size();
    const size_t e = end < cps.size() ? starts[end] : t.size();
    t = t.substr(b, e - b);
  }

  char32_t content_;
  size_t start_;
  size_t stop_;
};

class MetaspaceDecoder final : public Decoder {
 public:
  MetaspaceDecoder(std::string replacement, bool prepend)
      : replacement_(std::move(replacement)), prepend_(prepend) {}
  void decode_chain(std::vector<std::string>& tokens) const override {
    for (size_t i = 0; i < tokens.size(); ++i) {
      // As in tokenizers: in the first token every replacement character is dropped when a
      // prefix was prepended at encode time; elsewhere each one becomes a space.
      const std::string_view with =
          (i == 0 && prepend_) ? std::string_view() : std::string_view(" ");
      std::string out;
      size_t prev = 0;
      size_t pos;
      while ((pos = tokens[i].find(replacement_, prev)) != std::string::npos) {
        out.append(tokens[i], prev, pos - prev);
        out.append(with);
        prev = pos + replacement_.size();
      }
      out.append(tokens[i], prev, std::string::npos);
      tokens[i] = std::move(out);
    }
  }
  // Mid-sequence every replacement character is a space (the dropped prefix is the text's first).
  void decode_token_bytes(std::string& token, bool& fused) const override {
    std::string out;
    size_t prev = 0;
    size_t pos;
    while ((pos = token.find(replacement_, prev)) != std::string::npos) {
      out.append(token, prev, pos - prev);
      out.push_back(' ');
      prev = pos + replacement_.size();
    }
    out.append(token, prev, std::string::npos);
    token = std::move(out);
  }

 private:
  std::string replacement_;
  bool prepend_;
};

class SequenceDecoder final : public Decoder {
 public:
  explicit SequenceDecoder(std::vector<std::unique_ptr<Decoder>> parts)
      : parts_(std::move(parts)) {}
  void decode_chain(std::vector<std::string>& tokens) const override {
    for (const auto& p : parts_) p->decode_chain(tokens);
  }
  void decode_token_bytes(std::string& token, bool& fused) const override {
    for (const auto& p : parts_) p->decode_token_bytes(token, fused);
  }

 private:
  std::vector<std::unique_ptr<Decoder>> parts_;
};

absl::StatusOr<size_t> get_count(const nlohmann::json& j, const JsonPath& where,
                                 std::string_view key) {
  const auto it = j.find(key);
  if (it == j.end() || it->is_null()) return size_t{0};
  if (!it->is_number_unsigned() && !(it->is_number_integer() && it->get<int64_t>() >= 0)) {
    return where.child(key).error("expected a non-negative integer");
  }
  return static_cast<size_t>(it->get<int64_t>());
}

}  // namespace

absl::StatusOr<std::unique_ptr<Decoder>> make_decoder(const nlohmann::json& j,
                                                      const JsonPath& where) {
  if (j.is_null()) return std::unique_ptr<Decoder>();
  auto type = where.get_type(j);
  if (!type.ok()) return type.status();
  if (*type == "ByteLevel") return std::make_unique<ByteLevelDecoder>();
  if (*type == "ByteFallback") return std::make_unique<ByteFallbackDecoder>();
  if (*type == "Fuse") return std::make_unique<FuseDecoder>();
  if (*type == "Replace") {
    if (!j.contains("pattern")) return where.child("pattern").error("missing");
    auto pattern = Pattern::from_json(j["pattern"], where.child("pattern"));
    if (!pattern.ok()) return pattern.status();
    auto content = where.get_string(j, "content");
    if (!content.ok()) return content.status();
    return std::make_unique<ReplaceDecoder>(std::move(*pattern), std::move(*content));
  }
  if (*type == "Strip") {
    auto content = where.get_string(j, "content");
    if (!content.ok()) return content.status();
    if (content->empty() ||
        utf8::char_len(static_cast<unsigned char>((*content)[0])) != content->size()) {
      return where.child("content").error("expected exactly one character");
    }
    size_t pos = 0;
    const char32_t cp = utf8::next_code_point(*content, pos);
    auto start = get_count(j, where, "start");
    if (!start.ok()) return start.status();
    auto stop = get_count(j, where, "stop");
    if (!stop.ok()) return stop.status();
    return std::make_unique<StripDecoder>(cp, *start, *stop);
  }
  if (*type == "Metaspace") {
    auto replacement = where.get_string(j, "replacement");
    if (!replacement.ok()) return replacement.status();
    bool prepend = true;
    auto scheme = where.get_optional_string(j, "prepend_scheme");
    if (!scheme.ok()) return scheme.status();
    if (scheme->has_value()) {
      prepend = **scheme != "never";
    } else {
      auto add = where.get_bool(j, "add_prefix_space", true);
      if (!add.ok()) return add.status();
      prepend = *add;
    }
    return std::make_unique<MetaspaceDecoder>(std::move(*replacement), prepend);
  }
  if (*type == "Sequence") {
    const auto it = j.find("decoders");
    if (it == j.end() || !it->is_array()) return where.child("decoders").error("expected an array");
    std::vector<std::unique_ptr<Decoder>> parts;
    for (size_t i = 0; i < it->size(); ++i) {
      auto part = make_decoder((*it)[i], where.child("decoders").index(i));
      if (!part.ok()) return part.status();
      if (*part) parts.push_back(std::move(*part));
    }
    return std::make_unique<SequenceDecoder>(std::move(parts));
  }
  return where.child("type").error(str_cat(
      "unsupported decoder type \"", *type,
      "\" (supported: ByteLevel, Replace, ByteFallback, Fuse, Strip, Metaspace, Sequence)"));
}

}  // namespace weft
