// weft: the single binary every rank runs (DESIGN.md section 1). Dispatches to subcommands.
#include <iostream>
#include <string>
#include <vector>

#include "launcher/commands.h"

namespace {

constexpr const char* kUsage =
    "usage: weft <command> [flags]\n"
    "commands:\n"
    "  generate   run a prompt through the engine and print the generated tokens\n"
    "  batch      run an OpenAI Batch .jsonl file through the engine (resumable)\n"
    "  info       print the model's configuration and this machine's CPU features\n"
    "  bench      measure prefill / decode throughput against memory bandwidth\n"
    "  tokenize   JSON lines {\"text\"} -> {\"ids\"} with the model's tokenizer\n"
    "  detokenize JSON lines {\"ids\"} -> {\"text\"}\n"
    "  chat-template  render {\"messages\": [...]} with the model's chat template\n"
    "  serve      OpenAI-compatible HTTP (and gRPC) server\n"
    "  perplexity the perplexity of a text file (sliding windows)\n"
    "Run 'weft <command> --help' for its flags.\n";

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::cerr << kUsage;
    return 2;
  }
  const std::string command = argv[1];
  const std::vector<std::string> args(argv + 2, argv + argc);
  if (command == "generate") return weft::run_generate(args);
  if (command == "batch") return weft::run_batch_command(args);
  if (command == "info") return weft::run_info(args);
  if (command == "bench") return weft::run_bench(args);
  if (command == "tokenize") return weft::run_tokenize(args);
  if (command == "detokenize") return weft::run_detokenize(args);
  if (command == "chat-template") return weft::run_chat_template(args);
  if (command == "serve") return weft::run_serve(args);
  if (command == "perplexity") return weft::run_perplexity(args);
  if (command == "--help" || command == "help" || command == "-h") {
    std::cout << kUsage;
    return 0;
  }
  std::cerr << "weft: unknown command '" << command << "'\n" << kUsage;
  return 2;
}
