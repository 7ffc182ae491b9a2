#include "constrain/grammar_compiler.h"

#include <chrono>
#include <list>
#include <optional>
#include <string>
#include <system_error>
#include <thread>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/container/node_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "constrain/xgrammar_bridge.h"

namespace weft {
namespace {

using Clock = std::chrono::steady_clock;
using CompileResult = absl::StatusOr<std::shared_ptr<const CompiledGrammar>>;

// One compile in flight, shared by its worker thread and every caller waiting for it.
struct PendingCompile {
  absl::Notification done;
  CompileResult result = absl::UnknownError("not compiled");
  bool finished = false;   // guarded by State::mu
  bool abandoned = false;  // guarded by State::mu
};

// Refused keys (compiles that timed out) kept at most this many; then the set starts over.
constexpr size_t kMaxRefusedKeys = 4096;

}  // namespace

class GrammarCompiler::State {
 public:
  State(std::shared_ptr<const GrammarVocabulary> vocabulary, GrammarCompilerOptions options)
      : vocabulary(std::move(vocabulary)),
        options(options),
        compiler(this->vocabulary->impl().info, std::max(1, options.threads),
                 /*cache_enabled=*/false) {}

  // Runs on the compile's own thread.
  CompileResult compile_now(const GrammarSpec& spec) const {
    const auto start = Clock::now();
    auto grammar = to_xgrammar_grammar(spec, vocabulary->impl().info);
    if (!grammar.ok()) return grammar.status();
    const GrammarLimits& limits = options.limits;
    const size_t grammar_bytes = grammar->ToString().size();
    if (grammar_bytes > limits.max_grammar_bytes) {
      return absl::InvalidArgumentError(
          absl::StrCat(spec.parameter(), ": the grammar it converts to has ", grammar_bytes,
                       " bytes, over the limit of ", limits.max_grammar_bytes, "; simplify it"));
    }
    try {
      xgrammar::CompiledGrammar compiled = compiler.CompileGrammar(*grammar);
      const size_t bytes = compiled.MemorySizeBytes();
      if (bytes > limits.max_compiled_bytes) {
        return absl::InvalidArgumentError(
            absl::StrCat(spec.parameter(), ": the compiled grammar needs ", bytes,
                         " bytes, over the limit of ", limits.max_compiled_bytes, "; simplify it"));
      }
      std::shared_ptr<const JsonWhitespaceBound> bound = whitespace_bound(spec);
      const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
      return std::make_shared<const CompiledGrammar>(
          std::make_unique<CompiledGrammar::Impl>(std::move(compiled)), vocabulary, spec.kind(),
          seconds, std::move(bound), options.mask_cache_bytes,
          options.mask_cache_min_fill_seconds);
    } catch (const std::exception& e) {
      return xgrammar_error(spec.parameter(), "compiling the grammar failed", e);
    }
  }

  // The run-time whitespace bound a bounded JSON spec needs (null for others): one table per
  // bound, built on first use and shared.
  std::shared_ptr<const JsonWhitespaceBound> whitespace_bound(const GrammarSpec& spec) const {
    const bool json = spec.kind() == GrammarKind::kJsonSchema || spec.kind() == GrammarKind::kAnyJson;
    if (!json || spec.json_options().whitespace != JsonWhitespace::kBounded) return nullptr;
    const int32_t max_run = spec.json_options().max_whitespace;
    absl::MutexLock lock(&bounds_mu);
    auto& bound = bounds[max_run];
    if (bound == nullptr) bound = JsonWhitespaceBound::build(*vocabulary, max_run);
    return bound;
  }

  // Caller holds mu. Inserts and evicts least recently used entries down to cache_bytes.
  void insert(const std::string& key, std::shared_ptr<const CompiledGrammar> grammar) {
    const size_t bytes = grammar->memory_bytes();
    if (options.cache_bytes == 0 || bytes > options.cache_bytes) return;
    auto [it, inserted] = cache.try_emplace(key);
    if (!inserted) return;
    lru.push_front(&it->first);
    it->second.grammar = std::move(grammar);
    it->second.bytes = bytes;
    it->second.lru = lru.begin();
    stats.cached_bytes += bytes;
    while (stats.cached_bytes > options.cache_bytes && lru.size() > 1) {
      auto victim = cache.find(*lru.back());
      stats.cached_bytes -= victim->second.bytes;
      lru.pop_back();
      cache.erase(victim);
      ++stats.evictions;
    }
  }

  struct Entry {
    std::shared_ptr<const CompiledGrammar> grammar;
    size_t bytes = 0;
    std::list<const std::string*>::iterator lru;
  };

  const std::shared_ptr<const GrammarVocabulary> vocabulary;
  const GrammarCompilerOptions options;
  // Without its cache xgrammar's compiler keeps no state between compiles, so concurrent
  // CompileGrammar calls on it are safe.
  mutable xgrammar::GrammarCompiler compiler;

  mutable absl::Mutex bounds_mu;
  mutable absl::flat_hash_map<int32_t, std::shared_ptr<const JsonWhitespaceBound>> bounds
      ABSL_GUARDED_BY(bounds_mu);

  absl::Mutex mu;
  // node_hash_map: the LRU list points at the keys, which must not move.
  absl::node_hash_map<std::string, Entry> cache ABSL_GUARDED_BY(mu);
  std::list<const std::string*> lru ABSL_GUARDED_BY(mu);  // front: most recently used
  absl::flat_hash_map<std::string, std::shared_ptr<PendingCompile>> in_flight ABSL_GUARDED_BY(mu);
  absl::flat_hash_set<std::string> refused ABSL_GUARDED_BY(mu);
  GrammarCompilerStats stats ABSL_GUARDED_BY(mu);
};

GrammarCompiler::GrammarCompiler(std::shared_ptr<const GrammarVocabulary> vocabulary,
                                 GrammarCompilerOptions options)
    : vocabulary_(std::move(vocabulary)),
      options_(options),
      state_(std::make_shared<State>(vocabulary_, options_)) {}

// Abandoned compiles hold their own reference to the state and finish after this.
GrammarCompiler::~GrammarCompiler() = default;

CompileResult GrammarCompiler::compile(const GrammarSpec& spec) {
  const GrammarLimits& limits = options_.limits;
  if (spec.text().size() > limits.max_spec_bytes) return check_grammar_spec(spec, limits);
  const auto deadline =
      Clock::now() + std::chrono::duration_cast<Clock::duration>(
                         std::chrono::duration<double>(limits.max_compile_seconds));
  const std::string key = spec.cache_key();
  std::shared_ptr<PendingCompile> pending;
  // Under mu: a refused key, a cached grammar (returned) or a compile in flight (joined).
  auto lookup = [&]() -> std::optional<CompileResult> {
    if (state_->refused.contains(key)) {
      ++state_->stats.failures;
      return absl::InvalidArgumentError(
          absl::StrCat(spec.parameter(), ": compiling this grammar took longer than ",
                       limits.max_compile_seconds, " s before; simplify it"));
    }
    if (auto it = state_->cache.find(key); it != state_->cache.end()) {
      state_->lru.splice(state_->lru.begin(), state_->lru, it->second.lru);
      ++state_->stats.hits;
      return CompileResult(it->second.grammar);
    }
    if (auto it = state_->in_flight.find(key); it != state_->in_flight.end()) {
      pending = it->second;
      ++state_->stats.hits;
    }
    return std::nullopt;
  };
  {
    absl::MutexLock lock(&state_->mu);
    if (auto done = lookup()) return *done;
  }
  if (!pending) {
    // Parsing the schema happens outside the lock and only on a miss.
    if (absl::Status s = check_grammar_spec(spec, limits); !s.ok()) {
      absl::MutexLock lock(&state_->mu);
      ++state_->stats.failures;
      return s;
    }
    absl::MutexLock lock(&state_->mu);
    if (auto done = lookup()) return *done;
    if (!pending) {
      if (state_->stats.abandoned_running >= limits.max_abandoned_compiles) {
        ++state_->stats.failures;
        return absl::ResourceExhaustedError(absl::StrCat(
            spec.parameter(), ": ", state_->stats.abandoned_running,
            " grammar compiles that ran out of time are still running; try again later"));
      }
      pending = std::make_shared<PendingCompile>();
      ++state_->stats.misses;
      try {
        std::thread([state = state_, pending, spec, key]() {
          CompileResult result = absl::InternalError("unset");
          try {
            result = state->compile_now(spec);
          } catch (const std::exception& e) {  // e.g. bad_alloc: this thread must not throw
            result = absl::ResourceExhaustedError(
                absl::StrCat(spec.parameter(), ": compiling the grammar failed: ", e.what()));
          }
          absl::MutexLock lock(&state->mu);
          pending->finished = true;
          if (pending->abandoned) {
            --state->stats.abandoned_running;
            return;
          }
          state->in_flight.erase(key);
          if (result.ok()) {
            state->insert(key, *result);
          } else {
            ++state->stats.failures;
          }
          pending->result = std::move(result);
          pending->done.Notify();
        }).detach();
      } catch (const std::system_error& e) {
        ++state_->stats.failures;
        return absl::ResourceExhaustedError(
            absl::StrCat(spec.parameter(), ": cannot start a compile thread: ", e.what()));
      }
      state_->in_flight.emplace(key, pending);
    }
  }
  const auto left = deadline - Clock::now();
  if (pending->done.WaitForNotificationWithTimeout(absl::FromChrono(left))) {
    return pending->result;
  }
  absl::MutexLock lock(&state_->mu);
  if (!pending->finished && !pending->abandoned) {
    // The compile keeps its thread until it ends on its own (xgrammar cannot be interrupted);
    // its result will be dropped, and everyone waiting for it gets this error now.
    pending->abandoned = true;
    ++state_->stats.abandoned_running;
    ++state_->stats.timeouts;
    ++state_->stats.failures;
    state_->in_flight.erase(key);
    if (state_->refused.size() >= kMaxRefusedKeys) state_->refused.clear();
    state_->refused.insert(key);
    pending->result = absl::InvalidArgumentError(
        absl::StrCat(spec.parameter(), ": compiling the grammar took longer than ",
                     limits.max_compile_seconds, " s (the compile-time limit); simplify it"));
    pending->done.Notify();
  }
  return pending->result;
}

GrammarCompilerStats GrammarCompiler::stats() const {
  absl::MutexLock lock(&state_->mu);
  GrammarCompilerStats s = state_->stats;
  s.cached_grammars = static_cast<int64_t>(state_->cache.size());
  return s;
}

void GrammarCompiler::clear_cache() {
  absl::MutexLock lock(&state_->mu);
  state_->cache.clear();
  state_->lru.clear();
  state_->stats.cached_bytes = 0;
}

}  // namespace weft
