// banned_phrase_bench: what screening costs per generated token, apart from any model.
//   banned_phrase_bench MODEL_DIR PHRASES_FILE TEXTS_FILE [REPEAT]
// TEXTS_FILE: one JSON string per line (texts a model generated). Each text is tokenized with the
// model's tokenizer and its tokens' texts (the streaming detokenizer's deltas) are appended to a
// fresh BannedPhraseFilter, as the engine does; at a match the filter rolls back to where it began
// and that text ends (the engine would sample a different continuation there). Prints the tokens
// screened, the matches and the nanoseconds per token (one thread).
#include <chrono>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include "nlohmann/json.hpp"
#include "safety/banned_phrase_file.h"
#include "safety/banned_phrase_filter.h"
#include "tokenizer/streaming_detokenizer.h"
#include "tokenizer/tokenizer.h"

int main(int argc, char** argv) {
  using namespace weft;
  if (argc < 4) {
    std::cerr << "usage: banned_phrase_bench MODEL_DIR PHRASES_FILE TEXTS_FILE [REPEAT]\n";
    return 2;
  }
  auto tokenizer = Tokenizer::load(argv[1]);
  if (!tokenizer.ok()) return std::cerr << tokenizer.status() << "\n", 1;
  auto phrases = load_banned_phrase_file(argv[2], "PHRASES_FILE");
  if (!phrases.ok()) return std::cerr << phrases.status() << "\n", 1;
  const int repeat = argc > 4 ? std::stoi(argv[4]) : 3;
  // The deltas of every text, computed up front (the detokenizer is not what is measured).
  std::vector<std::vector<std::string>> texts;
  std::ifstream in(argv[3]);
  for (std::string line; std::getline(in, line);) {
    if (line.empty()) continue;
    auto ids = (*tokenizer)->encode(nlohmann::json::parse(line).get<std::string>(), false);
    if (!ids.ok()) continue;
    StreamingDetokenizer detok(*tokenizer, true);
    std::vector<std::string> deltas;
    for (int32_t id : *ids) deltas.push_back(detok.push(id));
    texts.push_back(std::move(deltas));
  }
  int64_t tokens = 0, matches = 0;
  const auto start = std::chrono::steady_clock::now();
  for (int r = 0; r < repeat; ++r) {
    for (const auto& deltas : texts) {
      BannedPhraseFilter filter({*phrases});
      bool matched = false;
      for (const std::string& d : deltas) {
        ++tokens;
        if (auto m = filter.append(d)) {
          filter.rollback(m->token);
          matched = true;
          break;
        }
      }
      if (!matched) matched = filter.finish().has_value();
      matches += matched;
    }
  }
  const double ns = std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - start).count();
  std::cout << nlohmann::json({{"texts", texts.size()}, {"phrases", (*phrases)->phrases().size()},
                               {"tokens_screened", tokens}, {"matches", matches},
                               {"ns_per_token", ns / static_cast<double>(tokens)}})
                   .dump()
            << "\n";
  return 0;
}
