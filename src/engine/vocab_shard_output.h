// A step's output from each tensor-parallel rank's logits over its vocabulary shard: the full
// rows gathered over the TP group, or the best candidates of each row merged from every shard's
// (sample_candidates.h). Shared by the CPU runner and the CUDA stage runner, which compute the
// local logits each their own way.
//
// `local`: host F32 [rows, shard] logits of vocabulary ids [shard_begin, shard_begin + shard),
// where rank r's shard begins at r * shard (padded_shard: the last ranks' columns may run past
// `vocab` and are dropped).
#pragma once

#include <cstdint>

#include "absl/status/statusor.h"
#include "core/tensor.h"
#include "engine/sample_candidates.h"
#include "engine/step_executor.h"
#include "parallel/communicator.h"

namespace weft {

// F32 [rows, vocab]: every rank's shard in place.
absl::StatusOr<Tensor> gather_vocab_logits(const Tensor& local, int64_t vocab, Communicator& tp);

// The min(k, vocab) best (token, logit) pairs of each row over the whole vocabulary, best first
// (ties to the lower id), and with `with_logsumexp` each row's log-sum-exp.
absl::StatusOr<SampleCandidates> vocab_shard_candidates(const Tensor& local, int64_t shard_begin, int64_t vocab,
                                                        int32_t k, bool with_logsumexp, Communicator& tp);

// What a plan asks for (StepPlan::sample_candidates, candidate_logsumexp): full logits (0),
// argmax tokens (1 without the log-sum-exp) or candidates.
absl::StatusOr<StepOutput> vocab_shard_output(const Tensor& local, int64_t shard_begin, int64_t vocab,
                                              int32_t sample_candidates, bool candidate_logsumexp,
                                              Communicator& tp);

}  // namespace weft
