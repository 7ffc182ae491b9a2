#include "launcher/logprob_rows.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "absl/strings/str_cat.h"

namespace weft {
namespace {

constexpr char kMagic[8] = {'W', 'E', 'F', 'T', 'L', 'P', '0', '1'};

void put_u64(std::ofstream& out, uint64_t v) {
  unsigned char b[8];
  for (int i = 0; i < 8; ++i) b[i] = static_cast<unsigned char>(v >> (8 * i));
  out.write(reinterpret_cast<const char*>(b), 8);
}

bool get_u64(std::ifstream& in, uint64_t& v) {
  unsigned char b[8];
  if (!in.read(reinterpret_cast<char*>(b), 8)) return false;
  v = 0;
  for (int i = 0; i < 8; ++i) v |= static_cast<uint64_t>(b[i]) << (8 * i);
  return true;
}

}  // namespace

uint64_t token_ids_hash(const std::vector<int32_t>& ids) {
  uint64_t h = 1469598103934665603ull;
  for (int32_t id : ids) {
    for (int i = 0; i < 4; ++i) {
      h ^= static_cast<uint8_t>(static_cast<uint32_t>(id) >> (8 * i));
      h *= 1099511628211ull;
    }
  }
  return h;
}

void log_softmax(const float* logits, int64_t vocab, std::vector<double>& out) {
  out.resize(static_cast<size_t>(vocab));
  const double max = *std::max_element(logits, logits + vocab);
  double sum = 0.0;
  for (int64_t v = 0; v < vocab; ++v) sum += std::exp(static_cast<double>(logits[v]) - max);
  const double log_sum = std::log(sum);
  for (int64_t v = 0; v < vocab; ++v) out[v] = static_cast<double>(logits[v]) - max - log_sum;
}

absl::StatusOr<std::unique_ptr<LogprobWriter>> LogprobWriter::create(const std::string& path,
                                                                    const LogprobRunKey& key) {
  auto w = std::unique_ptr<LogprobWriter>(new LogprobWriter());
  w->path_ = path;
  w->out_.open(path, std::ios::binary | std::ios::trunc);
  if (!w->out_) return absl::InvalidArgumentError(absl::StrCat("--save-logprobs ", path, ": cannot create"));
  w->out_.write(kMagic, sizeof(kMagic));
  for (uint64_t v : {static_cast<uint64_t>(key.vocab), static_cast<uint64_t>(key.context),
                     static_cast<uint64_t>(key.stride), static_cast<uint64_t>(key.tokens), key.text_hash}) {
    put_u64(w->out_, v);
  }
  return w;
}

absl::Status LogprobWriter::write_row(const float* logits, int64_t vocab) {
  log_softmax(logits, vocab, logp_);
  row_.assign(logp_.begin(), logp_.end());
  out_.write(reinterpret_cast<const char*>(row_.data()), static_cast<std::streamsize>(row_.size() * sizeof(float)));
  if (!out_) return absl::UnavailableError(absl::StrCat("--save-logprobs ", path_, ": write failed"));
  return absl::OkStatus();
}

absl::Status LogprobWriter::close() {
  out_.close();
  if (!out_) return absl::UnavailableError(absl::StrCat("--save-logprobs ", path_, ": write failed"));
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<KlReference>> KlReference::open(const std::string& path, const LogprobRunKey& key) {
  auto r = std::unique_ptr<KlReference>(new KlReference());
  r->path_ = path;
  r->in_.open(path, std::ios::binary);
  const std::string where = absl::StrCat("--kl-reference ", path, ": ");
  if (!r->in_) return absl::InvalidArgumentError(where + "cannot open");
  char magic[sizeof(kMagic)];
  if (!r->in_.read(magic, sizeof(magic)) || std::memcmp(magic, kMagic, sizeof(kMagic)) != 0) {
    return absl::InvalidArgumentError(where + "not a file written by weft perplexity --save-logprobs");
  }
  uint64_t saved[5];
  for (uint64_t& v : saved) {
    if (!get_u64(r->in_, v)) return absl::InvalidArgumentError(where + "truncated header");
  }
  const struct {
    const char* what;
    uint64_t saved, now;
  } fields[] = {{"vocabulary size", saved[0], static_cast<uint64_t>(key.vocab)},
                {"--context", saved[1], static_cast<uint64_t>(key.context)},
                {"--stride", saved[2], static_cast<uint64_t>(key.stride)},
                {"text tokens", saved[3], static_cast<uint64_t>(key.tokens)}};
  for (const auto& f : fields) {
    if (f.saved != f.now) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, "saved with ", f.what, " ", f.saved, ", this run has ", f.now));
    }
  }
  if (saved[4] != key.text_hash) {
    return absl::InvalidArgumentError(where + "saved from a different text (its token ids differ)");
  }
  r->vocab_ = key.vocab;
  return r;
}

absl::Status KlReference::add_row(const float* logits, int64_t vocab) {
  ref_.resize(static_cast<size_t>(vocab_));
  if (!in_.read(reinterpret_cast<char*>(ref_.data()), static_cast<std::streamsize>(ref_.size() * sizeof(float)))) {
    return absl::InvalidArgumentError(
        absl::StrCat("--kl-reference ", path_, ": ends after ", kl_.size(), " rows; this run scores more"));
  }
  log_softmax(logits, vocab, logq_);
  double kl = 0.0;
  for (int64_t v = 0; v < vocab; ++v) {
    const double lp = ref_[v];
    kl += std::exp(lp) * (lp - logq_[v]);
  }
  kl_.push_back(std::max(0.0, kl));  // rounding can leave a tiny negative sum for equal rows
  const int64_t ref_top = std::max_element(ref_.begin(), ref_.end()) - ref_.begin();
  const int64_t top = std::max_element(logits, logits + vocab) - logits;
  top1_same_ += ref_top == top ? 1 : 0;
  return absl::OkStatus();
}

absl::StatusOr<KlSummary> KlReference::finish() {
  if (in_.peek() != std::char_traits<char>::eof()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--kl-reference ", path_, ": holds more rows than the ", kl_.size(), " this run scored"));
  }
  KlSummary s;
  s.tokens = static_cast<int64_t>(kl_.size());
  if (kl_.empty()) return s;
  double sum = 0.0;
  for (double k : kl_) sum += k;
  s.mean = sum / static_cast<double>(kl_.size());
  std::vector<double> sorted = kl_;
  std::sort(sorted.begin(), sorted.end());
  s.p99 = sorted[static_cast<size_t>(0.99 * static_cast<double>(sorted.size() - 1))];
  s.max = sorted.back();
  s.top1_agreement = static_cast<double>(top1_same_) / static_cast<double>(kl_.size());
  return s;
}

}  // namespace weft
