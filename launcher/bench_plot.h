// weft bench --plot FILE.png: the measured table written as FILE.json, then drawn by
// scripts/plot_bench.py (matplotlib) into FILE.png: decode and prefill throughput, decode step
// latency and the decode bandwidth fraction against batch size. The interpreter is $WEFT_PYTHON,
// else python3 on the PATH; the script is share/weft/plot_bench.py beside an installed weft, else
// the source tree's.
#pragma once

#include <string>

#include "absl/status/status.h"
#include "nlohmann/json.hpp"

namespace weft {

// Errors name the file that could not be written, a missing script, or the script's failure
// (e.g. matplotlib not installed: its message is on stderr).
absl::Status plot_bench(const nlohmann::ordered_json& table, const std::string& png_path);

}  // namespace weft
