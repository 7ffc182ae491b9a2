// The weft subcommands. Each takes the arguments after its name and returns the process exit
// code; errors are printed to stderr as "weft <command>: <message>".
#pragma once

#include <string>
#include <vector>

namespace weft {

int run_generate(const std::vector<std::string>& args);
int run_inspect(const std::vector<std::string>& args);
int run_batch_command(const std::vector<std::string>& args);
int run_info(const std::vector<std::string>& args);
int run_bench(const std::vector<std::string>& args);
int run_tokenize(const std::vector<std::string>& args);
int run_detokenize(const std::vector<std::string>& args);
int run_chat_template(const std::vector<std::string>& args);
int run_serve(const std::vector<std::string>& args);
int run_perplexity(const std::vector<std::string>& args);
int run_supervise(const std::vector<std::string>& args);

}  // namespace weft
