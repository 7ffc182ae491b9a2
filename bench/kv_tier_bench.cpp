// kv_tier_bench: time to first token of a request whose long prefix another request computed,
// with that prefix cold (recomputed), in the pool, restored from the host tier
// (--kv-offload-bytes) and restored from the disk tier (--kv-disk-cache) by a fresh process.
//
// For each prefix length L: prompt A = L random token ids + 16 of its own, prompt B = the same L
// + 16 others (max_tokens 1, greedy). One engine with both tiers and a pool that holds one
// request runs A (cold), B (its prefix from the pool), a filler of L + 16 unrelated tokens (which
// evicts A's blocks from the pool into the host tier), and B again (from the host tier); it is
// then destroyed (its disk writes finish), and this program runs itself again as a fresh
// process that runs B once with only the disk tier (from disk). Model loading is not timed. The
// OS page cache is warm for the disk figure (the files were just written). Prints one line per
// length; asserts nothing.
//
// --multi-turn: C conversations of T turns (each turn 64 new user tokens, a 32-token greedy
// reply; all conversations' turn t submitted together), with a pool a quarter of the final
// working set, without and with a host tier holding all of it: wall time, tokens/s (prompt +
// generated) and the prefix-cache hit rate.
// --prefetch: the step times of a decoding request while a request whose long prefix an earlier
// engine wrote to the disk tier is brought back, with the disk prefetch off (the blocks are read
// on the engine thread when the request is admitted) and on (read on a background thread while
// it waits): the decoding request's median step alone, its slowest step until the long request's
// first token, and that request's time to first token.
//   kv_tier_bench --model M [--prefixes 2048,8192] [--threads N] [--dir DIR]
//   kv_tier_bench --model M --prefetch [--prefixes 2048] [--threads N] [--dir DIR]
//   kv_tier_bench --model M --multi-turn [--conversations 16] [--turns 4] [--threads N]
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "core/status_macros.h"
#include "engine/local_engine.h"
#include "kv/kv_tier_directory.h"

namespace weft {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

constexpr int kSuffix = 16;
constexpr int kBlockSize = 16;

struct Options {
  fs::path model;
  std::vector<int64_t> prefixes = {2048, 8192};
  int threads = 0;
  fs::path dir = fs::temp_directory_path() / ("weft_kv_tier_bench_" + std::to_string(::getpid()));
  int64_t read_prefix = 0;  // > 0: the fresh-process phase for this length
  bool multi_turn = false;
  bool prefetch = false;
  int conversations = 16;
  int turns = 4;
};

std::vector<int32_t> random_ids(uint64_t seed, int64_t n, int64_t vocab) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int32_t> id(100, static_cast<int32_t>(std::min<int64_t>(vocab, 40000) - 1));
  std::vector<int32_t> ids(static_cast<size_t>(n));
  for (auto& t : ids) t = id(rng);
  return ids;
}

struct Prompts {
  std::vector<int32_t> a, b, filler;
};
Prompts prompts_for(int64_t prefix, int64_t vocab) {
  Prompts p;
  const std::vector<int32_t> shared = random_ids(1, prefix, vocab);
  p.a = p.b = shared;
  const std::vector<int32_t> sa = random_ids(2, kSuffix, vocab), sb = random_ids(3, kSuffix, vocab);
  p.a.insert(p.a.end(), sa.begin(), sa.end());
  p.b.insert(p.b.end(), sb.begin(), sb.end());
  p.filler = random_ids(4, prefix + kSuffix, vocab);
  return p;
}

// Seconds from submission to the first token of one greedy 1-token request.
double ttft(Engine& engine, const std::vector<int32_t>& prompt) {
  Request request;
  request.prompt_ids = prompt;
  request.params.temperature = 0.0f;
  request.params.max_tokens = 1;
  request.params.ignore_eos = true;
  const auto start = Clock::now();
  if (!engine.add_request(request).ok()) return -1;
  double first = -1;
  while (engine.has_unfinished()) {
    auto outputs = engine.step();
    if (!outputs.ok()) {
      std::fprintf(stderr, "step: %s\n", std::string(outputs.status().message()).c_str());
      return -1;
    }
    for (const SequenceOutput& o : *outputs) {
      if (first < 0 && !o.token_ids.empty()) first = std::chrono::duration<double>(Clock::now() - start).count();
    }
  }
  return first;
}

absl::StatusOr<std::unique_ptr<LocalEngine>> make_engine(const Options& o, int64_t prefix, int64_t host_bytes,
                                                         bool disk, int64_t prefetch_bytes = 512ll << 20,
                                                         int64_t extra_blocks = 0) {
  LocalEngineOptions options;
  options.model_dir = o.model;
  options.num_threads = o.threads;
  options.kv.block_size = kBlockSize;
  // One request's blocks and a few more: the filler evicts the whole prefix from the pool.
  options.kv.max_blocks = (prefix + kSuffix + 1) / kBlockSize + 4 + extra_blocks;
  options.scheduler.max_num_batched_tokens = 2048;
  options.kv_tiers.host_bytes = host_bytes;
  if (disk) {
    options.kv_tiers.disk_dir = o.dir;
    options.kv_tiers.disk_bytes = int64_t{64} << 30;
    options.kv_tiers.disk_prefetch_bytes = prefetch_bytes;
  }
  return LocalEngine::create(options);
}

int read_phase(const Options& o) {
  auto engine = make_engine(o, o.read_prefix, 0, true);
  if (!engine.ok()) {
    std::fprintf(stderr, "%s\n", std::string(engine.status().message()).c_str());
    return 1;
  }
  const Prompts p = prompts_for(o.read_prefix, (*engine)->model().config.vocab_size);
  const double t = ttft((*engine)->engine(), p.b);
  const KvTierStats& s = (*engine)->engine().kv_tiers()->stats();
  std::printf("%.4f %lld\n", t, static_cast<long long>(s.disk_hit_blocks));
  return 0;
}

struct MultiTurnResult {
  double seconds = 0;
  int64_t tokens = 0;  // prompt + generated, over all requests
  int64_t prefix_queries = 0, prefix_hits = 0, restored = 0;
  int64_t swaps = 0, recomputes = 0;              // preemptions by kind (host tier only)
  double copy_ms_per_block = 0, prefill_ms_per_token = 0;  // the costs they were chosen by
};

MultiTurnResult multi_turn(const Options& o, int64_t pool_blocks, int64_t host_bytes) {
  constexpr int kUser = 64, kReply = 32;
  MultiTurnResult r;
  LocalEngineOptions options;
  options.model_dir = o.model;
  options.num_threads = o.threads;
  options.kv.block_size = kBlockSize;
  options.kv.max_blocks = pool_blocks;
  options.kv_tiers.host_bytes = host_bytes;
  auto engine = LocalEngine::create(options);
  if (!engine.ok()) {
    std::fprintf(stderr, "%s\n", std::string(engine.status().message()).c_str());
    return r;
  }
  Engine& e = (*engine)->engine();
  const int64_t vocab = (*engine)->model().config.vocab_size;
  std::vector<std::vector<int32_t>> history(static_cast<size_t>(o.conversations));
  const auto start = Clock::now();
  for (int turn = 0; turn < o.turns; ++turn) {
    std::map<int64_t, size_t> conversation_of;
    for (size_t c = 0; c < history.size(); ++c) {
      const std::vector<int32_t> user = random_ids(1000 + c * 100 + turn, kUser, vocab);
      history[c].insert(history[c].end(), user.begin(), user.end());
      Request request;
      request.prompt_ids = history[c];
      request.params.temperature = 0.0f;
      request.params.max_tokens = kReply;
      request.params.ignore_eos = true;
      auto id = e.add_request(request);
      if (!id.ok()) {
        std::fprintf(stderr, "%s\n", std::string(id.status().message()).c_str());
        return r;
      }
      conversation_of[*id] = c;
      r.tokens += static_cast<int64_t>(history[c].size()) + kReply;
    }
    while (e.has_unfinished()) {
      auto outputs = e.step();
      if (!outputs.ok()) {
        std::fprintf(stderr, "step: %s\n", std::string(outputs.status().message()).c_str());
        return r;
      }
      for (const SequenceOutput& out : *outputs) {
        auto& h = history[conversation_of.at(out.request_id)];
        h.insert(h.end(), out.token_ids.begin(), out.token_ids.end());
      }
    }
  }
  r.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  r.prefix_queries = e.num_prefix_query_tokens();
  r.prefix_hits = e.num_prefix_hit_tokens();
  if (e.kv_tiers() != nullptr) r.restored = e.kv_tiers()->stats().restored_blocks;
  r.swaps = e.scheduler().num_swap_preemptions();
  r.recomputes = e.scheduler().num_recompute_preemptions();
  r.copy_ms_per_block = e.preemption_costs().copy_seconds_per_block() * 1e3;
  r.prefill_ms_per_token = e.preemption_costs().prefill_seconds_per_token() * 1e3;
  return r;
}

int run_multi_turn(const Options& o) {
  // The last turn's prompts and replies, in blocks, over all conversations.
  const int64_t working_set = int64_t{o.conversations} * ((int64_t{o.turns} * 96 + kBlockSize - 1) / kBlockSize);
  const int64_t pool = working_set / 4;
  std::printf("multi-turn: %d conversations x %d turns (64 user + 32 reply tokens each), working set %lld blocks, "
              "pool %lld blocks\n",
              o.conversations, o.turns, static_cast<long long>(working_set), static_cast<long long>(pool));
  std::printf("tiers      wall_s  tokens/s  prefix_hit_rate  restored_blocks  preemptions swap/recompute "
              "(copy ms/block, prefill ms/token)\n");
  for (const bool host : {false, true}) {
    const MultiTurnResult r = multi_turn(o, pool, host ? int64_t{8} << 30 : 0);
    std::printf("%-9s  %6.2f  %8.1f  %15.3f  %15lld  %lld/%lld (%.3f, %.3f)\n", host ? "host" : "none", r.seconds,
                r.seconds > 0 ? r.tokens / r.seconds : 0.0,
                r.prefix_queries > 0 ? static_cast<double>(r.prefix_hits) / r.prefix_queries : 0.0,
                static_cast<long long>(r.restored), static_cast<long long>(r.swaps),
                static_cast<long long>(r.recomputes), r.copy_ms_per_block, r.prefill_ms_per_token);
    std::fflush(stdout);
  }
  return 0;
}

struct PrefetchResult {
  double alone_median_s = 0;  // the decoding request's steps before the long request arrives
  double during_max_s = 0;    // its slowest step until the long request's first token
  int steps_during = 0;
  double ttft_s = 0;          // of the long request
  std::string tiers;          // kv_tier_summary at the end
};

absl::StatusOr<PrefetchResult> prefetch_run(const Options& o, int64_t prefix, bool prefetch) {
  constexpr int kDecodeBlocks = 40;  // the decoding request: 16 prompt tokens, up to 600 generated
  WEFT_ASSIGN_OR_RETURN(std::unique_ptr<LocalEngine> engine,
                        make_engine(o, prefix, 0, true, prefetch ? 512ll << 20 : 0, kDecodeBlocks));
  Engine& e = engine->engine();
  const int64_t vocab = engine->model().config.vocab_size;
  Request decode;
  decode.prompt_ids = random_ids(5, kSuffix, vocab);
  decode.params.temperature = 0.0f;
  decode.params.max_tokens = (kDecodeBlocks - 2) * kBlockSize;
  decode.params.ignore_eos = true;
  WEFT_ASSIGN_OR_RETURN(const int64_t decode_id, e.add_request(decode));
  PrefetchResult r;
  auto timed_step = [&](bool* long_done, int64_t long_id) -> absl::StatusOr<double> {
    const auto start = Clock::now();
    WEFT_ASSIGN_OR_RETURN(std::vector<SequenceOutput> outputs, e.step());
    const double t = std::chrono::duration<double>(Clock::now() - start).count();
    for (const SequenceOutput& out : outputs) {
      if (long_done != nullptr && out.request_id == long_id && !out.token_ids.empty()) *long_done = true;
    }
    return t;
  };
  std::vector<double> alone;
  for (int i = 0; i < 12; ++i) {
    WEFT_ASSIGN_OR_RETURN(const double t, timed_step(nullptr, -1));
    if (i >= 2) alone.push_back(t);  // past the decoding request's prefill
  }
  std::sort(alone.begin(), alone.end());
  r.alone_median_s = alone[alone.size() / 2];
  Request long_request;
  long_request.prompt_ids = prompts_for(prefix, vocab).b;
  long_request.params.temperature = 0.0f;
  long_request.params.max_tokens = 1;
  long_request.params.ignore_eos = true;
  const auto submitted = Clock::now();
  WEFT_ASSIGN_OR_RETURN(const int64_t long_id, e.add_request(long_request));
  bool long_done = false;
  while (!long_done && e.has_unfinished()) {
    WEFT_ASSIGN_OR_RETURN(const double t, timed_step(&long_done, long_id));
    r.during_max_s = std::max(r.during_max_s, t);
    ++r.steps_during;
  }
  r.ttft_s = std::chrono::duration<double>(Clock::now() - submitted).count();
  e.abort(decode_id);
  while (e.has_unfinished()) WEFT_RETURN_IF_ERROR(e.step().status());
  r.tiers = kv_tier_summary(*e.kv_tiers());
  return r;
}

int run_prefetch(const Options& o) {
  std::printf("prefix  prefetch  decode_step_alone_ms  decode_step_max_ms_while_restoring  steps  long_ttft_s\n");
  for (int64_t prefix : o.prefixes) {
    fs::remove_all(o.dir);
    {  // writes the prefix's blocks to the disk tier
      auto engine = make_engine(o, prefix, 0, true);
      if (!engine.ok()) {
        std::fprintf(stderr, "%s\n", std::string(engine.status().message()).c_str());
        return 1;
      }
      ttft((*engine)->engine(), prompts_for(prefix, (*engine)->model().config.vocab_size).a);
    }
    for (const bool prefetch : {false, true}) {
      absl::StatusOr<PrefetchResult> r = prefetch_run(o, prefix, prefetch);
      if (!r.ok()) {
        std::fprintf(stderr, "%s\n", std::string(r.status().message()).c_str());
        return 1;
      }
      std::printf("%6lld  %8s  %20.1f  %34.1f  %5d  %11.3f\n  %s\n", static_cast<long long>(prefix),
                  prefetch ? "on" : "off", r->alone_median_s * 1e3, r->during_max_s * 1e3, r->steps_during, r->ttft_s,
                  r->tiers.c_str());
      std::fflush(stdout);
    }
  }
  fs::remove_all(o.dir);
  return 0;
}

int run(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string { return i + 1 < argc ? argv[++i] : ""; };
    if (a == "--model") {
      o.model = value();
    } else if (a == "--threads") {
      o.threads = std::atoi(value().c_str());
    } else if (a == "--dir") {
      o.dir = value();
    } else if (a == "--prefetch") {
      o.prefetch = true;
    } else if (a == "--multi-turn") {
      o.multi_turn = true;
    } else if (a == "--conversations") {
      o.conversations = std::atoi(value().c_str());
    } else if (a == "--turns") {
      o.turns = std::atoi(value().c_str());
    } else if (a == "--read-prefix") {
      o.read_prefix = std::atoll(value().c_str());
    } else if (a == "--prefixes") {
      o.prefixes.clear();
      std::stringstream ss(value());
      for (std::string x; std::getline(ss, x, ',');) o.prefixes.push_back(std::atoll(x.c_str()));
    } else {
      std::fprintf(stderr, "usage: kv_tier_bench --model M [--prefixes 2048,8192] [--threads N] [--dir DIR] [--prefetch | --multi-turn]\n");
      return 2;
    }
  }
  if (o.model.empty()) {
    std::fprintf(stderr, "kv_tier_bench: --model is required (e.g. $(scripts/fetch-smollm2-gguf.sh))\n");
    return 2;
  }
  if (o.read_prefix > 0) return read_phase(o);
  if (o.multi_turn) return run_multi_turn(o);
  if (o.prefetch) return run_prefetch(o);
  std::printf("prefix  cold_s  pool_s  host_s  disk_fresh_process_s  cold/host  cold/disk  (host restored, disk hit blocks)\n");
  for (int64_t prefix : o.prefixes) {
    fs::remove_all(o.dir);
    double cold = 0, pool = 0, host = 0;
    int64_t restored = 0;
    {
      auto engine = make_engine(o, prefix, int64_t{16} << 30, true);
      if (!engine.ok()) {
        std::fprintf(stderr, "%s\n", std::string(engine.status().message()).c_str());
        return 1;
      }
      Engine& e = (*engine)->engine();
      const Prompts p = prompts_for(prefix, (*engine)->model().config.vocab_size);
      cold = ttft(e, p.a);
      pool = ttft(e, p.b);
      ttft(e, p.filler);
      const int64_t before = e.kv_tiers()->stats().restored_blocks;
      host = ttft(e, p.b);
      restored = e.kv_tiers()->stats().restored_blocks - before;
    }
    const std::string command = std::string(argv[0]) + " --model '" + o.model.string() + "' --dir '" + o.dir.string() +
                                "' --threads " + std::to_string(o.threads) + " --read-prefix " + std::to_string(prefix);
    FILE* child = ::popen(command.c_str(), "r");
    double disk = -1;
    long long disk_hits = 0;
    if (child == nullptr || std::fscanf(child, "%lf %lld", &disk, &disk_hits) != 2) disk = -1;
    if (child != nullptr) ::pclose(child);
    std::printf("%6lld  %6.3f  %6.3f  %6.3f  %20.3f  %9.1fx  %9.1fx  (%lld, %lld)\n", static_cast<long long>(prefix),
                cold, pool, host, disk, cold / host, cold / disk, static_cast<long long>(restored), disk_hits);
    std::fflush(stdout);
  }
  fs::remove_all(o.dir);
  return 0;
}

}  // namespace
}  // namespace weft

int main(int argc, char** argv) { return weft::run(argc, argv); }
