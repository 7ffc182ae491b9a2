#include "launcher/engine_flags.h"

#include "absl/strings/str_cat.h"
#include "core/cpu_features.h"
#include "core/status_macros.h"
#include "core/thread_pool.h"
#include "launcher/default_model.h"
#include "weft/kernels/linear.h"

namespace weft {

std::vector<FlagSpec> engine_flag_specs() {
  return {
      {"model", "DIR", "Hugging Face model directory (default: $WEFT_DEFAULT_MODEL or configs/default-model)"},
      {"device", "cpu|cuda", "where the model runs (default cpu; cuda: BF16/F16 on one GPU per rank)"},
      {"cuda-device", "N",
       "with --device cuda, the GPU this rank uses (default: its local rank on the host, modulo the GPUs it sees)"},
      {"threads", "N",
       "kernel threads (default: the CPUs this process may use, shared among the ranks OpenMPI "
       "started on this host without binding them)"},
      {"thread-spin-us", "N",
       "microseconds idle kernel threads spin for the next operation before sleeping (default "
       "200, weft serve 5000; 0 sleeps at once, kinder to a machine shared with other work)"},
      {"block-size", "N", "tokens per KV block (default 16)"},
      {"kv-cache-memory", "SIZE", "KV cache budget, e.g. 512MiB (default 1GiB)"},
      {"kv-cache-memory-fraction", "F",
       "KV cache budget as a fraction (0, 1] of the memory left after loading the model"},
      {"kv-cache-blocks", "N", "cap on KV blocks (default: what the budget holds)"},
      {"kv-cache-dtype", "T", "auto|float32|bfloat16|float16|int8 (default auto: the model's dtype)"},
      {"kv-offload-bytes", "SIZE",
       "host-memory KV tier below the pool, per rank: evicted prefix-cache blocks move there and "
       "are copied back on a hit (e.g. 4GiB; default 0: none)"},
      {"kv-disk-cache", "DIR",
       "disk KV tier: prefix-cache blocks written to DIR, found again by a later process (under --tp/--pp "
       "each rank its slice in DIR/tp<t>of<T>-pp<p>of<P>)"},
      {"kv-disk-bytes", "SIZE", "budget of --kv-disk-cache, least recently used files deleted (default 8GiB)"},
      {"max-num-seqs", "N", "running sequences per step (default 64)"},
      {"max-num-batched-tokens", "N", "tokens per step (default 2048)"},
      {"no-chunked-prefill", "", "never split a prompt over steps"},
      {"no-prefix-caching", "", "never reuse the KV of a shared prompt prefix"},
      {"max-model-len", "N", "prompt + output limit (default: the model's)"},
      {"seed", "N", "base seed for requests without one"},
      {"generation-config", "auto|none",
       "auto (default): generation_config.json's sampling values are the defaults; none: weft's"},
      {"cpu-isa", "native|avx512-noamx|avx512-novnni|avx2|portable", "cap the CPU kernels' instruction set"},
      {"quantize", "none|int8|int4[-gN][-sym]|fp8|q8_0|q4_k|...",
       "quantize linear weights at load, per rank after TP sharding (CPU): int8 per output row "
       "(W8A16); int4 = int4-g128 (groups of 32/64/128 with a zero point, -sym without; a shard "
       "not a multiple of the group takes the next smaller group); fp8: e4m3 with a scale per 64 "
       "(W8A16; shards a multiple of 64); or a GGUF type q8_0, q4_0, q4_1, q5_0, q5_1, q4_k, "
       "q5_k, q6_k"},
      {"quantize-lm-head", "",
       "also quantize the LM head at load, to int8 per output row (W8A16; CPU); a head tied to the "
       "embedding gets its own int8 copy. Off by default, as vLLM; llama.cpp's files quantize it"},
      {"mmap-weights", "",
       "compute from the weights where the checkpoint's files are mapped (4 KiB page-cache pages) "
       "instead of copying them at load into memory on huge pages: less memory while loading, "
       "slower decode"},
      {"matmul-precision", "auto|f32|bf16|int8",
       "bf16: BF16 weights multiply BF16-rounded activations (AVX512-BF16 or AMX); int8: quantized weights "
       "(GGUF, --quantize int4, and --quantize int8 on AVX512-VNNI) multiply int8-rounded activations (llama.cpp's way, faster); "
       "f32: F32 activations (quantized weights dequantized in the kernel); default auto: bf16 "
       "where it is faster (AVX512-BF16 on AMD Zen 4+, AMX-BF16 on Intel), else f32"},
      {"speculative", "none|ngram|draft",
       "speculative decoding: ngram (prompt lookup) or draft (a draft model; default with --draft-model)"},
      {"draft-model", "DIR", "draft model sharing the target's tokenizer (default model: configs/default-draft)"},
      {"num-speculative-tokens", "K", "guesses per sequence per step at most, 1..16 (default 4)"},
      {"speculative-adaptive", "on|off",
       "on (default): per step, speculate only as far as measured to pay (0..K); off: always K"},
      {"ngram-min", "N", "--speculative ngram: shortest suffix looked up (default 1)"},
      {"ngram-max", "N", "--speculative ngram: longest suffix looked up (default 4)"},
      {"constraint-masks", "overlap|after-forward",
       "when constrained sequences' next-token masks are filled: overlap (default), on a thread of "
       "their own while the step's forward pass runs; after-forward, on the kernel threads once the "
       "logits arrive (the same masks and outputs)"},
      {"tp", "T", "tensor-parallel ranks (run under mpirun -np T*P)"},
      {"pp", "P", "pipeline-parallel stages"},
      {"ep", "E", "mixture of experts: spread whole experts over E ranks of each TP group (E divides T; default 1)"},
      {"layers-per-stage", "6,6", "uneven pipeline split (default: even)"},
      {"step-timeout", "S", "a step running longer ends the job (default 300)"},
      {"step-timeout-floor", "S",
       "once warm, steps must finish within 10x the recent p99 step time, but never under S (default 10)"},
      {"pipeline-micro-batches", "N", "steps in flight through the pipeline (default pp; 1 = off)"},
  };
}

absl::Status speculative_options_from(const CliArgs& args, LocalEngineOptions& o) {
  SpeculativeDecodingOptions& s = o.speculative;
  const bool has_draft = args.has("draft-model");
  WEFT_ASSIGN_OR_RETURN(s.method, parse_speculative_method(args.get_or("speculative", has_draft ? "draft" : "none")));
  const bool speculating = s.method != SpeculativeMethod::kNone;
  for (const char* flag : {"num-speculative-tokens", "speculative-adaptive", "ngram-min", "ngram-max", "draft-model"}) {
    if (args.has(flag) && !speculating) {
      return absl::InvalidArgumentError(absl::StrCat("--", flag, ": needs --speculative ngram or draft"));
    }
  }
  if (has_draft && s.method != SpeculativeMethod::kDraftModel) {
    return absl::InvalidArgumentError("--draft-model: needs --speculative draft");
  }
  if ((args.has("ngram-min") || args.has("ngram-max")) && s.method != SpeculativeMethod::kNgram) {
    return absl::InvalidArgumentError("--ngram-min / --ngram-max: need --speculative ngram");
  }
  WEFT_ASSIGN_OR_RETURN(int64_t k, args.get_int("num-speculative-tokens", 4));
  if (k < 1 || k > SpeculationOptions::kMaxTokens) {
    return absl::InvalidArgumentError(absl::StrCat("--num-speculative-tokens: must be in [1, ",
                                                   SpeculationOptions::kMaxTokens, "], got ", k));
  }
  s.engine.num_speculative_tokens = static_cast<int>(k);
  const std::string adaptive = args.get_or("speculative-adaptive", "on");
  if (adaptive != "on" && adaptive != "off") {
    return absl::InvalidArgumentError(absl::StrCat("--speculative-adaptive: expected on or off, got '", adaptive, "'"));
  }
  s.engine.adaptive = adaptive == "on";
  WEFT_ASSIGN_OR_RETURN(int64_t ngram_min, args.get_int("ngram-min", 1));
  WEFT_ASSIGN_OR_RETURN(int64_t ngram_max, args.get_int("ngram-max", 4));
  if (ngram_min < 1 || ngram_max < ngram_min || ngram_max > 64) {
    return absl::InvalidArgumentError(absl::StrCat("--ngram-min ", ngram_min, " / --ngram-max ", ngram_max,
                                                   ": need 1 <= min <= max <= 64"));
  }
  s.ngram_min = static_cast<int>(ngram_min);
  s.ngram_max = static_cast<int>(ngram_max);
  if (s.method == SpeculativeMethod::kDraftModel) {
    s.draft_model = args.get_or("draft-model", "");
    if (s.draft_model.empty()) {
      // The default model's matched draft ships beside it.
      const std::filesystem::path default_model = default_model_dir();
      const std::filesystem::path draft = default_model.parent_path() / "default-draft";
      std::error_code ec;
      if (!default_model.empty() && std::filesystem::equivalent(o.model_dir, default_model, ec) &&
          std::filesystem::is_regular_file(draft / "config.json", ec)) {
        s.draft_model = draft;
      } else {
        return absl::InvalidArgumentError(
            "--speculative draft: --draft-model DIR is required (only the default model has a default draft)");
      }
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<LocalEngineOptions> engine_options_from(const CliArgs& args, const std::string& default_model,
                                                       std::chrono::microseconds default_spin) {
  LocalEngineOptions o;
  o.model_dir = args.get_or("model", default_model);
  if (o.model_dir.empty()) o.model_dir = default_model_dir();
  if (o.model_dir.empty()) {
    return absl::InvalidArgumentError(
        "--model DIR is required (no default model found: set WEFT_DEFAULT_MODEL or keep configs/default-model)");
  }
  const std::string generation_config = args.get_or("generation-config", "auto");
  if (generation_config != "auto" && generation_config != "none") {
    return absl::InvalidArgumentError(
        absl::StrCat("--generation-config: expected auto or none, got '", generation_config, "'"));
  }
  const std::string device = args.get_or("device", "cpu");
  if (device == "cuda") {
    o.device = EngineDevice::kCuda;
  } else if (device != "cpu") {
    return absl::InvalidArgumentError(
        absl::StrCat("--device: expected cpu or cuda, got '", device, "'"));
  }
  WEFT_ASSIGN_OR_RETURN(int64_t cuda_device, args.get_int("cuda-device", -1));
  if (args.has("cuda-device") && (cuda_device < 0 || o.device != EngineDevice::kCuda)) {
    return absl::InvalidArgumentError("--cuda-device N: N must be at least 0, and goes with --device cuda");
  }
  o.cuda_device = static_cast<int>(cuda_device);
  WEFT_ASSIGN_OR_RETURN(int64_t threads, args.get_int("threads", 0));
  o.num_threads = static_cast<int>(threads);
  WEFT_ASSIGN_OR_RETURN(int64_t spin_us,
                        args.get_int("thread-spin-us", default_spin.count()));
  if (spin_us < 0 || spin_us > 1000000) {
    return absl::InvalidArgumentError("--thread-spin-us: must be in [0, 1000000]");
  }
  o.thread_spin = std::chrono::microseconds(spin_us);
  WEFT_ASSIGN_OR_RETURN(int64_t block_size, args.get_int("block-size", 16));
  if (block_size < 1 || block_size > 1024) {
    return absl::InvalidArgumentError("--block-size: must be in [1, 1024]");
  }
  o.kv.block_size = static_cast<int>(block_size);
  WEFT_ASSIGN_OR_RETURN(o.kv.memory_bytes, args.get_bytes("kv-cache-memory", 1ll << 30));
  WEFT_ASSIGN_OR_RETURN(o.kv.max_blocks, args.get_int("kv-cache-blocks", 0));
  WEFT_ASSIGN_OR_RETURN(o.kv.memory_fraction, args.get_double("kv-cache-memory-fraction", 0.0));
  if (args.has("kv-cache-memory-fraction") &&
      (o.kv.memory_fraction <= 0 || o.kv.memory_fraction > 1)) {
    return absl::InvalidArgumentError("--kv-cache-memory-fraction: must be in (0, 1]");
  }
  WEFT_ASSIGN_OR_RETURN(o.kv_tiers.host_bytes, args.get_bytes("kv-offload-bytes", 0));
  o.kv_tiers.disk_dir = args.get_or("kv-disk-cache", "");
  WEFT_ASSIGN_OR_RETURN(o.kv_tiers.disk_bytes, args.get_bytes("kv-disk-bytes", 8ll << 30));
  if (args.has("kv-disk-bytes") && !args.has("kv-disk-cache")) {
    return absl::InvalidArgumentError("--kv-disk-bytes: needs --kv-disk-cache DIR");
  }
  const std::string kv_dtype = args.get_or("kv-cache-dtype", "auto");
  if (kv_dtype == "int8" || kv_dtype == "i8") {
    o.kv.dtype = DType::kI8;
  } else if (kv_dtype != "auto") {
    auto dtype = dtype_from_string(kv_dtype);
    if (!dtype.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--kv-cache-dtype: expected auto, float32, bfloat16, float16 or int8, got '", kv_dtype,
          "'"));
    }
    o.kv.dtype = *dtype;
  }
  WEFT_ASSIGN_OR_RETURN(int64_t max_seqs, args.get_int("max-num-seqs", 64));
  WEFT_ASSIGN_OR_RETURN(o.scheduler.max_num_batched_tokens,
                        args.get_int("max-num-batched-tokens", 2048));
  if (max_seqs < 1 || o.scheduler.max_num_batched_tokens < 1) {
    return absl::InvalidArgumentError("--max-num-seqs and --max-num-batched-tokens must be >= 1");
  }
  o.scheduler.max_num_seqs = static_cast<int>(max_seqs);
  o.scheduler.chunked_prefill = !args.has("no-chunked-prefill");
  o.scheduler.enable_prefix_caching = !args.has("no-prefix-caching");
  WEFT_ASSIGN_OR_RETURN(o.max_model_len, args.get_int("max-model-len", 0));
  if (args.has("seed")) {
    WEFT_ASSIGN_OR_RETURN(int64_t seed, args.get_int("seed", 0));
    o.seed = static_cast<uint64_t>(seed);
  }
  WEFT_RETURN_IF_ERROR(limit_cpu_features(args.get_or("cpu-isa", "native")));
  WEFT_ASSIGN_OR_RETURN(o.quantization, parse_weight_quantization(args.get_or("quantize", "none")));
  o.quantize_lm_head = args.has("quantize-lm-head");
  o.mmap_weights = args.has("mmap-weights");
  const std::string precision = args.get_or("matmul-precision", "auto");
  if (precision != "auto" && precision != "f32" && precision != "bf16" && precision != "int8") {
    return absl::InvalidArgumentError(absl::StrCat(
        "--matmul-precision: expected auto, f32, bf16 or int8, got '", precision, "'"));
  }
  kernels::set_matmul_precision(precision == "auto"   ? kernels::auto_matmul_precision()
                                : precision == "bf16" ? kernels::MatmulPrecision::kBf16
                                : precision == "int8" ? kernels::MatmulPrecision::kInt8
                                                      : kernels::MatmulPrecision::kF32);
  const std::string masks = args.get_or("constraint-masks", "overlap");
  if (masks != "overlap" && masks != "after-forward") {
    return absl::InvalidArgumentError(
        absl::StrCat("--constraint-masks: expected overlap or after-forward, got '", masks, "'"));
  }
  o.overlap_constraint_masks = masks == "overlap";
  WEFT_RETURN_IF_ERROR(speculative_options_from(args, o));
  return o;
}

}  // namespace weft
