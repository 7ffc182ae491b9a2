#include "batch/batch_runner.h"

#include <chrono>
#include <ctime>
#include <fstream>
#include <map>
#include <optional>
#include <set>

#include "absl/strings/str_cat.h"
#include "batch/batch_journal.h"
#include "batch/batch_inflight.h"
#include "batch/batch_record.h"
#include "core/status_macros.h"
#include "sampling/sampling_params_json.h"
#include "serving/openai_fields.h"
#include "serving/openai_logprobs.h"

namespace weft {
namespace {

struct InFlight {
  BatchResult result;
  int remaining = 0;  // sequences not finished
};

// A request ready for the engine, or the reason the line gets an error record.
struct Prepared {
  Request request;
  BatchResult result;
};

absl::StatusOr<std::vector<int32_t>> prompt_ids_of(const BatchLine& line, const BatchPromptEncoder& encoder,
                                                   const ToolRequest& tools) {
  if (line.endpoint == BatchEndpoint::kChatCompletions) {
    if (!encoder.encode_chat) {
      return absl::InvalidArgumentError("body.messages: chat requests need the model's tokenizer and chat template");
    }
    nlohmann::ordered_json messages;
    if (auto err = chat_messages_for_template(line.body.at("messages"), messages)) {
      return absl::InvalidArgumentError(absl::StrCat("body.", err->message));
    }
    ChatOptions options;
    if (auto err = chat_options(line.body, options)) return absl::InvalidArgumentError(absl::StrCat("body.", err->message));
    nlohmann::ordered_json kwargs;
    if (auto err = chat_template_extra(line.body, kwargs)) return absl::InvalidArgumentError(absl::StrCat("body.", err->message));
    // The template sees the tools whatever tool_choice says, as in weft serve.
    if (!tools.template_tools.is_null() && !kwargs.contains("tools")) kwargs["tools"] = tools.template_tools;
    return encoder.encode_chat(messages, kwargs, options.prompt_end);
  }
  const nlohmann::json& prompt = line.body.at("prompt");
  if (prompt.is_string()) {
    if (!encoder.encode_text) {
      return absl::InvalidArgumentError(
          "body.prompt: a text prompt needs the model's tokenizer.json; give an array of token ids");
    }
    return encoder.encode_text(prompt.get<std::string>());
  }
  std::vector<int32_t> ids;
  for (const nlohmann::json& v : prompt) {
    if (!v.is_number_integer()) {
      return absl::InvalidArgumentError(
          "body.prompt: expected a string or an array of integer token ids (one prompt per line)");
    }
    ids.push_back(v.get<int32_t>());
  }
  return ids;
}

// A chat line's tools: the reply parsed for calls (and its marker kept in the text) when
// tool_choice is not "none", and the grammar of required / named / strict functions.
absl::Status set_up_tool_calls(const ToolRequest& tools, const BatchOptions& options, Prepared& p) {
  if (tools.functions.empty()) return absl::OkStatus();
  std::optional<ToolCallFormat> format;
  if (tools.parses_calls()) {
    if (!options.tool_call_format) {
      return absl::InvalidArgumentError(
          "body.tools: the model's chat template shows no tool-call format weft can parse; run weft batch with "
          "--tool-call-parser hermes|llama3_json|mistral (or send tool_choice \"none\")");
    }
    format = options.tool_call_format;
    p.result.tool_calls = format;
    p.result.parallel_tool_calls = tools.parallel;
    if (options.tool_call_marker_special) p.request.params.skip_special_tokens = false;
  }
  bool strict = false;
  for (const ToolFunction& f : tools.functions) strict = strict || f.strict;
  if (!options.tool_constraints) {
    if (tools.forces_calls() || (tools.parses_calls() && strict)) {
      return absl::InvalidArgumentError(
          "body.tool_choice: \"required\", a named function and strict functions need constrained output, which "
          "this build does not have");
    }
    return absl::OkStatus();
  }
  auto constraint = options.tool_constraints(tools, format);
  if (!constraint.ok()) {
    return absl::Status(constraint.status().code(), absl::StrCat("body.", constraint.status().message()));
  }
  p.request.constraint = *std::move(constraint);
  return absl::OkStatus();
}

absl::StatusOr<Prepared> prepare(const BatchLine& line, const BatchPromptEncoder& encoder,
                                 const Engine& engine, const BatchOptions& options) {
  const std::string& model = options.model_name;
  Prepared p;
  nlohmann::json body = line.body;
  const bool chat = line.endpoint == BatchEndpoint::kChatCompletions;
  if (chat) {
    // Chat's logprobs is a boolean with top_logprobs beside it; the shared reader wants N.
    auto lp = body.find("logprobs");
    if (lp != body.end() && lp->is_boolean()) {
      const bool on = lp->get<bool>();
      auto top = body.find("top_logprobs");
      nlohmann::json n = top != body.end() && top->is_number_integer() ? *top : nlohmann::json(0);
      body.erase("top_logprobs");
      if (on) {
        body["logprobs"] = n;
      } else {
        body.erase("logprobs");
      }
    }
  }
  if (auto err = unsupported_field(body, chat)) return absl::InvalidArgumentError(absl::StrCat("body.", err->message));
  // (unsupported_field refuses tools on completions lines.)
  ToolRequest tools;
  if (chat) {
    auto read = tool_request_from_body(body, line.tools_in_order.is_null() ? nullptr : &line.tools_in_order);
    if (!read.ok()) return absl::InvalidArgumentError(absl::StrCat("body.", read.status().message()));
    tools = *std::move(read);
  }
  // weft serve implements echo (openai_response.h); batch records do not carry it yet.
  if (auto echo = body.find("echo"); echo != body.end() && !echo->is_null() && *echo != false) {
    return absl::InvalidArgumentError("body.echo: not supported by weft batch (weft serve supports it)");
  }
  // weft serve's debugging report (served_debug_report.h) has no place in a batch output record.
  if (auto debug = body.find("weft_debug"); debug != body.end() && !debug->is_null() && *debug != false) {
    return absl::InvalidArgumentError(
        "body.weft_debug: not supported by weft batch (weft serve --enable-debug-reports or weft inspect make the "
        "report)");
  }
  // Prompts are encoded with their API's default (completions: special tokens added; chat: the
  // template writes them), which weft serve lets a request change.
  if (auto add = body.find("add_special_tokens"); add != body.end() && !add->is_null() && *add != !chat) {
    return absl::InvalidArgumentError(absl::StrCat("body.add_special_tokens: only ", chat ? "false" : "true",
                                                   " (the default) is supported by weft batch"));
  }
  std::optional<int> prompt_logprobs;
  if (auto err = prompt_logprobs_field(body, prompt_logprobs)) {
    return absl::InvalidArgumentError(absl::StrCat("body.", err->message));
  }
  p.request.prompt_logprobs = prompt_logprobs;
  p.result.prompt_logprobs = prompt_logprobs;
  WEFT_ASSIGN_OR_RETURN(p.request.params, sampling_params_from_json(body, options.sampling_defaults));
  WEFT_RETURN_IF_ERROR(set_up_tool_calls(tools, options, p));
  if (const char* asked = constraint_field(body)) {
    if (p.request.constraint) {
      return absl::InvalidArgumentError(absl::StrCat("body.", asked, ": cannot be combined with tool_choice \"required\", a "
                                                     "named function or strict functions, whose grammar already shapes the reply"));
    }
    if (!options.constraints) {
      return absl::InvalidArgumentError(absl::StrCat("body.", asked, ": constrained output is not available in this build"));
    }
    auto constraint = options.constraints(body);
    if (!constraint.ok()) {
      return absl::Status(constraint.status().code(), absl::StrCat("body.", constraint.status().message()));
    }
    p.request.constraint = *std::move(constraint);
  }
  std::shared_ptr<const BannedPhraseSet> bad_words;
  if (auto err = bad_words_field(body, bad_words)) return absl::InvalidArgumentError(absl::StrCat("body.", err->message));
  p.request.banned_phrases = banned_phrase_lists(options.banned_phrases, bad_words);
  WEFT_ASSIGN_OR_RETURN(p.request.prompt_ids, prompt_ids_of(line, encoder, tools));
  const int64_t prompt_len = static_cast<int64_t>(p.request.prompt_ids.size());
  const bool has_max = body.contains("max_tokens") || body.contains("max_completion_tokens");
  if (chat && !has_max) {
    // OpenAI chat has no default cap: generate until a stop or the context is full.
    const int64_t room = engine.config().max_model_len - prompt_len;
    if (room >= 1) p.request.params.max_tokens = static_cast<int>(room);
  }
  auto priority = body.find("priority");
  if (priority != body.end() && priority->is_number_integer()) p.request.priority = priority->get<int>();
  p.result.endpoint = line.endpoint;
  p.result.custom_id = line.custom_id;
  // As in serve: a line that names another model is refused, not answered by this one.
  if (auto requested = body.find("model"); requested != body.end() && !requested->is_null()) {
    if (!requested->is_string()) return absl::InvalidArgumentError("body.model: expected a string");
    if (requested->get_ref<const std::string&>() != model) {
      return absl::NotFoundError(absl::StrCat("body.model: the model `", requested->get<std::string>(),
                                              "` does not exist; this batch job serves `", model, "`"));
    }
  }
  p.result.model = model;
  p.result.prompt_tokens = prompt_len;
  p.result.choices.resize(static_cast<size_t>(std::max(1, p.request.params.n)));
  p.result.include_token_ids = !encoder.encode_text || body.value("return_token_ids", false);
  p.result.logprobs = p.request.params.logprobs.has_value();
  return p;
}

int64_t count_nonempty_lines(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::string line;
  int64_t n = 0;
  while (std::getline(in, line)) {
    if (line.find_first_not_of(" \t\r") != std::string::npos) ++n;
  }
  return n;
}

}  // namespace

absl::StatusOr<BatchProgress> run_batch(Engine& engine, const BatchPromptEncoder& encoder,
                                        const BatchOptions& options, const std::atomic<int>& stop,
                                        const std::function<void(const BatchProgress&)>& on_progress) {
  const auto start = std::chrono::steady_clock::now();
  std::error_code ec;
  if (std::filesystem::is_directory(options.input, ec)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--input ", options.input.string(), ": is a directory, not a JSONL file"));
  }
  std::ifstream in(options.input);
  if (!in) return absl::NotFoundError(absl::StrCat("--input ", options.input.string(), ": cannot open"));
  const bool separate_errors = !options.errors.empty() && options.errors != options.output;
  WEFT_ASSIGN_OR_RETURN(JournalState journal,
                        scan_journal(options.output, separate_errors ? options.errors : ""));
  if (!separate_errors) {
    // Error records in the output file carry "line": scan_journal counted them as outputs.
    WEFT_ASSIGN_OR_RETURN(JournalState again, scan_journal("", options.output));
    journal.done_lines = again.done_lines;
  }
  WEFT_ASSIGN_OR_RETURN(RecordFile output, RecordFile::open(options.output));
  std::optional<RecordFile> errors_file;
  if (separate_errors) {
    WEFT_ASSIGN_OR_RETURN(RecordFile f, RecordFile::open(options.errors));
    errors_file = std::move(f);
  }
  RecordFile& errors = errors_file ? *errors_file : output;
  WEFT_ASSIGN_OR_RETURN(InflightLog inflight,
                        InflightLog::open(options.output.string() + ".inflight", journal));

  BatchProgress progress;
  progress.total_lines = count_nonempty_lines(options.input);
  const std::function<std::string(int32_t)> token_text =
      encoder.token_text ? encoder.token_text : [](int32_t id) { return absl::StrCat("token_id:", id); };
  std::map<int64_t, InFlight> in_flight;  // by engine request id
  std::set<std::string> seen;             // custom_ids of earlier lines (duplicates)
  std::string pending_outputs, pending_errors;
  int64_t line_no = 0;
  bool input_done = false;
  std::optional<std::string> held_text;  // a suspect line waiting for the engine to drain
  bool solo = false;                     // a suspect runs alone: admit nothing until it ends

  auto flush = [&]() -> absl::Status {
    if (!pending_errors.empty()) {
      WEFT_RETURN_IF_ERROR(errors.append(pending_errors));
      pending_errors.clear();
    }
    if (!pending_outputs.empty()) {
      WEFT_RETURN_IF_ERROR(output.append(pending_outputs));
      pending_outputs.clear();
    }
    return absl::OkStatus();
  };
  auto report = [&](bool finished) {
    progress.in_flight = static_cast<int64_t>(in_flight.size());
    progress.elapsed_s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    progress.kv_usage = engine.kv_usage();
    progress.prefix_hit_tokens = engine.num_prefix_hit_tokens();
    if (finished && engine.kv_tiers() != nullptr) progress.kv_tiers = kv_tier_summary(*engine.kv_tiers());
    progress.speculating = engine.speculating();
    progress.speculation = engine.speculation_stats();
    progress.finished = finished;
    if (on_progress) on_progress(progress);
  };
  auto fail_line = [&](const std::optional<std::string>& id, const std::string& code,
                       const std::string& message) {
    pending_errors += record_line(error_record(id, line_no, code, message));
    ++progress.failed;
  };

  while (true) {
    // Admit lines while there is room (and no stop request).
    while (!input_done && stop.load() == kBatchRun && !solo &&
           static_cast<int>(in_flight.size()) < options.max_in_flight) {
      std::string text;
      if (held_text) {
        text = *std::move(held_text);
        held_text.reset();
      } else {
        if (!std::getline(in, text)) {
          input_done = true;
          break;
        }
        ++line_no;
        if (!text.empty() && text.back() == '\r') text.pop_back();
      }
      if (text.find_first_not_of(" \t") == std::string::npos) continue;
      const bool suspect = inflight.suspects().count(line_no) > 0;
      if (suspect && !in_flight.empty()) {  // in flight when an earlier run died: run it alone
        held_text = std::move(text);
        break;
      }
      std::optional<std::string> custom_id;
      absl::StatusOr<BatchLine> line = parse_batch_line(text, &custom_id);
      const bool duplicate = custom_id && !seen.insert(*custom_id).second;
      if (journal.done_lines.count(line_no) ||
          (!duplicate && custom_id && journal.done_ids.count(*custom_id))) {
        ++progress.already_done;
        continue;
      }
      if (inflight.poisoned().count(line_no)) {
        fail_line(custom_id, "engine_failure",
                  absl::StrCat("the engine failed (crashed, aborted or missed its step deadline) each of the ",
                               InflightLog::kPoisonStrikes, " times it ran this request alone (line ", line_no,
                               "); skipped"));
        continue;
      }
      WEFT_RETURN_IF_ERROR(inflight.started(line_no, custom_id.value_or(""), suspect));
      if (!line.ok()) {
        fail_line(custom_id, "invalid_request", std::string(line.status().message()));
        continue;
      }
      if (duplicate) {
        fail_line(custom_id, "duplicate_custom_id",
                  absl::StrCat("custom_id \"", *custom_id, "\" appears on an earlier line"));
        continue;
      }
      absl::StatusOr<Prepared> prepared = prepare(*line, encoder, engine, options);
      if (!prepared.ok()) {
        fail_line(custom_id,
                  prepared.status().code() == absl::StatusCode::kNotFound ? "model_not_found"
                                                                          : "invalid_request",
                  std::string(prepared.status().message()));
        continue;
      }
      absl::StatusOr<int64_t> id = engine.add_request(prepared->request);
      if (!id.ok()) {
        fail_line(custom_id, "invalid_request", std::string(id.status().message()));
        continue;
      }
      InFlight& f = in_flight[*id];
      f.result = std::move(prepared->result);
      f.remaining = static_cast<int>(f.result.choices.size());
      solo = suspect;  // only once it is in the engine: a refused suspect holds nothing up
    }
    if (stop.load() == kBatchAbandon || in_flight.empty()) break;

    WEFT_ASSIGN_OR_RETURN(std::vector<SequenceOutput> outputs, engine.step());
    for (const SequenceOutput& out : outputs) {
      auto it = in_flight.find(out.request_id);
      if (it == in_flight.end()) continue;
      BatchResult& result = it->second.result;
      BatchChoice& choice = result.choices.at(static_cast<size_t>(out.index));
      if (result.prompt_logprobs && out.prompt_logprobs && result.prompt_logprobs_list.is_null()) {
        result.prompt_logprobs_list = vllm_prompt_logprobs(*out.prompt_logprobs, *result.prompt_logprobs, token_text);
      }
      if (result.logprobs && !out.token_ids.empty()) {
        append_openai_logprobs(choice.logprobs,
                               openai_logprobs(result.endpoint == BatchEndpoint::kChatCompletions, out.token_ids,
                                               out.samples, token_text, utf8_code_points(choice.text)));
      }
      choice.token_ids.insert(choice.token_ids.end(), out.token_ids.begin(), out.token_ids.end());
      choice.text += out.text;
      progress.completion_tokens += static_cast<int64_t>(out.token_ids.size());
      if (!out.finished) continue;
      choice.finish_reason = std::string(finish_reason_name(out.finish_reason));
      if (--it->second.remaining > 0) continue;
      pending_outputs += record_line(output_record(it->second.result, std::time(nullptr)));
      progress.prompt_tokens += it->second.result.prompt_tokens;
      ++progress.completed;
      in_flight.erase(it);
    }
    WEFT_RETURN_IF_ERROR(flush());
    if (in_flight.empty()) solo = false;
    report(false);
  }
  WEFT_RETURN_IF_ERROR(flush());
  // Requests left in flight (abandoned) get no record: the next run redoes them.
  for (const auto& [id, f] : in_flight) engine.abort(id);
  while (engine.has_unfinished()) {
    // Drain the abort reports so the engine is idle again (no model steps remain).
    WEFT_ASSIGN_OR_RETURN(std::vector<SequenceOutput> ignored, engine.step());
    (void)ignored;
  }
  progress.interrupted = !input_done || !in_flight.empty();
  // A normal end (finished or stopped): what it abandoned was not at fault.
  WEFT_RETURN_IF_ERROR(inflight.finished());
  in_flight.clear();
  report(true);
  return progress;
}

}  // namespace weft
