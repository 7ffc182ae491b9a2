// The flags every engine-running subcommand shares (model, threads, KV cache, scheduler), and
// their translation into LocalEngineOptions.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/thread_pool.h"
#include "engine/local_engine.h"
#include "launcher/cli_args.h"
#include "launcher/flag_table.h"

namespace weft {

// The shared flags: model, device, threads, KV cache, scheduler, seed, generation-config,
// cpu-isa and the parallel layout (tp, pp, layers-per-stage, step-timeout,
// pipeline-micro-batches). Every engine-running command's FlagTable includes them.
std::vector<FlagSpec> engine_flag_specs();

// Reads the shared flags; applies --cpu-isa at once. `default_model` is used when --model is
// absent (empty: --model is required); `default_spin` when --thread-spin-us is.
absl::StatusOr<LocalEngineOptions> engine_options_from(
    const CliArgs& args, const std::string& default_model = "",
    std::chrono::microseconds default_spin = ThreadPool::kDefaultSpin);

}  // namespace weft
