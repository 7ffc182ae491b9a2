// weft serve: the OpenAI-compatible HTTP server (and optionally the gRPC service) over one engine.
//
// Threads: the engine loop runs on the main thread (so a future MPI-coordinated engine keeps its
// communicator calls on the thread that initialised MPI); the HTTP event loop, the signal
// watcher and gRPC's own pool run beside it. SIGTERM / SIGINT drain: /ready turns 503, new
// requests get 503, running ones finish (those still running after --drain-timeout seconds are
// aborted), then the process exits 0.
#ifdef WEFT_HAVE_CONSTRAIN
#include "constrain/grammar_constraint.h"
#endif
#include <pthread.h>
#include <signal.h>

#include <chrono>
#include <iostream>
#include <thread>

#include "engine/async_engine.h"
#include "engine/text_detokenizer.h"
#include "launcher/banned_phrase_flags.h"
#include "launcher/chat_template_flags.h"
#include "launcher/command_specs.h"
#include "launcher/commands.h"
#include "launcher/engine_flags.h"
#include "launcher/engine_session.h"
#include "launcher/sampling_flags.h"
#include "launcher/termination_signals.h"
#include "serving/metrics.h"
#include "serving/openai_server.h"
#ifdef WEFT_HAVE_GRPC
#include "serving/grpc_server.h"
#endif

namespace weft {
namespace {

// Kernel threads' spin before sleeping while serving (--thread-spin-us). A server's HTTP thread
// and its clients wake often and take a core for a moment; kernel threads that slept after the
// default 200 us then miss the next operation and wait for the scheduler. Measured on 2 cores
// (SmolLM2-135M, 64 streams through the openai client): 945 output tok/s at 200 us, 985 at
// 2000 us, 1030 at 5000 us; weft bench's decode is the same at 200 and 5000.
constexpr std::chrono::microseconds kServeThreadSpin{5000};

int fail(const absl::Status& status) {
  std::cerr << "weft serve: " << status.message() << "\n";
  return status.code() == absl::StatusCode::kInvalidArgument ? 2 : 1;
}

int serve(EngineSession& session, const CliArgs& cli, std::shared_ptr<const Tokenizer> tokenizer, int port,
          int max_waiting, int drain_s, size_t max_connections, sigset_t signals);

// --debug-report-store N: an integer in [1, 100000], and only with --enable-debug-reports (it
// would do nothing without).
absl::Status check_debug_report_store(const CliArgs& cli) {
  if (!cli.has("debug-report-store")) return absl::OkStatus();
  if (!cli.has("enable-debug-reports")) {
    return absl::InvalidArgumentError("--debug-report-store: needs --enable-debug-reports");
  }
  auto n = cli.get_int("debug-report-store", 0);  // present: the fallback is never used
  if (!n.ok()) return n.status();
  if (*n < 1 || *n > 100000) return absl::InvalidArgumentError("--debug-report-store: must be in [1, 100000]");
  return absl::OkStatus();
}

}  // namespace

int run_serve(const std::vector<std::string>& args) {
  auto parsed = parse_command(command_spec("serve"), args, fail);
  if (const int* done = std::get_if<int>(&parsed)) return *done;
  const CliArgs& cli = std::get<CliArgs>(parsed);
  auto port = cli.get_int("port", 8000);
  auto max_waiting = cli.get_int("max-waiting", 1024);
  auto drain_s = cli.get_int("drain-timeout", 30);
  auto max_connections = cli.get_int("max-connections", 10000);
  for (const auto* v : {&port, &max_waiting, &drain_s, &max_connections}) {
    if (!v->ok()) return fail(v->status());
  }
  if (*port < 0 || *port > 65535) return fail(absl::InvalidArgumentError("--port: must be in [0, 65535]"));
  if (absl::Status s = check_debug_report_store(cli); !s.ok()) return fail(s);

  // Signals go to the watcher thread only: block them before any thread (MPI's included) starts.
  const sigset_t signals = block_termination_signals();

  auto started = EngineSession::start(cli, "", kServeThreadSpin);
  if (!started.ok()) return fail(started.status());
  EngineSession& session = **started;
  absl::StatusOr<std::shared_ptr<Tokenizer>> tokenizer = std::shared_ptr<Tokenizer>();
  DetokenizerFactory detokenizers;
  if (session.is_coordinator()) {
    tokenizer = Tokenizer::load(session.options().model_dir);
    if (tokenizer.ok()) detokenizers = text_detokenizers(*tokenizer);
  }
  if (absl::Status s = session.load(detokenizers); !s.ok()) return fail(s);
  return run_session(session, [&] {
    if (!tokenizer.ok()) return fail(tokenizer.status());
    return serve(session, cli, *tokenizer, static_cast<int>(*port), static_cast<int>(*max_waiting),
                 static_cast<int>(*drain_s), static_cast<size_t>(*max_connections), signals);
  });
}

namespace {

int serve(EngineSession& session, const CliArgs& cli, std::shared_ptr<const Tokenizer> tokenizer, int port,
          int max_waiting, int drain_s, size_t max_connections, sigset_t signals) {
  const LocalEngineOptions& options = session.options();
  ServedModel model;
  std::string default_name = options.model_dir.filename().string();
  if (default_name.empty()) default_name = options.model_dir.parent_path().filename().string();
  model.name = cli.get_or("served-model-name", default_name);
  model.max_model_len = options.max_model_len > 0 ? options.max_model_len
                                                  : default_max_model_len(session.model().config);
  model.vocab_size = session.model().config.vocab_size;
  model.num_layers = static_cast<int>(session.model().config.num_hidden_layers);
  model.num_attention_heads = static_cast<int>(session.model().config.num_attention_heads);
  model.records_attention = options.device == EngineDevice::kCpu;
  auto sampling_defaults = model_sampling_defaults(cli, session.model().generation);
  if (!sampling_defaults.ok()) return fail(sampling_defaults.status());
  model.sampling_defaults = *sampling_defaults;
  model.generation = session.model().generation;
  model.generation_config_used = cli.get_or("generation-config", "auto") != "none";
  model.eos_token_ids = session.engine().config().eos_token_ids;
  model.tokenizer = tokenizer;
  // No template at all leaves /v1/chat/completions refusing requests; a bad choice ends here.
  auto tmpl = chat_template_from_flags(cli, *tokenizer, ChatTemplateNeed::kOptional);
  if (!tmpl.ok()) return fail(tmpl.status());
  model.chat_template = *std::move(tmpl);
  auto tool_format = tool_call_format_from_flags(cli, model.chat_template.get());
  if (!tool_format.ok()) return fail(tool_format.status());
  model.tool_call_format = *tool_format;
  if (model.tool_call_format) {
    // Both Mistral forms parse under "mistral"; which one forced calls are written in is said.
    std::cerr << "weft serve: tool calls parsed as " << tool_call_format_name(*model.tool_call_format)
              << (cli.has("tool-call-parser") ? "" : " (judged from the chat template)")
              << (*model.tool_call_format == ToolCallFormat::kMistralNamed
                      ? "; forced calls in the name form [TOOL_CALLS]name[ARGS]{...}"
                      : "")
              << std::endl;
  }
#ifdef WEFT_HAVE_CONSTRAIN
  auto grammars = model_grammar_compiler(*tokenizer, model.vocab_size, model_eos_ids(session.model()));
  if (!grammars.ok()) return fail(grammars.status());
  model.grammars = *std::move(grammars);
#endif
  auto banned = banned_phrases_from_flags(cli);
  if (!banned.ok()) return fail(banned.status());
  model.banned_phrases = *std::move(banned);
  Engine& core = session.engine();

  AsyncEngine engine(nullptr, core, {max_waiting});
  ServingMetrics metrics;
  OpenAiServerOptions http_options;
  http_options.http.host = cli.get_or("host", "127.0.0.1");
  http_options.http.port = port;
  http_options.http.max_connections = max_connections;
  http_options.api_key = cli.get_or("api-key", "");
  http_options.enable_debug_reports = cli.has("enable-debug-reports");
  http_options.debug_report_capacity = static_cast<size_t>(
      *cli.get_int("debug-report-store", static_cast<int64_t>(http_options.debug_report_capacity)));
  OpenAiServer http(http_options, engine, model, metrics);
  if (auto s = http.listen(); !s.ok()) return fail(s);
  std::cerr << "weft serve: model " << model.name << " (max_model_len " << model.max_model_len << ", "
            << core.blocks().num_blocks() << " KV blocks of " << core.blocks().block_size()
            << " tokens), listening on http://" << http_options.http.host << ":" << http.port() << std::endl;

#ifdef WEFT_HAVE_GRPC
  std::unique_ptr<GrpcServer> grpc;
  if (cli.has("grpc-port")) {
    auto grpc_port = cli.get_int("grpc-port", 0);
    if (!grpc_port.ok()) return fail(grpc_port.status());
    auto started = GrpcServer::start(absl::StrCat(http_options.http.host, ":", *grpc_port), engine, model, metrics,
                                     http_options.api_key);
    if (!started.ok()) return fail(started.status());
    grpc = std::move(*started);
    std::cerr << "weft serve: gRPC on " << http_options.http.host << ":" << grpc->port() << std::endl;
  }
#else
  if (cli.has("grpc-port")) return fail(absl::UnimplementedError("--grpc-port: this build has no gRPC"));
#endif

  std::thread http_thread([&] { http.run(); });
  std::thread watcher([&] {
    int sig = 0;
    sigwait(&signals, &sig);
    std::cerr << "weft serve: signal " << sig << ", draining (up to " << drain_s << " s)" << std::endl;
    http.begin_drain();
#ifdef WEFT_HAVE_GRPC
    if (grpc) grpc->begin_drain();
#endif
    using Clock = std::chrono::steady_clock;
    auto idle = [&] { return http.num_in_flight() == 0 && engine.gauges().num_active_requests == 0; };
    const auto deadline = Clock::now() + std::chrono::seconds(drain_s);
    while (!idle() && Clock::now() < deadline) std::this_thread::sleep_for(std::chrono::milliseconds(20));
    if (!idle()) {
      std::cerr << "weft serve: drain timeout; aborting " << http.num_in_flight() << " requests" << std::endl;
      http.abort_all();
      const auto hard = Clock::now() + std::chrono::seconds(5);
      while (!idle() && Clock::now() < hard) std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
#ifdef WEFT_HAVE_GRPC
    if (grpc) grpc->shutdown(std::chrono::milliseconds(100));
#endif
    // Let the last responses leave the socket buffers before the loop closes connections.
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    http.stop();
    engine.stop();
  });
  engine.run();
  watcher.join();
  http_thread.join();
  std::cerr << "weft serve: stopped" << std::endl;
  return 0;
}

}  // namespace
}  // namespace weft
