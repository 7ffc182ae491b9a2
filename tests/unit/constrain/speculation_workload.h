// Constrained requests that speculate on configs/default-model, shared by the one-rank test
// (constrained_speculation_test.cpp) and the multi-rank one (tests/mpi/mpi_constrained_spec_check.cpp):
// a list of records with repeating keys (n-gram lookup finds them in the output and in the
// prompt, which shows one), and a regex of repeated words; greedy or seeded sampled.
#pragma once

#include "sampling/sampling_params.h"

namespace weft::testing {

inline constexpr const char* kSpeculationSchemaBody = R"({"guided_json": {"type": "array", "minItems": 3, "maxItems": 4,
    "items": {"type": "object", "additionalProperties": false, "required": ["name", "tribe", "age"],
      "properties": {"name": {"type": "string", "maxLength": 14}, "tribe": {"enum": ["Judah", "Levi", "Dan"]},
                     "age": {"type": "integer"}}}}})";
inline constexpr const char* kSpeculationJsonPrompt =
    "The sons of Israel as records: [{\"name\": \"Moses\", \"tribe\": \"Levi\", \"age\": 120}, "
    "{\"name\": \"Aaron\", \"tribe\": \"Levi\", \"age\": 123}]. And the sons of Judah:";
inline constexpr const char* kSpeculationRegex = "((Amen|Selah|and the LORD said), ){2,8}(Amen|Selah)\\.";
inline constexpr const char* kSpeculationRegexPrompt = "And God said unto Moses,";

// Greedy, or seeded sampled (T 0.8, top-p 0.95, n 2); logprobs 2 either way.
inline SamplingParams speculation_params(bool sampled, int max_tokens) {
  SamplingParams p;
  p.max_tokens = max_tokens;
  p.logprobs = 2;
  if (sampled) {
    p.temperature = 0.8f;
    p.top_p = 0.95f;
    p.seed = 31;
    p.n = 2;
  } else {
    p.temperature = 0.0f;
  }
  return p;
}

}  // namespace weft::testing
