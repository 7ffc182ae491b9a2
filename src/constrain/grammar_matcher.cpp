#include "constrain/grammar_matcher.h"

#include <algorithm>
#include <chrono>
#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "constrain/xgrammar_bridge.h"
#include "core/thread_pool.h"

namespace weft {

class GrammarMatcher::Impl {
 public:
  explicit Impl(xgrammar::GrammarMatcher m) : matcher(std::move(m)) {}
  xgrammar::GrammarMatcher matcher;
  std::string mask_key;  // reused by every fill
};

namespace {

// Only states that leave at least this many tokens to xgrammar's byte-by-byte check are looked
// up: the others fill in a few microseconds, about what building the key costs.
constexpr int32_t kMaskKeyMinUncertainTokens = 128;
// Keys longer than this (deeply nested documents) are not looked up.
constexpr int32_t kMaxMaskKeyBytes = 16384;

// A 1-D int32 DLTensor over one mask row, as xgrammar's FillNextTokenBitmask takes it.
struct RowTensor {
  explicit RowTensor(std::span<uint32_t> row) : shape(static_cast<int64_t>(row.size())) {
    tensor.data = row.data();
    tensor.device = DLDevice{kDLCPU, 0};
    tensor.ndim = 1;
    tensor.dtype = xgrammar::GetBitmaskDLType();
    tensor.shape = &shape;
    tensor.strides = nullptr;
    tensor.byte_offset = 0;
  }
  int64_t shape;
  DLTensor tensor{};
};

void allow_only(std::span<uint32_t> row, const std::vector<int32_t>& tokens) {
  std::ranges::fill(row, 0u);
  for (const int32_t t : tokens) row[t >> 5] |= uint32_t{1} << (t & 31);
}

}  // namespace

GrammarMatcher::GrammarMatcher(std::shared_ptr<const CompiledGrammar> grammar)
    : grammar_(std::move(grammar)),
      impl_(std::make_unique<Impl>(xgrammar::GrammarMatcher(grammar_->impl().compiled))) {
  if (grammar_->whitespace_bound()) lex_states_.emplace_back();
}

GrammarMatcher::GrammarMatcher(std::shared_ptr<const CompiledGrammar> grammar,
                               std::unique_ptr<Impl> impl, int32_t tokens_accepted,
                               std::vector<JsonLexState> lex_states)
    : grammar_(std::move(grammar)),
      impl_(std::move(impl)),
      tokens_accepted_(tokens_accepted),
      lex_states_(std::move(lex_states)) {}

GrammarMatcher::~GrammarMatcher() = default;
GrammarMatcher::GrammarMatcher(GrammarMatcher&&) noexcept = default;
GrammarMatcher& GrammarMatcher::operator=(GrammarMatcher&&) noexcept = default;

bool GrammarMatcher::accept_token(int32_t token) {
  // Refused here rather than by xgrammar, which logs a warning for each of these cases.
  if (token < 0 || token >= vocab_size() || is_terminated()) return false;
  if (!grammar_->vocabulary()->may_be_allowed(token)) return false;
  std::optional<JsonLexState> lexed;
  if (const auto& bound = grammar_->whitespace_bound()) {
    lexed = bound->advance(lex_states_.back(), token);
    if (!lexed) return false;
  }
  bool accepted = false;
  try {
    accepted = impl_->matcher.AcceptToken(token);
  } catch (const std::exception&) {
    accepted = false;
  }
  if (!accepted) return false;
  ++tokens_accepted_;
  if (lexed) lex_states_.push_back(*lexed);
  return true;
}

size_t GrammarMatcher::accept_tokens(std::span<const int32_t> tokens) {
  size_t n = 0;
  while (n < tokens.size() && accept_token(tokens[n])) ++n;
  return n;
}

absl::StatusOr<bool> GrammarMatcher::fill_next_token_bitmask(std::span<uint32_t> row) {
  if (row.size() != static_cast<size_t>(bitmask_words(vocab_size()))) {
    return absl::InvalidArgumentError(absl::StrCat("grammar matcher: mask row has ", row.size(),
                                                   " words, the vocabulary of ", vocab_size(),
                                                   " tokens needs ", bitmask_words(vocab_size())));
  }
  if (is_terminated()) {
    allow_only(row, grammar_->vocabulary()->stop_token_ids());
    return true;
  }
  RowTensor t(row);
  bool restricts = false;
  try {
    MaskCache* cache = grammar_->mask_cache();
    const bool keyed =
        cache != nullptr && impl_->matcher._GetMaskStateKey(
                                &impl_->mask_key, kMaskKeyMinUncertainTokens, kMaxMaskKeyBytes);
    const std::optional<bool> cached =
        keyed ? cache->lookup(impl_->mask_key, row) : std::nullopt;
    if (cached) {
      restricts = *cached;
    } else {
      const auto start = std::chrono::steady_clock::now();
      restricts = impl_->matcher.FillNextTokenBitmask(&t.tensor);  // writes the whole row
      const std::chrono::duration<double> took = std::chrono::steady_clock::now() - start;
      if (keyed && cache->worth_storing(took.count())) {
        cache->insert(impl_->mask_key, row, restricts);
      }
    }
  } catch (const std::exception& e) {
    return absl::InternalError(
        absl::StrCat("grammar matcher: filling the token mask failed: ", xgrammar_message(e)));
  }
  if (const auto& bound = grammar_->whitespace_bound()) {
    restricts = bound->restrict(lex_states_.back(), row) || restricts;
  }
  return restricts;
}

absl::Status GrammarMatcher::rollback(int32_t tokens) {
  if (tokens < 0 || tokens > tokens_accepted_) {
    return absl::InvalidArgumentError(absl::StrCat("grammar matcher: cannot roll back ", tokens,
                                                   " tokens; ", tokens_accepted_, " are accepted"));
  }
  if (tokens == 0) return absl::OkStatus();
  try {
    impl_->matcher.Rollback(tokens);
  } catch (const std::exception& e) {
    return absl::InternalError(
        absl::StrCat("grammar matcher: rollback failed: ", xgrammar_message(e)));
  }
  tokens_accepted_ -= tokens;
  if (!lex_states_.empty()) lex_states_.resize(lex_states_.size() - tokens);
  return absl::OkStatus();
}

bool GrammarMatcher::is_terminated() const { return impl_->matcher.IsTerminated(); }

bool GrammarMatcher::is_completed() const { return impl_->matcher.IsCompleted(); }

void GrammarMatcher::reset() {
  impl_->matcher.Reset();
  tokens_accepted_ = 0;
  if (!lex_states_.empty()) lex_states_.resize(1);
}

GrammarMatcher GrammarMatcher::fork() const {
  return GrammarMatcher(grammar_, std::make_unique<Impl>(impl_->matcher.Fork()), tokens_accepted_,
                        lex_states_);
}

std::string GrammarMatcher::forced_continuation() {
  if (is_terminated()) return {};
  return impl_->matcher.FindJumpForwardString();
}

absl::Status fill_next_token_bitmasks(std::span<GrammarMatcher* const> matchers, TokenBitmask& mask,
                                      std::span<const int32_t> rows, ThreadPool* pool) {
  if (!rows.empty() && rows.size() != matchers.size()) {
    return absl::InvalidArgumentError(absl::StrCat("fill_next_token_bitmasks: ", matchers.size(),
                                                   " matchers but ", rows.size(), " rows"));
  }
  if (rows.empty() && matchers.size() > static_cast<size_t>(mask.rows())) {
    return absl::InvalidArgumentError(absl::StrCat("fill_next_token_bitmasks: ", matchers.size(),
                                                   " matchers but ", mask.rows(), " mask rows"));
  }
  std::vector<bool> used(mask.rows(), false);
  for (size_t i = 0; i < matchers.size(); ++i) {
    const int32_t r = rows.empty() ? static_cast<int32_t>(i) : rows[i];
    if (r < 0 || r >= mask.rows()) {
      return absl::InvalidArgumentError(
          absl::StrCat("fill_next_token_bitmasks: row ", r, " outside [0, ", mask.rows(), ")"));
    }
    if (used[r]) {
      return absl::InvalidArgumentError(
          absl::StrCat("fill_next_token_bitmasks: row ", r, " given twice"));
    }
    used[r] = true;
    if (matchers[i] && matchers[i]->vocab_size() != mask.vocab_size()) {
      return absl::InvalidArgumentError(
          absl::StrCat("fill_next_token_bitmasks: matcher ", i, " has a vocabulary of ",
                       matchers[i]->vocab_size(), " tokens, the mask ", mask.vocab_size()));
    }
  }
  // Each task writes only its own row and reports into its own slot.
  std::vector<absl::Status> status(matchers.size());
  auto fill = [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      const int32_t r = rows.empty() ? static_cast<int32_t>(i) : rows[i];
      if (!matchers[i]) {
        mask.allow_all(r);
        continue;
      }
      auto filled = matchers[i]->fill_next_token_bitmask(mask.row(r));
      if (!filled.ok()) status[i] = filled.status();
    }
  };
  const int64_t n = static_cast<int64_t>(matchers.size());
  if (pool != nullptr && n > 1) {
    pool->parallel_for(n, fill);
  } else {
    fill(0, n);
  }
  for (const absl::Status& s : status)
    if (!s.ok()) return s;
  return absl::OkStatus();
}

}  // namespace weft
