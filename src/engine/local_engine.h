// Everything a single process (world size 1) needs to generate: the loaded model, its KV cache,
// the kernel threads, the runner and the engine, built in dependency order and owned together.
#pragma once

#include <filesystem>
#include <memory>

#include "absl/status/statusor.h"
#include "core/thread_pool.h"
#include "engine/engine.h"
#include "engine/local_executor.h"
#include "engine/model_runner.h"
#include "engine/rank_model.h"
#include "parallel/single_rank_communicator.h"

namespace weft {

struct LocalEngineOptions {
  std::filesystem::path model_dir;
  int num_threads = 0;  // 0: all hardware threads
  KvCacheOptions kv;
  SchedulerConfig scheduler;
  int64_t max_model_len = 0;  // 0: the model's max_position_embeddings
  std::optional<uint64_t> seed;
};

class LocalEngine {
 public:
  static absl::StatusOr<std::unique_ptr<LocalEngine>> create(const LocalEngineOptions& options,
                                                             DetokenizerFactory detokenizers = {});

  Engine& engine() { return *engine_; }
  ModelRunner& runner() { return *runner_; }
  const RankModel& model() const { return *model_; }
  const KvCache& kv_cache() const { return kv_; }
  ThreadPool& pool() { return *pool_; }

 private:
  LocalEngine() = default;
  SingleRankCommunicator tp_;
  std::unique_ptr<ThreadPool> pool_;
  std::unique_ptr<RankModel> model_;
  KvCache kv_;
  std::unique_ptr<ModelRunner> runner_;
  std::unique_ptr<LocalExecutor> executor_;
  std::unique_ptr<Engine> engine_;
};

// The eos ids the engine stops on: generation_config.json's, else config.json's.
std::vector<int32_t> model_eos_ids(const RankModel& model);

}  // namespace weft
