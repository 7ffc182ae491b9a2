// The weft inspect report as one self-contained HTML page: inline CSS and SVG only (no script,
// no fonts, no images fetched), so it opens offline and from a file. Drawn from the report JSON
// alone (inspect_report.h), whose strings must be valid UTF-8 (dump with the replace handler and
// parse back first).
#pragma once

#include <string>

#include "debug_report/inspect_report.h"

namespace weft {

std::string render_inspect_html(const ReportJson& report);

}  // namespace weft
