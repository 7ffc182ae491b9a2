#include "debug_report/inspect_html.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

#include "core/html_escape.h"

namespace weft {
namespace {

std::string fmt(double v, const char* spec = "%.4g") {
  char buf[64];
  std::snprintf(buf, sizeof(buf), spec, v);
  return buf;
}

std::string num(const ReportJson& v, const char* spec = "%.4g") {
  if (v.is_number_float()) return fmt(v.get<double>(), spec);
  if (v.is_number()) return std::to_string(v.get<int64_t>());
  if (v.is_null()) return "-";
  return html_escape(v.dump());
}

// A token's piece as visible text: whitespace shown as symbols, so "split unexpectedly" shows.
std::string visible_piece(const ReportJson& piece) {
  if (!piece.is_string()) return "";
  std::string out;
  for (char c : piece.get<std::string>()) {
    if (c == ' ')
      out += "\xC2\xB7";  // middle dot
    else if (c == '\n')
      out += "\xE2\x86\xB5";  // return arrow
    else if (c == '\t')
      out += "\xE2\x86\x92";  // right arrow
    else
      out += c;
  }
  return html_escape(out);
}

std::string token_label(const ReportJson& id, const ReportJson& piece) {
  std::string v = visible_piece(piece);
  return v.empty() ? "#" + num(id) : v;
}

const char* kStyle = R"(
body{font-family:system-ui,-apple-system,"Segoe UI",sans-serif;margin:24px;color:#1d1d1f;max-width:1200px}
h1{font-size:22px}h2{font-size:18px;margin-top:28px;border-bottom:1px solid #ddd;padding-bottom:4px}
table{border-collapse:collapse;font-size:13px}td,th{border:1px solid #ddd;padding:3px 6px;text-align:left;vertical-align:top}
th{background:#f4f4f6}.tok{display:inline-block;border:1px solid #bbb;border-radius:3px;margin:1px;padding:0 3px;
font-family:ui-monospace,monospace;font-size:12px;background:#fafafa}.special{background:#ffe7b3;border-color:#d9a400}
.bytefb{background:#f6d0ff;border-color:#a040c0}.changed{background:#ffe0e0}pre{background:#f6f6f8;padding:8px;
white-space:pre-wrap;word-break:break-all}.mono{font-family:ui-monospace,monospace}.note{color:#666;font-size:12px}
.legend span{margin-right:12px}
)";

void prompt_section(std::ostringstream& o, const ReportJson& prompt) {
  o << "<h2>Prompt</h2>";
  if (prompt.contains("text") && prompt["text"].is_string()) {
    o << "<p class=note>Rendered prompt (after the chat template):</p><pre>"
      << html_escape(prompt["text"].get<std::string>()) << "</pre>";
  }
  o << "<p class=legend><span class=\"tok special\">special</span><span class=\"tok bytefb\">byte "
       "fallback</span>"
    << "<span class=note>hover a token: id and byte offset; \xC2\xB7 is a space, \xE2\x86\xB5 a "
       "newline</span></p><div>";
  for (const ReportJson& t : prompt["tokens"]) {
    std::string cls = "tok";
    if (t.value("special", false)) cls += " special";
    if (t.value("byte_fallback", false)) cls += " bytefb";
    o << "<span class=\"" << cls << "\" title=\"id " << num(t["id"]) << ", offset "
      << num(t["offset"]) << "\">" << token_label(t["id"], t["piece"]) << "</span>";
  }
  o << "</div><p class=note>" << prompt["tokens"].size() << " tokens</p>";
}

void sampling_section(std::ostringstream& o, const ReportJson& sampling) {
  o << "<h2>Sampling "
       "parameters</h2><table><tr><th>parameter</th><th>value</th><th>source</th></tr>";
  for (const auto& [name, entry] : sampling.items()) {
    if (!entry.is_object()) continue;
    o << "<tr><td class=mono>" << html_escape(name) << "</td><td class=mono>"
      << html_escape(entry["value"].dump()) << "</td><td>"
      << html_escape(entry["source"].get<std::string>()) << "</td></tr>";
  }
  o << "</table>";
}

// Probability of the chosen token (bars) and the entropy of each row (line), per step.
void steps_chart(std::ostringstream& o, const ReportJson& steps) {
  const size_t n = steps.size();
  if (n == 0) return;
  const double w = 900, h = 160, left = 40, bottom = 20;
  const double bar = (w - left) / static_cast<double>(n);
  double max_entropy = 1e-9;
  for (const ReportJson& s : steps) max_entropy = std::max(max_entropy, s.value("entropy", 0.0));
  o << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << w << "\" height=\"" << h + bottom
    << "\" role=\"img\" aria-label=\"probability and entropy per step\">";
  o << "<line x1=\"" << left << "\" y1=\"" << h << "\" x2=\"" << w << "\" y2=\"" << h
    << "\" stroke=\"#999\"/>";
  o << "<text x=\"0\" y=\"12\" font-size=\"11\">p=1</text><text x=\"0\" y=\"" << h
    << "\" font-size=\"11\">0</text>";
  std::string line;
  for (size_t i = 0; i < n; ++i) {
    const ReportJson& s = steps[i];
    const double p = s["probability"].is_number() ? s["probability"].get<double>() : 0.0;
    const double x = left + bar * static_cast<double>(i);
    const bool changed = !s["changed_by"].empty();
    o << "<rect x=\"" << fmt(x + 1) << "\" y=\"" << fmt(h * (1 - p)) << "\" width=\""
      << fmt(std::max(1.0, bar - 2)) << "\" height=\"" << fmt(h * p) << "\" fill=\""
      << (changed ? "#e0523a" : "#4a78c2") << "\"><title>step " << i << ": p=" << fmt(p)
      << " entropy=" << num(s.value("entropy", ReportJson())) << "</title></rect>";
    if (s.contains("entropy")) {
      line +=
          fmt(x + bar / 2) + "," + fmt(h * (1 - s["entropy"].get<double>() / max_entropy)) + " ";
    }
  }
  if (!line.empty())
    o << "<polyline points=\"" << line
      << "\" fill=\"none\" stroke=\"#2a9d5b\" stroke-width=\"2\"/>";
  o << "<text x=\"" << left << "\" y=\"" << h + 15
    << "\" font-size=\"11\">bars: probability of the chosen token"
    << " (red: a penalty, bias or mask changed the choice); green line: entropy (max "
    << fmt(max_entropy) << " nats)</text></svg>";
}

void steps_section(std::ostringstream& o, const ReportJson& steps) {
  o << "<h2>Generated steps</h2>";
  steps_chart(o, steps);
  o << "<table><tr><th>#</th><th>token</th><th>p (raw)</th><th>rank</th><th>entropy</th><th>p "
       "drawn</th>"
       "<th>top alternatives (raw)</th><th>changed by</th></tr>";
  for (const ReportJson& s : steps) {
    const bool changed = !s["changed_by"].empty();
    o << "<tr" << (changed ? " class=changed" : "") << "><td>" << num(s["index"])
      << "</td><td class=mono title=\"id " << num(s["token"]) << "\">"
      << token_label(s["token"], s["piece"]) << "</td><td>" << num(s["probability"]) << "</td><td>"
      << num(s.value("rank", ReportJson())) << "</td><td>" << num(s.value("entropy", ReportJson()))
      << "</td><td>" << num(s.value("sampled_probability", ReportJson())) << "</td><td class=mono>";
    for (const ReportJson& t : s["top"]) {
      o << "<span class=tok title=\"id " << num(t["token"]) << "\">"
        << token_label(t["token"], t["piece"]) << " " << fmt(t["probability"].get<double>(), "%.3f")
        << "</span>";
    }
    o << "</td><td>";
    for (const ReportJson& c : s["changed_by"]) o << html_escape(c.get<std::string>()) << "<br>";
    o << "</td></tr>";
  }
  o << "</table>";
}

// What banned phrases withdrew: the generated tokens each rollback took back (never sent) and the
// token banned where it began.
void rollbacks_section(std::ostringstream& o, const ReportJson& rollbacks) {
  o << "<h2>Banned-phrase rollbacks</h2>";
  if (!rollbacks.is_array() || rollbacks.empty()) {
    o << "<p class=note>None.</p>";
    return;
  }
  o << "<table><tr><th>at step</th><th>withdrawn tokens</th><th>their text</th><th>banned there</th></tr>";
  for (const ReportJson& r : rollbacks) {
    o << "<tr><td>" << num(r["at"]) << "</td><td class=mono>";
    for (const ReportJson& t : r["tokens"]) {
      o << "<span class=tok title=\"id " << num(t["id"]) << "\">" << token_label(t["id"], t["piece"]) << "</span>";
    }
    const ReportJson& banned = r["banned_token"];
    o << "</td><td><pre>" << html_escape(r["text"].is_string() ? r["text"].get<std::string>() : "")
      << "</pre></td><td class=mono>" << token_label(banned["id"], banned["piece"]) << "</td></tr>";
  }
  o << "</table>";
}

void stop_section(std::ostringstream& o, const ReportJson& report) {
  const ReportJson& stop = report["stop"];
  o << "<h2>Stop</h2><table><tr><th>finish_reason</th><td>"
    << html_escape(stop["finish_reason"].get<std::string>()) << "</td></tr><tr><th>kind</th><td>"
    << html_escape(stop.value("kind", "")) << "</td></tr><tr><th>detail</th><td>"
    << html_escape(stop.value("detail", "")) << "</td></tr></table>";
  o << "<h2>Output</h2><pre>" << html_escape(report.value("text", "")) << "</pre>";
  const ReportJson& r = report["resources"];
  o << "<h2>Resources</h2><table>";
  for (const auto& [name, value] : r.items()) {
    o << "<tr><th>" << html_escape(name) << "</th><td class=mono>" << html_escape(value.dump())
      << "</td></tr>";
  }
  o << "</table>";
}

// One heatmap per (layer, head): a row per generated token, a column per context position.
void attention_section(std::ostringstream& o, const ReportJson& attention,
                       const ReportJson& context) {
  o << "<h2>Attention</h2>";
  if (attention.is_null() || attention["maps"].empty()) {
    const std::string why = attention.is_object() && attention.contains("note")
                                ? attention["note"].get<std::string>()
                                : "--attention-layers none";
    o << "<p class=note>No attention recorded (" << html_escape(why) << ").</p>";
    return;
  }
  o << "<p class=note>Softmax weights from weft's own attention kernel: row i is the query that "
       "chose generated "
       "token i, column p a context position (prompt, then earlier output). Darker: more weight "
       "(each row scaled "
       "to its maximum). Hover a cell for its weight.</p>";
  for (const ReportJson& map : attention["maps"]) {
    const ReportJson& rows = map["rows"];
    size_t cols = 0;
    for (const ReportJson& r : rows) cols = std::max(cols, r["weights"].size());
    const double cell = std::clamp(900.0 / std::max<size_t>(cols, 1), 3.0, 16.0);
    const double ch = 14, left = 34;
    o << "<h3>layer " << num(map["layer"]) << ", head " << num(map["head"]) << "</h3>"
      << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << fmt(left + cell * cols + 2)
      << "\" height=\"" << fmt(ch * rows.size() + 4) << "\">";
    for (size_t i = 0; i < rows.size(); ++i) {
      const ReportJson& w = rows[i]["weights"];
      double mx = 1e-12;
      for (const ReportJson& v : w) mx = std::max(mx, v.get<double>());
      o << "<text x=\"0\" y=\"" << fmt(ch * (i + 1) - 3) << "\" font-size=\"10\">"
        << num(rows[i]["step"]) << "</text>";
      for (size_t p = 0; p < w.size(); ++p) {
        const double v = w[p].get<double>();
        const int shade = static_cast<int>(std::lround(255.0 * (1.0 - v / mx)));
        const std::string label =
            p < context.size() ? token_label(context[p]["id"], context[p]["piece"]) : "";
        o << "<rect x=\"" << fmt(left + cell * p) << "\" y=\"" << fmt(ch * i) << "\" width=\""
          << fmt(cell) << "\" height=\"" << fmt(ch) << "\" fill=\"rgb(" << shade << "," << shade
          << ",255)\"><title>step " << num(rows[i]["step"]) << " \xE2\x86\x92 position " << p << " "
          << label << ": " << fmt(v) << "</title></rect>";
      }
    }
    o << "</svg><table><tr><th>step</th><th>most attended positions (weight)</th></tr>";
    for (const ReportJson& r : rows) {
      o << "<tr><td>" << num(r["step"]) << "</td><td class=mono>";
      for (const ReportJson& t : r["top"]) {
        const size_t p = t["position"].get<size_t>();
        const std::string label =
            p < context.size() ? token_label(context[p]["id"], context[p]["piece"]) : "";
        o << "<span class=tok>" << p << " " << label << " "
          << fmt(t["weight"].get<double>(), "%.3f") << "</span>";
      }
      o << "</td></tr>";
    }
    o << "</table>";
  }
}

}  // namespace

std::string render_inspect_html(const ReportJson& report) {
  std::ostringstream o;
  o << "<!DOCTYPE html><html lang=en><head><meta charset=\"utf-8\"><title>weft inspect: "
    << html_escape(report.value("model", "")) << "</title><style>" << kStyle
    << "</style></head><body>";
  o << "<h1>weft inspect</h1><p class=mono>" << html_escape(report.value("model", "")) << "</p>";
  prompt_section(o, report["prompt"]);
  sampling_section(o, report["sampling"]);
  steps_section(o, report["steps"]);
  rollbacks_section(o, report.value("rollbacks", ReportJson()));
  stop_section(o, report);
  // Context positions: the prompt's tokens, then the generated ones.
  ReportJson context = report["prompt"]["tokens"];
  for (const ReportJson& s : report["steps"])
    context.push_back({{"id", s["token"]}, {"piece", s["piece"]}});
  attention_section(o, report.value("attention", ReportJson()), context);
  o << "</body></html>\n";
  return o.str();
}

}  // namespace weft
