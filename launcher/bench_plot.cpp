#include "launcher/bench_plot.h"

#include <spawn.h>
#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <vector>

#include "absl/strings/str_cat.h"
#include "launcher/install_paths.h"

extern char** environ;

namespace weft {

absl::Status plot_bench(const nlohmann::ordered_json& table, const std::string& png_path) {
  std::filesystem::path json_path = png_path;
  json_path.replace_extension(".json");
  {
    std::ofstream out(json_path);
    out << table.dump(1) << "\n";
    if (!out)
      return absl::InvalidArgumentError(absl::StrCat("--plot: cannot write ", json_path.string()));
  }
  std::filesystem::path script;
  for (const std::filesystem::path& p :
       shipped_file_candidates("plot_bench.py", "scripts/plot_bench.py")) {
    std::error_code ec;
    if (std::filesystem::is_regular_file(p, ec)) {
      script = p;
      break;
    }
  }
  if (script.empty())
    return absl::NotFoundError("--plot: plot_bench.py not found beside weft or in its source tree");
  const char* env = std::getenv("WEFT_PYTHON");
  const std::string python = env != nullptr && *env != '\0' ? env : "python3";
  std::vector<std::string> args = {python, script.string(), json_path.string(), png_path};
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = 0;
  if (posix_spawnp(&pid, python.c_str(), nullptr, nullptr, argv.data(), environ) != 0) {
    return absl::FailedPreconditionError(
        absl::StrCat("--plot: cannot run ", python, " (set WEFT_PYTHON)"));
  }
  int status = 0;
  if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    return absl::InternalError(absl::StrCat("--plot: ", python, " ", script.string(),
                                            " failed (its message is above; the data is in ",
                                            json_path.string(), ")"));
  }
  return absl::OkStatus();
}

}  // namespace weft
