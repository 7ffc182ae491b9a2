#include "supervisor/stream_replay.h"

#include "absl/strings/str_cat.h"
#include "core/bounded_json.h"

namespace weft {

using json = nlohmann::json;

namespace {

absl::StatusOr<json> parse_chunk(const std::string& data) {
  auto chunk = parse_json_bounded<json>(data, "engine stream event", JsonLimits{});
  if (!chunk.ok()) return chunk.status();
  if (!chunk->is_object()) return absl::DataLossError("a stream event is not a JSON object");
  return chunk;
}

int64_t choice_index(const json& choice) {
  const auto it = choice.is_object() ? choice.find("index") : choice.end();
  return it != choice.end() && it->is_number_integer() ? it->get<int64_t>() : -1;
}

}  // namespace

absl::StatusOr<bool> ChoiceHistory::admit(int64_t index, std::string event) {
  ChoiceLog& log = choices_[index];
  if (log.seen_this_attempt < log.sent.size()) {
    if (event != log.sent[log.seen_this_attempt]) {
      return absl::AbortedError(absl::StrCat("the restarted engine's output for choice ", index,
                                             " differs from what was already streamed at event ",
                                             log.seen_this_attempt + 1, " (attempt ", attempt_, ")"));
    }
    ++log.seen_this_attempt;
    return false;
  }
  log.sent.push_back(std::move(event));
  ++log.seen_this_attempt;
  return true;
}

void StreamReplay::keep_identity(json& chunk) {
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
}

absl::Status StreamReplay::index_first_attempt() {
  indexed_ = true;
  for (const std::string& data : first_attempt_) {
    auto chunk = parse_chunk(data);
    if (!chunk.ok()) return chunk.status();
    keep_identity(*chunk);
    auto choices = chunk->find("choices");
    if (choices == chunk->end() || !choices->is_array()) continue;
    for (const json& choice : *choices) {
      const int64_t index = choice_index(choice);
      if (index < 0) return absl::DataLossError("a stream event's choice has no integer index");
      // Attempt 1's events are all new: this records them.
      if (auto admitted = history_.admit(index, choice.dump()); !admitted.ok()) return admitted.status();
    }
  }
  num_sent_later_ += first_attempt_.size();
  first_attempt_.clear();
  return absl::OkStatus();
}

void StreamReplay::begin_attempt() {
  // Indexing first: attempt 1's events are recorded as attempt 1's, then compared against.
  if (!indexed_) indexing_status_ = index_first_attempt();
  history_.begin_attempt();
}

absl::StatusOr<std::optional<std::string>> StreamReplay::on_event(std::string data) {
  if (history_.attempt() == 1) {
    first_attempt_.push_back(data);
    return std::optional<std::string>(std::move(data));
  }
  if (!indexing_status_.ok()) return indexing_status_;
  auto chunk = parse_chunk(data);
  if (!chunk.ok()) return chunk.status();
  keep_identity(*chunk);
  auto choices = chunk->find("choices");
  if (choices == chunk->end() || !choices->is_array() || choices->empty()) {
    ++num_sent_later_;
    return std::optional<std::string>(chunk->dump());
  }
  json fresh = json::array();
  for (json& choice : *choices) {
    const int64_t index = choice_index(choice);
    if (index < 0) return absl::DataLossError("a stream event's choice has no integer index");
    auto admitted = history_.admit(index, choice.dump());
    if (!admitted.ok()) return admitted.status();
    if (*admitted) fresh.push_back(std::move(choice));
  }
  if (fresh.empty()) return std::optional<std::string>();
  *choices = std::move(fresh);
  ++num_sent_later_;
  return std::optional<std::string>(chunk->dump());
}

}  // namespace weft
