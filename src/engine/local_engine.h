// Everything a single process (world size 1) needs to generate: the loaded model, its KV cache,
// the kernel threads, the runner and the engine, built in dependency order and owned together.
#pragma once

#include <filesystem>
#include <functional>
#include <memory>

#include "absl/status/statusor.h"
#include "core/thread_pool.h"
#include "engine/engine.h"
#include "engine/kv_tier_setup.h"
#include "engine/local_executor.h"
#include "engine/model_runner.h"
#include "engine/rank_model.h"
#include "engine/speculative/speculative_setup.h"
#include "parallel/single_rank_communicator.h"

namespace weft {

// Where the forward pass runs (--device). kCuda needs a DeviceExecutorFactory (the launcher
// passes src/engine/cuda's when built with WEFT_CUDA).
enum class EngineDevice { kCpu, kCuda };

struct LocalEngineOptions {
  std::filesystem::path model_dir;
  EngineDevice device = EngineDevice::kCpu;
  // --cuda-device: which GPU this rank uses; -1: its local rank on the host (OpenMPI / Slurm /
  // MPICH), modulo the GPUs it sees (0 for a single process).
  int cuda_device = -1;
  int num_threads = 0;  // 0: default_thread_count() (the CPUs this rank may use)
  // How long idle kernel threads spin for the next job before sleeping (ThreadPool).
  std::chrono::microseconds thread_spin = ThreadPool::kDefaultSpin;
  KvCacheOptions kv;
  KvTierOptions kv_tiers;  // host/disk tiers below the KV pool (CPU pool only)
  SchedulerConfig scheduler;
  int64_t max_model_len = 0;  // 0: the model's max_position_embeddings
  std::optional<uint64_t> seed;
  WeightQuantization quantization = WeightQuantization::kNone;  // --quantize (CPU only)
  bool quantize_lm_head = false;  // --quantize-lm-head (CPU only; LoadContext::quantize_lm_head)
  bool mmap_weights = false;      // --mmap-weights (LoadContext::mmap_weights)
  SpeculativeDecodingOptions speculative;  // --speculative ... (enabled on the coordinator)
  bool overlap_constraint_masks = true;     // EngineConfig::overlap_constraint_masks
  // Set (weft inspect, CPU only): this rank's forward passes record attention weights into it.
  std::shared_ptr<AttentionProbe> attention_probe;
};

// The executor of a non-CPU device and the KV blocks it holds (its own device KV pool).
struct DeviceExecutor {
  std::unique_ptr<StepExecutor> executor;
  int64_t num_kv_blocks = 0;
};
using DeviceExecutorFactory = std::function<absl::StatusOr<DeviceExecutor>(
    const RankModel& model, const LocalEngineOptions& options)>;

class LocalEngine {
 public:
  // With options.device == kCuda, `device_executor` builds the executor (FailedPrecondition when
  // it is empty); the host KV cache is then left empty and runner() must not be used.
  static absl::StatusOr<std::unique_ptr<LocalEngine>> create(
      const LocalEngineOptions& options, DetokenizerFactory detokenizers = {},
      const DeviceExecutorFactory& device_executor = {});

  Engine& engine() { return *engine_; }
  ModelRunner& runner() { return *runner_; }
  const RankModel& model() const { return *model_; }
  const KvCache& kv_cache() const { return kv_; }
  // KV blocks the engine schedules over (the host cache's, or the device executor's).
  int64_t num_kv_blocks() const { return num_kv_blocks_; }
  StepExecutor& executor() { return device_executor_ ? *device_executor_ : *executor_; }
  ThreadPool& pool() { return *pool_; }
  // The KV tiers below the pool (null when not enabled).
  const KvHostStore* kv_store() const { return kv_tiers_.store.get(); }
  KvDiskTier* kv_disk() { return kv_tiers_.disk.get(); }

 private:
  LocalEngine() = default;
  SingleRankCommunicator tp_;
  std::unique_ptr<ThreadPool> pool_;
  std::unique_ptr<RankModel> model_;
  KvCache kv_;
  RankKvTiers kv_tiers_;
  std::unique_ptr<ModelRunner> runner_;
  std::unique_ptr<LocalExecutor> executor_;
  std::unique_ptr<StepExecutor> device_executor_;
  int64_t num_kv_blocks_ = 0;
  std::unique_ptr<Engine> engine_;
};

// The eos ids the engine stops on: generation_config.json's, else config.json's.
std::vector<int32_t> model_eos_ids(const RankModel& model);

}  // namespace weft
