#include "engine/local_engine.h"

#include <iostream>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "engine/model_kv_rules.h"

namespace weft {

std::vector<int32_t> model_eos_ids(const RankModel& model) {
  const auto& ids = model.generation.eos_token_ids.empty() ? model.config.eos_token_ids
                                                           : model.generation.eos_token_ids;
  return std::vector<int32_t>(ids.begin(), ids.end());
}

absl::StatusOr<std::unique_ptr<LocalEngine>> LocalEngine::create(
    const LocalEngineOptions& options, DetokenizerFactory detokenizers,
    const DeviceExecutorFactory& device_executor) {
  if (options.device != EngineDevice::kCpu && !device_executor) {
    return absl::FailedPreconditionError("--device cuda: this engine has no CUDA executor");
  }
  if (options.device != EngineDevice::kCpu && options.quantization != WeightQuantization::kNone) {
    return absl::UnimplementedError(absl::StrCat(
        "--quantize ", weight_quantization_name(options.quantization),
        ": quantized weights run on the CPU only for now; use --device cpu"));
  }
  if (options.device != EngineDevice::kCpu && options.quantize_lm_head) {
    return absl::UnimplementedError(
        "--quantize-lm-head: quantized weights run on the CPU only for now; use --device cpu");
  }
  if (options.device != EngineDevice::kCpu && options.attention_probe) {
    return absl::UnimplementedError(
        "--attention-layers: attention weights are recorded by the CPU kernels only for now; use --device cpu");
  }
  std::unique_ptr<LocalEngine> e(new LocalEngine());
  e->pool_ = std::make_unique<ThreadPool>(options.num_threads, options.thread_spin);
  WEFT_ASSIGN_OR_RETURN(e->model_, load_whole_model(options.model_dir, e->tp_,
                                                    ModelLoadOptions{1, options.quantization, options.quantize_lm_head,
                                                                     // A device executor reads the host weights
                                                                     // once, to upload them: no copy.
                                                                     options.mmap_weights ||
                                                                         options.device != EngineDevice::kCpu}));
  if (options.device == EngineDevice::kCpu) {
    WEFT_ASSIGN_OR_RETURN(e->kv_, KvCache::allocate(e->model_->kv_shape(options.kv),
                                                    e->model_->blocks_fitting(options.kv)));
    e->num_kv_blocks_ = e->kv_.num_blocks();
  } else {
    WEFT_ASSIGN_OR_RETURN(DeviceExecutor device, device_executor(*e->model_, options));
    e->device_executor_ = std::move(device.executor);
    e->num_kv_blocks_ = device.num_kv_blocks;
  }
  if (options.kv_tiers.enabled() && options.device != EngineDevice::kCpu) {
    return absl::UnimplementedError(
        "--kv-offload-bytes / --kv-disk-cache: the KV tiers work with the CPU pool only for now; use --device cpu");
  }
  if (options.kv_tiers.enabled()) {
    WEFT_ASSIGN_OR_RETURN(KvSliceIdentity slice, kv_slice_identity(options.kv_tiers, options.model_dir));
    WEFT_ASSIGN_OR_RETURN(e->kv_tiers_, make_rank_kv_tiers(options.kv_tiers, options.scheduler.enable_prefix_caching,
                                                           e->kv_, slice));
    if (!e->kv_tiers_.disk_status.ok()) {
      std::cerr << "weft: warning: " << e->kv_tiers_.disk_status.message() << "; continuing without the disk tier\n";
    }
  }
  e->runner_ = std::make_unique<ModelRunner>(*e->model_->model, e->kv_, e->tp_, *e->pool_);
  e->runner_->set_attention_probe(options.attention_probe.get());
  e->runner_->set_kv_store(e->kv_tiers_.store.get());
  e->executor_ = std::make_unique<LocalExecutor>(*e->runner_);

  EngineConfig config;
  config.scheduler = options.scheduler;
  apply_model_kv_rules(e->model_->config, config.scheduler);
  config.vocab_size = e->model_->config.vocab_size;
  config.max_model_len =
      options.max_model_len > 0 ? options.max_model_len : default_max_model_len(e->model_->config);
  config.eos_token_ids = model_eos_ids(*e->model_);
  config.seed = options.seed;
  config.overlap_constraint_masks = options.overlap_constraint_masks;
  e->engine_ = std::make_unique<Engine>(config, e->num_kv_blocks_, options.kv.block_size,
                                        e->executor(), *e->pool_, std::move(detokenizers));
  if (e->kv_tiers_.store) {
    e->engine_->attach_kv_tiers(make_kv_tier_directory(e->kv_tiers_, e->kv_tiers_.host_capacity_blocks),
                                e->kv_tiers_.store.get());
  }
  WEFT_RETURN_IF_ERROR(enable_speculative_decoding(*e->engine_, options.speculative, *e->model_,
                                                   options.model_dir, options.kv, *e->pool_));
  return e;
}

}  // namespace weft
