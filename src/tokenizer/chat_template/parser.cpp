#include "tokenizer/chat_template/parser.h"

#include "tokenizer/chat_template/parser_internal.h"

namespace weft::jinja {
namespace {

// Statements ({% ... %} tags); expressions come from ExpressionParser.
class Parser : public internal::ExpressionParser {
 public:
  using ExpressionParser::ExpressionParser;

  absl::StatusOr<StmtList> parse() {
    PARSE_TRY(body, subparse({}));
    if (cur().type != TokenType::kEof) return fail(cur(), "unexpected tag", {});
    return body;
  }

 private:
  // Parses statements until a block whose first name is in `end_names` (left unconsumed: the
  // current token is then that name) or the end of the template.
  absl::StatusOr<StmtList> subparse(std::initializer_list<std::string_view> end_names) {
    DepthGuard guard(this);
    PARSE_CHECK(check_depth());
    StmtList body;
    while (true) {
      const Token& t = cur();
      if (t.type == TokenType::kEof) {
        if (end_names.size() > 0) return fail(t, "unexpected", end_names);
        return body;
      }
      if (t.type == TokenType::kData) {
        auto s = make_stmt(Stmt::Kind::kText, t);
        s->text = t.value;
        body.push_back(std::move(s));
        advance();
      } else if (t.type == TokenType::kVariableBegin) {
        auto s = make_stmt(Stmt::Kind::kOutput, t);
        advance();
        PARSE_TRY(e, parse_tuple(false, true, {}, false));
        s->expr = std::move(e);
        if (cur().type != TokenType::kVariableEnd) return fail(cur(), "unexpected", {"}}"});
        advance();
        body.push_back(std::move(s));
      } else if (t.type == TokenType::kBlockBegin) {
        advance();
        if (cur().type == TokenType::kName) {
          for (auto n : end_names) {
            if (cur().value == n) return body;
          }
        }
        PARSE_TRY(s, parse_statement(end_names));
        body.push_back(std::move(s));
      } else {
        return fail(t, "unexpected", {});
      }
    }
  }

  absl::StatusOr<StmtPtr> parse_statement(std::initializer_list<std::string_view> end_names) {
    const Token& t = cur();
    if (t.type != TokenType::kName) return fail(t, "unexpected", {"statement name"});
    const std::string tag = t.value;
    if (tag == "if") return parse_if();
    if (tag == "for") return parse_for();
    if (tag == "set") return parse_set();
    if (tag == "macro") return parse_macro();
    if (tag == "call") return parse_call_block();
    if (tag == "filter") return parse_filter_block();
    if (tag == "with") return parse_with();
    if (tag == "generation") {
      auto s = make_stmt(Stmt::Kind::kScope, t);
      advance();
      PARSE_CHECK(expect_block_end());
      PARSE_TRY(body, parse_body({"endgeneration"}));
      s->body = std::move(body);
      return s;
    }
    if (tag == "break" || tag == "continue") {
      if (loop_depth_ == 0) return fail(t, "unexpected", {"a loop around break/continue"});
      auto s = make_stmt(tag == "break" ? Stmt::Kind::kBreak : Stmt::Kind::kContinue, t);
      advance();
      PARSE_CHECK(expect_block_end());
      return s;
    }
    std::string what = absl::StrCat("unknown or unsupported tag '", tag, "'");
    if (end_names.size() > 0) {
      std::vector<std::string> quoted;
      for (auto e : end_names) quoted.push_back(absl::StrCat("'", std::string(e), "'"));
      absl::StrAppend(&what, " (looking for ", absl::StrJoin(quoted, " or "), ")");
    }
    return absl::InvalidArgumentError(absl::StrCat("chat template syntax error at line ", t.line, ", column ",
                                                   t.column, ": ", what));
  }

  // Body up to `{% end %}` (one of `names`), consuming the closing tag.
  absl::StatusOr<StmtList> parse_body(std::initializer_list<std::string_view> names) {
    PARSE_TRY(body, subparse(names));
    advance();
    PARSE_CHECK(expect_block_end());
    return body;
  }

  absl::StatusOr<StmtPtr> parse_if() {
    auto s = make_stmt(Stmt::Kind::kIf, cur());
    advance();
    while (true) {
      PARSE_TRY(cond, parse_tuple(false, false, {}, false));
      PARSE_CHECK(expect_block_end());
      PARSE_TRY(body, subparse({"elif", "else", "endif"}));
      s->conds.push_back(std::move(cond));
      s->bodies.push_back(std::move(body));
      std::string which = cur().value;
      advance();
      if (which == "elif") continue;
      if (which == "else") {
        PARSE_CHECK(expect_block_end());
        PARSE_TRY(else_body, parse_body({"endif"}));
        s->else_body = std::move(else_body);
      } else {
        PARSE_CHECK(expect_block_end());
      }
      return s;
    }
  }

  // Names for `for` / `set` targets: `a`, `a, b`, `(a, b)`.
  absl::Status parse_targets(Stmt& s) {
    bool paren = is_op("(");
    if (paren) advance();
    while (true) {
      PARSE_TRY(n, expect_name());
      s.targets.push_back(n);
      if (!is_op(",")) break;
      s.targets_tuple = true;
      advance();
      if (cur().type != TokenType::kName) break;
    }
    if (paren) {
      s.targets_tuple = true;
      PARSE_CHECK(expect_op(")"));
    }
    return absl::OkStatus();
  }

  absl::StatusOr<StmtPtr> parse_for() {
    auto s = make_stmt(Stmt::Kind::kFor, cur());
    advance();
    PARSE_CHECK(parse_targets(*s));
    if (!is_name("in")) return fail(cur(), "unexpected", {"in"});
    advance();
    PARSE_TRY(iter, parse_tuple(false, false, {"recursive"}, false));
    s->expr = std::move(iter);
    if (is_name("if")) {
      advance();
      PARSE_TRY(f, parse_expression(true));
      s->filter = std::move(f);
    }
    if (is_name("recursive")) return fail(cur(), "unsupported", {});
    PARSE_CHECK(expect_block_end());
    ++loop_depth_;
    auto body = subparse({"endfor", "else"});
    --loop_depth_;
    if (!body.ok()) return body.status();
    s->body = std::move(*body);
    std::string which = cur().value;
    advance();
    PARSE_CHECK(expect_block_end());
    if (which == "else") {
      PARSE_TRY(else_body, parse_body({"endfor"}));
      s->else_body = std::move(else_body);
    }
    return s;
  }

  absl::StatusOr<StmtPtr> parse_set() {
    const Token& at = cur();
    advance();
    if (cur().type == TokenType::kName && look().type == TokenType::kOperator && look().value == ".") {
      auto s = make_stmt(Stmt::Kind::kSet, at);
      s->targets.push_back(cur().value);
      advance();
      advance();
      PARSE_TRY(attr, expect_name());
      s->ns_attr = attr;
      PARSE_CHECK(expect_op("="));
      PARSE_TRY(e, parse_tuple(false, true, {}, false));
      s->expr = std::move(e);
      PARSE_CHECK(expect_block_end());
      return s;
    }
    auto s = make_stmt(Stmt::Kind::kSet, at);
    PARSE_CHECK(parse_targets(*s));
    if (is_op("=")) {
      advance();
      PARSE_TRY(e, parse_tuple(false, true, {}, false));
      s->expr = std::move(e);
      PARSE_CHECK(expect_block_end());
      return s;
    }
    if (s->targets.size() != 1) return fail(cur(), "unexpected", {"="});
    s->kind = Stmt::Kind::kSetBlock;
    if (is_op("|")) {
      PARSE_TRY(f, parse_filter(nullptr, false));
      s->filter = std::move(f);
    }
    PARSE_CHECK(expect_block_end());
    PARSE_TRY(body, parse_body({"endset"}));
    s->body = std::move(body);
    return s;
  }

  absl::Status parse_signature(Stmt& s) {
    PARSE_CHECK(expect_op("("));
    while (!is_op(")")) {
      if (!s.params.empty()) PARSE_CHECK(expect_op(","));
      if (is_op(")")) break;
      PARSE_TRY(n, expect_name());
      s.params.push_back(n);
      if (is_op("=")) {
        advance();
        PARSE_TRY(d, parse_expression(true));
        s.defaults.push_back(std::move(d));
      } else {
        if (!s.defaults.empty() && s.defaults.back()) return fail(cur(), "non-default argument follows default argument", {});
        s.defaults.push_back(nullptr);
      }
    }
    advance();
    return absl::OkStatus();
  }

  absl::StatusOr<StmtPtr> parse_macro() {
    auto s = make_stmt(Stmt::Kind::kMacro, cur());
    advance();
    PARSE_TRY(name, expect_name());
    s->name = name;
    PARSE_CHECK(parse_signature(*s));
    PARSE_CHECK(expect_block_end());
    int saved = loop_depth_;
    loop_depth_ = 0;
    auto body = parse_body({"endmacro"});
    loop_depth_ = saved;
    if (!body.ok()) return body.status();
    s->body = std::move(*body);
    return s;
  }

  absl::StatusOr<StmtPtr> parse_call_block() {
    auto s = make_stmt(Stmt::Kind::kCallBlock, cur());
    advance();
    if (is_op("(")) PARSE_CHECK(parse_signature(*s));
    PARSE_TRY(e, parse_expression(true));
    if (e->kind != Expr::Kind::kCall) return fail(cur(), "expected a call after 'call', got", {});
    s->expr = std::move(e);
    PARSE_CHECK(expect_block_end());
    PARSE_TRY(body, parse_body({"endcall"}));
    s->body = std::move(body);
    return s;
  }

  absl::StatusOr<StmtPtr> parse_filter_block() {
    auto s = make_stmt(Stmt::Kind::kFilterBlock, cur());
    advance();
    PARSE_TRY(f, parse_filter(nullptr, true));
    s->filter = std::move(f);
    PARSE_CHECK(expect_block_end());
    PARSE_TRY(body, parse_body({"endfilter"}));
    s->body = std::move(body);
    return s;
  }

  absl::StatusOr<StmtPtr> parse_with() {
    auto s = make_stmt(Stmt::Kind::kWith, cur());
    advance();
    while (cur().type != TokenType::kBlockEnd) {
      if (!s->targets.empty()) PARSE_CHECK(expect_op(","));
      PARSE_TRY(n, expect_name());
      PARSE_CHECK(expect_op("="));
      PARSE_TRY(v, parse_expression(true));
      s->targets.push_back(n);
      s->values.push_back(std::move(v));
    }
    advance();
    PARSE_TRY(body, parse_body({"endwith"}));
    s->body = std::move(body);
    return s;
  }
};


}  // namespace

absl::StatusOr<StmtList> parse_template(std::string_view source, int max_depth) {
  auto tokens = tokenize(source);
  if (!tokens.ok()) return tokens.status();
  Parser p(std::move(*tokens), max_depth);
  return p.parse();
}

}  // namespace weft::jinja
