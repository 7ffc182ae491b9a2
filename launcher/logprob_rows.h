// The full next-token distributions of a `weft perplexity` run, saved by one run
// (--save-logprobs FILE) and compared by another (--kl-reference FILE): the KL divergence of,
// say, a quantized model's distributions from the unquantized model's, token by token over the
// same text, as llama.cpp's perplexity --kl-divergence reports it.
//
// File: the 8 bytes "WEFTLP01", then five little-endian 64-bit integers (vocab, context, stride,
// text tokens, FNV-1a hash of the token ids), then one row per scored token in scoring order:
// vocab float32 log-probabilities (log-softmax of the logits, computed in double).
#pragma once

#include <cstdint>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace weft {

// What two runs must share for their rows to be compared.
struct LogprobRunKey {
  int64_t vocab = 0;
  int64_t context = 0;
  int64_t stride = 0;
  int64_t tokens = 0;      // tokens of the text
  uint64_t text_hash = 0;  // token_ids_hash(ids)
};

uint64_t token_ids_hash(const std::vector<int32_t>& ids);

// log-softmax of logits[0, vocab) in double.
void log_softmax(const float* logits, int64_t vocab, std::vector<double>& out);

class LogprobWriter {
 public:
  static absl::StatusOr<std::unique_ptr<LogprobWriter>> create(const std::string& path, const LogprobRunKey& key);
  absl::Status write_row(const float* logits, int64_t vocab);
  absl::Status close();  // flushes; an error names the file

 private:
  std::string path_;
  std::ofstream out_;
  std::vector<double> logp_;
  std::vector<float> row_;
};

// Summary of the KL divergences KL(reference || this run), one per scored token, in nats.
struct KlSummary {
  int64_t tokens = 0;
  double mean = 0.0;
  double p99 = 0.0;
  double max = 0.0;
  double top1_agreement = 0.0;  // fraction of tokens whose most likely token is the reference's
};

class KlReference {
 public:
  // Opens `path` and checks its header against this run's key; a mismatch names the field.
  static absl::StatusOr<std::unique_ptr<KlReference>> open(const std::string& path, const LogprobRunKey& key);
  // This run's logits for the next scored token, against the reference's next row.
  absl::Status add_row(const float* logits, int64_t vocab);
  // After the last row: the summary; an error when the reference holds more rows than were added.
  absl::StatusOr<KlSummary> finish();

 private:
  std::string path_;
  std::ifstream in_;
  int64_t vocab_ = 0;
  std::vector<float> ref_;
  std::vector<double> logq_;
  std::vector<double> kl_;
  int64_t top1_same_ = 0;
};

}  // namespace weft
