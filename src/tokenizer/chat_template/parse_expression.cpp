#include "tokenizer/chat_template/parser_internal.h"

namespace weft::jinja::internal {

bool ExpressionParser::is_tuple_end(std::initializer_list<std::string_view> extra) const {
  auto t = cur().type;
  if (t == TokenType::kVariableEnd || t == TokenType::kBlockEnd || t == TokenType::kEof || is_op(")")) return true;
  for (auto e : extra) {
    if (is_name(e)) return true;
  }
  return false;
}

absl::StatusOr<ExprPtr> ExpressionParser::parse_tuple(bool simplified, bool with_condexpr,
                                    std::initializer_list<std::string_view> extra_end, bool explicit_parens) {
  const Token& at = cur();
  std::vector<ExprPtr> args;
  bool is_tuple = false;
  while (true) {
    if (!args.empty()) PARSE_CHECK(expect_op(","));
    if (is_tuple_end(extra_end)) break;
    if (simplified) {
      PARSE_TRY(e, parse_primary());
      args.push_back(std::move(e));
    } else {
      PARSE_TRY(e, parse_expression(with_condexpr));
      args.push_back(std::move(e));
    }
    if (is_op(",")) {
      is_tuple = true;
    } else {
      break;
    }
  }
  if (!is_tuple) {
    if (!args.empty()) return std::move(args[0]);
    if (!explicit_parens) return fail(cur(), "expected an expression, got", {});
  }
  auto t = make(Expr::Kind::kTuple, at);
  t->args = std::move(args);
  return t;
}

absl::StatusOr<ExprPtr> ExpressionParser::parse_expression(bool with_condexpr) {
  DepthGuard guard(this);
  PARSE_CHECK(check_depth());
  if (with_condexpr) return parse_condexpr();
  return parse_or();
}

absl::StatusOr<ExprPtr> ExpressionParser::parse_condexpr() {
  PARSE_TRY(expr1, parse_or());
  while (is_name("if")) {
    const Token& at = cur();
    advance();
    PARSE_TRY(expr2, parse_or());
    ExprPtr expr3;
    if (is_name("else")) {
      advance();
      PARSE_TRY(e3, parse_condexpr());
      expr3 = std::move(e3);
    }
    auto c = make(Expr::Kind::kCond, at);
    c->args.push_back(std::move(expr1));
    c->args.push_back(std::move(expr2));
    c->args.push_back(std::move(expr3));
    expr1 = std::move(c);
  }
  return expr1;
}

ExprPtr ExpressionParser::binary(std::string op, ExprPtr l, ExprPtr r, const Token& at) {
  auto b = make(Expr::Kind::kBinary, at);
  b->name = std::move(op);
  b->args.push_back(std::move(l));
  b->args.push_back(std::move(r));
  return b;
}

absl::StatusOr<ExprPtr> ExpressionParser::parse_or() {
  PARSE_TRY(left, parse_and());
  while (is_name("or")) {
    const Token& at = cur();
    advance();
    PARSE_TRY(right, parse_and());
    left = binary("or", std::move(left), std::move(right), at);
  }
  return left;
}

absl::StatusOr<ExprPtr> ExpressionParser::parse_and() {
  PARSE_TRY(left, parse_not());
  while (is_name("and")) {
    const Token& at = cur();
    advance();
    PARSE_TRY(right, parse_not());
    left = binary("and", std::move(left), std::move(right), at);
  }
  return left;
}

absl::StatusOr<ExprPtr> ExpressionParser::parse_not() {
  if (is_name("not")) {
    DepthGuard guard(this);
    PARSE_CHECK(check_depth());
    auto n = make(Expr::Kind::kUnary, cur());
    n->name = "not";
    advance();
    PARSE_TRY(operand, parse_not());
    n->args.push_back(std::move(operand));
    return n;
  }
  return parse_compare();
}

absl::StatusOr<ExprPtr> ExpressionParser::parse_compare() {
  const Token& at = cur();
  PARSE_TRY(expr, parse_math1());
  std::vector<std::string> ops;
  std::vector<ExprPtr> operands;
  while (true) {
    std::string op;
    if (cur().type == TokenType::kOperator &&
        (cur().value == "==" || cur().value == "!=" || cur().value == "<" || cur().value == "<=" ||
         cur().value == ">" || cur().value == ">=")) {
      op = cur().value;
      advance();
    } else if (is_name("in")) {
      op = "in";
      advance();
    } else if (is_name("not") && look().type == TokenType::kName && look().value == "in") {
      op = "notin";
      advance();
      advance();
    } else {
      break;
    }
    PARSE_TRY(rhs, parse_math1());
    ops.push_back(op);
    operands.push_back(std::move(rhs));
  }
  if (ops.empty()) return expr;
  auto c = make(Expr::Kind::kCompare, at);
  c->args.push_back(std::move(expr));
  for (auto& o : operands) c->args.push_back(std::move(o));
  c->ops = std::move(ops);
  return c;
}

absl::StatusOr<ExprPtr> ExpressionParser::parse_math1() {
  PARSE_TRY(left, parse_concat());
  while (is_op("+") || is_op("-")) {
    const Token& at = cur();
    std::string op = at.value;
    advance();
    PARSE_TRY(right, parse_concat());
    left = binary(op, std::move(left), std::move(right), at);
  }
  return left;
}

absl::StatusOr<ExprPtr> ExpressionParser::parse_concat() {
  PARSE_TRY(left, parse_math2());
  while (is_op("~")) {
    const Token& at = cur();
    advance();
    PARSE_TRY(right, parse_math2());
    left = binary("~", std::move(left), std::move(right), at);
  }
  return left;
}

absl::StatusOr<ExprPtr> ExpressionParser::parse_math2() {
  PARSE_TRY(left, parse_pow());
  while (is_op("*") || is_op("/") || is_op("//") || is_op("%")) {
    const Token& at = cur();
    std::string op = at.value;
    advance();
    PARSE_TRY(right, parse_pow());
    left = binary(op, std::move(left), std::move(right), at);
  }
  return left;
}

absl::StatusOr<ExprPtr> ExpressionParser::parse_pow() {
  PARSE_TRY(left, parse_unary(true));
  while (is_op("**")) {
    const Token& at = cur();
    advance();
    PARSE_TRY(right, parse_unary(true));
    left = binary("**", std::move(left), std::move(right), at);
  }
  return left;
}

absl::StatusOr<ExprPtr> ExpressionParser::parse_unary(bool with_filter) {
  DepthGuard guard(this);
  PARSE_CHECK(check_depth());
  ExprPtr node;
  if (is_op("-") || is_op("+")) {
    auto u = make(Expr::Kind::kUnary, cur());
    u->name = cur().value;
    advance();
    PARSE_TRY(operand, parse_unary(false));
    u->args.push_back(std::move(operand));
    node = std::move(u);
  } else {
    PARSE_TRY(p, parse_primary());
    node = std::move(p);
  }
  PARSE_TRY(post, parse_postfix(std::move(node)));
  node = std::move(post);
  if (with_filter) {
    PARSE_TRY(f, parse_filter_expr(std::move(node)));
    node = std::move(f);
  }
  return node;
}

absl::StatusOr<ExprPtr> ExpressionParser::parse_primary() {
  DepthGuard guard(this);
  PARSE_CHECK(check_depth());
  const Token& t = cur();
  if (t.type == TokenType::kName) {
    auto e = make(Expr::Kind::kConst, t);
    if (t.value == "true" || t.value == "True") {
      e->value = Value(true);
    } else if (t.value == "false" || t.value == "False") {
      e->value = Value(false);
    } else if (t.value == "none" || t.value == "None") {
      e->value = Value::none();
    } else {
      e->kind = Expr::Kind::kName;
      e->name = t.value;
    }
    advance();
    return e;
  }
  if (t.type == TokenType::kString) {
    auto e = make(Expr::Kind::kConst, t);
    std::string s;
    while (cur().type == TokenType::kString) {
      s += cur().value;
      advance();
    }
    e->value = Value(std::move(s));
    return e;
  }
  if (t.type == TokenType::kInteger || t.type == TokenType::kFloat) {
    auto e = make(Expr::Kind::kConst, t);
    e->value = t.type == TokenType::kInteger ? Value(t.int_value) : Value(t.float_value);
    advance();
    return e;
  }
  if (is_op("(")) {
    advance();
    PARSE_TRY(e, parse_tuple(false, true, {}, true));
    PARSE_CHECK(expect_op(")"));
    return e;
  }
  if (is_op("[")) {
    auto e = make(Expr::Kind::kList, t);
    advance();
    while (!is_op("]")) {
      if (!e->args.empty()) PARSE_CHECK(expect_op(","));
      if (is_op("]")) break;
      PARSE_TRY(item, parse_expression(true));
      e->args.push_back(std::move(item));
    }
    advance();
    return e;
  }
  if (is_op("{")) {
    auto e = make(Expr::Kind::kDict, t);
    advance();
    while (!is_op("}")) {
      if (!e->args.empty()) PARSE_CHECK(expect_op(","));
      if (is_op("}")) break;
      PARSE_TRY(k, parse_expression(true));
      PARSE_CHECK(expect_op(":"));
      PARSE_TRY(v, parse_expression(true));
      e->args.push_back(std::move(k));
      e->args.push_back(std::move(v));
    }
    advance();
    return e;
  }
  return fail(t, "unexpected", {"an expression"});
}

absl::StatusOr<ExprPtr> ExpressionParser::parse_postfix(ExprPtr node) {
  while (true) {
    if (is_op(".")) {
      const Token& at = cur();
      advance();
      if (cur().type == TokenType::kName) {
        auto g = make(Expr::Kind::kGetAttr, at);
        g->name = cur().value;
        g->target = std::move(node);
        node = std::move(g);
      } else if (cur().type == TokenType::kInteger) {
        auto g = make(Expr::Kind::kGetItem, at);
        auto idx = make(Expr::Kind::kConst, cur());
        idx->value = Value(cur().int_value);
        g->args.push_back(std::move(idx));
        g->target = std::move(node);
        node = std::move(g);
      } else {
        return fail(cur(), "unexpected", {"attribute name"});
      }
      advance();
    } else if (is_op("[")) {
      const Token& at = cur();
      advance();
      std::vector<ExprPtr> subs;
      while (!is_op("]")) {
        if (!subs.empty()) PARSE_CHECK(expect_op(","));
        if (is_op("]")) break;
        PARSE_TRY(sub, parse_subscribed());
        subs.push_back(std::move(sub));
      }
      advance();
      if (subs.empty()) return fail(cur(), "empty subscript before", {});
      auto g = make(Expr::Kind::kGetItem, at);
      if (subs.size() == 1) {
        g->args.push_back(std::move(subs[0]));
      } else {
        auto tup = make(Expr::Kind::kTuple, at);
        tup->args = std::move(subs);
        g->args.push_back(std::move(tup));
      }
      g->target = std::move(node);
      node = std::move(g);
    } else if (is_op("(")) {
      PARSE_TRY(c, parse_call(std::move(node)));
      node = std::move(c);
    } else {
      return node;
    }
  }
}

absl::StatusOr<ExprPtr> ExpressionParser::parse_subscribed() {
  const Token& at = cur();
  std::vector<ExprPtr> parts;
  if (is_op(":")) {
    advance();
    parts.push_back(nullptr);
  } else {
    PARSE_TRY(e, parse_expression(true));
    if (!is_op(":")) return e;
    advance();
    parts.push_back(std::move(e));
  }
  if (is_op(":")) {
    parts.push_back(nullptr);
  } else if (!is_op("]") && !is_op(",")) {
    PARSE_TRY(e, parse_expression(true));
    parts.push_back(std::move(e));
  } else {
    parts.push_back(nullptr);
  }
  if (is_op(":")) {
    advance();
    if (!is_op("]") && !is_op(",")) {
      PARSE_TRY(e, parse_expression(true));
      parts.push_back(std::move(e));
    } else {
      parts.push_back(nullptr);
    }
  } else {
    parts.push_back(nullptr);
  }
  auto s = make(Expr::Kind::kSlice, at);
  s->args = std::move(parts);
  return s;
}

absl::Status ExpressionParser::parse_call_args(Expr& call) {
  PARSE_CHECK(expect_op("("));
  bool first = true;
  while (!is_op(")")) {
    if (!first) PARSE_CHECK(expect_op(","));
    first = false;
    if (is_op(")")) break;
    if (is_op("*") || is_op("**")) return fail(cur(), "unsupported argument unpacking", {});
    if (cur().type == TokenType::kName && look().type == TokenType::kOperator && look().value == "=") {
      std::string key = cur().value;
      advance();
      advance();
      PARSE_TRY(v, parse_expression(true));
      call.kwargs.emplace_back(key, std::move(v));
    } else {
      if (!call.kwargs.empty()) return fail(cur(), "positional argument after keyword argument:", {});
      PARSE_TRY(v, parse_expression(true));
      call.args.push_back(std::move(v));
    }
  }
  advance();
  return absl::OkStatus();
}

absl::StatusOr<ExprPtr> ExpressionParser::parse_call(ExprPtr node) {
  auto c = make(Expr::Kind::kCall, cur());
  PARSE_CHECK(parse_call_args(*c));
  c->target = std::move(node);
  return c;
}

// `|name(args)|name2 ...`; with start_inline the current token is the first filter's name
// (the `filter` keyword of a filter block).
absl::StatusOr<ExprPtr> ExpressionParser::parse_filter(ExprPtr node, bool start_inline) {
  while (is_op("|") || start_inline) {
    if (!start_inline) advance();
    start_inline = false;
    auto f = make(Expr::Kind::kFilter, cur());
    PARSE_TRY(name, expect_name());
    while (is_op(".")) {
      advance();
      PARSE_TRY(part, expect_name());
      name += "." + part;
    }
    f->name = name;
    if (is_op("(")) PARSE_CHECK(parse_call_args(*f));
    f->target = std::move(node);
    node = std::move(f);
  }
  return node;
}

absl::StatusOr<ExprPtr> ExpressionParser::parse_filter_expr(ExprPtr node) {
  while (true) {
    if (is_op("|")) {
      PARSE_TRY(f, parse_filter(std::move(node), false));
      node = std::move(f);
    } else if (is_name("is")) {
      PARSE_TRY(t, parse_test(std::move(node)));
      node = std::move(t);
    } else if (is_op("(")) {
      PARSE_TRY(c, parse_call(std::move(node)));
      node = std::move(c);
    } else {
      return node;
    }
  }
}

absl::StatusOr<ExprPtr> ExpressionParser::parse_test(ExprPtr node) {
  const Token& at = cur();
  advance();
  bool negated = false;
  if (is_name("not")) {
    negated = true;
    advance();
  }
  auto t = make(Expr::Kind::kTest, at);
  PARSE_TRY(name, expect_name());
  while (is_op(".")) {
    advance();
    PARSE_TRY(part, expect_name());
    name += "." + part;
  }
  t->name = name;
  if (is_op("(")) {
    PARSE_CHECK(parse_call_args(*t));
  } else if ((cur().type == TokenType::kName || cur().type == TokenType::kString ||
              cur().type == TokenType::kInteger || cur().type == TokenType::kFloat || is_op("(") ||
              is_op("[") || is_op("{")) &&
             !is_name("else") && !is_name("or") && !is_name("and")) {
    if (is_name("is")) return fail(cur(), "you cannot chain multiple tests with", {});
    PARSE_TRY(arg, parse_primary());
    PARSE_TRY(post, parse_postfix(std::move(arg)));
    t->args.push_back(std::move(post));
  }
  t->target = std::move(node);
  if (!negated) return t;
  auto n = make(Expr::Kind::kUnary, at);
  n->name = "not";
  n->args.push_back(std::move(t));
  return n;
}

}  // namespace weft::jinja::internal
