// A model's reply text -> the tool calls in it and the text around them (content), for one of
// the formats of tool_call_format.h. Incremental: text arrives in pieces (one per engine step,
// split anywhere, markers and UTF-8 included) and comes out as deltas the moment it is known:
//   - content until a tool-call marker starts; a tail that may be the start of a marker (a
//     "<tool_" of "<tool_call>", a leading "{" of a Llama 3 call) is held back until it is known;
//     whitespace right before a call, between calls and after the last call is dropped (content
//     that is only such whitespace disappears);
//   - per call, kCallStart (its index and function name) once the call's start
//     `{"name": "...", "arguments": {` is read (Mistral's name form: `[TOOL_CALLS]name[ARGS]{`,
//     or `[TOOL_CALLS]name[CALL_ID]id[ARGS]{`, the id in the delta), then kArguments pieces: the
//     arguments object's text exactly as the model wrote it, so the pieces of a call concatenate
//     to valid JSON.
//     A call whose first key is not "name" is held until its object is complete and then comes
//     out as kCallStart plus the whole arguments (re-serialized compactly).
//   - text the parser cannot read as a call (a marker followed by something that is not a call
//     object, JSON that does not parse, a call that never ends) is content, from its marker on.
// A call that turns out malformed after its kCallStart went out: with `whole` (the whole reply
// is parsed before anything is sent: non-streamed responses) it is withdrawn (kCallWithdrawn)
// and all of its text becomes content; streamed, what went out stays and the call's text not
// yet sent becomes content. After a malformed call the rest of the reply is content.
// Llama 3 JSON calls are only read at the start of a reply (as vLLM's llama3_json parser does).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "tool_calls/json_object_scanner.h"
#include "tool_calls/tool_call_format.h"

namespace weft {

struct ToolCallDelta {
  enum class Kind { kContent, kCallStart, kArguments, kCallWithdrawn };
  Kind kind = Kind::kContent;
  int call = -1;     // the call's index (0, 1, ...) for every kind but kContent
  std::string text;  // kContent: text; kCallStart: the function name; kArguments: a piece
  std::string id;    // kCallStart: the call id the model wrote (Mistral's [CALL_ID]), or ""
};

class ToolCallStreamParser {
 public:
  ToolCallStreamParser(ToolCallFormat format, bool whole);

  // The deltas `text` completes, appended to `out` (adjacent content merged).
  void push(std::string_view text, std::vector<ToolCallDelta>& out);
  // End of the reply: everything held back is decided.
  void finish(std::vector<ToolCallDelta>& out);

  // Calls started and not withdrawn.
  int num_calls() const { return num_calls_; }

 private:
  enum class State {
    kStart,        // nothing read yet (Llama 3: a call may open the reply)
    kText,         // content; looking for the marker
    kAfterMarker,  // inside a call region, before a call object's '{'
    kMistralName,  // mistral's name form: the function name, up to [ARGS] or [CALL_ID]
    kMistralId,    // mistral's name form: the call id after [CALL_ID], up to [ARGS]
    kMistralArgs,  // mistral's name form: after [ARGS], before the arguments object's '{'
    kInCall,       // inside a call object
    kAfterCall,    // after a call object: a closing tag, a separator, or the end
    kPlain,        // content to the end
  };
  // Runs the state machine over pending_ as far as it can decide; `at_end`: no more text comes.
  void run(bool at_end, std::vector<ToolCallDelta>& out);
  bool step_start(bool at_end, std::vector<ToolCallDelta>& out);
  bool step_text(bool at_end, std::vector<ToolCallDelta>& out);
  bool step_after_marker(bool at_end, std::vector<ToolCallDelta>& out);
  bool step_mistral_name(bool at_end, std::vector<ToolCallDelta>& out);
  bool step_mistral_id(bool at_end, std::vector<ToolCallDelta>& out);
  bool step_mistral_args(bool at_end, std::vector<ToolCallDelta>& out);
  bool step_in_call(std::vector<ToolCallDelta>& out);
  bool step_after_call(bool at_end, std::vector<ToolCallDelta>& out);
  // The call object in obj_ is complete: validate it and emit or give it up.
  void close_call(std::vector<ToolCallDelta>& out);
  void open_region(size_t marker_len);
  void begin_object();
  // The current call region cannot be read as calls: its text becomes content, as does the rest.
  void give_up(std::vector<ToolCallDelta>& out);
  void content(std::string_view text, std::vector<ToolCallDelta>& out);
  void consume(size_t n, bool into_region);

  ToolCallFormat format_;
  bool whole_;
  State state_ = State::kStart;
  std::string pending_;     // text received and not consumed
  std::string held_ws_;     // trailing whitespace of the content, not yet sent
  std::string region_ws_;   // held_ws_ when a region opened (content again if the region fails)
  std::string region_;      // the current region's text since its marker (or object start)
  bool list_open_ = false;  // mistral: the '[' after [TOOL_CALLS] was read
  std::string name_;        // mistral's name form: the function name read so far
  std::string call_id_;  // mistral's name form: the call id read so far
  // The call object being read.
  std::string obj_;
  JsonObjectScanner scanner_;
  bool committed_ = false;       // kCallStart went out for it
  bool header_failed_ = false;   // it does not start with "name": read it whole
  bool args_only_ = false;       // it is the arguments object itself (mistral's name form)
  bool in_arguments_ = false;    // bytes now go out as kArguments
  int call_index_ = -1;          // its index once committed
  size_t obj_region_offset_ = 0;  // where obj_ starts in region_
  size_t obj_sent_ = 0;          // bytes of obj_ sent as its header and arguments
  int num_calls_ = 0;
};

struct ParsedToolCall {
  std::string name;
  std::string id;         // the model's own call id ("" when it wrote none)
  std::string arguments;  // JSON text of the arguments object
};

struct ParsedToolCalls {
  std::string content;  // text outside the calls ("" when there is none)
  std::vector<ParsedToolCall> calls;
};

// The whole reply at once (ToolCallStreamParser with whole = true).
ParsedToolCalls parse_tool_calls(ToolCallFormat format, std::string_view text);

}  // namespace weft
