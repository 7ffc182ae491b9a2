#include "launcher/cli_args.h"

#include <cmath>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace weft {

absl::StatusOr<CliArgs> CliArgs::parse(const std::vector<std::string>& args,
                                       const std::set<std::string>& value_flags,
                                       const std::set<std::string>& bool_flags) {
  CliArgs out;
  for (size_t i = 0; i < args.size(); ++i) {
    absl::string_view arg = args[i];
    // -h is --help wherever a flag may stand (the value of a flag may still be "-h").
    if (arg == "-h" && bool_flags.count("help")) arg = "--help";
    if (!absl::ConsumePrefix(&arg, "--")) {
      return absl::InvalidArgumentError(absl::StrCat("unexpected argument '", args[i],
                                                     "' (flags start with --)"));
    }
    std::string name(arg), value;
    bool has_value = false;
    if (size_t eq = name.find('='); eq != std::string::npos) {
      value = name.substr(eq + 1);
      name = name.substr(0, eq);
      has_value = true;
    }
    if (bool_flags.count(name)) {
      if (has_value && value != "true" && value != "false") {
        return absl::InvalidArgumentError(absl::StrCat("--", name, " takes no value (or =true/=false)"));
      }
      if (!has_value || value == "true") out.values_[name] = {"true"};
      continue;
    }
    if (!value_flags.count(name)) {
      return absl::InvalidArgumentError(absl::StrCat("unknown flag --", name));
    }
    if (!has_value) {
      if (i + 1 >= args.size()) return absl::InvalidArgumentError(absl::StrCat("--", name, " needs a value"));
      value = args[++i];
    }
    out.values_[name].push_back(value);
  }
  return out;
}

std::optional<std::string> CliArgs::get(const std::string& name) const {
  auto it = values_.find(name);
  if (it == values_.end()) return std::nullopt;
  return it->second.back();
}

std::vector<std::string> CliArgs::get_all(const std::string& name) const {
  auto it = values_.find(name);
  return it == values_.end() ? std::vector<std::string>{} : it->second;
}

std::string CliArgs::get_or(const std::string& name, const std::string& fallback) const {
  return get(name).value_or(fallback);
}

absl::StatusOr<int64_t> CliArgs::get_int(const std::string& name, int64_t fallback) const {
  auto v = get(name);
  if (!v) return fallback;
  int64_t out;
  if (!absl::SimpleAtoi(*v, &out)) {
    return absl::InvalidArgumentError(absl::StrCat("--", name, ": expected an integer, got '", *v, "'"));
  }
  return out;
}

absl::StatusOr<double> CliArgs::get_double(const std::string& name, double fallback) const {
  auto v = get(name);
  if (!v) return fallback;
  double out;
  if (!absl::SimpleAtod(*v, &out) || !std::isfinite(out)) {
    return absl::InvalidArgumentError(absl::StrCat("--", name, ": expected a number, got '", *v, "'"));
  }
  return out;
}

absl::StatusOr<std::vector<int32_t>> CliArgs::get_int_list(const std::string& name) const {
  std::vector<int32_t> out;
  auto v = get(name);
  if (!v) return out;
  for (absl::string_view part : absl::StrSplit(*v, ',', absl::SkipWhitespace())) {
    int32_t x;
    if (!absl::SimpleAtoi(part, &x)) {
      return absl::InvalidArgumentError(absl::StrCat("--", name, ": '", part, "' is not an integer"));
    }
    out.push_back(x);
  }
  return out;
}

absl::StatusOr<int64_t> CliArgs::get_bytes(const std::string& name, int64_t fallback) const {
  auto v = get(name);
  if (!v) return fallback;
  absl::string_view s = *v;
  int64_t unit = 1;
  for (auto [suffix, mult] : {std::pair{"GiB", 1ll << 30}, {"MiB", 1ll << 20}, {"KiB", 1ll << 10},
                              {"GB", 1000000000ll}, {"MB", 1000000ll}, {"KB", 1000ll}}) {
    if (absl::ConsumeSuffix(&s, suffix)) {
      unit = mult;
      break;
    }
  }
  double number;
  if (!absl::SimpleAtod(s, &number) || number < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("--", name, ": expected a size like 512MiB or 2GiB, got '", *v, "'"));
  }
  return static_cast<int64_t>(number * static_cast<double>(unit));
}

}  // namespace weft
