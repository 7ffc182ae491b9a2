#include "launcher/command_specs.h"

#include <algorithm>
#include <cstdlib>
#include <iostream>

#include "launcher/banned_phrase_flags.h"
#include "launcher/chat_template_flags.h"
#include "launcher/engine_flags.h"
#include "launcher/prompt_input.h"
#include "launcher/request_flags.h"
#include "launcher/sampling_flags.h"

namespace weft {
namespace {

const FlagSpec kHelp{"help", "", "print this help and exit"};
const FlagSpec kTextModel{
    "model", "DIR",
    "Hugging Face model directory (default: $WEFT_DEFAULT_MODEL or configs/default-model)"};

std::vector<CommandSpec> make_specs() {
  std::vector<CommandSpec> specs;
  auto add = [&](std::string name, std::string summary, std::string usage) -> FlagTable& {
    specs.push_back({std::move(name), std::move(summary), std::move(usage), {}});
    return specs.back().flags;
  };

  add("generate", "run a prompt through the engine and print the generated tokens",
      "usage: weft generate [--model DIR] (--prompt TEXT [--chat [--system TEXT]] | --prompt-ids "
      "1,2,3)\n"
      "                     [--json] [flags]\n"
      "  Streams the generated text (ids with --prompt-ids); --json prints one object: "
      "prompt_ids,\n"
      "  output_ids, text, finish_reason and per-step logprobs.\n")
      .add("prompt flags",
           [] {
             // --json right after the prompt flags, before the constraint flags, as before.
             auto flags = request_flag_specs();
             flags.insert(flags.begin() + static_cast<std::ptrdiff_t>(prompt_flag_specs().size()),
                          {"json", "", "print one JSON object (ids, text, per-step logprobs) at the end"});
             return flags;
           }())
      .add("chat template flags (with --chat)", chat_template_flag_specs())
      .add("sampling flags", sampling_flag_specs())
      .add("engine flags", engine_flag_specs())
      .add("other", {kHelp});

  add("inspect", "run one prompt and write an HTML + JSON report of what happened inside",
      "usage: weft inspect [--model DIR] (--prompt TEXT [--chat] | --prompt-ids 1,2,3) --report FILE.html "
      "[flags]\n"
      "  Writes FILE.html (self-contained: inline SVG, no network) and FILE.json: the prompt's tokens,\n"
      "  the effective sampling parameters and their sources, per step the chosen token, its raw\n"
      "  probability, rank, the entropy and top alternatives, the stop condition, KV blocks, memory,\n"
      "  and attention weights of the chosen layers / heads.\n")
      .add("inspect flags",
           {{"report", "FILE.html", "where the report goes (FILE.json beside it; required)"},
            {"attention-layers", "0,5|all|none",
             "layers whose attention weights are recorded (default: first, middle, last)"},
            {"attention-heads", "0,1|all|none", "query heads recorded in those layers (default 0,1)"}})
      .add("prompt flags", request_flag_specs())
      .add("chat template flags (with --chat)", chat_template_flag_specs())
      .add("sampling flags", sampling_flag_specs())
      .add("engine flags", engine_flag_specs())
      .add("other", {kHelp});

  add("batch", "run an OpenAI Batch .jsonl file through the engine (resumable)",
      "usage: weft batch [--model DIR] --input in.jsonl --output out.jsonl [--errors errors.jsonl] "
      "[flags]\n"
      "  Lines: {\"custom_id\", \"method\": \"POST\", \"url\": \"/v1/chat/completions\" | "
      "\"/v1/completions\",\n"
      "          \"body\": {...}} (the OpenAI Batch format). Rerun with the same files to "
      "resume.\n")
      .add("batch flags",
           {{"input", "FILE", "the OpenAI Batch input (.jsonl; required)"},
            {"output", "FILE", "where the response records go (required)"},
            {"errors", "FILE", "records of lines that failed (default: beside the outputs)"},
            {"max-in-flight", "N", "requests in the engine at once (default 256)"},
            {"served-model-name", "NAME",
             "the responses' \"model\" (default: the model directory's name)"},
            {"progress-interval", "S",
             "seconds between progress lines when stderr is not a terminal (default 10)"},
            tool_call_parser_flag_spec(),
            banned_phrases_flag_spec()})
      .add("chat template flags (for /v1/chat/completions lines)", chat_template_flag_specs())
      .add("engine flags", engine_flag_specs())
      .add("other", {kHelp});

  add("info", "print the model's configuration and this machine's CPU features",
      "usage: weft info [--model DIR] [--kv-disk-cache DIR]\n")
      .add("info flags",
           {{"model", "DIR", "also print this model's configuration (config.json)"},
            {"tp", "T", "weight bytes per rank for this tensor-parallel size (default 1)"},
            {"pp", "P", "... and this many pipeline stages (default 1)"},
            {"ep", "E", "... and this expert parallelism (default 1)"},
            {"quantize", "none|int8|int4|...", "... and this weight quantization (default none)"},
            {"quantize-lm-head", "", "... with the LM head quantized to int8 (an own copy when tied)"},
            {"kv-disk-cache", "DIR", "what this disk KV tier directory holds (block files by model, bytes, lock)"},
            kHelp});

  add("bench", "measure prefill / decode throughput against memory bandwidth",
      "usage: weft bench [--model DIR] [--batches 1,16] [--prompt-len N] [--decode-steps N] "
      "[flags]\n"
      "  Without --model (one process only) it benchmarks a generated ~125M-parameter "
      "Llama-shaped\n"
      "  BF16 model (with --experts E a mixture of experts of the same active parameters);\n"
      "  for multi-rank runs, write that model with --write-model DIR.\n")
      .add("bench flags",
           {{"batches", "1,16", "batch sizes to measure (default 1,16)"},
            {"prompt-len", "N", "tokens per prompt (default 256)"},
            {"decode-steps", "N", "decode steps measured per batch (default 32)"},
            {"sampling", "MODE", "greedy|greedy-logprobs|top-k|full-logits (default greedy)"},
            {"write-model", "DIR", "write the generated benchmark model to DIR and exit"},
            {"experts", "E", "generate a Mixtral-shaped mixture of E experts instead, with the dense "
                             "model's active parameters (expert intermediate 2048 / K)"},
            {"experts-per-token", "K", "top-K routing of the generated mixture (default 2)"},
            {"plot", "FILE.png",
             "also draw throughput, step latency and bandwidth fraction against batch size (matplotlib; "
             "the data goes to FILE.json)"}})
      .add("engine flags", engine_flag_specs())
      .add("other", {kHelp});

  add("tokenize", "JSON lines {\"text\"} -> {\"ids\"} with the model's tokenizer",
      "usage: weft tokenize [--model DIR] < lines\n"
      "  stdin: {\"text\": ..., \"add_special_tokens\": bool} lines; stdout: {\"ids\": [...]} "
      "lines.\n"
      "  A malformed line gets an {\"error\": ...} line and exit code 1.\n")
      .add("flags", {kTextModel, kHelp});

  add("detokenize", "JSON lines {\"ids\"} -> {\"text\"}",
      "usage: weft detokenize [--model DIR] < lines\n"
      "  stdin: {\"ids\": [...], \"skip_special_tokens\": bool} lines; stdout: {\"text\": ...} "
      "lines.\n"
      "  A malformed line gets an {\"error\": ...} line and exit code 1.\n")
      .add("flags", {kTextModel, kHelp});

  add("chat-template", "render {\"messages\": [...]} with the model's chat template",
      "usage: weft chat-template [--model DIR] [--chat-template FILE | --chat-template-name NAME] "
      "< request.json\n"
      "  stdin: one {\"messages\": [...], \"add_generation_prompt\": bool, ...extra template "
      "variables}\n"
      "  object; stdout: the rendered prompt.\n")
      .add("flags", {kTextModel})
      .add("chat template flags", chat_template_flag_specs())
      .add("other", {kHelp});

  add("serve", "OpenAI-compatible HTTP (and gRPC) server",
      "usage: weft serve [--model DIR] [--host H] [--port P] [flags]\n"
      "  SIGTERM / SIGINT drain: new requests get 503, running ones finish, then it exits 0.\n")
      .add(
          "serve flags",
          {{"host", "H", "address to listen on (default 127.0.0.1)"},
           {"port", "P", "HTTP port (default 8000; 0 picks a free one, printed on stderr)"},
           {"api-key", "KEY",
            "require 'Authorization: Bearer KEY' on /v1/*, /tokenize, /detokenize"},
           {"max-waiting", "N", "waiting requests before 429 (default 1024; 0 unbounded)"},
           {"enable-debug-reports", "",
            "accept \"weft_debug\": true (the weft inspect report of a request; refused "
            "otherwise)"},
           {"debug-report-store", "N",
            "debug reports kept for GET /v1/debug/reports/{id}, oldest dropped first (default "
            "64; needs --enable-debug-reports)"},
           {"served-model-name", "NAME",
            "the model name clients send (default: the model directory's name)"},
           {"grpc-port", "P", "also serve weft.serving.Generation over gRPC (0 picks a free port)"},
           {"drain-timeout", "S", "seconds running requests may take after SIGTERM (default 30)"},
           {"max-connections", "N", "open HTTP connections at most (default 10000)"},
           tool_call_parser_flag_spec(),
           banned_phrases_flag_spec()})
      .add("chat template flags (for /v1/chat/completions)", chat_template_flag_specs())
      .add("engine flags", engine_flag_specs())
      .add("other", {kHelp});

  add("supervise", "keep a serving engine job up: restart it when a rank dies, replay its requests",
      "usage: weft supervise [--host H] [--port P] --engine-port Q [flags] -- ENGINE COMMAND...\n"
      "  Runs ENGINE COMMAND (e.g. mpirun -n 4 weft serve --tp 2 --pp 2 --port Q ...) and serves its API\n"
      "  on H:P. When the engine job dies or stalls it is restarted and every in-flight request is\n"
      "  replayed (same pinned seed; streams continue where they stopped). /ready is 503 while it\n"
      "  restarts. SIGTERM / SIGINT stop the engine (it drains), then it exits 0; exit 1 when it gave up.\n")
      .add("supervise flags",
           {{"host", "H", "address to listen on (default 127.0.0.1)"},
            {"port", "P", "HTTP port (default 8000; 0 picks a free one, printed on stderr)"},
            {"engine-port", "Q", "the port the engine command serves on, on 127.0.0.1 (required)"},
            {"max-restarts", "N", "give up after more than N restarts within --restart-window (default 10)"},
            {"restart-window", "S", "seconds (default 600)"},
            {"restart-backoff-ms", "MS",
             "wait before a restart, doubled after each start that never became ready (default 200)"},
            {"engine-start-timeout", "S", "seconds from start until the engine's /ready answers 200 (default 600)"},
            {"max-attempts", "N",
             "engine failures one request may meet before it gets an error (default 3)"},
            {"grpc-port", "P", "also supervise weft.serving.Generation over gRPC (0: any free port)"},
            {"engine-grpc-port", "R", "the engine command's `weft serve --grpc-port` (with --grpc-port)"}})
      .add("other", {kHelp});

  add("perplexity", "the perplexity of a text file (sliding windows)",
      "usage: weft perplexity [--model DIR] --text FILE [--context N] [--stride S] [flags]\n"
      "  Prints one JSON object: perplexity, nll_per_token, tokens, windows, context, stride,\n"
      "  seconds, tokens_per_second (and kl_divergence with --kl-reference).\n")
      .add("perplexity flags",
           {{"text", "FILE", "UTF-8 text, tokenized whole with the model's tokenizer (required)"},
            {"context", "N", "tokens per window (default: min(max_model_len, 1024))"},
            {"stride", "S",
             "tokens between window starts (default: context / 2); each token is scored once"},
            {"save-logprobs", "FILE",
             "write every scored token's full log-probability row (float32, vocab per token) for a later --kl-reference"},
            {"kl-reference", "FILE",
             "compare each scored token's distribution with FILE's (same text, --context, --stride): "
             "prints kl_divergence mean / p99 / max and top-1 agreement"}})
      .add("engine flags", engine_flag_specs())
      .add("other", {kHelp});
  return specs;
}

}  // namespace

const std::vector<CommandSpec>& command_specs() {
  static const std::vector<CommandSpec> specs = make_specs();
  return specs;
}

const CommandSpec& command_spec(std::string_view name) {
  for (const CommandSpec& spec : command_specs()) {
    if (spec.name == name) return spec;
  }
  std::cerr << "weft: internal error: no command spec '" << name << "'\n";
  std::abort();
}

std::string weft_usage() {
  std::string out = "usage: weft <command> [flags]\ncommands:\n";
  for (const CommandSpec& spec : command_specs()) {
    std::string line = "  " + spec.name;
    line.resize(std::max<size_t>(line.size() + 1, 16), ' ');
    out += line + spec.summary + "\n";
  }
  return out + "Run 'weft <command> --help' for its flags.\n";
}

std::variant<CliArgs, int> parse_command(const CommandSpec& spec,
                                         const std::vector<std::string>& args,
                                         const std::function<int(const absl::Status&)>& fail) {
  absl::StatusOr<CliArgs> parsed = spec.flags.parse(args);
  if (!parsed.ok()) {
    std::cerr << spec.usage;
    return fail(parsed.status());
  }
  if (parsed->has("help")) {
    std::cout << spec.usage << spec.flags.help();
    return 0;
  }
  return *std::move(parsed);
}

}  // namespace weft
