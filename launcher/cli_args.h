// Command-line flags of the weft subcommands: "--name value", "--name=value" and boolean
// "--name", and "-h" for a declared boolean "help". Every flag a subcommand reads must be
// declared; an unknown flag, a missing value or a malformed number is an error that names the flag.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace weft {

class CliArgs {
 public:
  // `value_flags` take a value; `bool_flags` do not. Names without the leading dashes.
  static absl::StatusOr<CliArgs> parse(const std::vector<std::string>& args,
                                       const std::set<std::string>& value_flags,
                                       const std::set<std::string>& bool_flags);

  bool has(const std::string& name) const { return values_.count(name) != 0; }
  // The last value given for a flag.
  std::optional<std::string> get(const std::string& name) const;
  // Every value given for a repeatable flag, in order (e.g. --stop A --stop B).
  std::vector<std::string> get_all(const std::string& name) const;
  std::string get_or(const std::string& name, const std::string& fallback) const;
  absl::StatusOr<int64_t> get_int(const std::string& name, int64_t fallback) const;
  absl::StatusOr<double> get_double(const std::string& name, double fallback) const;
  // "1,2,3" -> {1, 2, 3}.
  absl::StatusOr<std::vector<int32_t>> get_int_list(const std::string& name) const;
  // "512MiB", "2GiB", "1000000" -> bytes.
  absl::StatusOr<int64_t> get_bytes(const std::string& name, int64_t fallback) const;

 private:
  std::map<std::string, std::vector<std::string>> values_;
};

}  // namespace weft
