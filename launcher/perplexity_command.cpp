// weft perplexity: the perplexity of a text under the model, by sliding windows
// (launcher/perplexity_window.h). Works on one rank and under mpirun with --tp / --pp.
//   weft perplexity [--model DIR] --text FILE [--context N] [--stride S] [engine flags]
// Prints one JSON object on stdout: perplexity, nll_per_token, tokens (scored), windows, context,
// stride, seconds, tokens_per_second; with --kl-reference FILE (saved by an earlier run's
// --save-logprobs FILE, launcher/logprob_rows.h) also kl_divergence: mean, p99, max (nats) and
// top1_agreement of this run's next-token distributions against the saved ones.
#include <chrono>
#include <cmath>
#include <fstream>
#include <iostream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "launcher/command_specs.h"
#include "launcher/commands.h"
#include "launcher/engine_flags.h"
#include "launcher/engine_session.h"
#include "launcher/logprob_rows.h"
#include "launcher/perplexity_window.h"
#include "nlohmann/json.hpp"
#include "tokenizer/tokenizer.h"

namespace weft {
namespace {

int fail(const absl::Status& status) {
  std::cerr << "weft perplexity: " << status.message() << "\n";
  return status.code() == absl::StatusCode::kInvalidArgument ? 2 : 1;
}

absl::StatusOr<std::string> read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::InvalidArgumentError(absl::StrCat("--text ", path, ": cannot open"));
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) return absl::InvalidArgumentError(absl::StrCat("--text ", path, ": read error"));
  return text.str();
}

// Where the scored tokens' full distributions go: saved to a file, compared with a saved
// reference (KL divergence), or nowhere.
struct DistributionSinks {
  std::unique_ptr<LogprobWriter> save;
  std::unique_ptr<KlReference> reference;
  absl::Status status;  // the first error of a sink
  void add(const float* row, int64_t vocab) {
    if (!status.ok()) return;
    if (save) status = save->write_row(row, vocab);
    if (status.ok() && reference) status = reference->add_row(row, vocab);
  }
};

int perplexity(EngineSession& session, const std::vector<int32_t>& ids, int64_t context, int64_t stride,
               DistributionSinks& sinks) {
  Engine& engine = session.engine();
  const auto started = std::chrono::steady_clock::now();
  const std::vector<PerplexityWindow> windows = perplexity_windows(static_cast<int64_t>(ids.size()), context, stride);
  double nll = 0.0;
  int64_t scored = 0;
  int64_t run_tokens = 0;
  for (const PerplexityWindow& w : windows) {
    std::vector<int32_t> window(ids.begin() + w.begin, ids.begin() + w.end);
    // Row i of the window predicts token w.begin + i; only the tokens this window scores count.
    const Engine::ScoredRowVisitor visit = [&](int64_t i, const float* row, int64_t vocab) {
      if (w.begin + i >= w.first_scored) sinks.add(row, vocab);
    };
    absl::StatusOr<std::vector<double>> logprobs = engine.score(window, visit);
    if (logprobs.ok() && !sinks.status.ok()) logprobs = sinks.status;
    if (!logprobs.ok()) {
      session.abort(1, absl::StrCat("weft perplexity: rank 0: ", logprobs.status().message()));
      return 1;
    }
    // logprobs[i] scores window[i + 1], that is token w.begin + i + 1.
    for (int64_t t = w.first_scored; t < w.end; ++t) nll -= (*logprobs)[t - w.begin - 1];
    scored += w.end - w.first_scored;
    run_tokens += w.end - w.begin;
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  const double per_token = nll / static_cast<double>(scored);
  nlohmann::json result = {{"perplexity", std::exp(per_token)},
                           {"nll_per_token", per_token},
                           {"tokens", scored},
                           {"windows", windows.size()},
                           {"context", context},
                           {"stride", stride},
                           {"seconds", seconds},
                           {"tokens_per_second", seconds > 0 ? run_tokens / seconds : 0.0}};
  if (sinks.save) {
    if (absl::Status s = sinks.save->close(); !s.ok()) {
      session.abort(1, absl::StrCat("weft perplexity: rank 0: ", s.message()));
      return 1;
    }
  }
  if (sinks.reference) {
    absl::StatusOr<KlSummary> kl = sinks.reference->finish();
    if (!kl.ok()) {
      session.abort(1, absl::StrCat("weft perplexity: rank 0: ", kl.status().message()));
      return 1;
    }
    result["kl_divergence"] = {{"mean", kl->mean}, {"p99", kl->p99}, {"max", kl->max},
                               {"top1_agreement", kl->top1_agreement}, {"tokens", kl->tokens}};
  }
  std::cout << result.dump() << "\n";
  std::cerr << "weft perplexity: " << std::exp(per_token) << " over " << scored << " tokens (" << windows.size()
            << " windows of " << context << ", stride " << stride << ") in " << seconds << " s\n";
  return 0;
}

}  // namespace

int run_perplexity(const std::vector<std::string>& args) {
  const CommandSpec& spec = command_spec("perplexity");
  auto parsed = parse_command(spec, args, fail);
  if (const int* done = std::get_if<int>(&parsed)) return *done;
  const CliArgs* cli = &std::get<CliArgs>(parsed);
  if (!cli->has("text")) {
    std::cerr << spec.usage;
    return fail(absl::InvalidArgumentError("--text FILE is required"));
  }
  auto context_flag = cli->get_int("context", 0);
  auto stride_flag = cli->get_int("stride", 0);
  if (!context_flag.ok()) return fail(context_flag.status());
  if (!stride_flag.ok()) return fail(stride_flag.status());
  auto started = EngineSession::start(*cli);
  if (!started.ok()) return fail(started.status());
  EngineSession& session = **started;

  // Only the coordinator reads and tokenizes the text; every rank checks the flags alike.
  std::vector<int32_t> ids;
  absl::Status input;
  if (session.is_coordinator()) {
    auto text = read_text(*cli->get("text"));
    auto tokenizer = Tokenizer::load(session.options().model_dir);
    if (!text.ok()) {
      input = text.status();
    } else if (!tokenizer.ok()) {
      input = tokenizer.status();
    } else if (auto encoded = (*tokenizer)->encode(*text, true); !encoded.ok()) {
      input = encoded.status();
    } else {
      ids = *std::move(encoded);
      if (ids.size() < 2) input = absl::InvalidArgumentError(absl::StrCat("--text: ", ids.size(), " tokens; at least 2 are needed"));
    }
  }
  if (absl::Status s = session.load({}); !s.ok()) return fail(s);
  return run_session(session, [&] {
    if (!input.ok()) return fail(input);
    const int64_t max_len = session.options().max_model_len > 0 ? session.options().max_model_len
                                                                : default_max_model_len(session.model().config);
    const int64_t context = *context_flag > 0 ? *context_flag : std::min<int64_t>(max_len, 1024);
    const int64_t stride = *stride_flag > 0 ? *stride_flag : std::max<int64_t>(1, context / 2);
    if (context < 2 || context > max_len) {
      return fail(absl::InvalidArgumentError(
          absl::StrCat("--context ", context, ": must be in [2, ", max_len, "] (the model's max_model_len)")));
    }
    if (stride > context) {
      return fail(absl::InvalidArgumentError(absl::StrCat("--stride ", stride, ": must be in [1, --context ", context, "]")));
    }
    DistributionSinks sinks;
    const LogprobRunKey key{session.model().config.vocab_size, context, stride,
                            static_cast<int64_t>(ids.size()), token_ids_hash(ids)};
    if (const auto path = cli->get("save-logprobs")) {
      auto writer = LogprobWriter::create(*path, key);
      if (!writer.ok()) return fail(writer.status());
      sinks.save = *std::move(writer);
    }
    if (const auto path = cli->get("kl-reference")) {
      auto reference = KlReference::open(*path, key);
      if (!reference.ok()) return fail(reference.status());
      sinks.reference = *std::move(reference);
    }
    return perplexity(session, ids, context, stride, sinks);
  });
}

}  // namespace weft
