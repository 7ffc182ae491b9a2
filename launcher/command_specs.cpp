#include "launcher/command_specs.h"

#include <algorithm>
#include <cstdlib>
#include <iostream>

#include "launcher/banned_phrase_flags.h"
#include "launcher/chat_template_flags.h"
#include "launcher/engine_flags.h"
#include "launcher/prompt_input.h"
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
             auto flags = prompt_flag_specs();
             flags.push_back(
                 {"json", "", "print one JSON object (ids, text, per-step logprobs) at the end"});
             flags.push_back({"json-schema", "FILE", "constrain the output to JSON valid under this schema"});
             flags.push_back({"json-object", "", "constrain the output to any JSON object or array"});
             flags.push_back({"regex", "R", "constrain the output to match this regular expression"});
             flags.push_back({"grammar", "FILE", "constrain the output to this EBNF (GBNF) grammar (root rule: root)"});
             flags.push_back({"choice", "A|B|C", "constrain the output to one of these strings"});
             flags.push_back(banned_phrases_flag_spec());
             return flags;
           }())
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
            {"experts-per-token", "K", "top-K routing of the generated mixture (default 2)"}})
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
           {"served-model-name", "NAME",
            "the model name clients send (default: the model directory's name)"},
           {"grpc-port", "P", "also serve weft.serving.Generation over gRPC (0 picks a free port)"},
           {"drain-timeout", "S", "seconds running requests may take after SIGTERM (default 30)"},
           {"max-connections", "N", "open HTTP connections at most (default 10000)"},
           {"tool-call-parser", "NAME",
            "how the model writes tool calls: hermes, llama3_json or mistral (default: judged from the "
            "chat template; none found: requests with tools need tool_choice \"none\")"},
           banned_phrases_flag_spec()})
      .add("chat template flags (for /v1/chat/completions)", chat_template_flag_specs())
      .add("engine flags", engine_flag_specs())
      .add("other", {kHelp});

  add("perplexity", "the perplexity of a text file (sliding windows)",
      "usage: weft perplexity [--model DIR] --text FILE [--context N] [--stride S] [flags]\n"
      "  Prints one JSON object: perplexity, nll_per_token, tokens, windows, context, stride,\n"
      "  seconds, tokens_per_second.\n")
      .add("perplexity flags",
           {{"text", "FILE", "UTF-8 text, tokenized whole with the model's tokenizer (required)"},
            {"context", "N", "tokens per window (default: min(max_model_len, 1024))"},
            {"stride", "S",
             "tokens between window starts (default: context / 2); each token is scored once"}})
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
