// One model over the ranks of an MPI job (`mpirun -np T*P weft ... --tp T --pp P`): every rank
// loads its shard (its pipeline stage's layers, its TP slice) and its slice of the KV cache; the
// job agrees on the number of KV blocks (the minimum over ranks); rank 0 gets the Engine and the
// other ranks serve steps until rank 0 shuts the job down.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/thread_pool.h"
#include "engine/distributed_executor.h"
#include "engine/engine.h"
#include "engine/local_engine.h"
#include "engine/rank_model.h"
#include "engine/stage_runner.h"
#include "engine/stage_worker.h"
#include "parallel/mpi_world.h"
#include "parallel/pipeline_channel.h"

namespace weft {

struct DistributedOptions {
  LocalEngineOptions engine;         // model, threads, KV cache, scheduler (as for one process)
  int tp = 1;
  int pp = 1;
  int ep = 1;  // expert-parallel ways within each TP group (must divide tp; LoadContext)
  std::vector<int> layers_per_stage;  // empty: even split
  // A step running longer ends the job (every rank exits naming the step). The coordinator's
  // deadline adapts to observed step times (parallel/adaptive_deadline.h) between
  // step_deadline_floor and this ceiling; workers keep the ceiling.
  std::chrono::milliseconds step_deadline{std::chrono::minutes(5)};
  std::chrono::milliseconds step_deadline_floor{std::chrono::seconds(10)};
  int micro_batches = 0;  // plans in flight through the pipeline; 0: pp (1 disables pipelining)
  // engine.device kCuda: builds each rank's runner on its GPU (the launcher passes the CUDA one;
  // empty: --device cuda is refused).
  DeviceStageRunnerFactory device_stage;
};

class DistributedEngine {
 public:
  // Collective over the world. Errors (on every rank, naming the failing ranks) when the world
  // size is not tp * pp, or any rank fails to load its shard.
  static absl::StatusOr<std::unique_ptr<DistributedEngine>> create(
      MpiWorld& world, const DistributedOptions& options, DetokenizerFactory detokenizers = {});
  ~DistributedEngine();

  bool is_coordinator() const { return config_.is_coordinator(); }
  // Coordinator only.
  Engine& engine() { return *engine_; }
  StepExecutor& executor() { return *executor_; }
  const RankModel& model() const { return *model_; }
  const KvCache& kv_cache() const { return kv_; }  // the host cache (empty on a device)
  // KV blocks every rank holds (the job's agreed minimum), on the host or the device.
  int64_t num_kv_blocks() const { return num_kv_blocks_; }
  // This rank's disk KV tier (null without one), e.g. for its miss counts.
  const KvDiskTier* kv_disk() const { return kv_tiers_.disk.get(); }
  const WorldConfig& world_config() const { return config_; }
  // Coordinator only: one line per rank naming its host (parallel/rank_hosts.h).
  const std::string& rank_hosts() const { return rank_hosts_; }
  // Seconds this rank spent computing steps (see StageWorker::compute_seconds).
  double compute_seconds() const { return worker_->compute_seconds(); }

  // Workers: serve steps until the coordinator shuts the job down.
  absl::Status serve();
  // Coordinator: tell every rank to stop (also done by the destructor if not called).
  absl::Status shutdown();

 private:
  DistributedEngine() = default;
  WorldConfig config_;
  GroupComms groups_;
  std::unique_ptr<ThreadPool> pool_;
  std::unique_ptr<RankModel> model_;
  KvCache kv_;
  int64_t num_kv_blocks_ = 0;
  RankKvTiers kv_tiers_;
  std::unique_ptr<ModelRunner> runner_;
  // What the stage worker drives: runner_ (CPU), or a device backend's runner (runner_ then null).
  std::unique_ptr<StageRunner> stage_runner_;
  std::unique_ptr<PipelineChannel> pipeline_;
  std::unique_ptr<StepWatchdog> watchdog_;
  std::unique_ptr<StageWorker> worker_;
  std::unique_ptr<DistributedExecutor> executor_;
  std::unique_ptr<Engine> engine_;
  std::string rank_hosts_;
  bool shut_down_ = false;
};

}  // namespace weft
