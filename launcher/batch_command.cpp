// weft batch: an OpenAI Batch input file through the engine into an output file (and an errors
// file), resumable after any interruption (src/batch/batch_runner.h).
//   SIGUSR1 (first): stop reading new lines, finish the requests in flight, exit 0.
//   SIGTERM / SIGINT, or a second SIGUSR1: stop at the next step boundary, exit 0; requests in
//   flight get no record and are redone by the next run (Slurm's requeue path).
// Progress goes to stderr: a bar on a terminal, a line every --progress-interval seconds
// otherwise, and a summary at the end.
#ifdef WEFT_HAVE_CONSTRAIN
#include "constrain/grammar_constraint.h"
#endif
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <iostream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "batch/batch_runner.h"
#include "engine/text_detokenizer.h"
#include "launcher/chat_template_flags.h"
#include "launcher/banned_phrase_flags.h"
#include "launcher/command_specs.h"
#include "launcher/commands.h"
#include "launcher/engine_flags.h"
#include "launcher/engine_session.h"
#include "launcher/sampling_flags.h"
#include "launcher/prompt_input.h"
#include "model/model_files.h"

namespace weft {
namespace {

// Set from signal handlers (the only state they touch).
std::atomic<int> g_stop{kBatchRun};

extern "C" void on_stop_signal(int signo) {
  if (signo == SIGUSR1 && g_stop.load() == kBatchRun) {
    g_stop.store(kBatchDrain);
  } else {
    g_stop.store(kBatchAbandon);
  }
}

void install_signal_handlers() {
  struct sigaction sa {};
  sa.sa_handler = on_stop_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  for (int signo : {SIGTERM, SIGINT, SIGUSR1}) sigaction(signo, &sa, nullptr);
}

int fail(const absl::Status& status) {
  std::cerr << "weft batch: " << status.message() << "\n";
  return status.code() == absl::StatusCode::kInvalidArgument ? 2 : 1;
}

class ProgressPrinter {
 public:
  explicit ProgressPrinter(double interval_s) : tty_(isatty(STDERR_FILENO) == 1), interval_s_(interval_s) {}

  void operator()(const BatchProgress& p) {
    if (p.finished) return summary(p);
    const auto now = std::chrono::steady_clock::now();
    const double since = std::chrono::duration<double>(now - last_).count();
    if (since < (tty_ ? 0.2 : interval_s_)) return;
    last_ = now;
    const int64_t done = p.already_done + p.completed + p.failed;
    const double tok_s = p.elapsed_s > 0 ? p.completion_tokens / p.elapsed_s : 0.0;
    if (tty_) {
      constexpr int kWidth = 30;
      const int filled = p.total_lines > 0 ? static_cast<int>(kWidth * done / p.total_lines) : 0;
      std::fprintf(stderr, "\r[%s%s] %lld/%lld lines  %lld in flight  %.1f tok/s  kv %.0f%%   ",
                   std::string(filled, '#').c_str(), std::string(kWidth - filled, '.').c_str(),
                   static_cast<long long>(done), static_cast<long long>(p.total_lines),
                   static_cast<long long>(p.in_flight), tok_s, 100 * p.kv_usage);
      std::fflush(stderr);
      drawn_ = true;
    } else {
      std::fprintf(stderr,
                   "weft batch: %lld/%lld lines done (%lld this run, %lld failed), %lld in flight, "
                   "%.1f output tok/s, KV %.0f%% used, %.0f s\n",
                   static_cast<long long>(done), static_cast<long long>(p.total_lines),
                   static_cast<long long>(p.completed), static_cast<long long>(p.failed),
                   static_cast<long long>(p.in_flight), tok_s, 100 * p.kv_usage, p.elapsed_s);
    }
  }

 private:
  void summary(const BatchProgress& p) {
    if (drawn_) std::fprintf(stderr, "\n");
    const double tok_s = p.elapsed_s > 0 ? p.completion_tokens / p.elapsed_s : 0.0;
    std::fprintf(stderr,
                 "weft batch: %s: %lld lines; this run %lld completed, %lld failed; %lld already "
                 "done earlier; %lld prompt + %lld completion tokens in %.1f s (%.1f output "
                 "tok/s); %lld prompt tokens from the prefix cache\n",
                 p.interrupted ? "interrupted (rerun to resume)" : "done",
                 static_cast<long long>(p.total_lines), static_cast<long long>(p.completed),
                 static_cast<long long>(p.failed), static_cast<long long>(p.already_done),
                 static_cast<long long>(p.prompt_tokens),
                 static_cast<long long>(p.completion_tokens), p.elapsed_s, tok_s,
                 static_cast<long long>(p.prefix_hit_tokens));
    if (!p.kv_tiers.empty()) std::fprintf(stderr, "weft batch: %s\n", p.kv_tiers.c_str());
    if (p.speculating) {
      std::fprintf(stderr,
                   "weft batch: speculative decoding: %lld guesses verified, %lld accepted (acceptance %.3f), "
                   "%.2f tokens per verifying sequence-step\n",
                   static_cast<long long>(p.speculation.num_draft_tokens),
                   static_cast<long long>(p.speculation.num_accepted_tokens), p.speculation.acceptance_rate(),
                   p.speculation.mean_accepted_length());
    }
  }

  bool tty_;
  double interval_s_;
  bool drawn_ = false;
  std::chrono::steady_clock::time_point last_{};
};

}  // namespace

int run_batch_command(const std::vector<std::string>& args) {
  const CommandSpec& spec = command_spec("batch");
  auto parsed = parse_command(spec, args, fail);
  if (const int* done = std::get_if<int>(&parsed)) return *done;
  const CliArgs& cli = std::get<CliArgs>(parsed);
  BatchOptions options;
  options.input = cli.get_or("input", "");
  options.output = cli.get_or("output", "");
  options.errors = cli.get_or("errors", "");
  if (options.input.empty() || options.output.empty()) {
    std::cerr << spec.usage;
    return fail(absl::InvalidArgumentError("--input and --output are required"));
  }
  auto in_flight = cli.get_int("max-in-flight", 256);
  if (!in_flight.ok()) return fail(in_flight.status());
  if (*in_flight < 1) return fail(absl::InvalidArgumentError("--max-in-flight: must be >= 1"));
  options.max_in_flight = static_cast<int>(*in_flight);
  auto interval = cli.get_double("progress-interval", 10.0);
  if (!interval.ok()) return fail(interval.status());

  // Installed before the (slow) model load so an early signal is not fatal. Other ranks of an
  // MPI job ignore them: they serve steps until the coordinator ends the job.
  install_signal_handlers();
  auto started = EngineSession::start(cli);
  if (!started.ok()) return fail(started.status());
  EngineSession& session = **started;
  options.model_name = cli.get_or("served-model-name", session.options().model_dir.filename().string());
  if (options.model_name.empty()) options.model_name = session.options().model_dir.parent_path().filename().string();

  std::shared_ptr<const Tokenizer> tokenizer;
  BatchPromptEncoder encoder;
  if (session.is_coordinator() &&
      model_has_file(session.options().model_dir, "tokenizer.json")) {
    auto loaded = Tokenizer::load(session.options().model_dir);
    if (!loaded.ok()) return fail(loaded.status());
    tokenizer = *loaded;
    auto tmpl = chat_template_from_flags(cli, *tokenizer, ChatTemplateNeed::kOptional);
    if (!tmpl.ok()) return fail(tmpl.status());
    encoder.encode_text = [tokenizer](const std::string& text) {
      return tokenizer->encode(text, /*add_special_tokens=*/true);
    };
    auto tool_format = tool_call_format_from_flags(cli, tmpl->get());
    if (!tool_format.ok()) return fail(tool_format.status());
    options.tool_call_format = *tool_format;
    if (options.tool_call_format) {
      // As in serve: a marker held as a special token must stay in the text the parser reads.
      const auto marker = tokenizer->token_to_id(tool_call_start_marker(*options.tool_call_format));
      options.tool_call_marker_special = marker && tokenizer->is_special(*marker);
    }
    // No template: chat lines get an error record, completion lines still run.
    if (*tmpl) {
      encoder.encode_chat = [tokenizer, tmpl = *tmpl](const nlohmann::ordered_json& messages,
                                                      const nlohmann::ordered_json& template_kwargs,
                                                      ChatPromptEnd end) {
        return encode_chat_messages(*tokenizer, *tmpl, messages, template_kwargs, end);
      };
    }
    encoder.token_text = [tokenizer](int32_t id) {
      const int32_t one[1] = {id};
      return tokenizer->decode(one, /*skip_special_tokens=*/false);
    };
  }
  DetokenizerFactory detokenizers;
  if (tokenizer) detokenizers = text_detokenizers(tokenizer);
  if (absl::Status s = session.load(detokenizers); !s.ok()) return fail(s);
  return run_session(session, [&] {
    auto sampling_defaults = model_sampling_defaults(cli, session.model().generation);
    if (!sampling_defaults.ok()) return fail(sampling_defaults.status());
    options.sampling_defaults = *sampling_defaults;
#ifdef WEFT_HAVE_CONSTRAIN
    if (tokenizer) {
      auto grammars = model_grammar_compiler(*tokenizer, session.model().config.vocab_size,
                                             model_eos_ids(session.model()));
      if (!grammars.ok()) return fail(grammars.status());
      options.constraints = [compiler = *grammars](const nlohmann::json& body) {
        return request_constraint(body, *compiler);
      };
      options.tool_constraints = [compiler = *grammars](const ToolRequest& tools,
                                                        const std::optional<ToolCallFormat>& format) {
        return tool_call_constraint(tools, format, *compiler);
      };
    }
#endif
    auto banned = banned_phrases_from_flags(cli);
    if (!banned.ok()) return fail(banned.status());
    options.banned_phrases = *std::move(banned);
    ProgressPrinter printer(*interval);
    auto result = run_batch(session.engine(), encoder, options, g_stop, std::ref(printer));
    if (!result.ok()) {
      std::cerr << "weft batch: " << result.status().message() << "\n";
      return 1;
    }
    return 0;
  });
}

}  // namespace weft
