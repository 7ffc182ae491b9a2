// Messages along the pipeline (DESIGN.md section 1): each stage hands the step plan and its
// hidden states to the next stage's rank with the same tp_rank, and the last stage's tp_rank 0
// returns the step's result to the coordinator (world rank 0).
//
// Results are sent asynchronously (the buffer is kept until delivered): with several
// micro-batches in flight the coordinator may be blocked handing micro-batch k+1 to stage 1
// while the last stage returns micro-batch k, and a blocking send on both sides would deadlock.
// Messages of one kind between one pair of ranks arrive in order.
#pragma once

#include <deque>
#include <memory>
#include <string>

#include <mpi.h>

#include "absl/status/statusor.h"
#include "core/tensor.h"
#include "parallel/world_config.h"

namespace weft {

class PipelineChannel {
 public:
  // Collective over the world: duplicates MPI_COMM_WORLD for pipeline traffic.
  static absl::StatusOr<std::unique_ptr<PipelineChannel>> create(const WorldConfig& config);
  ~PipelineChannel();

  bool has_prev() const { return !config_.is_first_stage(); }
  bool has_next() const { return !config_.is_last_stage(); }
  // True on the rank that returns results to the coordinator: the last stage's tp_rank 0.
  bool returns_results() const { return config_.is_last_stage() && config_.tp_rank() == 0; }

  // To the next stage: the encoded control message, then (for steps) the hidden states.
  absl::Status send_control(const std::string& bytes);
  absl::Status send_hidden(const TensorView& hidden);
  // From the previous stage, in the same order.
  absl::StatusOr<std::string> recv_control();
  absl::Status recv_hidden(const TensorView& hidden);

  // Last stage, tp_rank 0: queue a result for the coordinator (returns at once).
  absl::Status post_result(std::string bytes);
  // Coordinator: the next result, in step order.
  absl::StatusOr<std::string> recv_result();
  // Waits until every posted result has been delivered (before shutdown).
  absl::Status flush_results();

 private:
  explicit PipelineChannel(const WorldConfig& config) : config_(config) {}
  absl::Status send_bytes(const std::string& bytes, int dest, int tag);
  absl::StatusOr<std::string> recv_bytes(int src, int tag);
  // Completes the posted sends that have finished.
  absl::Status reap_results(bool wait_all);

  struct PendingResult {
    std::unique_ptr<uint64_t> size;
    std::string bytes;
    MPI_Request requests[2];
  };
  WorldConfig config_;
  MPI_Comm comm_ = MPI_COMM_NULL;
  std::deque<PendingResult> pending_;
};

}  // namespace weft
