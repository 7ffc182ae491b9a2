// Fuzzes sampling_params_from_json + SamplingParams::validate on arbitrary request bodies (the
// JSON is parsed the way the HTTP layer will: nlohmann without exceptions).
#include <cstddef>
#include <cstdint>

#include "nlohmann/json.hpp"
#include "sampling/sampling_params.h"
#include "sampling/sampling_params_json.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const nlohmann::json request =
      nlohmann::json::parse(data, data + size, nullptr, /*allow_exceptions=*/false);
  if (request.is_discarded()) return 0;
  auto params = weft::sampling_params_from_json(request);
  if (params.ok()) {
    (void)params->validate(32000);
    (void)params->validate(1);
  }
  return 0;
}
