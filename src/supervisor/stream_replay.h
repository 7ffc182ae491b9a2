// Continuing a client's stream across engine restarts (the supervisor, supervisor.h).
//
// When the engine dies mid-stream, the supervisor sends the same request (same body, same pinned
// seed) to the restarted engine and passes its stream through a StreamReplay. Greedy and seeded
// generation are a function of the request alone (sampling/rng.h keys every draw by seed,
// sequence and position), so the new attempt regenerates the events the client already has,
// then goes on. StreamReplay drops those repeated events after checking that each one equals,
// choice by choice, what was sent; the first new event goes out as if nothing had happened, with
// the first attempt's response id and creation time. An event that differs from what the client
// already holds (a divergence: e.g. speculative decoding, whose event boundaries depend on the
// batch) is an error: the supervisor then ends the stream with an error event rather than send
// the client a text that is not one generation.
//
// Events are the `data:` payloads in OpenAI's chunk shape: a JSON object with a "choices" array of
// objects with an "index" (deltas for chat, "text" for completions), plus top-level fields. A
// chunk whose "choices" is empty (the final usage chunk) passes through (with the kept identity).
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"

namespace weft {

// Per choice index, the events sent to the client (each serialized), and how far the current
// attempt has repeated them: what both front ends (HTTP's JSON chunks, gRPC's ChoiceDelta
// messages) compare replays against.
class ChoiceHistory {
 public:
  void begin_attempt() {
    ++attempt_;
    for (auto& [index, log] : choices_) log.seen_this_attempt = 0;
  }
  // True when `event` (choice `index`'s next event, serialized) is new: it is recorded and must be
  // sent. False when it repeats what was sent at this point. An Aborted error when it differs.
  absl::StatusOr<bool> admit(int64_t index, std::string event);
  int attempt() const { return attempt_; }

 private:
  struct ChoiceLog {
    std::vector<std::string> sent;
    size_t seen_this_attempt = 0;
  };
  std::map<int64_t, ChoiceLog> choices_;
  int attempt_ = 1;
};

class StreamReplay {
 public:
  // Starts a new attempt: the events that follow are compared from each choice's first event.
  void begin_attempt();
  // `data` is one event's `data:` payload (a JSON chunk). Returns the payload to send to the
  // client (rewritten as above), nullopt when every choice in it repeats what was sent, or an
  // error when it diverges from what was sent or is not a chunk. The first attempt's events pass
  // unchanged and unparsed (so a healthy stream costs no JSON work); they are parsed only when a
  // replay needs them.
  absl::StatusOr<std::optional<std::string>> on_event(std::string data);

  // Events already sent to the client.
  size_t num_sent() const { return first_attempt_.size() + num_sent_later_; }
  int attempt() const { return history_.attempt(); }

 private:
  // Turns the first attempt's events into the per-choice history (once).
  absl::Status index_first_attempt();
  // Records `chunk`'s id/created (first attempt) or rewrites them (later ones).
  void keep_identity(nlohmann::json& chunk);

  std::vector<std::string> first_attempt_;  // payloads as sent, until indexed
  bool indexed_ = false;
  absl::Status indexing_status_;
  ChoiceHistory history_;
  std::optional<nlohmann::json> id_;
  std::optional<nlohmann::json> created_;
  size_t num_sent_later_ = 0;
};

}  // namespace weft
