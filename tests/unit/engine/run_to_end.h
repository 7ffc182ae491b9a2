// Test helper: runs requests through an Engine until every one has finished and gathers what each
// sequence produced (shared by the engine tests that drive the whole engine on a real model).
#pragma once

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "engine/engine.h"

namespace weft::testing {

struct RunOutcome {
  std::vector<int32_t> ids;
  std::string text;
  std::vector<float> logprobs;
  FinishReason finish = FinishReason::kNone;
};

// Outcomes by (request id, sequence index). Engine errors are test failures.
inline std::map<std::pair<int64_t, int>, RunOutcome> run_to_end(Engine& engine, const std::vector<Request>& requests) {
  std::map<std::pair<int64_t, int>, RunOutcome> out;
  for (const Request& r : requests) {
    auto id = engine.add_request(r);
    EXPECT_TRUE(id.ok()) << id.status();
  }
  while (engine.has_unfinished()) {
    auto step = engine.step();
    EXPECT_TRUE(step.ok()) << step.status();
    if (!step.ok()) break;
    for (const SequenceOutput& o : *step) {
      RunOutcome& r = out[{o.request_id, o.index}];
      r.ids.insert(r.ids.end(), o.token_ids.begin(), o.token_ids.end());
      for (const SampleResult& s : o.samples) r.logprobs.push_back(s.logprob);
      r.text += o.text;
      if (o.finished) r.finish = o.finish_reason;
    }
  }
  return out;
}

}  // namespace weft::testing
