// Tree-walking evaluator for parsed templates, with jinja2 semantics: Python operators and
// truthiness, default Undefined, for-loop/macro scoping, Hugging Face's globals
// (raise_exception, strftime_now, namespace, dict) and its tojson filter.
#pragma once

#include <ctime>
#include <functional>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "tokenizer/chat_template/ast.h"
#include "tokenizer/chat_template/value.h"

namespace weft::jinja {

// Bounds for rendering untrusted templates. Exceeding one is a ResourceExhausted error.
struct RenderLimits {
  size_t max_output_bytes = size_t{16} << 20;  // rendered output, and any single string or list built
  int64_t max_loop_iterations = 1'000'000;     // summed over all loops of one render
  int max_call_depth = 64;                     // nested macro calls (recursion)
  // Local time for strftime_now(); unset means the system clock. Tests inject a fixed time.
  std::function<std::tm()> now;
};

// Status payload key set on errors raised by the template itself through raise_exception(msg);
// the status message is then exactly msg.
inline constexpr char kRaiseExceptionPayload[] = "weft.chat_template.raise_exception";

class Interpreter {
 public:
  explicit Interpreter(const RenderLimits& limits) : limits_(limits) {}

  // Renders `body` with the variables of `context` (a dict Value) on top of the globals.
  absl::StatusOr<std::string> render(const StmtList& body, const Value& context);

  // Used by builtins.
  absl::StatusOr<Value> call(const Value& fn, CallArgs& args);
  absl::StatusOr<Value> apply_filter(const std::string& name, const Value& input, CallArgs& args);
  absl::StatusOr<bool> apply_test(const std::string& name, const Value& input, CallArgs& args);
  // ResourceExhausted when a string/list of `n` bytes/items would pass max_output_bytes.
  absl::Status check_size(size_t n) const;
  const RenderLimits& limits() const { return limits_; }
  // Namespaces can reference themselves ({% set ns.me = ns %}); the interpreter clears every
  // namespace it created when rendering ends so such cycles do not leak.
  void track_namespace(std::shared_ptr<Namespace> ns) { namespaces_.push_back(std::move(ns)); }

  struct Frame {
    std::unordered_map<std::string, Value> vars;
    std::shared_ptr<Frame> parent;
  };
  using FramePtr = std::shared_ptr<Frame>;

 private:
  enum class Flow { kNormal, kBreak, kContinue };

  absl::StatusOr<Flow> exec_body(const StmtList& body, const FramePtr& frame);
  absl::StatusOr<Flow> exec(const Stmt& s, const FramePtr& frame);
  absl::StatusOr<Flow> exec_for(const Stmt& s, const FramePtr& frame);
  absl::Status exec_set(const Stmt& s, const FramePtr& frame);
  absl::Status exec_call_block(const Stmt& s, const FramePtr& frame);
  absl::StatusOr<std::string> capture(const StmtList& body, const FramePtr& frame);
  absl::Status emit(std::string_view text);
  absl::Status bind_targets(const std::vector<std::string>& targets, bool unpack, const Value& v, Frame& frame);

  absl::StatusOr<Value> eval(const Expr& e, const FramePtr& frame);
  absl::StatusOr<Value> eval_inner(const Expr& e, const FramePtr& frame);
  absl::StatusOr<Value> eval_filter(const Expr& e, const FramePtr& frame, const Value* block_input);
  absl::StatusOr<CallArgs> eval_args(const Expr& e, const FramePtr& frame);
  Value lookup(const std::string& name, const Frame& frame) const;

  // A callable that runs a macro (or call-block caller) body with `closure` as its scope.
  Value make_macro(const Stmt& s, FramePtr closure, std::string name);
  absl::StatusOr<Value> invoke_macro(const Stmt& s, const FramePtr& closure, CallArgs& args);

  RenderLimits limits_;
  // Frames that hold macros (whose closures point back at the frame) and namespaces, cleared at
  // the end of render() to break reference cycles.
  std::vector<FramePtr> macro_frames_;
  std::vector<std::shared_ptr<Namespace>> namespaces_;
  std::string* out_ = nullptr;
  int64_t iterations_ = 0;
  int call_depth_ = 0;
};

// Wraps a builtin's error with the template position, unless it already carries one.
absl::Status locate_error(absl::Status s, int line, int column);

}  // namespace weft::jinja
