// Internal to the chat template parser: token cursor helpers and the expression grammar
// (jinja2/parser.py precedence: condexpr < or < and < not < compare < + - < ~ < * / // % < ** <
// unary < primary/postfix/filters/tests).
#pragma once

#include <initializer_list>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "tokenizer/chat_template/ast.h"
#include "tokenizer/chat_template/lexer.h"

namespace weft::jinja::internal {

#define PARSE_TRY(lhs, expr)                    \
  auto lhs##_or = (expr);                       \
  if (!lhs##_or.ok()) return lhs##_or.status(); \
  auto lhs = std::move(lhs##_or).value()

#define PARSE_CHECK(expr)     \
  do {                        \
    absl::Status s_ = (expr); \
    if (!s_.ok()) return s_;  \
  } while (0)

class ExpressionParser {
 public:
  ExpressionParser(std::vector<Token> tokens, int max_depth) : toks_(std::move(tokens)), max_depth_(max_depth) {}

 protected:
  const Token& cur() const { return toks_[pos_]; }
  const Token& look(size_t n = 1) const { return toks_[std::min(pos_ + n, toks_.size() - 1)]; }
  void advance() {
    if (pos_ + 1 < toks_.size()) ++pos_;
  }
  bool is_op(std::string_view op) const { return cur().type == TokenType::kOperator && cur().value == op; }
  bool is_name(std::string_view n) const { return cur().type == TokenType::kName && cur().value == n; }

  absl::Status fail(const Token& t, std::string_view what, std::initializer_list<std::string_view> expected) const {
    std::string msg = absl::StrCat("chat template syntax error at line ", t.line, ", column ", t.column, ": ",
                                   std::string(what), " ", describe_token(t));
    if (expected.size() > 0) {
      std::vector<std::string> quoted;
      for (auto e : expected) quoted.push_back(absl::StrCat("'", std::string(e), "'"));
      absl::StrAppend(&msg, ", expected ", absl::StrJoin(quoted, " or "));
    }
    return absl::InvalidArgumentError(msg);
  }

  absl::Status expect_op(std::string_view op) {
    if (!is_op(op)) return fail(cur(), "unexpected", {op});
    advance();
    return absl::OkStatus();
  }
  absl::Status expect_block_end() {
    if (cur().type != TokenType::kBlockEnd) return fail(cur(), "unexpected", {"%}"});
    advance();
    return absl::OkStatus();
  }
  absl::StatusOr<std::string> expect_name() {
    if (cur().type != TokenType::kName) return fail(cur(), "unexpected", {"name"});
    std::string n = cur().value;
    advance();
    return n;
  }

  struct DepthGuard {
    ExpressionParser* p;
    explicit DepthGuard(ExpressionParser* parser) : p(parser) { ++p->depth_; }
    ~DepthGuard() { --p->depth_; }
  };
  absl::Status check_depth() const {
    if (depth_ > max_depth_) {
      return absl::InvalidArgumentError(absl::StrCat("chat template syntax error at line ", cur().line, ", column ",
                                                     cur().column, ": nesting deeper than the limit of ", max_depth_));
    }
    return absl::OkStatus();
  }

  ExprPtr make(Expr::Kind k, const Token& at) {
    auto e = std::make_unique<Expr>();
    e->kind = k;
    e->line = at.line;
    e->column = at.column;
    return e;
  }
  StmtPtr make_stmt(Stmt::Kind k, const Token& at) {
    auto s = std::make_unique<Stmt>();
    s->kind = k;
    s->line = at.line;
    s->column = at.column;
    return s;
  }

  bool is_tuple_end(std::initializer_list<std::string_view> extra) const;
  absl::StatusOr<ExprPtr> parse_tuple(bool simplified, bool with_condexpr,
                                      std::initializer_list<std::string_view> extra_end, bool explicit_parens);
  absl::StatusOr<ExprPtr> parse_expression(bool with_condexpr);
  absl::StatusOr<ExprPtr> parse_condexpr();
  ExprPtr binary(std::string op, ExprPtr l, ExprPtr r, const Token& at);
  absl::StatusOr<ExprPtr> parse_or();
  absl::StatusOr<ExprPtr> parse_and();
  absl::StatusOr<ExprPtr> parse_not();
  absl::StatusOr<ExprPtr> parse_compare();
  absl::StatusOr<ExprPtr> parse_math1();
  absl::StatusOr<ExprPtr> parse_concat();
  absl::StatusOr<ExprPtr> parse_math2();
  absl::StatusOr<ExprPtr> parse_pow();
  absl::StatusOr<ExprPtr> parse_unary(bool with_filter);
  absl::StatusOr<ExprPtr> parse_primary();
  absl::StatusOr<ExprPtr> parse_postfix(ExprPtr node);
  absl::StatusOr<ExprPtr> parse_subscribed();
  absl::Status parse_call_args(Expr& call);
  absl::StatusOr<ExprPtr> parse_call(ExprPtr node);
  // `|name(args)|name2 ...`; with start_inline the current token is already the first filter's
  // name (after the `filter` keyword of a filter block).
  absl::StatusOr<ExprPtr> parse_filter(ExprPtr node, bool start_inline);
  absl::StatusOr<ExprPtr> parse_filter_expr(ExprPtr node);
  absl::StatusOr<ExprPtr> parse_test(ExprPtr node);

  std::vector<Token> toks_;
  size_t pos_ = 0;
  int depth_ = 0;
  int max_depth_;
  int loop_depth_ = 0;
};

}  // namespace weft::jinja::internal
