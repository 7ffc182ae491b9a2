#include "tool_calls/json_object_scanner.h"

#include "nlohmann/json.hpp"

namespace weft {

bool JsonObjectScanner::feed(char c) {
  if (in_string_) {
    if (escape_) {
      escape_ = false;
    } else if (c == '\\') {
      escape_ = true;
    } else if (c == '"') {
      in_string_ = false;
    }
    return false;
  }
  if (c == '"') {
    in_string_ = true;
  } else if (c == '{' || c == '[') {
    ++depth_;
  } else if (c == '}' || c == ']') {
    --depth_;
    return depth_ <= 0;
  }
  return false;
}

namespace {

bool is_ws(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

class HeaderCursor {
 public:
  explicit HeaderCursor(std::string_view text) : text_(text) {}

  // Each step: kMatch and advanced, or the verdict for the whole header.
  CallHeaderMatch ws() {
    while (pos_ < text_.size() && is_ws(text_[pos_])) ++pos_;
    return pos_ < text_.size() ? CallHeaderMatch::kMatch : CallHeaderMatch::kIncomplete;
  }
  CallHeaderMatch literal(std::string_view lit) {
    const std::string_view rest = text_.substr(pos_);
    const size_t n = std::min(rest.size(), lit.size());
    if (rest.substr(0, n) != lit.substr(0, n)) return CallHeaderMatch::kMismatch;
    if (n < lit.size()) return CallHeaderMatch::kIncomplete;
    pos_ += lit.size();
    return CallHeaderMatch::kMatch;
  }
  // One of two literals.
  CallHeaderMatch either(std::string_view a, std::string_view b) {
    const size_t at = pos_;
    const CallHeaderMatch first = literal(a);
    if (first == CallHeaderMatch::kMatch) return first;
    pos_ = at;
    const CallHeaderMatch second = literal(b);
    if (second == CallHeaderMatch::kMatch) return second;
    pos_ = at;
    return first == CallHeaderMatch::kIncomplete || second == CallHeaderMatch::kIncomplete
               ? CallHeaderMatch::kIncomplete
               : CallHeaderMatch::kMismatch;
  }
  CallHeaderMatch string(std::string& out) {
    if (text_[pos_] != '"') return CallHeaderMatch::kMismatch;
    bool escape = false;
    for (size_t i = pos_ + 1; i < text_.size(); ++i) {
      if (escape) {
        escape = false;
      } else if (text_[i] == '\\') {
        escape = true;
      } else if (text_[i] == '"') {
        auto decoded = nlohmann::json::parse(text_.substr(pos_, i + 1 - pos_), nullptr, /*allow_exceptions=*/false);
        if (!decoded.is_string()) return CallHeaderMatch::kMismatch;
        out = decoded.get<std::string>();
        pos_ = i + 1;
        return CallHeaderMatch::kMatch;
      }
    }
    return CallHeaderMatch::kIncomplete;
  }
  size_t pos() const { return pos_; }

 private:
  std::string_view text_;
  size_t pos_ = 0;
};

}  // namespace

CallHeaderMatch match_call_header(std::string_view text, CallHeader& out) {
  HeaderCursor c(text);
  std::string name;
  const auto steps = {
      +[](HeaderCursor& h, std::string&) { return h.literal("{"); },
      +[](HeaderCursor& h, std::string&) { return h.ws(); },
      +[](HeaderCursor& h, std::string&) { return h.literal("\"name\""); },
      +[](HeaderCursor& h, std::string&) { return h.ws(); },
      +[](HeaderCursor& h, std::string&) { return h.literal(":"); },
      +[](HeaderCursor& h, std::string&) { return h.ws(); },
      +[](HeaderCursor& h, std::string& n) { return h.string(n); },
      +[](HeaderCursor& h, std::string&) { return h.ws(); },
      +[](HeaderCursor& h, std::string&) { return h.literal(","); },
      +[](HeaderCursor& h, std::string&) { return h.ws(); },
      +[](HeaderCursor& h, std::string&) { return h.either("\"arguments\"", "\"parameters\""); },
      +[](HeaderCursor& h, std::string&) { return h.ws(); },
      +[](HeaderCursor& h, std::string&) { return h.literal(":"); },
      +[](HeaderCursor& h, std::string&) { return h.ws(); },
      +[](HeaderCursor& h, std::string&) { return h.literal("{"); },
  };
  for (auto step : steps) {
    const CallHeaderMatch m = step(c, name);
    if (m != CallHeaderMatch::kMatch) return m;
  }
  out.name = std::move(name);
  out.arguments_start = c.pos() - 1;
  return CallHeaderMatch::kMatch;
}

}  // namespace weft
