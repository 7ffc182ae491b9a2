#include "engine/speculative/speculative_setup.h"

#include <system_error>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "engine/local_engine.h"
#include "engine/speculative/draft_model_proposer.h"
#include "engine/speculative/ngram_proposer.h"
#include "model/model_files.h"
#include "tokenizer/tokenizer.h"

namespace weft {

absl::StatusOr<SpeculativeMethod> parse_speculative_method(const std::string& name) {
  if (name == "none") return SpeculativeMethod::kNone;
  if (name == "ngram") return SpeculativeMethod::kNgram;
  if (name == "draft" || name == "draft_model") return SpeculativeMethod::kDraftModel;
  return absl::InvalidArgumentError(
      absl::StrCat("--speculative: expected none, ngram or draft, got '", name, "'"));
}

absl::Status check_same_tokenizer(const std::filesystem::path& target_dir, const std::filesystem::path& draft_dir) {
  const bool target_has = model_has_file(target_dir, "tokenizer.json");
  const bool draft_has = model_has_file(draft_dir, "tokenizer.json");
  if (!target_has && !draft_has) return absl::OkStatus();  // token-id models: only vocab sizes
  const std::string what = absl::StrCat("--draft-model ", draft_dir.string(), ": ");
  if (target_has != draft_has) {
    return absl::InvalidArgumentError(absl::StrCat(
        what, "a draft must share the target's tokenizer, but only ", target_has ? "the target" : "the draft",
        " has a tokenizer.json"));
  }
  WEFT_ASSIGN_OR_RETURN(auto target, Tokenizer::load(target_dir));
  WEFT_ASSIGN_OR_RETURN(auto draft, Tokenizer::load(draft_dir));
  if (target->vocab_size() != draft->vocab_size()) {
    return absl::InvalidArgumentError(absl::StrCat(what, "its tokenizer has ", draft->vocab_size(),
                                                   " tokens and the target's ", target->vocab_size(),
                                                   "; a draft must share the target's tokenizer"));
  }
  for (int32_t id = 0; id < target->vocab_size(); ++id) {
    const auto a = target->id_to_token(id);
    const auto b = draft->id_to_token(id);
    if (a != b) {
      return absl::InvalidArgumentError(absl::StrCat(
          what, "token ", id, " is '", a.value_or("(none)"), "' for the target but '", b.value_or("(none)"),
          "' for the draft; a draft must share the target's tokenizer"));
    }
  }
  return absl::OkStatus();
}

absl::Status enable_speculative_decoding(Engine& engine, const SpeculativeDecodingOptions& options,
                                         const RankModel& target, const std::filesystem::path& target_model_dir,
                                         const KvCacheOptions& kv, ThreadPool& pool) {
  std::unique_ptr<Proposer> proposer;
  switch (options.method) {
    case SpeculativeMethod::kNone:
      return absl::OkStatus();
    case SpeculativeMethod::kNgram:
      if (options.ngram_min < 1 || options.ngram_max < options.ngram_min || options.ngram_max > 64) {
        return absl::InvalidArgumentError(absl::StrCat("--ngram-min ", options.ngram_min, " / --ngram-max ",
                                                       options.ngram_max, ": need 1 <= min <= max <= 64"));
      }
      proposer = std::make_unique<NgramProposer>(options.ngram_min, options.ngram_max);
      break;
    case SpeculativeMethod::kDraftModel: {
      if (options.draft_model.empty()) {
        return absl::InvalidArgumentError("--speculative draft needs --draft-model DIR");
      }
      WEFT_RETURN_IF_ERROR(check_same_tokenizer(target_model_dir, options.draft_model));
      // The draft's cache holds as many tokens as the target's (the same blocks), within the
      // target's byte budget.
      KvCacheOptions draft_kv = kv;
      draft_kv.memory_fraction = 0;
      draft_kv.max_blocks = engine.blocks().num_blocks();
      WEFT_ASSIGN_OR_RETURN(proposer, DraftModelProposer::create(options.draft_model, draft_kv,
                                                                 target.config.vocab_size,
                                                                 model_eos_ids(target), pool));
      break;
    }
  }
  return engine.enable_speculation(std::move(proposer), options.engine);
}

}  // namespace weft
