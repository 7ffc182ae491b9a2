// Syntax tree of a parsed template. Nodes are plain data owned by their parent; the interpreter
// walks them. Positions (line, column) are 1-based and used in runtime error messages.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "tokenizer/chat_template/value.h"

namespace weft::jinja {

struct Expr;
struct Stmt;
using ExprPtr = std::unique_ptr<Expr>;
using StmtPtr = std::unique_ptr<Stmt>;
using StmtList = std::vector<StmtPtr>;

struct Expr {
  enum class Kind {
    kConst,    // value
    kName,     // name
    kList,     // args
    kTuple,    // args
    kDict,     // args: key0, value0, key1, value1, ...
    kGetAttr,  // target.name
    kGetItem,  // target[args[0]]
    kSlice,    // args: start, stop, step (each may be null); only inside kGetItem
    kCall,     // target(args, kwargs)
    kFilter,   // target|name(args, kwargs); target null inside {% filter %} / {% set x | f %}
    kTest,     // target is name(args)
    kUnary,    // name is "-", "+" or "not"; args[0]
    kBinary,   // name is the operator (+ - * / // % ** ~ and or); args[0], args[1]
    kCompare,  // args[0] ops[0] args[1] ops[1] args[2] ...
    kCond,     // args: value_if_true, condition, value_if_false (may be null)
  };
  Kind kind;
  int line = 0;
  int column = 0;
  Value value;
  std::string name;
  ExprPtr target;
  std::vector<ExprPtr> args;
  std::vector<std::pair<std::string, ExprPtr>> kwargs;
  std::vector<std::string> ops;
};

struct Stmt {
  enum class Kind {
    kText,         // text
    kOutput,       // {{ expr }}
    kIf,           // conds[i] -> bodies[i], else_body
    kFor,          // for targets in expr [if filter] body [else else_body]
    kSet,          // set targets = expr, or set name.attr = expr (ns_attr non-empty)
    kSetBlock,     // set name [| filter] body endset
    kMacro,        // macro name(params = defaults) body
    kCallBlock,    // call[(params)] expr body
    kFilterBlock,  // filter chain(filter) body
    kWith,         // with targets[i] = values[i] body
    kBreak,
    kContinue,
    kScope,        // {% generation %}: body rendered as-is
  };
  Kind kind;
  int line = 0;
  int column = 0;
  std::string text;
  ExprPtr expr;
  ExprPtr filter;
  std::vector<ExprPtr> conds;
  std::vector<StmtList> bodies;
  StmtList body;
  StmtList else_body;
  std::vector<std::string> targets;
  bool targets_tuple = false;  // `for a, b in` / `set a, b =` unpack even for one name
  std::string ns_attr;
  std::string name;
  std::vector<std::string> params;
  std::vector<ExprPtr> defaults;  // parallel to params; null for no default
  std::vector<ExprPtr> values;    // kWith
};

}  // namespace weft::jinja
