// Fuzzes the tool-call parsers (src/tool_calls/tool_call_parser.h) with model-like replies.
// Input byte 0 picks the format; byte 1 seeds where the rest is split into streamed pieces.
// Properties: no crash; every call of the whole reply has arguments that are a JSON object;
// when no call had to be withdrawn, the streamed deltas give the same content and calls as the
// whole reply.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "nlohmann/json.hpp"
#include "tool_calls/tool_call_parser.h"

namespace {

using weft::ToolCallDelta;

struct Result {
  std::string content;
  std::vector<std::pair<std::string, std::string>> calls;
  bool withdrawn = false;
};

Result run(weft::ToolCallFormat format, bool whole, const std::vector<std::string_view>& pieces) {
  weft::ToolCallStreamParser parser(format, whole);
  std::vector<ToolCallDelta> deltas;
  for (std::string_view p : pieces) parser.push(p, deltas);
  parser.finish(deltas);
  Result r;
  for (const ToolCallDelta& d : deltas) {
    switch (d.kind) {
      case ToolCallDelta::Kind::kContent:
        r.content += d.text;
        break;
      case ToolCallDelta::Kind::kCallStart:
        if (d.call != static_cast<int>(r.calls.size())) std::abort();
        r.calls.push_back({d.text, ""});
        break;
      case ToolCallDelta::Kind::kArguments:
        if (d.call + 1 != static_cast<int>(r.calls.size())) std::abort();
        r.calls.back().second += d.text;
        break;
      case ToolCallDelta::Kind::kCallWithdrawn:
        if (!whole || d.call + 1 != static_cast<int>(r.calls.size())) std::abort();
        r.calls.pop_back();
        r.withdrawn = true;
        break;
    }
  }
  if (parser.num_calls() != static_cast<int>(r.calls.size())) std::abort();
  return r;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  const auto format = static_cast<weft::ToolCallFormat>(data[0] % 3);
  uint32_t state = data[1] * 2654435761u + 1;
  const std::string_view text(reinterpret_cast<const char*>(data + 2), size - 2);
  const Result whole = run(format, /*whole=*/true, {text});
  for (const auto& [name, arguments] : whole.calls) {
    if (!nlohmann::json::parse(arguments, nullptr, /*allow_exceptions=*/false).is_object()) std::abort();
  }
  std::vector<std::string_view> pieces;
  for (size_t i = 0; i < text.size();) {
    state = state * 1103515245u + 12345u;
    const size_t n = std::min<size_t>(text.size() - i, 1 + (state >> 16) % 9);
    pieces.push_back(text.substr(i, n));
    i += n;
  }
  const Result streamed = run(format, /*whole=*/false, pieces);
  if (!whole.withdrawn && (streamed.content != whole.content || streamed.calls != whole.calls)) std::abort();
  return 0;
}
