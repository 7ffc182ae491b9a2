// weft inspect: runs one request like weft generate and writes what happened inside it as a
// self-contained HTML page (--report FILE.html) and the same data as JSON beside it (FILE.json):
// the prompt's tokens, the effective sampling parameters and their sources, per step the chosen
// token against the raw distribution, the stop condition, KV blocks, memory, and the attention
// weights of the chosen layers and heads (recorded by the engine's kernels on every rank and
// gathered to rank 0 after the run).
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "engine/text_detokenizer.h"
#include "launcher/command_specs.h"
#include "launcher/commands.h"
#include "launcher/engine_session.h"
#include "debug_report/generation_trace.h"
#include "debug_report/inspect_html.h"
#include "debug_report/inspect_report.h"
#include "launcher/request_flags.h"
#include "launcher/sampling_flags.h"

namespace weft {
namespace {

int fail(const absl::Status& status) {
  std::cerr << "weft inspect: " << status.message() << "\n";
  return status.code() == absl::StatusCode::kInvalidArgument ? 2 : 1;
}

// "none", "all" or "0,3,5" (each in [0, count)); absent: `fallback`.
absl::StatusOr<std::vector<int>> index_list(const CliArgs& cli, const std::string& flag, int count,
                                            std::vector<int> fallback) {
  std::vector<int> out;
  const std::string text = cli.get_or(flag, "");
  if (!cli.has(flag)) {
    out = std::move(fallback);
  } else if (text == "all") {
    for (int i = 0; i < count; ++i) out.push_back(i);
  } else if (text != "none") {
    auto ids = cli.get_int_list(flag);
    if (!ids.ok()) return ids.status();
    for (int32_t id : *ids) {
      if (id < 0 || id >= count) {
        return absl::InvalidArgumentError(
            absl::StrCat("--", flag, ": ", id, " is outside [0, ", count, ")"));
      }
      out.push_back(id);
    }
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

// Absent flags: default_attention_selection.
absl::StatusOr<AttentionSelection> attention_selection(const CliArgs& cli,
                                                       const ModelConfig& config) {
  const int layers = static_cast<int>(config.num_hidden_layers);
  const int heads = static_cast<int>(config.num_attention_heads);
  const AttentionSelection fallback = default_attention_selection(layers, heads);
  AttentionSelection s;
  auto l = index_list(cli, "attention-layers", layers, fallback.layers);
  if (!l.ok()) return l.status();
  auto h = index_list(cli, "attention-heads", heads, fallback.heads);
  if (!h.ok()) return h.status();
  s.layers = *std::move(l);
  s.heads = *std::move(h);
  return s;
}

// What the coordinator gathers while the request runs; attention and memory come after it.
struct Inspection {
  ReportJson report;
  int64_t prompt_len = 0;
  int64_t num_output = 0;
  int64_t major_faults_before = 0;
  int64_t major_faults_after = 0;
};

int inspect(EngineSession& session, const CliArgs& cli, const PromptInput& prompt,
            const SamplingParams& params, Inspection& result) {
  Engine& engine = session.engine();
  auto request = request_from_flags(cli, prompt, params, session);
  if (!request.ok()) return fail(request.status());
  const std::vector<int32_t> eos_ids = engine.config().eos_token_ids;
  const Tokenizer* tokenizer = prompt.tokenizer.get();
  result.major_faults_before = ProcessUsage::now().major_faults;
  auto id = engine.add_request(*std::move(request));
  if (!id.ok()) return fail(id.status());

  GenerationTrace trace(params, tokenizer);
  const int64_t total_blocks = session.num_kv_blocks();
  int64_t peak_blocks = 0;
  while (engine.has_unfinished()) {
    auto outputs = engine.step();
    if (!outputs.ok()) {
      session.abort(1, absl::StrCat("rank 0: ", outputs.status().message()));
      return 1;
    }
    peak_blocks = std::max(peak_blocks, total_blocks - engine.blocks().num_free_blocks());
    for (const SequenceOutput& out : *outputs) trace.add(out);
  }
  result.major_faults_after = ProcessUsage::now().major_faults;
  result.prompt_len = static_cast<int64_t>(prompt.ids.size());
  result.num_output = trace.num_output();

  ReportJson& r = result.report;
  r["model"] = session.options().model_dir.string();
  r["world_size"] = session.world_size();
  r["prompt"] = {{"text", tokenizer != nullptr ? ReportJson(prompt.text) : ReportJson(nullptr)},
                 {"tokens", token_list_json(prompt.ids, tokenizer)}};
  const GenerationConfig& generation = session.model().generation;
  const bool file_used = cli.get_or("generation-config", "auto") != "none";
  // A parameter's source: its flag, else generation_config.json's field when used and set.
  auto source_of = [&](const std::string& field) {
    std::string flag = field == "seed" ? "request-seed" : field;
    std::replace(flag.begin(), flag.end(), '_', '-');
    if (cli.has(flag)) return "request (--" + flag + ")";
    return default_sampling_source(field, generation, file_used);
  };
  r["sampling"] = sampling_json(params, source_of, generation, eos_ids);
  trace.write(r);
  r["stop"] = stop_json(trace.last(), trace.text(), result.prompt_len, result.num_output, params, eos_ids,
                        engine.config().max_model_len);
  const BannedPhraseStats& banned = engine.banned_phrase_stats();
  r["resources"] = {{"kv_blocks_peak", peak_blocks},
                    {"kv_blocks_peak_request", trace.kv_blocks_peak()},
                    {"kv_blocks_total", total_blocks},
                    {"kv_block_size", session.options().kv.block_size},
                    {"banned_phrase_rolled_back_tokens", banned.rolled_back_tokens}};
  return 0;
}

// FILE.html -> FILE.json.
std::filesystem::path json_path(const std::filesystem::path& html) {
  std::filesystem::path p = html;
  return p.replace_extension(".json");
}

absl::Status write_file(const std::filesystem::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
  out.close();
  if (!out)
    return absl::InvalidArgumentError(absl::StrCat("--report: cannot write ", path.string()));
  return absl::OkStatus();
}

}  // namespace

int run_inspect(const std::vector<std::string>& args) {
  auto parsed = parse_command(command_spec("inspect"), args, fail);
  if (const int* done = std::get_if<int>(&parsed)) return *done;
  const CliArgs& cli = std::get<CliArgs>(parsed);
  if (!cli.has("report")) return fail(absl::InvalidArgumentError("--report FILE.html is required"));
  SamplingParams defaults;
  defaults.temperature = 0.0f;
  auto checked = sampling_params_from(cli, defaults);
  if (!checked.ok()) return fail(checked.status());
  if (checked->n != 1)
    return fail(absl::InvalidArgumentError("--n: weft inspect follows one sequence (n 1)"));
  auto started = EngineSession::start(cli);
  if (!started.ok()) return fail(started.status());
  EngineSession& session = **started;
  auto config = load_model_config(session.options().model_dir);
  if (!config.ok()) return fail(config.status());
  auto selection = attention_selection(cli, *config);
  if (!selection.ok()) return fail(selection.status());
  auto probe = std::make_shared<AttentionProbe>(*selection);
  if (!selection->layers.empty() && !selection->heads.empty()) session.set_attention_probe(probe);

  absl::StatusOr<PromptInput> prompt = PromptInput{};
  if (session.is_coordinator()) prompt = prompt_from_flags(cli, session.options().model_dir);
  DetokenizerFactory detokenizers;
  if (prompt.ok() && prompt->tokenizer) detokenizers = text_detokenizers(prompt->tokenizer);
  if (absl::Status s = session.load(detokenizers); !s.ok()) return fail(s);

  Inspection inspection;
  const int code = run_session(session, [&] {
    if (!prompt.ok()) return fail(prompt.status());
    auto model_defaults = model_sampling_defaults(cli, session.model().generation, defaults);
    if (!model_defaults.ok()) return fail(model_defaults.status());
    auto params = sampling_params_from(cli, *model_defaults);
    if (!params.ok()) return fail(params.status());
    if (!params->logprobs) params->logprobs = 5;
    params->diagnostics = true;
    return inspect(session, cli, *prompt, *params, inspection);
  });
  // Every rank: its attention records and its memory, to the coordinator.
  auto records = session.gather_to_coordinator(serialize_attention_records(probe->records()));
  auto usage = session.gather_to_coordinator(ProcessUsage::now().serialize());
  if (!session.is_coordinator() || code != 0) return code;
  if (!records.ok()) return fail(records.status());
  if (!usage.ok()) return fail(usage.status());

  std::vector<AttentionRecord> all;
  for (const std::string& bytes : *records) {
    auto part = parse_attention_records(bytes);
    if (!part.ok()) return fail(part.status());
    all.insert(all.end(), part->begin(), part->end());
  }
  std::sort(all.begin(), all.end(), [](const AttentionRecord& a, const AttentionRecord& b) {
    return std::tie(a.layer, a.head, a.position) < std::tie(b.layer, b.head, b.position);
  });
  ReportJson& report = inspection.report;
  report["attention"] =
      attention_json(*selection, all, inspection.prompt_len, inspection.num_output, 5);
  ReportJson ranks = ReportJson::array();
  for (size_t rank = 0; rank < usage->size(); ++rank) {
    const ProcessUsage u = ProcessUsage::parse((*usage)[rank]);
    ranks.push_back({{"rank", rank},
                     {"peak_rss_bytes", u.peak_rss_bytes},
                     {"major_page_faults", u.major_faults}});
  }
  report["resources"]["ranks"] = std::move(ranks);
  report["resources"]["major_page_faults_during_generation"] =
      inspection.major_faults_after - inspection.major_faults_before;

  // Replace (never throw on) bytes that are not UTF-8 (a piece may be part of a character), then
  // draw the page from what the JSON file says.
  const std::string json = report.dump(1, ' ', false, nlohmann::json::error_handler_t::replace);
  const std::filesystem::path html_file = cli.get_or("report", "");
  if (absl::Status s = write_file(json_path(html_file), json + "\n"); !s.ok()) return fail(s);
  if (absl::Status s = write_file(html_file, render_inspect_html(ReportJson::parse(json))); !s.ok())
    return fail(s);
  std::cerr << "weft inspect: wrote " << html_file.string() << " and "
            << json_path(html_file).string() << "\n";
  return 0;
}

}  // namespace weft
