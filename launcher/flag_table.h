// The flags one weft subcommand accepts, as one table that drives both its parser and its
// --help, so the two cannot drift apart: a flag is accepted exactly when --help lists it.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "launcher/cli_args.h"

namespace weft {

struct FlagSpec {
  std::string name;   // without the leading dashes
  std::string value;  // the value's placeholder in help ("N", "DIR"); empty for a boolean flag
  std::string help;   // one line
  bool is_bool() const { return value.empty(); }
};

// Flags in titled groups ("sampling flags", "engine flags"), listed in --help in that order.
class FlagTable {
 public:
  struct Group {
    std::string title;
    std::vector<FlagSpec> flags;
  };

  // Appends a group. A name already in the table is a programming error caught by the CLI test
  // (FlagTableTest); the parser keeps the first.
  FlagTable& add(std::string title, std::vector<FlagSpec> flags);

  const std::vector<Group>& groups() const { return groups_; }
  // Every flag of every group, in help order.
  std::vector<FlagSpec> flags() const;
  bool contains(const std::string& name) const;

  // CliArgs::parse over the table's value and boolean flags (a boolean "help" also answers -h).
  absl::StatusOr<CliArgs> parse(const std::vector<std::string>& args) const;

  // Each group's title and one aligned line per flag: "  --name VALUE   help".
  std::string help() const;

 private:
  std::vector<Group> groups_;
};

}  // namespace weft
