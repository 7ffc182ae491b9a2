#include "tool_calls/tool_call_parser.h"

#include <algorithm>

#include "nlohmann/json.hpp"

namespace weft {
namespace {

using Kind = ToolCallDelta::Kind;
using ojson = nlohmann::ordered_json;

constexpr std::string_view kWhitespace = " \t\r\n";
// A call start longer than this without being recognised is read whole instead (bounds the
// header matching, which rescans the object's start).
constexpr size_t kMaxHeaderBytes = 4096;
// Mistral's name form, [TOOL_CALLS]name[CALL_ID]id[ARGS]{...}: function names are 1..64 of
// [A-Za-z0-9_-] (tool_request.h); call ids are alphanumeric (9 in Mistral's templates).
constexpr std::string_view kArgsMarker = "[ARGS]";
constexpr std::string_view kCallIdMarker = "[CALL_ID]";
constexpr size_t kMaxNameBytes = 64;
constexpr size_t kMaxCallIdBytes = 64;

bool starts_with(std::string_view text, std::string_view prefix) { return text.substr(0, prefix.size()) == prefix; }

bool is_name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '-';
}
bool is_call_id_char(char c) { return is_name_char(c) && c != '_' && c != '-'; }

// How `text` relates to `marker`: it starts with it (kMatch), is a proper prefix of it
// (kIncomplete), or neither (kMismatch).
CallHeaderMatch match_marker(std::string_view text, std::string_view marker) {
  if (starts_with(text, marker)) return CallHeaderMatch::kMatch;
  if (text.size() < marker.size() && starts_with(marker, text)) return CallHeaderMatch::kIncomplete;
  return CallHeaderMatch::kMismatch;
}

// The longest suffix of `text` that is a proper prefix of `marker`.
size_t marker_prefix_tail(std::string_view text, std::string_view marker) {
  for (size_t n = std::min(text.size(), marker.size() - 1); n > 0; --n) {
    if (text.substr(text.size() - n) == marker.substr(0, n)) return n;
  }
  return 0;
}

void add(std::vector<ToolCallDelta>& out, Kind kind, int call, std::string_view text) {
  if ((kind == Kind::kContent || kind == Kind::kArguments) && !out.empty() && out.back().kind == kind &&
      out.back().call == call) {
    out.back().text += text;
    return;
  }
  out.push_back(ToolCallDelta{kind, call, std::string(text)});
}

// The arguments of a complete call object, or null when it is not a call.
const ojson* call_arguments(const ojson& call, const ojson& empty) {
  if (!call.is_object()) return nullptr;
  auto name = call.find("name");
  if (name == call.end() || !name->is_string()) return nullptr;
  for (const char* key : {"arguments", "parameters"}) {
    auto it = call.find(key);
    if (it != call.end()) return it->is_object() ? &*it : nullptr;
  }
  return &empty;
}

}  // namespace

ToolCallStreamParser::ToolCallStreamParser(ToolCallFormat format, bool whole)
    : format_(format), whole_(whole), state_(format == ToolCallFormat::kLlama3Json ? State::kStart : State::kText) {}

void ToolCallStreamParser::push(std::string_view text, std::vector<ToolCallDelta>& out) {
  pending_.append(text);
  run(/*at_end=*/false, out);
}

void ToolCallStreamParser::finish(std::vector<ToolCallDelta>& out) {
  run(/*at_end=*/true, out);
  if (state_ == State::kAfterMarker || state_ == State::kInCall || state_ == State::kMistralName ||
      state_ == State::kMistralId || state_ == State::kMistralArgs) {
    give_up(out);  // a call that never ended
    run(/*at_end=*/true, out);
  }
  // Whitespace after the last call goes; a reply without calls keeps its own.
  if (num_calls_ == 0 && !held_ws_.empty()) add(out, Kind::kContent, -1, held_ws_);
  held_ws_.clear();
}

void ToolCallStreamParser::run(bool at_end, std::vector<ToolCallDelta>& out) {
  for (bool progressed = true; progressed;) {
    switch (state_) {
      case State::kStart:
        progressed = step_start(at_end, out);
        break;
      case State::kText:
        progressed = step_text(at_end, out);
        break;
      case State::kAfterMarker:
        progressed = step_after_marker(at_end, out);
        break;
      case State::kMistralName:
        progressed = step_mistral_name(at_end, out);
        break;
      case State::kMistralId:
        progressed = step_mistral_id(at_end, out);
        break;
      case State::kMistralArgs:
        progressed = step_mistral_args(at_end, out);
        break;
      case State::kInCall:
        progressed = step_in_call(out);
        break;
      case State::kAfterCall:
        progressed = step_after_call(at_end, out);
        break;
      case State::kPlain:
        content(pending_, out);
        pending_.clear();
        progressed = false;
        break;
    }
  }
}

void ToolCallStreamParser::content(std::string_view text, std::vector<ToolCallDelta>& out) {
  const size_t last = text.find_last_not_of(kWhitespace);
  if (last == std::string_view::npos) {
    held_ws_.append(text);
    return;
  }
  add(out, Kind::kContent, -1, held_ws_ + std::string(text.substr(0, last + 1)));
  held_ws_.assign(text.substr(last + 1));
}

void ToolCallStreamParser::consume(size_t n, bool into_region) {
  if (into_region) region_.append(pending_, 0, n);
  pending_.erase(0, n);
}

void ToolCallStreamParser::open_region(size_t marker_len) {
  region_ws_ = std::move(held_ws_);  // dropped if a call follows, content again if not
  held_ws_.clear();
  region_.clear();
  list_open_ = false;
  name_.clear();
  call_id_.clear();
  consume(marker_len, /*into_region=*/true);
  state_ = State::kAfterMarker;
}

void ToolCallStreamParser::begin_object() {
  obj_.clear();
  scanner_ = JsonObjectScanner();
  committed_ = false;
  header_failed_ = false;
  args_only_ = false;
  in_arguments_ = false;
  obj_region_offset_ = region_.size();
  obj_sent_ = 0;
  state_ = State::kInCall;
}

bool ToolCallStreamParser::step_start(bool at_end, std::vector<ToolCallDelta>& out) {
  const size_t i = pending_.find_first_not_of(kWhitespace);
  if (i == std::string::npos) {
    if (at_end) state_ = State::kPlain;
    return at_end;
  }
  const std::string_view rest = std::string_view(pending_).substr(i);
  const std::string_view marker = tool_call_start_marker(format_);
  const bool marker_here = starts_with(rest, marker);
  if (!marker_here && rest.size() < marker.size() && starts_with(marker, rest) && !at_end) return false;
  if (marker_here || rest.front() == '{') {
    content(std::string_view(pending_).substr(0, i), out);
    consume(i, /*into_region=*/false);
    open_region(marker_here ? marker.size() : 0);
  } else {
    state_ = State::kPlain;  // Llama 3 calls open the reply or are not there
  }
  return true;
}

bool ToolCallStreamParser::step_text(bool at_end, std::vector<ToolCallDelta>& out) {
  const std::string_view marker = tool_call_start_marker(format_);
  const size_t pos = pending_.find(marker);
  if (pos != std::string::npos) {
    content(std::string_view(pending_).substr(0, pos), out);
    consume(pos, /*into_region=*/false);
    open_region(marker.size());
    return true;
  }
  const size_t keep = at_end ? 0 : marker_prefix_tail(pending_, marker);
  const size_t ready = pending_.size() - keep;
  if (ready > 0) {
    content(std::string_view(pending_).substr(0, ready), out);
    consume(ready, /*into_region=*/false);
  }
  return false;
}

bool ToolCallStreamParser::step_after_marker(bool at_end, std::vector<ToolCallDelta>& out) {
  const size_t i = std::min(pending_.find_first_not_of(kWhitespace), pending_.size());
  consume(i, /*into_region=*/true);
  if (pending_.empty()) {
    if (!at_end) return false;
    give_up(out);
    return true;
  }
  const char c = pending_.front();
  if (is_mistral(format_) && !list_open_) {
    if (c == '[') {  // [TOOL_CALLS][{"name": ..., "arguments": {...}}, ...]
      list_open_ = true;
      consume(1, /*into_region=*/true);
    } else {  // [TOOL_CALLS]name[ARGS]{...}
      state_ = State::kMistralName;
    }
    return true;
  }
  if (c != '{') {
    give_up(out);
    return true;
  }
  begin_object();
  return true;
}

bool ToolCallStreamParser::step_mistral_name(bool at_end, std::vector<ToolCallDelta>& out) {
  size_t n = 0;
  while (n < pending_.size() && is_name_char(pending_[n])) ++n;
  name_.append(pending_, 0, n);
  consume(n, /*into_region=*/true);
  if (name_.size() > kMaxNameBytes) {
    give_up(out);
    return true;
  }
  if (pending_.empty()) {
    if (!at_end) return false;
    give_up(out);
    return true;
  }
  const CallHeaderMatch args = match_marker(pending_, kArgsMarker);
  const CallHeaderMatch id = match_marker(pending_, kCallIdMarker);
  if (args == CallHeaderMatch::kMismatch && id == CallHeaderMatch::kMismatch) {
    give_up(out);  // a character no function name has
    return true;
  }
  if (args != CallHeaderMatch::kMatch && id != CallHeaderMatch::kMatch) {
    if (!at_end) return false;  // a marker split across pieces
    give_up(out);
    return true;
  }
  if (name_.empty()) {
    give_up(out);
    return true;
  }
  consume(args == CallHeaderMatch::kMatch ? kArgsMarker.size() : kCallIdMarker.size(),
          /*into_region=*/true);
  state_ = args == CallHeaderMatch::kMatch ? State::kMistralArgs : State::kMistralId;
  return true;
}

bool ToolCallStreamParser::step_mistral_id(bool at_end, std::vector<ToolCallDelta>& out) {
  // The id goes out with the call's start: a client returns it in the tool message, and Mistral
  // templates check its form (9 letters and digits).
  size_t n = 0;
  while (n < pending_.size() && is_call_id_char(pending_[n])) ++n;
  call_id_.append(pending_, 0, n);
  consume(n, /*into_region=*/true);
  const size_t id_bytes = call_id_.size();
  if (id_bytes > kMaxCallIdBytes) {
    give_up(out);
    return true;
  }
  if (pending_.empty()) {
    if (!at_end) return false;
    give_up(out);
    return true;
  }
  const CallHeaderMatch args = match_marker(pending_, kArgsMarker);
  if (args == CallHeaderMatch::kIncomplete && !at_end) return false;
  if (args != CallHeaderMatch::kMatch || id_bytes == 0) {
    give_up(out);
    return true;
  }
  consume(kArgsMarker.size(), /*into_region=*/true);
  state_ = State::kMistralArgs;
  return true;
}

bool ToolCallStreamParser::step_mistral_args(bool at_end, std::vector<ToolCallDelta>& out) {
  const size_t i = std::min(pending_.find_first_not_of(kWhitespace), pending_.size());
  consume(i, /*into_region=*/true);
  if (pending_.empty()) {
    if (!at_end) return false;
    give_up(out);
    return true;
  }
  if (pending_.front() != '{') {
    give_up(out);  // the arguments are not an object
    return true;
  }
  begin_object();
  args_only_ = true;
  committed_ = true;
  in_arguments_ = true;
  call_index_ = num_calls_++;
  add(out, Kind::kCallStart, call_index_, name_);
  out.back().id = call_id_;
  return true;
}

bool ToolCallStreamParser::step_in_call(std::vector<ToolCallDelta>& out) {
  if (pending_.empty()) return false;
  std::string piece;  // of the arguments, sent at the end of this step
  size_t n = 0;
  bool closed = false;
  while (n < pending_.size() && !closed) {
    const char c = pending_[n++];
    obj_.push_back(c);
    closed = scanner_.feed(c);
    if (in_arguments_) {
      piece.push_back(c);
      obj_sent_ = obj_.size();
      // The '}' that brings the nesting back to the call object's ends the arguments.
      if (!args_only_ && scanner_.depth() == 1 && !scanner_.in_string()) in_arguments_ = false;
    } else if (!committed_ && !header_failed_) {
      CallHeader header;
      const CallHeaderMatch m = match_call_header(obj_, header);
      if (m == CallHeaderMatch::kMatch) {
        committed_ = true;
        call_index_ = num_calls_++;
        add(out, Kind::kCallStart, call_index_, header.name);
        piece = obj_.substr(header.arguments_start);
        obj_sent_ = obj_.size();
        in_arguments_ = true;
      } else if (m == CallHeaderMatch::kMismatch || obj_.size() > kMaxHeaderBytes) {
        header_failed_ = true;
      }
    }
  }
  consume(n, /*into_region=*/true);
  if (!piece.empty()) add(out, Kind::kArguments, call_index_, piece);
  if (closed) close_call(out);
  return true;
}

void ToolCallStreamParser::close_call(std::vector<ToolCallDelta>& out) {
  const ojson call = ojson::parse(obj_, nullptr, /*allow_exceptions=*/false);
  if (args_only_) {  // obj_ is the arguments, all of it sent
    in_arguments_ = false;
    if (!call.is_object()) {
      give_up(out);
      return;
    }
    committed_ = false;
    region_.clear();
    region_ws_.clear();
    state_ = State::kAfterCall;
    return;
  }
  static const ojson kEmpty = ojson::object();
  const ojson* arguments = call_arguments(call, kEmpty);
  if (arguments == nullptr || (committed_ && in_arguments_)) {
    give_up(out);
    return;
  }
  if (!committed_) {
    call_index_ = num_calls_++;
    add(out, Kind::kCallStart, call_index_, call["name"].get<std::string>());
    add(out, Kind::kArguments, call_index_, arguments->dump(-1, ' ', false, ojson::error_handler_t::replace));
  }
  committed_ = false;
  region_.clear();
  region_ws_.clear();
  state_ = State::kAfterCall;
}

bool ToolCallStreamParser::step_after_call(bool at_end, std::vector<ToolCallDelta>& out) {
  if (is_mistral(format_) && !list_open_) {
    // Mistral's name form has no list and no closing tag: the next call opens with its own
    // [TOOL_CALLS], looked for as text. Whitespace before it or at the end goes as content's does.
    state_ = State::kText;
    return true;
  }
  const size_t i = pending_.find_first_not_of(kWhitespace);
  if (i == std::string::npos) {
    consume(pending_.size(), /*into_region=*/true);  // between or after calls: dropped
    return false;
  }
  const std::string_view rest = std::string_view(pending_).substr(i);
  switch (format_) {
    case ToolCallFormat::kHermes: {
      constexpr std::string_view kEnd = "</tool_call>";
      if (starts_with(rest, kEnd)) {
        consume(i + kEnd.size(), /*into_region=*/false);
      } else if (rest.size() < kEnd.size() && starts_with(kEnd, rest)) {
        if (!at_end) return false;
        consume(pending_.size(), /*into_region=*/false);  // a reply cut inside the closing tag
      } else {
        consume(i, /*into_region=*/false);  // no closing tag: the call stands, text follows
      }
      region_.clear();
      state_ = State::kText;
      return true;
    }
    case ToolCallFormat::kMistral:
    case ToolCallFormat::kMistralNamed:
      // The list ends at its ']' (another [TOOL_CALLS] may follow).
      if (rest.front() == ',') {
        consume(i + 1, /*into_region=*/true);
        state_ = State::kAfterMarker;
      } else {
        consume(i + (rest.front() == ']' ? 1 : 0), /*into_region=*/false);
        region_.clear();
        state_ = State::kText;
      }
      return true;
    case ToolCallFormat::kLlama3Json:
      if (rest.front() == ';') {
        consume(i + 1, /*into_region=*/true);
        state_ = State::kAfterMarker;
      } else {
        consume(i, /*into_region=*/false);
        region_.clear();
        state_ = State::kPlain;
      }
      return true;
  }
  (void)out;
  return false;
}

void ToolCallStreamParser::give_up(std::vector<ToolCallDelta>& out) {
  std::string text;
  if (committed_ && !whole_) {
    // Streamed: the header and arguments that went out stay; the rest of the call is content.
    text = region_.substr(std::min(region_.size(), obj_region_offset_ + obj_sent_));
  } else {
    if (committed_) {
      add(out, Kind::kCallWithdrawn, call_index_, "");
      --num_calls_;
    }
    text = region_ws_ + region_;
  }
  committed_ = false;
  in_arguments_ = false;
  region_.clear();
  region_ws_.clear();
  content(text, out);
  state_ = State::kPlain;
}

ParsedToolCalls parse_tool_calls(ToolCallFormat format, std::string_view text) {
  ToolCallStreamParser parser(format, /*whole=*/true);
  std::vector<ToolCallDelta> deltas;
  parser.push(text, deltas);
  parser.finish(deltas);
  ParsedToolCalls out;
  for (ToolCallDelta& d : deltas) {
    switch (d.kind) {
      case Kind::kContent:
        out.content += d.text;
        break;
      case Kind::kCallStart:
        out.calls.resize(static_cast<size_t>(d.call) + 1);
        out.calls[static_cast<size_t>(d.call)].name = std::move(d.text);
        out.calls[static_cast<size_t>(d.call)].id = std::move(d.id);
        break;
      case Kind::kArguments:
        out.calls[static_cast<size_t>(d.call)].arguments += d.text;
        break;
      case Kind::kCallWithdrawn:
        out.calls.resize(static_cast<size_t>(d.call));
        break;
    }
  }
  return out;
}

}  // namespace weft
