#include "launcher/flag_table.h"

#include <algorithm>
#include <set>

namespace weft {
namespace {

std::string flag_label(const FlagSpec& f) {
  std::string label = "--" + f.name;
  if (f.name == "help") label += ", -h";
  if (!f.is_bool()) label += " " + f.value;
  return label;
}

}  // namespace

FlagTable& FlagTable::add(std::string title, std::vector<FlagSpec> flags) {
  groups_.push_back({std::move(title), std::move(flags)});
  return *this;
}

std::vector<FlagSpec> FlagTable::flags() const {
  std::vector<FlagSpec> out;
  for (const Group& g : groups_) out.insert(out.end(), g.flags.begin(), g.flags.end());
  return out;
}

bool FlagTable::contains(const std::string& name) const {
  for (const Group& g : groups_) {
    for (const FlagSpec& f : g.flags) {
      if (f.name == name) return true;
    }
  }
  return false;
}

absl::StatusOr<CliArgs> FlagTable::parse(const std::vector<std::string>& args) const {
  std::set<std::string> value_flags, bool_flags;
  for (const FlagSpec& f : flags()) {
    if (value_flags.count(f.name) || bool_flags.count(f.name)) continue;
    (f.is_bool() ? bool_flags : value_flags).insert(f.name);
  }
  return CliArgs::parse(args, value_flags, bool_flags);
}

std::string FlagTable::help() const {
  // Labels longer than the column put their help two spaces after them.
  constexpr size_t kMaxColumn = 32;
  size_t column = 0;
  for (const FlagSpec& f : flags()) column = std::max(column, flag_label(f).size());
  column = std::min(column, kMaxColumn);
  std::string out;
  for (const Group& g : groups_) {
    if (g.flags.empty()) continue;
    out += "\n" + g.title + ":\n";
    for (const FlagSpec& f : g.flags) {
      std::string line = "  " + flag_label(f);
      line.resize(std::max(line.size() + 2, column + 4), ' ');
      out += line + f.help + "\n";
    }
  }
  return out;
}

}  // namespace weft
