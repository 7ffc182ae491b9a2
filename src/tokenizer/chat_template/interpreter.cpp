#include "tokenizer/chat_template/interpreter.h"

#include "absl/strings/str_cat.h"
#include "tokenizer/chat_template/builtins.h"
#include "tokenizer/chat_template/operators.h"

namespace weft::jinja {
namespace {

constexpr char kLocatedPayload[] = "weft.chat_template.located";

#define EVAL_TRY(var, expr)                     \
  auto var##_or = (expr);                       \
  if (!var##_or.ok()) return var##_or.status(); \
  auto var = std::move(var##_or).value()

#define EVAL_CHECK(expr)         \
  do {                           \
    absl::Status s_ = (expr);    \
    if (!s_.ok()) return s_;     \
  } while (0)

}  // namespace

absl::Status locate_error(absl::Status s, int line, int column) {
  if (s.ok() || s.GetPayload(kLocatedPayload) || s.GetPayload(kRaiseExceptionPayload)) return s;
  absl::Status located(s.code(), absl::StrCat("chat template error at line ", line, ", column ", column, ": ", s.message()));
  located.SetPayload(kLocatedPayload, absl::Cord("1"));
  return located;
}

absl::StatusOr<std::string> Interpreter::render(const StmtList& body, const Value& context) {
  auto root = std::make_shared<Frame>();
  for (auto& [name, v] : make_globals()) root->vars[name] = std::move(v);
  if (context.is_dict()) {
    for (const auto& [k, v] : context.as_dict().entries) root->vars[k.str()] = v;
  }
  std::string out;
  out_ = &out;
  const ReprBudget repr_budget(limits_.max_output_bytes);
  iterations_ = 0;
  call_depth_ = 0;
  macro_frames_.push_back(root);
  auto flow = exec_body(body, root);
  out_ = nullptr;
  for (auto& f : macro_frames_) f->vars.clear();
  for (auto& ns : namespaces_) ns->attrs.entries.clear();
  macro_frames_.clear();
  namespaces_.clear();
  if (!flow.ok()) return flow.status();
  return out;
}

absl::Status Interpreter::check_size(size_t n) const {
  if (n > limits_.max_output_bytes || ReprBudget::exceeded()) {
    return absl::ResourceExhaustedError(
        absl::StrCat("chat template output or value larger than the limit of ", limits_.max_output_bytes, " bytes"));
  }
  return absl::OkStatus();
}

absl::Status Interpreter::emit(std::string_view text) {
  out_->append(text);
  return check_size(out_->size());
}

absl::StatusOr<std::string> Interpreter::capture(const StmtList& body, const FramePtr& frame) {
  std::string buf;
  std::string* saved = out_;
  out_ = &buf;
  auto flow = exec_body(body, frame);
  out_ = saved;
  if (!flow.ok()) return flow.status();
  return buf;
}

absl::StatusOr<Interpreter::Flow> Interpreter::exec_body(const StmtList& body, const FramePtr& frame) {
  for (const auto& s : body) {
    auto flow = exec(*s, frame);
    if (!flow.ok()) return locate_error(flow.status(), s->line, s->column);
    if (*flow != Flow::kNormal) return *flow;
  }
  return Flow::kNormal;
}

absl::StatusOr<Interpreter::Flow> Interpreter::exec(const Stmt& s, const FramePtr& frame) {
  switch (s.kind) {
    case Stmt::Kind::kText:
      EVAL_CHECK(emit(s.text));
      return Flow::kNormal;
    case Stmt::Kind::kOutput: {
      EVAL_TRY(v, eval(*s.expr, frame));
      EVAL_CHECK(emit(v.str()));
      return Flow::kNormal;
    }
    case Stmt::Kind::kIf:
      for (size_t i = 0; i < s.conds.size(); ++i) {
        EVAL_TRY(c, eval(*s.conds[i], frame));
        if (c.truthy()) return exec_body(s.bodies[i], frame);
      }
      return exec_body(s.else_body, frame);
    case Stmt::Kind::kFor: return exec_for(s, frame);
    case Stmt::Kind::kSet:
      EVAL_CHECK(exec_set(s, frame));
      return Flow::kNormal;
    case Stmt::Kind::kSetBlock: {
      EVAL_TRY(text, capture(s.body, frame));
      Value v(std::move(text));
      if (s.filter) {
        EVAL_TRY(f, eval_filter(*s.filter, frame, &v));
        v = std::move(f);
      }
      frame->vars[s.targets[0]] = std::move(v);
      return Flow::kNormal;
    }
    case Stmt::Kind::kMacro:
      frame->vars[s.name] = make_macro(s, frame, s.name);
      return Flow::kNormal;
    case Stmt::Kind::kCallBlock:
      EVAL_CHECK(exec_call_block(s, frame));
      return Flow::kNormal;
    case Stmt::Kind::kFilterBlock: {
      EVAL_TRY(text, capture(s.body, frame));
      Value v(std::move(text));
      EVAL_TRY(f, eval_filter(*s.filter, frame, &v));
      EVAL_CHECK(emit(f.str()));
      return Flow::kNormal;
    }
    case Stmt::Kind::kWith: {
      auto inner = std::make_shared<Frame>();
      inner->parent = frame;
      for (size_t i = 0; i < s.targets.size(); ++i) {
        EVAL_TRY(v, eval(*s.values[i], frame));
        inner->vars[s.targets[i]] = std::move(v);
      }
      return exec_body(s.body, inner);
    }
    case Stmt::Kind::kBreak: return Flow::kBreak;
    case Stmt::Kind::kContinue: return Flow::kContinue;
    case Stmt::Kind::kScope: return exec_body(s.body, frame);
  }
  return Flow::kNormal;
}

absl::Status Interpreter::bind_targets(const std::vector<std::string>& targets, bool unpack, const Value& v,
                                       Frame& frame) {
  if (!unpack) {
    frame.vars[targets[0]] = v;
    return absl::OkStatus();
  }
  auto items_or = iterate(v);
  if (!items_or.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("cannot unpack non-iterable ", v.type_name(), " object"));
  }
  auto& items = *items_or;
  if (items.size() != targets.size()) {
    return absl::InvalidArgumentError(absl::StrCat(items.size() < targets.size() ? "not enough" : "too many",
                                                   " values to unpack (expected ", targets.size(), ", got ",
                                                   items.size(), ")"));
  }
  for (size_t i = 0; i < targets.size(); ++i) frame.vars[targets[i]] = items[i];
  return absl::OkStatus();
}

absl::StatusOr<Interpreter::Flow> Interpreter::exec_for(const Stmt& s, const FramePtr& frame) {
  EVAL_TRY(iterable, eval(*s.expr, frame));
  EVAL_TRY(all, iterate(iterable));
  const bool unpack = s.targets_tuple || s.targets.size() > 1;
  std::vector<Value> items;
  if (s.filter) {
    for (auto& item : all) {
      auto probe = std::make_shared<Frame>();
      probe->parent = frame;
      EVAL_CHECK(bind_targets(s.targets, unpack, item, *probe));
      EVAL_TRY(keep, eval(*s.filter, probe));
      if (keep.truthy()) items.push_back(std::move(item));
    }
  } else {
    items = std::move(all);
  }
  const int64_t n = static_cast<int64_t>(items.size());
  for (int64_t i = 0; i < n; ++i) {
    if (++iterations_ > limits_.max_loop_iterations) {
      return absl::ResourceExhaustedError(
          absl::StrCat("chat template ran more than the limit of ", limits_.max_loop_iterations, " loop iterations"));
    }
    auto inner = std::make_shared<Frame>();
    inner->parent = frame;
    EVAL_CHECK(bind_targets(s.targets, unpack, items[i], *inner));
    Dict loop;
    loop.set("index", Value(i + 1));
    loop.set("index0", Value(i));
    loop.set("revindex", Value(n - i));
    loop.set("revindex0", Value(n - i - 1));
    loop.set("first", Value(i == 0));
    loop.set("last", Value(i == n - 1));
    loop.set("length", Value(n));
    loop.set("depth", Value(int64_t{1}));
    loop.set("depth0", Value(int64_t{0}));
    loop.set("previtem", i > 0 ? items[i - 1] : Value::undefined("there is no previous item"));
    loop.set("nextitem", i + 1 < n ? items[i + 1] : Value::undefined("there is no next item"));
    loop.set("cycle", Value::callable("loop.cycle", [i](Interpreter&, CallArgs& a) -> absl::StatusOr<Value> {
      if (a.positional.empty()) return absl::InvalidArgumentError("no items for cycling given");
      return a.positional[static_cast<size_t>(i) % a.positional.size()];
    }));
    inner->vars["loop"] = Value::dict(std::move(loop));
    EVAL_TRY(flow, exec_body(s.body, inner));
    if (flow == Flow::kBreak) break;
  }
  if (n == 0 && !s.else_body.empty()) {
    auto inner = std::make_shared<Frame>();
    inner->parent = frame;
    EVAL_TRY(flow, exec_body(s.else_body, inner));
    (void)flow;
  }
  return Flow::kNormal;
}

absl::Status Interpreter::exec_set(const Stmt& s, const FramePtr& frame) {
  EVAL_TRY(v, eval(*s.expr, frame));
  if (!s.ns_attr.empty()) {
    Value target = lookup(s.targets[0], *frame);
    if (!target.is_namespace()) {
      return absl::InvalidArgumentError(
          absl::StrCat("cannot assign attribute '", s.ns_attr, "' on non-namespace object '", s.targets[0], "'"));
    }
    if (s.ns_attr[0] == '_') {
      return absl::PermissionDeniedError(absl::StrCat(
          "Chat templates cannot store underscore-prefixed attributes on a namespace, but got '", s.ns_attr, "'."));
    }
    target.as_namespace().attrs.set(Value(s.ns_attr), std::move(v));
    return absl::OkStatus();
  }
  return bind_targets(s.targets, s.targets_tuple || s.targets.size() > 1, v, *frame);
}

Value Interpreter::lookup(const std::string& name, const Frame& frame) const {
  for (const Frame* f = &frame; f; f = f->parent.get()) {
    auto it = f->vars.find(name);
    if (it != f->vars.end()) return it->second;
  }
  return Value::undefined(absl::StrCat("'", name, "' is undefined"));
}

Value Interpreter::make_macro(const Stmt& s, FramePtr closure, std::string name) {
  macro_frames_.push_back(closure);
  const Stmt* stmt = &s;
  return Value::callable(std::move(name), [stmt, closure](Interpreter& in, CallArgs& args) {
    return in.invoke_macro(*stmt, closure, args);
  });
}

absl::StatusOr<Value> Interpreter::invoke_macro(const Stmt& s, const FramePtr& closure, CallArgs& args) {
  if (call_depth_ >= limits_.max_call_depth) {
    return absl::ResourceExhaustedError(
        absl::StrCat("chat template macro calls nested deeper than the limit of ", limits_.max_call_depth));
  }
  auto frame = std::make_shared<Frame>();
  frame->parent = closure;
  std::vector<bool> bound(s.params.size(), false);
  std::vector<Value> varargs;
  for (size_t i = 0; i < args.positional.size(); ++i) {
    if (i < s.params.size()) {
      frame->vars[s.params[i]] = args.positional[i];
      bound[i] = true;
    } else {
      varargs.push_back(args.positional[i]);
    }
  }
  Dict kwargs;
  for (auto& [k, v] : args.keyword) {
    size_t i = 0;
    while (i < s.params.size() && s.params[i] != k) ++i;
    if (i < s.params.size()) {
      if (bound[i]) {
        return absl::InvalidArgumentError(absl::StrCat("macro '", s.name, "' got multiple values for argument '", k, "'"));
      }
      frame->vars[k] = v;
      bound[i] = true;
    } else if (k == "caller") {
      frame->vars["caller"] = v;
    } else {
      kwargs.set(Value(k), v);
    }
  }
  for (size_t i = 0; i < s.params.size(); ++i) {
    if (bound[i]) continue;
    if (s.defaults[i]) {
      EVAL_TRY(d, eval(*s.defaults[i], frame));
      frame->vars[s.params[i]] = std::move(d);
    } else {
      frame->vars[s.params[i]] =
          Value::undefined(absl::StrCat("parameter '", s.params[i], "' was not provided"));
    }
  }
  frame->vars["varargs"] = Value::list(std::move(varargs), true);
  frame->vars["kwargs"] = Value::dict(std::move(kwargs));
  ++call_depth_;
  auto text = capture(s.body, frame);
  --call_depth_;
  if (!text.ok()) return text.status();
  return Value(std::move(*text));
}

absl::Status Interpreter::exec_call_block(const Stmt& s, const FramePtr& frame) {
  const Expr& call = *s.expr;
  EVAL_TRY(fn, eval(*call.target, frame));
  EVAL_TRY(args, eval_args(call, frame));
  args.keyword.emplace_back("caller", make_macro(s, frame, "caller"));
  EVAL_TRY(result, this->call(fn, args));
  return emit(result.str());
}

absl::StatusOr<Value> Interpreter::call(const Value& fn, CallArgs& args) {
  if (fn.is_undefined()) return undefined_error(fn);
  if (!fn.is_callable()) return absl::InvalidArgumentError(absl::StrCat("'", fn.type_name(), "' object is not callable"));
  return fn.as_callable().fn(*this, args);
}

absl::StatusOr<Value> Interpreter::apply_filter(const std::string& name, const Value& input, CallArgs& args) {
  FilterFn f = find_filter(name);
  if (!f) return absl::InvalidArgumentError(absl::StrCat("no filter named '", name, "'"));
  auto r = f(*this, input, args);
  if (!r.ok() && !r.status().GetPayload(kRaiseExceptionPayload) && r.status().code() == absl::StatusCode::kInvalidArgument) {
    return absl::InvalidArgumentError(absl::StrCat("filter '", name, "': ", r.status().message()));
  }
  return r;
}

absl::StatusOr<bool> Interpreter::apply_test(const std::string& name, const Value& input, CallArgs& args) {
  TestFn t = find_test(name);
  if (!t) return absl::InvalidArgumentError(absl::StrCat("no test named '", name, "'"));
  return t(*this, input, args);
}

absl::StatusOr<CallArgs> Interpreter::eval_args(const Expr& e, const FramePtr& frame) {
  CallArgs args;
  for (const auto& a : e.args) {
    EVAL_TRY(v, eval(*a, frame));
    args.positional.push_back(std::move(v));
  }
  for (const auto& [k, a] : e.kwargs) {
    EVAL_TRY(v, eval(*a, frame));
    args.keyword.emplace_back(k, std::move(v));
  }
  return args;
}

absl::StatusOr<Value> Interpreter::eval_filter(const Expr& e, const FramePtr& frame, const Value* block_input) {
  Value input;
  if (e.target) {
    if (e.target->kind == Expr::Kind::kFilter) {
      EVAL_TRY(v, eval_filter(*e.target, frame, block_input));
      input = std::move(v);
    } else {
      EVAL_TRY(v, eval(*e.target, frame));
      input = std::move(v);
    }
  } else if (block_input) {
    input = *block_input;
  }
  EVAL_TRY(args, eval_args(e, frame));
  auto r = apply_filter(e.name, input, args);
  if (!r.ok()) return locate_error(r.status(), e.line, e.column);
  return r;
}

absl::StatusOr<Value> Interpreter::eval(const Expr& e, const FramePtr& frame) {
  auto r = eval_inner(e, frame);
  if (r.ok() && ReprBudget::exceeded()) r = check_size(0);  // a str() / repr() cut short (value.h)
  if (!r.ok()) return locate_error(r.status(), e.line, e.column);
  return r;
}

absl::StatusOr<Value> Interpreter::eval_inner(const Expr& e, const FramePtr& frame) {
  switch (e.kind) {
    case Expr::Kind::kConst: return e.value;
    case Expr::Kind::kName: return lookup(e.name, *frame);
    case Expr::Kind::kList:
    case Expr::Kind::kTuple: {
      std::vector<Value> items;
      for (const auto& a : e.args) {
        EVAL_TRY(v, eval(*a, frame));
        items.push_back(std::move(v));
      }
      return Value::list(std::move(items), e.kind == Expr::Kind::kTuple);
    }
    case Expr::Kind::kDict: {
      Dict d;
      for (size_t i = 0; i + 1 < e.args.size(); i += 2) {
        EVAL_TRY(k, eval(*e.args[i], frame));
        EVAL_TRY(v, eval(*e.args[i + 1], frame));
        d.set(std::move(k), std::move(v));
      }
      return Value::dict(std::move(d));
    }
    case Expr::Kind::kGetAttr: {
      EVAL_TRY(obj, eval(*e.target, frame));
      return get_attr(obj, e.name);
    }
    case Expr::Kind::kGetItem: {
      EVAL_TRY(obj, eval(*e.target, frame));
      const Expr& sub = *e.args[0];
      if (sub.kind == Expr::Kind::kSlice) {
        Value parts[3];
        for (int i = 0; i < 3; ++i) {
          if (sub.args[i]) {
            EVAL_TRY(v, eval(*sub.args[i], frame));
            parts[i] = std::move(v);
          }
        }
        return slice_value(obj, parts[0], parts[1], parts[2]);
      }
      EVAL_TRY(key, eval(sub, frame));
      return get_item(obj, key);
    }
    case Expr::Kind::kSlice: return absl::InvalidArgumentError("slice outside of a subscript");
    case Expr::Kind::kCall: {
      EVAL_TRY(fn, eval(*e.target, frame));
      EVAL_TRY(args, eval_args(e, frame));
      return call(fn, args);
    }
    case Expr::Kind::kFilter: return eval_filter(e, frame, nullptr);
    case Expr::Kind::kTest: {
      EVAL_TRY(v, eval(*e.target, frame));
      EVAL_TRY(args, eval_args(e, frame));
      EVAL_TRY(r, apply_test(e.name, v, args));
      return Value(r);
    }
    case Expr::Kind::kUnary: {
      EVAL_TRY(v, eval(*e.args[0], frame));
      if (e.name == "not") return Value(!v.truthy());
      if (v.is_undefined()) return undefined_error(v);
      if (!v.is_number()) {
        return absl::InvalidArgumentError(absl::StrCat("bad operand type for unary ", e.name, ": '", v.type_name(), "'"));
      }
      if (e.name == "+") return v.is_float() ? v : Value(v.as_int());
      if (v.is_float()) return Value(-v.as_float());
      if (v.as_int() == INT64_MIN) return absl::InvalidArgumentError("integer overflow in unary -");
      return Value(-v.as_int());
    }
    case Expr::Kind::kBinary: {
      EVAL_TRY(a, eval(*e.args[0], frame));
      // `and`/`or` short-circuit and return an operand, as in Python.
      if (e.name == "and") return a.truthy() ? eval(*e.args[1], frame) : absl::StatusOr<Value>(a);
      if (e.name == "or") return a.truthy() ? absl::StatusOr<Value>(a) : eval(*e.args[1], frame);
      EVAL_TRY(b, eval(*e.args[1], frame));
      return binary_op(e.name, a, b, limits_.max_output_bytes);
    }
    case Expr::Kind::kCompare: {
      EVAL_TRY(left, eval(*e.args[0], frame));
      for (size_t i = 0; i < e.ops.size(); ++i) {
        EVAL_TRY(right, eval(*e.args[i + 1], frame));
        EVAL_TRY(ok, compare_op(e.ops[i], left, right));
        if (!ok) return Value(false);
        left = std::move(right);
      }
      return Value(true);
    }
    case Expr::Kind::kCond: {
      EVAL_TRY(c, eval(*e.args[1], frame));
      if (c.truthy()) return eval(*e.args[0], frame);
      if (e.args[2]) return eval(*e.args[2], frame);
      return Value::undefined("the inline if-expression evaluated to false and no else section was defined");
    }
  }
  return absl::InternalError("unknown expression kind");
}

}  // namespace weft::jinja
