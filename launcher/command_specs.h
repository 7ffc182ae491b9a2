// The command-line surface of weft: for every subcommand its one-line summary, its usage text
// and the one FlagTable that both its parser and its --help come from.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "absl/status/status.h"
#include "launcher/cli_args.h"
#include "launcher/flag_table.h"

namespace weft {

struct CommandSpec {
  std::string name;     // "generate"
  std::string summary;  // one line for `weft --help`
  std::string usage;    // "usage: weft generate ..." and notes, newline-terminated
  FlagTable flags;      // everything the command accepts, --help included
};

// Every subcommand, in the order `weft --help` lists them.
const std::vector<CommandSpec>& command_specs();
// The spec of subcommand `name` (one of command_specs(); anything else is a programming error and
// aborts).
const CommandSpec& command_spec(std::string_view name);

// `weft --help`: the commands and their summaries.
std::string weft_usage();

// The start of every subcommand: parses `args` against spec.flags. Returns the flags, or the exit
// code when the command is already done: after a parse error, the usage on stderr and
// `fail(error)`'s code; after --help or -h, the usage and every flag with its help on stdout, 0.
std::variant<CliArgs, int> parse_command(const CommandSpec& spec,
                                         const std::vector<std::string>& args,
                                         const std::function<int(const absl::Status&)>& fail);

}  // namespace weft
