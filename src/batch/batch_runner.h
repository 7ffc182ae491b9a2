// weft batch's driver: reads an OpenAI Batch input file line by line, keeps up to
// max_in_flight requests in the engine (continuous batching over the whole file), and appends
// each finished request's record to the output file (bad lines and rejected requests to the
// errors file) through the crash-safe journal (batch_journal.h).
//
// Resumable: lines whose custom_id already has an output record, or whose line number already
// has an error record, are skipped, so a job killed at any moment (kill -9 included) and started
// again with the same files ends with every line answered exactly once.
//
// Independent of how the engine was built (one process, or the coordinator of an MPI job): it
// only needs the Engine and a prompt encoder. Runs on the engine's thread; `stop` may be set by
// a signal handler: kDrain stops reading new lines and finishes those in flight, kAbandon stops
// at the next step boundary and leaves the unfinished ones for the next run.
#pragma once

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/engine.h"
#include "nlohmann/json.hpp"
#include "tokenizer/chat_template/chat_prompt_end.h"
#include "tool_calls/tool_call_format.h"
#include "tool_calls/tool_request.h"

namespace weft {

struct BatchPromptEncoder {
  // Text -> ids with the model's tokenizer (adding its special tokens as transformers does).
  // Empty when the model has no tokenizer: only token-id prompts are accepted then, and choices
  // carry token_ids instead of text.
  std::function<absl::StatusOr<std::vector<int32_t>>(const std::string& text)> encode_text;
  // Chat messages (as chat_messages_for_template normalized them) and chat_template_kwargs
  // (an object, possibly empty) -> ids through the model's chat template, the prompt ending as
  // `end` says (chat_options: add_generation_prompt / continue_final_message).
  std::function<absl::StatusOr<std::vector<int32_t>>(const nlohmann::ordered_json& messages,
                                                     const nlohmann::ordered_json& template_kwargs,
                                                     ChatPromptEnd end)>
      encode_chat;
  // One token decoded alone, special tokens kept (the token strings of logprobs). Empty without a
  // tokenizer: tokens are then named "token_id:<id>", as vLLM does without one.
  std::function<std::string(int32_t id)> token_text;
};

struct BatchOptions {
  std::filesystem::path input;
  std::filesystem::path output;
  std::filesystem::path errors;  // empty: error records go to the output file
  std::string model_name;        // the "model" field of responses
  int max_in_flight = 256;       // requests submitted to the engine and not yet finished
  // What a line's absent sampling fields take (engine/generation_defaults.h); chat without
  // max_tokens still runs to the context end.
  SamplingParams sampling_defaults;
  // Compiles the output constraint a line's body asks for (response_format, structured_outputs,
  // guided_*; src/constrain/request_grammar.h); null: such lines fail naming the field.
  std::function<absl::StatusOr<std::shared_ptr<const TokenConstraintSource>>(const nlohmann::json& body)> constraints;
  // Tool calling in chat lines (tools / tool_choice / parallel_tool_calls, as weft serve reads
  // them; tool_calls/tool_request.h): how the model writes calls (--tool-call-parser, or judged
  // from the chat template; nullopt: lines that would parse calls fail naming tools), and whether
  // that format's start marker is a special token (the line's skip_special_tokens is then off, so
  // the parser sees it).
  std::optional<ToolCallFormat> tool_call_format;
  bool tool_call_marker_special = false;
  // The grammar of a line's tools for replies in the given format (constrain/grammar_constraint.h
  // tool_call_constraint: null when the reply is free); null function: lines whose tools need a
  // grammar (tool_choice required / named, strict functions) fail naming tool_choice.
  std::function<absl::StatusOr<std::shared_ptr<const TokenConstraintSource>>(
      const ToolRequest& tools, const std::optional<ToolCallFormat>& format)>
      tool_constraints;
  // --banned-phrases: every line's output is screened against it, beside the line's bad_words.
  std::shared_ptr<const BannedPhraseSet> banned_phrases;
};

enum BatchStop : int { kBatchRun = 0, kBatchDrain = 1, kBatchAbandon = 2 };

struct BatchProgress {
  int64_t total_lines = 0;      // non-empty input lines
  int64_t already_done = 0;     // answered by an earlier run (skipped)
  int64_t completed = 0;        // output records written by this run
  int64_t failed = 0;           // error records written by this run
  int64_t in_flight = 0;
  int64_t prompt_tokens = 0;
  int64_t completion_tokens = 0;
  double elapsed_s = 0;
  double kv_usage = 0;          // fraction of KV blocks in use
  int64_t prefix_hit_tokens = 0;
  std::string kv_tiers;         // kv_tier_summary() when the engine has KV tiers, else empty
  bool speculating = false;     // speculative decoding is on (the engine's counters below)
  SpeculationStats speculation;
  bool finished = false;        // the last report
  bool interrupted = false;     // stopped by `stop` with lines left for a later run
};

// Runs the whole file. Errors only when the engine or a file fails (never for a bad line); the
// records written until then stay valid for a restart.
absl::StatusOr<BatchProgress> run_batch(Engine& engine, const BatchPromptEncoder& encoder,
                                        const BatchOptions& options, const std::atomic<int>& stop,
                                        const std::function<void(const BatchProgress&)>& on_progress);

}  // namespace weft
