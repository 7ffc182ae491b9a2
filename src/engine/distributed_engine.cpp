#include "engine/distributed_engine.h"

#include <algorithm>
#include <iostream>

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
  const bool on_device = options.engine.device != EngineDevice::kCpu;
  // What the device path does not do, refused on every rank alike before anything is loaded.
  if (on_device) {
    if (!options.device_stage) return absl::FailedPreconditionError("--device cuda: this engine has no CUDA runner");
    if (options.engine.quantization != WeightQuantization::kNone || options.engine.quantize_lm_head) {
      return absl::UnimplementedError("--quantize / --quantize-lm-head: quantized weights run on the CPU only for now; use --device cpu");
    }
    if (options.engine.kv_tiers.enabled()) {
      return absl::UnimplementedError(
          "--kv-offload-bytes / --kv-disk-cache: the KV tiers work with the CPU pool only for now; use --device cpu");
    }
    if (options.engine.attention_probe) {
      return absl::UnimplementedError(
          "--attention-layers: attention weights are recorded by the CPU kernels only for now; use --device cpu");
    }
  }

  // Every rank loads its part; a failure anywhere stops every rank with the same message.
  StageLayout layout;
  absl::Status loaded = [&]() -> absl::Status {
    WEFT_ASSIGN_OR_RETURN(ModelConfig config, load_model_config(options.engine.model_dir));
    WEFT_ASSIGN_OR_RETURN(layout, stage_layout(static_cast<int>(config.num_hidden_layers), options.pp,
                                               e->config_.pp_rank(), options.layers_per_stage));
    // A device runner reads the host weights once, to upload them: no copy.
    WEFT_ASSIGN_OR_RETURN(e->model_, load_rank_model(options.engine.model_dir, *e->groups_.tp, layout,
                                                          ModelLoadOptions{options.ep, options.engine.quantization,
                                                                           options.engine.quantize_lm_head,
                                                                           options.engine.mmap_weights || on_device}));
    return absl::OkStatus();
  }();
  WEFT_RETURN_IF_ERROR(agree_on_status(world, loaded));

  const KvCacheOptions& kv = options.engine.kv;
  int64_t blocks = 0;
  if (on_device) {
    // Each rank its runner on its GPU; then the TP groups connect, and the job schedules the
    // blocks the smallest device pool holds.
    DeviceStageRunner device;
    absl::Status made = [&]() -> absl::Status {
      WEFT_ASSIGN_OR_RETURN(device, options.device_stage(*e->model_, options.engine, layout, *e->groups_.tp));
      return absl::OkStatus();
    }();
    WEFT_RETURN_IF_ERROR(agree_on_status(world, made));
    std::cerr << "weft: rank " << e->config_.rank << ": " << device.description << "\n";
    e->stage_runner_ = std::move(device.runner);
    WEFT_RETURN_IF_ERROR(agree_on_status(world, e->stage_runner_->join_tp_group()));
    WEFT_ASSIGN_OR_RETURN(blocks, agree_on_minimum(device.num_kv_blocks));
    if (e->config_.is_coordinator()) {
      std::cerr << "weft: note: multi-rank --device cuda is new and has not yet been checked on a GPU machine; "
                   "compare its output with --device cpu\n";
    }
  } else {
    WEFT_ASSIGN_OR_RETURN(blocks, agree_on_minimum(e->model_->blocks_fitting(kv)));
    absl::Status allocated = [&]() -> absl::Status {
      WEFT_ASSIGN_OR_RETURN(e->kv_, KvCache::allocate(e->model_->kv_shape(kv), blocks));
      return absl::OkStatus();
    }();
    WEFT_RETURN_IF_ERROR(agree_on_status(world, allocated));
  }

  e->num_kv_blocks_ = blocks;

  // KV tiers: every rank its own slice (its layers, its KV heads) of the host tier and of the disk
  // tier (its own directory and lock under --kv-disk-cache, kv_tier_setup.h); the job uses the
  // smallest host capacity. A rank that cannot open its disk tier leaves the whole job without
  // one (one warning, from the coordinator); the coordinator plans disk hits only once every
  // rank loaded the block (kv/kv_disk_agreement.h).
  const KvTierOptions& tier_options = options.engine.kv_tiers;
  absl::Status tiers_made = [&]() -> absl::Status {
    WEFT_ASSIGN_OR_RETURN(KvSliceIdentity slice,
                          kv_slice_identity(tier_options, options.engine.model_dir, e->config_.tp_rank(),
                                            e->config_.tp, e->config_.pp_rank(), e->config_.pp));
    KvTierOptions mine = tier_options;
    // Only the coordinator reads ahead (its directory asks); the others read in the step that
    // carries the load.
    if (!e->config_.is_coordinator()) mine.disk_prefetch_bytes = 0;
    WEFT_ASSIGN_OR_RETURN(e->kv_tiers_, make_rank_kv_tiers(mine, options.engine.scheduler.enable_prefix_caching,
                                                           e->kv_, slice));
    return absl::OkStatus();
  }();
  WEFT_RETURN_IF_ERROR(agree_on_status(world, tiers_made));
  if (!tier_options.disk_dir.empty()) {
    const absl::Status disks = agree_on_status(world, e->kv_tiers_.disk_status);
    if (!disks.ok()) {
      drop_disk_tier(e->kv_tiers_, e->kv_);
      if (e->config_.is_coordinator()) {
        std::cerr << "weft: warning: " << disks.message() << "; continuing without the disk tier on every rank\n";
      }
    }
  }
  WEFT_ASSIGN_OR_RETURN(int64_t host_capacity, agree_on_minimum(e->kv_tiers_.host_capacity_blocks));
  // What the ranks' stores may hold of disk blocks being agreed on: the read-ahead budget.
  const int64_t agreement_bytes =
      tier_options.disk_prefetch_bytes > 0 ? tier_options.disk_prefetch_bytes : KvTierOptions{}.disk_prefetch_bytes;
  WEFT_ASSIGN_OR_RETURN(
      int64_t agreement_blocks,
      agree_on_minimum(e->kv_tiers_.store ? std::max<int64_t>(1, e->kv_tiers_.store->blocks_fitting(agreement_bytes))
                                          : 0));
  if (!on_device) {
    e->runner_ = std::make_unique<ModelRunner>(*e->model_->model, e->kv_, *e->groups_.tp, *e->pool_);
    e->runner_->set_attention_probe(options.engine.attention_probe.get());
    e->runner_->set_kv_store(e->kv_tiers_.store.get());
    e->stage_runner_ = std::make_unique<HostStageRunner>(*e->runner_);
  }
  WEFT_ASSIGN_OR_RETURN(e->pipeline_, PipelineChannel::create(e->config_));
  e->watchdog_ = world.make_watchdog();
  e->worker_ = std::make_unique<StageWorker>(e->config_, *e->stage_runner_, *e->groups_.tp, *e->pipeline_,
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
      e->engine_->attach_kv_tiers(make_kv_tier_directory(e->kv_tiers_, host_capacity, agreement_blocks),
                                  e->kv_tiers_.store.get());
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
