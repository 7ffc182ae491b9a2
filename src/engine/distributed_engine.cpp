#include "engine/distributed_engine.h"

#include "core/status_macros.h"
#include "engine/model_kv_rules.h"
#include "parallel/rank_hosts.h"
#include "parallel/world_agreement.h"

namespace weft {

absl::StatusOr<std::unique_ptr<DistributedEngine>> DistributedEngine::create(
    MpiWorld& world, const DistributedOptions& options, DetokenizerFactory detokenizers) {
  std::unique_ptr<DistributedEngine> e(new DistributedEngine());
  WEFT_ASSIGN_OR_RETURN(e->config_, WorldConfig::create(world.rank(), world.size(), options.tp, options.pp));
  WEFT_ASSIGN_OR_RETURN(e->groups_, world.split(e->config_));
  WEFT_ASSIGN_OR_RETURN(std::vector<std::string> hosts, world.gather_bytes(world.host(), 0));
  if (e->config_.is_coordinator()) {
    WEFT_ASSIGN_OR_RETURN(e->rank_hosts_, describe_rank_hosts(e->config_, hosts));
  }
  e->pool_ = std::make_unique<ThreadPool>(options.engine.num_threads, options.engine.thread_spin);

  // Every rank loads its part; a failure anywhere stops every rank with the same message.
  absl::Status loaded = [&]() -> absl::Status {
    WEFT_ASSIGN_OR_RETURN(ModelConfig config, load_model_config(options.engine.model_dir));
    WEFT_ASSIGN_OR_RETURN(StageLayout layout,
                          stage_layout(static_cast<int>(config.num_hidden_layers), options.pp,
                                       e->config_.pp_rank(), options.layers_per_stage));
    WEFT_ASSIGN_OR_RETURN(e->model_, load_rank_model(options.engine.model_dir, *e->groups_.tp, layout,
                                                          ModelLoadOptions{options.ep, options.engine.quantization}));
    return absl::OkStatus();
  }();
  WEFT_RETURN_IF_ERROR(agree_on_status(world, loaded));

  const KvCacheOptions& kv = options.engine.kv;
  WEFT_ASSIGN_OR_RETURN(int64_t blocks, agree_on_minimum(e->model_->blocks_fitting(kv)));
  absl::Status allocated = [&]() -> absl::Status {
    WEFT_ASSIGN_OR_RETURN(e->kv_, KvCache::allocate(e->model_->kv_shape(kv), blocks));
    return absl::OkStatus();
  }();
  WEFT_RETURN_IF_ERROR(agree_on_status(world, allocated));

  // Host tier: every rank its own slice, the job the smallest capacity. The disk tier needs the
  // coordinator to check every rank's file before it plans a hit, which is not built yet.
  if (!options.engine.kv_tiers.disk_dir.empty()) {
    return absl::UnimplementedError(
        "--kv-disk-cache: the disk KV tier runs in a single process only for now (not under --tp / --pp)");
  }
  absl::Status tiers_made = [&]() -> absl::Status {
    WEFT_ASSIGN_OR_RETURN(e->kv_tiers_, make_rank_kv_tiers(options.engine.kv_tiers,
                                                           options.engine.scheduler.enable_prefix_caching,
                                                           e->kv_, KvSliceIdentity{}));
    return absl::OkStatus();
  }();
  WEFT_RETURN_IF_ERROR(agree_on_status(world, tiers_made));
  WEFT_ASSIGN_OR_RETURN(int64_t host_capacity, agree_on_minimum(e->kv_tiers_.host_capacity_blocks));
  e->runner_ = std::make_unique<ModelRunner>(*e->model_->model, e->kv_, *e->groups_.tp, *e->pool_);
  e->runner_->set_attention_probe(options.engine.attention_probe.get());
  e->runner_->set_kv_store(e->kv_tiers_.store.get());
  WEFT_ASSIGN_OR_RETURN(e->pipeline_, PipelineChannel::create(e->config_));
  e->watchdog_ = world.make_watchdog();
  e->worker_ = std::make_unique<StageWorker>(e->config_, *e->runner_, *e->groups_.tp, *e->pipeline_,
                                             e->watchdog_.get(), options.step_deadline);
  if (e->config_.is_coordinator()) {
    AdaptiveDeadline::Options deadline;
    deadline.ceiling = options.step_deadline;
    deadline.floor = options.step_deadline_floor;
    e->executor_ = std::make_unique<DistributedExecutor>(e->config_, *e->worker_, *e->groups_.tp,
                                                         *e->pipeline_, e->watchdog_.get(), deadline,
                                                         options.micro_batches > 0 ? options.micro_batches
                                                                                   : options.pp);
    EngineConfig config;
    config.scheduler = options.engine.scheduler;
    apply_model_kv_rules(e->model_->config, config.scheduler);
    config.vocab_size = e->model_->config.vocab_size;
    config.max_model_len = options.engine.max_model_len > 0 ? options.engine.max_model_len
                                                            : default_max_model_len(e->model_->config);
    config.eos_token_ids = model_eos_ids(*e->model_);
    config.seed = options.engine.seed;
    config.overlap_constraint_masks = options.engine.overlap_constraint_masks;
    e->engine_ = std::make_unique<Engine>(config, blocks, kv.block_size, *e->executor_, *e->pool_,
                                          std::move(detokenizers));
    if (e->kv_tiers_.store) {
      e->engine_->attach_kv_tiers(make_kv_tier_directory(e->kv_tiers_, host_capacity), e->kv_tiers_.store.get());
    }
    // The proposer lives on the coordinator only (draft_model_proposer.h says why). A failure
    // here ends the job through the caller: the workers are already serving steps and are told
    // to stop when the engine is destroyed.
    WEFT_RETURN_IF_ERROR(enable_speculative_decoding(*e->engine_, options.engine.speculative, *e->model_,
                                                     options.engine.model_dir, kv, *e->pool_));
  }
  return e;
}

// create() may fail at any point after the object exists (a load error, a KV allocation that
// does not fit, a pipeline channel that cannot open): only a coordinator whose executor was built
// has workers serving steps, so only then is there anyone to tell to stop.
DistributedEngine::~DistributedEngine() {
  if (executor_ && !shut_down_) (void)shutdown();
}

absl::Status DistributedEngine::serve() { return worker_->serve(); }

absl::Status DistributedEngine::shutdown() {
  if (!executor_) return absl::FailedPreconditionError("shutdown() on a rank that is not the coordinator");
  shut_down_ = true;
  return executor_->shutdown();
}

}  // namespace weft
