// weft: the single binary every rank runs (DESIGN.md section 1). Dispatches to subcommands.
#include <iostream>
#include <string>
#include <vector>

#include "launcher/command_specs.h"
#include "launcher/commands.h"

int main(int argc, char** argv) {
  if (argc < 2) {
    std::cerr << weft::weft_usage();
    return 2;
  }
  const std::string command = argv[1];
  const std::vector<std::string> args(argv + 2, argv + argc);
  if (command == "generate") return weft::run_generate(args);
  if (command == "inspect") return weft::run_inspect(args);
  if (command == "batch") return weft::run_batch_command(args);
  if (command == "info") return weft::run_info(args);
  if (command == "bench") return weft::run_bench(args);
  if (command == "tokenize") return weft::run_tokenize(args);
  if (command == "detokenize") return weft::run_detokenize(args);
  if (command == "chat-template") return weft::run_chat_template(args);
  if (command == "serve") return weft::run_serve(args);
  if (command == "perplexity") return weft::run_perplexity(args);
  if (command == "supervise") return weft::run_supervise(args);
  if (command == "--help" || command == "help" || command == "-h") {
    std::cout << weft::weft_usage();
    return 0;
  }
  std::cerr << "weft: unknown command '" << command << "'\n" << weft::weft_usage();
  return 2;
}
