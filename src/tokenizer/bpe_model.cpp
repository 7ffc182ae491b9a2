#include "tokenizer/bpe_model.h"

#include <climits>
#include <queue>

#include "absl/strings/str_format.h"
#include "tokenizer/utf8.h"

namespace weft {
namespace {

// absl in this toolchain has its own string_view type; heterogeneous lookups need it.
absl::string_view absl_view(std::string_view s) { return absl::string_view(s.data(), s.size()); }

// Words with at most this many initial symbols are merged with a rank array scan, which beats
// a heap for the short words that dominate real text.
constexpr size_t kLinearMergeLimit = 48;

}  // namespace

absl::StatusOr<std::unique_ptr<BpeModel>> BpeModel::from_json(const nlohmann::json& model,
                                                              const JsonPath& where) {
  if (!model.is_object()) return where.error("expected an object");
  // Old files omit "type" for BPE; anything named must be BPE.
  if (model.contains("type")) {
    auto type = where.get_string(model, "type");
    if (!type.ok()) return type.status();
    if (*type != "BPE") {
      return where.child("type").error(str_cat("unsupported tokenizer model type ", *type, " in ",
                                               where.file(), " (only BPE is supported)"));
    }
  }
  std::unique_ptr<BpeModel> m(new BpeModel());
  const auto vit = model.find("vocab");
  if (vit == model.end() || !vit->is_object()) {
    return where.child("vocab").error("expected an object mapping token strings to ids");
  }
  int32_t max_id = -1;
  m->vocab_.reserve(vit->size());
  for (const auto& [token, id] : vit->items()) {
    if (!id.is_number_integer() || id.get<int64_t>() < 0 || id.get<int64_t>() > kMaxTokenId) {
      return where.child("vocab").error(str_cat("id of token \"", token,
                                                "\" is not an integer in [0, ", kMaxTokenId, "]"));
    }
    const auto i = static_cast<int32_t>(id.get<int64_t>());
    m->vocab_.emplace(token, i);
    max_id = std::max(max_id, i);
  }
  m->id_to_token_.resize(static_cast<size_t>(max_id + 1));
  m->has_id_.assign(static_cast<size_t>(max_id + 1), false);
  for (const auto& [token, id] : m->vocab_) {
    m->id_to_token_[id] = token;
    m->has_id_[id] = true;
  }

  auto unk = where.get_optional_string(model, "unk_token");
  if (!unk.ok()) return unk.status();
  m->unk_token_ = *unk;
  auto prefix = where.get_optional_string(model, "continuing_subword_prefix");
  if (!prefix.ok()) return prefix.status();
  m->continuing_subword_prefix_ = prefix->value_or("");
  auto suffix = where.get_optional_string(model, "end_of_word_suffix");
  if (!suffix.ok()) return suffix.status();
  m->end_of_word_suffix_ = suffix->value_or("");
  auto fuse = where.get_bool(model, "fuse_unk", false);
  if (!fuse.ok()) return fuse.status();
  m->fuse_unk_ = *fuse;
  auto fallback = where.get_bool(model, "byte_fallback", false);
  if (!fallback.ok()) return fallback.status();
  m->byte_fallback_ = *fallback;
  auto ignore = where.get_bool(model, "ignore_merges", false);
  if (!ignore.ok()) return ignore.status();
  m->ignore_merges_ = *ignore;
  if (model.contains("dropout") && !model["dropout"].is_null() &&
      (!model["dropout"].is_number() || model["dropout"].get<double>() != 0.0)) {
    return where.child("dropout").error(
        "BPE dropout is not supported for inference (expected null)");
  }
  for (int b = 0; b < 256; ++b) {
    const auto it = m->vocab_.find(absl::StrFormat("<0x%02X>", b));
    m->byte_fallback_ids_[b] = it == m->vocab_.end() ? -1 : it->second;
  }

  const auto mit = model.find("merges");
  if (mit == model.end() || !mit->is_array()) {
    return where.child("merges").error("expected an array of \"a b\" strings or [a, b] pairs");
  }
  const JsonPath merges_path = where.child("merges");
  m->merges_.reserve(mit->size());
  const size_t prefix_len = m->continuing_subword_prefix_.size();
  for (size_t rank = 0; rank < mit->size(); ++rank) {
    const auto& entry = (*mit)[rank];
    std::string a, b;
    if (entry.is_string()) {
      const auto& s = entry.get_ref<const std::string&>();
      const size_t space = s.find(' ');
      if (space == std::string::npos || s.find(' ', space + 1) != std::string::npos) {
        return merges_path.index(rank).error(
            str_cat("expected \"a b\" with exactly one space, got \"", s, "\""));
      }
      a = s.substr(0, space);
      b = s.substr(space + 1);
    } else if (entry.is_array() && entry.size() == 2 && entry[0].is_string() &&
               entry[1].is_string()) {
      a = entry[0].get<std::string>();
      b = entry[1].get<std::string>();
    } else {
      return merges_path.index(rank).error("expected \"a b\" or [\"a\", \"b\"]");
    }
    const auto ia = m->vocab_.find(a);
    const auto ib = m->vocab_.find(b);
    if (ia == m->vocab_.end() || ib == m->vocab_.end()) {
      return merges_path.index(rank).error(
          str_cat("token \"", ia == m->vocab_.end() ? a : b, "\" is not in the vocabulary"));
    }
    const std::string merged = b.compare(0, prefix_len, m->continuing_subword_prefix_) == 0
                                   ? a + b.substr(prefix_len)
                                   : a + b;
    const auto im = m->vocab_.find(merged);
    if (im == m->vocab_.end()) {
      return merges_path.index(rank).error(
          str_cat("merged token \"", merged, "\" is not in the vocabulary"));
    }
    // The first occurrence of a pair wins, as in tokenizers.
    m->merges_.try_emplace(pair_key(ia->second, ib->second),
                           MergeInfo{static_cast<int32_t>(rank), im->second});
  }
  return m;
}

std::optional<int32_t> BpeModel::token_to_id(std::string_view token) const {
  const auto it = vocab_.find(absl_view(token));
  if (it == vocab_.end()) return std::nullopt;
  return it->second;
}

const std::string* BpeModel::id_to_token(int32_t id) const {
  if (id < 0 || id >= id_limit() || !has_id_[id]) return nullptr;
  return &id_to_token_[id];
}

void BpeModel::tokenize(std::string_view word, std::vector<int32_t>& out) const {
  if (word.empty()) return;
  if (ignore_merges_) {
    const auto it = vocab_.find(absl_view(word));
    if (it != vocab_.end()) {
      out.push_back(it->second);
      return;
    }
  }
  const bool cacheable = word.size() <= kMaxCachedWordLen;
  if (cacheable) {
    absl::MutexLock lock(&cache_mu_);
    const auto it = cache_.find(absl_view(word));
    if (it != cache_.end()) {
      out.insert(out.end(), it->second.begin(), it->second.end());
      return;
    }
  }
  std::vector<int32_t> ids;
  merge_word(word, ids);
  out.insert(out.end(), ids.begin(), ids.end());
  if (cacheable) {
    absl::MutexLock lock(&cache_mu_);
    if (cache_.size() >= kMaxCacheEntries) cache_.clear();
    cache_.emplace(word, std::move(ids));
  }
}

void BpeModel::merge_word(std::string_view word, std::vector<int32_t>& symbols) const {
  // Pending unknown symbol (fuse_unk joins consecutive ones), flushed before the next known one.
  bool pending_unk = false;
  const std::optional<int32_t> unk = unk_token_ ? token_to_id(*unk_token_) : std::nullopt;
  const int32_t unk_id = unk.value_or(-1);
  const bool affixes = !continuing_subword_prefix_.empty() || !end_of_word_suffix_.empty();
  std::string buf;
  size_t pos = 0;
  while (pos < word.size()) {
    const size_t start = pos;
    pos += utf8::char_len(static_cast<unsigned char>(word[pos]));
    if (pos > word.size()) pos = word.size();
    std::string_view s = word.substr(start, pos - start);
    if (affixes) {
      buf.clear();
      if (start != 0) buf.append(continuing_subword_prefix_);
      buf.append(s);
      if (pos == word.size()) buf.append(end_of_word_suffix_);
      s = buf;
    }
    const auto it = vocab_.find(absl_view(s));
    if (it != vocab_.end()) {
      if (pending_unk) {
        symbols.push_back(unk_id);
        pending_unk = false;
      }
      symbols.push_back(it->second);
      continue;
    }
    if (byte_fallback_) {
      bool all = true;
      for (const char c : s) all &= byte_fallback_ids_[static_cast<unsigned char>(c)] >= 0;
      if (all) {
        for (const char c : s) symbols.push_back(byte_fallback_ids_[static_cast<unsigned char>(c)]);
        continue;
      }
    }
    if (unk_id >= 0) {
      if (pending_unk && !fuse_unk_) symbols.push_back(unk_id);
      pending_unk = true;
    }
  }
  if (pending_unk) symbols.push_back(unk_id);
  apply_merges(symbols);
}

void BpeModel::apply_merges(std::vector<int32_t>& symbols) const {
  const size_t n = symbols.size();
  if (n < 2) return;
  auto lookup = [&](int32_t a, int32_t b) -> const MergeInfo* {
    const auto it = merges_.find(pair_key(a, b));
    return it == merges_.end() ? nullptr : &it->second;
  };
  if (n <= kLinearMergeLimit) {
    // ranks[i] describes the pair (symbols[i], symbols[i + 1]).
    std::array<int32_t, kLinearMergeLimit> ranks;
    std::array<int32_t, kLinearMergeLimit> new_ids;
    size_t len = n;
    for (size_t i = 0; i + 1 < len; ++i) {
      const MergeInfo* m = lookup(symbols[i], symbols[i + 1]);
      ranks[i] = m ? m->rank : INT32_MAX;
      new_ids[i] = m ? m->new_id : -1;
    }
    while (len > 1) {
      size_t best = 0;
      for (size_t i = 1; i + 1 < len; ++i)
        if (ranks[i] < ranks[best]) best = i;
      if (ranks[best] == INT32_MAX) break;
      symbols[best] = new_ids[best];
      for (size_t i = best + 1; i + 1 < len; ++i) symbols[i] = symbols[i + 1];
      for (size_t i = best + 1; i + 2 < len; ++i) {
        ranks[i] = ranks[i + 1];
        new_ids[i] = new_ids[i + 1];
      }
      --len;
      for (size_t i : {best - 1, best}) {
        if (i >= len - 1) continue;  // also skips best - 1 when best == 0 (wraps around)
        const MergeInfo* m = lookup(symbols[i], symbols[i + 1]);
        ranks[i] = m ? m->rank : INT32_MAX;
        new_ids[i] = m ? m->new_id : -1;
      }
    }
    symbols.resize(len);
    return;
  }

  // Long words: heap of candidate merges over a doubly linked list of symbols; stale heap
  // entries are detected by re-checking the pair (as tokenizers' Word::merge_all does).
  struct Cand {
    int32_t rank;
    size_t pos;
    int32_t new_id;
    bool operator>(const Cand& o) const { return rank != o.rank ? rank > o.rank : pos > o.pos; }
  };
  std::vector<int64_t> prev(n), next(n);
  std::vector<bool> alive(n, true);
  for (size_t i = 0; i < n; ++i) {
    prev[i] = static_cast<int64_t>(i) - 1;
    next[i] = i + 1 < n ? static_cast<int64_t>(i + 1) : -1;
  }
  std::priority_queue<Cand, std::vector<Cand>, std::greater<Cand>> heap;
  for (size_t i = 0; i + 1 < n; ++i) {
    if (const MergeInfo* m = lookup(symbols[i], symbols[i + 1])) heap.push({m->rank, i, m->new_id});
  }
  while (!heap.empty()) {
    const Cand top = heap.top();
    heap.pop();
    if (!alive[top.pos] || next[top.pos] < 0) continue;
    const auto right = static_cast<size_t>(next[top.pos]);
    const MergeInfo* m = lookup(symbols[top.pos], symbols[right]);
    if (m == nullptr || m->new_id != top.new_id) continue;
    symbols[top.pos] = top.new_id;
    alive[right] = false;
    next[top.pos] = next[right];
    if (next[right] >= 0) prev[static_cast<size_t>(next[right])] = static_cast<int64_t>(top.pos);
    if (prev[top.pos] >= 0) {
      const auto p = static_cast<size_t>(prev[top.pos]);
      if (const MergeInfo* pm = lookup(symbols[p], symbols[top.pos]))
        heap.push({pm->rank, p, pm->new_id});
    }
    if (next[top.pos] >= 0) {
      const auto q = static_cast<size_t>(next[top.pos]);
      if (const MergeInfo* nm = lookup(symbols[top.pos], symbols[q]))
        heap.push({nm->rank, top.pos, nm->new_id});
    }
  }
  size_t w = 0;
  for (size_t i = 0; i < n; ++i)
    if (alive[i]) symbols[w++] = symbols[i];
  symbols.resize(w);
}

}  // namespace weft
