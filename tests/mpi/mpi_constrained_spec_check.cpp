// Constrained sequences speculating under TP and PP: `mpirun -np T*P mpi_constrained_spec_check
// MODEL_DIR DRAFT_DIR T P` (configs/default-model and configs/default-draft: the golden models of
// tests/golden have no tokenizer, and a grammar needs one). Requests under a JSON schema, a regex
// and a choice, greedy and seeded sampled (T = 0.8, top-p 0.95, n = 2, logprobs), beside
// unconstrained ones (two with banned phrases the model produces, one plain), run in one batch
// through the job
//  - without speculation, and on rank 0 through a one-process engine without speculation;
//  - then with n-gram lookup and with the draft (Engine::constrain_guesses screening the guesses
//    of the constrained sequences; adaptive policy off, K = 4), enabled on the job's engine.
// Checks, as tests/unit/constrain/constrained_speculation_test.cpp does on one rank: greedy
// outputs are token for token the one-process output without speculation; every output (greedy
// and seeded) is token for token the job's output without speculation, logprobs within 2e-4;
// constrained outputs are accepted by their grammar (and complete where they stopped); guesses
// of constrained sequences were verified and some accepted (SpeculationStats::num_constrained_*);
// phrases were rolled back while speculating; every KV block, the target's and the draft's, is
// free afterwards. Seeded outputs are also compared with the one-process ones (the job's
// logits differ from one process's only in rounding). Rank 0 prints "N passed, M failed" and the job exits non-zero on any failure.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "constrain/grammar_constraint.h"
#include "core/status_macros.h"
#include "constrain/grammar_matcher.h"
#include "constrain/request_grammar.h"
#include "engine/distributed_engine.h"
#include "engine/local_engine.h"
#include "engine/speculative/draft_model_proposer.h"
#include "engine/speculative/speculative_setup.h"
#include "engine/text_detokenizer.h"
#include "mpi_check_util.h"
#include "nlohmann/json.hpp"
#include "safety/banned_phrase_set.h"
#include "tests/unit/constrain/speculation_workload.h"
#include "tokenizer/tokenizer.h"

namespace weft {
namespace {

constexpr float kLogprobTolerance = 2e-4f;     // speculation vs plain in the same job (as one rank)
constexpr float kAcrossRanksTolerance = 2e-3f;  // the job vs one process (the golden tolerance)

struct Outcome {
  std::vector<int32_t> ids;
  std::vector<float> logprobs;
  FinishReason finish = FinishReason::kNone;
};
using Outcomes = std::map<std::pair<int64_t, int>, Outcome>;  // by (request index, sequence)

// Runs every request to the end; keys use the request's index in `requests`.
Outcomes run_to_end(Engine& engine, const std::vector<Request>& requests, Checks& checks) {
  std::map<int64_t, int64_t> index_of;
  for (size_t i = 0; i < requests.size(); ++i) {
    auto id = engine.add_request(requests[i]);
    checks.expect(id.ok(), "add_request: " + std::string(id.status().message()));
    if (id.ok()) index_of[*id] = static_cast<int64_t>(i);
  }
  Outcomes out;
  while (engine.has_unfinished()) {
    auto step = engine.step();
    if (!step.ok()) {
      checks.expect(false, "step: " + std::string(step.status().message()));
      break;
    }
    for (const SequenceOutput& o : *step) {
      Outcome& r = out[{index_of.at(o.request_id), o.index}];
      r.ids.insert(r.ids.end(), o.token_ids.begin(), o.token_ids.end());
      for (const SampleResult& s : o.samples) r.logprobs.push_back(s.logprob);
      if (o.finished) r.finish = o.finish_reason;
    }
  }
  return out;
}

// "" when `got` equals `want` token for token, with logprobs within `tolerance`.
std::string compare(const Outcome& got, const Outcome& want, float tolerance, const Tokenizer& tok) {
  if (got.ids != want.ids) {
    return "tokens differ: '" + tok.decode(got.ids, false) + "' vs '" + tok.decode(want.ids, false) + "'";
  }
  if (got.finish != want.finish) return "finish reasons differ";
  if (got.logprobs.size() != want.logprobs.size()) return "logprob counts differ";
  for (size_t t = 0; t < got.logprobs.size(); ++t) {
    if (std::isnan(got.logprobs[t]) != std::isnan(want.logprobs[t]) ||
        (!std::isnan(want.logprobs[t]) && std::fabs(got.logprobs[t] - want.logprobs[t]) > tolerance)) {
      return "logprob " + std::to_string(t) + ": " + std::to_string(got.logprobs[t]) + " vs " +
             std::to_string(want.logprobs[t]);
    }
  }
  return "";
}

SpeculationStats minus(const SpeculationStats& a, const SpeculationStats& b) {
  SpeculationStats d;
  d.num_drafts = a.num_drafts - b.num_drafts;
  d.num_draft_tokens = a.num_draft_tokens - b.num_draft_tokens;
  d.num_accepted_tokens = a.num_accepted_tokens - b.num_accepted_tokens;
  d.num_emitted_tokens = a.num_emitted_tokens - b.num_emitted_tokens;
  d.num_constrained_drafts = a.num_constrained_drafts - b.num_constrained_drafts;
  d.num_constrained_draft_tokens = a.num_constrained_draft_tokens - b.num_constrained_draft_tokens;
  d.num_constrained_accepted_tokens = a.num_constrained_accepted_tokens - b.num_constrained_accepted_tokens;
  d.num_grammar_dropped_tokens = a.num_grammar_dropped_tokens - b.num_grammar_dropped_tokens;
  return d;
}

// The one-rank test's schema and regex (speculation_workload.h), and a choice the prompt names.
const char* kChoiceBody =
    R"({"guided_choice": ["the LORD said unto Moses, Go in unto Pharaoh", "the LORD said unto Aaron", "Amen"]})";

struct Workload {
  std::vector<Request> requests;
  std::vector<nlohmann::json> bodies;  // null: unconstrained
};

absl::StatusOr<Workload> make_workload(const Tokenizer& tok, GrammarCompiler& compiler, int max_tokens) {
  Workload w;
  const std::vector<std::pair<nlohmann::json, std::string>> kinds = {
      {nlohmann::json::parse(testing::kSpeculationSchemaBody), testing::kSpeculationJsonPrompt},
      {nlohmann::json{{"guided_regex", testing::kSpeculationRegex}}, testing::kSpeculationRegexPrompt},
      {nlohmann::json::parse(kChoiceBody), "And the LORD said unto Moses, Go in unto Pharaoh. And"}};
  for (int sampled = 0; sampled < 2; ++sampled) {
    for (const auto& [body, prompt] : kinds) {
      Request r;
      WEFT_ASSIGN_OR_RETURN(r.prompt_ids, tok.encode(prompt, true));
      r.params = testing::speculation_params(sampled == 1, max_tokens);
      WEFT_ASSIGN_OR_RETURN(r.constraint, request_constraint(body, compiler));
      w.requests.push_back(std::move(r));
      w.bodies.push_back(body);
    }
  }
  // Unconstrained with banned phrases the model produces (rolled back, then speculating with
  // the bans in the first verified row's mask), greedy and seeded.
  for (int sampled = 0; sampled < 2; ++sampled) {
    Request r;
    WEFT_ASSIGN_OR_RETURN(r.prompt_ids, tok.encode(testing::kSpeculationRegexPrompt, true));
    r.params = testing::speculation_params(sampled == 1, 48);
    std::vector<std::string> phrases = {"children of Israel", "THE lord"};
    if (sampled) phrases.insert(phrases.end(), {"Moses said", "and the"});
    WEFT_ASSIGN_OR_RETURN(auto set, BannedPhraseSet::compile(phrases, "test", {}));
    r.banned_phrases = {set};
    w.requests.push_back(std::move(r));
    w.bodies.push_back(nullptr);
  }
  Request free;  // unconstrained, greedy without logprobs (argmax on the last stage), same batch
  WEFT_ASSIGN_OR_RETURN(free.prompt_ids,
                        tok.encode("Blessed are the meek: for they shall inherit the earth. Blessed", true));
  free.params.max_tokens = 32;
  free.params.temperature = 0.0f;
  free.params.ignore_eos = true;
  w.requests.push_back(std::move(free));
  w.bodies.push_back(nullptr);
  return w;
}

// The output is a prefix the grammar accepts, and complete when the sequence stopped.
void expect_accepted(GrammarCompiler& compiler, const nlohmann::json& body, const Outcome& o,
                     const Tokenizer& tok, const std::string& what, Checks& checks) {
  auto spec = grammar_spec_from_request(body);
  auto compiled = spec.ok() && spec->has_value() ? compiler.compile(**spec)
                                                 : absl::StatusOr<std::shared_ptr<const CompiledGrammar>>(
                                                       absl::InternalError("no grammar"));
  checks.expect(compiled.ok(), what + ": compiling its grammar");
  if (!compiled.ok()) return;
  GrammarMatcher matcher(*compiled);
  checks.expect(matcher.accept_tokens(o.ids) == o.ids.size(),
                what + ": output refused by its grammar: " + tok.decode(o.ids, false));
  if (o.finish == FinishReason::kStop) {
    checks.expect(matcher.is_terminated(), what + ": stopped before its grammar ended: " + tok.decode(o.ids, false));
  }
}

void expect_idle(Engine& engine, const std::string& what, Checks& checks) {
  checks.expect(engine.blocks().num_free_blocks() == engine.blocks().num_blocks(), what + ": KV blocks left held");
  if (const auto* draft = dynamic_cast<const DraftModelProposer*>(engine.proposer())) {
    checks.expect(draft->blocks().num_free_blocks() == draft->blocks().num_blocks(),
                  what + ": draft KV blocks left held");
  }
}

int run(int argc, char** argv) {
  if (argc != 5) {
    std::fprintf(stderr, "usage: mpi_constrained_spec_check MODEL_DIR DRAFT_DIR TP PP\n");
    return 2;
  }
  std::unique_ptr<MpiWorld> world = init_world_or_report(&argc, &argv);
  if (world == nullptr) return 1;
  const std::filesystem::path model_dir = argv[1];
  const std::filesystem::path draft_dir = argv[2];
  DistributedOptions options = golden_job_options(model_dir, std::atoi(argv[3]), std::atoi(argv[4]));
  options.engine.kv.max_blocks = 0;
  options.engine.kv.memory_bytes = 64ll << 20;
  options.engine.seed = 9;
  // The draft's pool (rank 0 only); declared first so it outlives the engine holding the draft.
  std::unique_ptr<ThreadPool> draft_pool;
  auto tok = Tokenizer::load(model_dir);  // text for the banned phrases
  if (!tok.ok()) {
    std::fprintf(stderr, "%s\n", std::string(tok.status().message()).c_str());
    return 1;
  }
  auto created = DistributedEngine::create(*world, options, text_detokenizers(*tok));
  if (!created.ok()) {
    std::fprintf(stderr, "rank %d: %s\n", world->rank(), std::string(created.status().message()).c_str());
    return 1;
  }
  DistributedEngine& job = **created;
  if (serve_unless_coordinator(*world, job)) return 0;

  Checks checks;
  const std::string layout = "tp=" + std::to_string(options.tp) + " pp=" + std::to_string(options.pp);
  try {
    auto compiler = model_grammar_compiler(**tok, job.model().config.vocab_size, model_eos_ids(job.model()));
    if (!compiler.ok()) throw std::runtime_error(std::string(compiler.status().message()));
    auto workload = make_workload(**tok, **compiler, 64);
    if (!workload.ok()) throw std::runtime_error(std::string(workload.status().message()));
    const std::vector<Request>& requests = workload->requests;

    // One process, no speculation: the reference for greedy outputs.
    Outcomes one_process;
    {
      auto single = LocalEngine::create(options.engine, text_detokenizers(*tok));
      if (!single.ok()) throw std::runtime_error("one-process engine: " + std::string(single.status().message()));
      one_process = run_to_end((*single)->engine(), requests, checks);
    }
    // The job, no speculation: the reference for every output.
    const Outcomes plain = run_to_end(job.engine(), requests, checks);
    checks.expect(plain.size() == one_process.size(), layout + " plain: sequence count");
    for (const auto& [key, want] : one_process) {
      if (!plain.contains(key)) continue;
      const std::string diff = compare(plain.at(key), want, kAcrossRanksTolerance, **tok);
      checks.expect(diff.empty(), layout + " plain request " + std::to_string(key.first) + " sequence " +
                                      std::to_string(key.second) + " vs one process: " + diff);
    }
    expect_idle(job.engine(), layout + " plain", checks);

    draft_pool = std::make_unique<ThreadPool>(1);
    const SpeculativeMethod methods[] = {SpeculativeMethod::kNgram, SpeculativeMethod::kDraftModel};
    for (SpeculativeMethod method : methods) {
      const std::string name = method == SpeculativeMethod::kNgram ? "ngram" : "draft";
      const std::string where = layout + " speculating (" + name + ")";
      // What DistributedEngine::create does for --speculative: the proposer on the coordinator.
      SpeculativeDecodingOptions spec;
      spec.method = method;
      spec.draft_model = draft_dir;
      spec.engine.num_speculative_tokens = 4;
      spec.engine.adaptive = false;
      const absl::Status enabled = enable_speculative_decoding(job.engine(), spec, job.model(), model_dir,
                                                               options.engine.kv, *draft_pool);
      checks.expect(enabled.ok(), where + ": enabling: " + std::string(enabled.message()));
      if (!enabled.ok()) continue;
      const SpeculationStats before = job.engine().speculation_stats();
      const int64_t matches_before = job.engine().banned_phrase_stats().matches;
      const Outcomes got = run_to_end(job.engine(), requests, checks);
      checks.expect(job.engine().banned_phrase_stats().matches > matches_before, where + ": no phrase was rolled back");
      const SpeculationStats stats = minus(job.engine().speculation_stats(), before);
      checks.expect(got.size() == plain.size(), where + ": sequence count");
      for (const auto& [key, want] : plain) {
        const std::string what =
            where + " request " + std::to_string(key.first) + " sequence " + std::to_string(key.second);
        auto it = got.find(key);
        checks.expect(it != got.end(), what + ": missing");
        if (it == got.end()) continue;
        const Outcome& o = it->second;
        checks.expect(o.finish != FinishReason::kError, what + ": finished with an error");
        const std::string diff = compare(o, want, kLogprobTolerance, **tok);
        checks.expect(diff.empty(), what + " vs the job without speculation: " + diff);
        if (requests[key.first].params.is_greedy()) {
          checks.expect(o.ids == one_process.at(key).ids, what + ": greedy tokens differ from one process's");
        }
        if (!workload->bodies[key.first].is_null()) {
          expect_accepted(**compiler, workload->bodies[key.first], o, **tok, what, checks);
        }
      }
      checks.expect(stats.num_drafts > 0 && stats.num_draft_tokens > 0, where + ": no guesses were verified");
      checks.expect(stats.num_accepted_tokens > 0, where + ": no guess was accepted");
      checks.expect(stats.num_constrained_drafts > 0 && stats.num_constrained_draft_tokens > 0,
                    where + ": no guess of a constrained sequence was verified");
      checks.expect(stats.num_constrained_accepted_tokens > 0 &&
                        stats.num_constrained_accepted_tokens <= stats.num_constrained_draft_tokens,
                    where + ": constrained accepted " + std::to_string(stats.num_constrained_accepted_tokens) +
                        " of " + std::to_string(stats.num_constrained_draft_tokens));
      // (Deterministic here: the JSON schema bounds whitespace, which this model favours, and both
      // proposers keep guessing more of it.)
      checks.expect(stats.num_grammar_dropped_tokens > 0, where + ": no guess was refused by a grammar");
      checks.expect(stats.num_emitted_tokens == stats.num_drafts + stats.num_accepted_tokens,
                    where + ": emitted tokens != drafts + accepted");
      expect_idle(job.engine(), where, checks);
      std::printf("%s: %lld guesses (%lld accepted), constrained %lld sequence-steps, %lld guesses "
                  "(%lld accepted), %lld refused by the grammar\n",
                  where.c_str(), static_cast<long long>(stats.num_draft_tokens),
                  static_cast<long long>(stats.num_accepted_tokens),
                  static_cast<long long>(stats.num_constrained_drafts),
                  static_cast<long long>(stats.num_constrained_draft_tokens),
                  static_cast<long long>(stats.num_constrained_accepted_tokens),
                  static_cast<long long>(stats.num_grammar_dropped_tokens));
    }
  } catch (const std::exception& e) {
    checks.expect(false, e.what());
  }
  absl::Status s = job.shutdown();
  checks.expect(s.ok(), "shutdown: " + std::string(s.message()));
  std::printf("constrained speculation %s: %d passed, %d failed\n", layout.c_str(), checks.passed, checks.failed);
  return checks.failed == 0 ? 0 : 1;
}

}  // namespace
}  // namespace weft

int main(int argc, char** argv) { return weft::run(argc, argv); }
