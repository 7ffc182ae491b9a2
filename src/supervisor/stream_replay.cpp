#include "supervisor/stream_replay.h"

#include "absl/strings/str_cat.h"

namespace weft {

using json = nlohmann::json;

void StreamReplay::begin_attempt() {
  ++attempt_;
  for (auto& [index, log] : choices_) log.seen_this_attempt = 0;
}

size_t StreamReplay::num_sent() const {
  size_t n = 0;
  for (const auto& [index, log] : choices_) n += log.sent.size();
  return n;
}

absl::StatusOr<std::optional<json>> StreamReplay::on_chunk(json chunk) {
  if (!chunk.is_object()) return absl::DataLossError("a stream event is not a JSON object");
  // The first attempt's identity wins: a resumed stream must read as one response.
  for (auto [field, kept] : {std::pair{"id", &id_}, std::pair{"created", &created_}}) {
    auto it = chunk.find(field);
    if (it == chunk.end()) continue;
    if (kept->has_value()) {
      *it = **kept;
    } else {
      *kept = *it;
    }
  }
  auto choices = chunk.find("choices");
  if (choices == chunk.end() || !choices->is_array() || choices->empty()) return chunk;
  json fresh = json::array();
  for (json& choice : *choices) {
    const auto index_it = choice.is_object() ? choice.find("index") : choice.end();
    if (index_it == choice.end() || !index_it->is_number_integer()) {
      return absl::DataLossError("a stream event's choice has no integer index");
    }
    ChoiceLog& log = choices_[index_it->get<int64_t>()];
    std::string dumped = choice.dump();
    if (log.seen_this_attempt < log.sent.size()) {
      if (dumped != log.sent[log.seen_this_attempt]) {
        return absl::AbortedError(
            absl::StrCat("the restarted engine's output for choice ", index_it->get<int64_t>(),
                         " differs from what "
                         "was already streamed at event ",
                         log.seen_this_attempt + 1, " (attempt ", attempt_, ")"));
      }
      ++log.seen_this_attempt;
      continue;
    }
    log.sent.push_back(std::move(dumped));
    ++log.seen_this_attempt;
    fresh.push_back(std::move(choice));
  }
  if (fresh.empty()) return std::optional<json>();
  *choices = std::move(fresh);
  return chunk;
}

}  // namespace weft
