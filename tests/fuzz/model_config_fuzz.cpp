// Fuzzes parse_model_config (config.json) and parse_generation_config
// (generation_config.json) on the same text. Properties: no crash, and an accepted config.json
// has the positive, consistent sizes the parser's contract promises.
#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz_util.h"
#include "model/model_config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  auto config = weft::parse_model_config(text);
  if (config.ok()) {
    WEFT_FUZZ_CHECK(config->vocab_size > 0);
    WEFT_FUZZ_CHECK(config->hidden_size > 0);
    WEFT_FUZZ_CHECK(config->intermediate_size > 0);
    WEFT_FUZZ_CHECK(config->num_hidden_layers > 0);
    WEFT_FUZZ_CHECK(config->num_attention_heads > 0);
    WEFT_FUZZ_CHECK(config->num_key_value_heads > 0);
    WEFT_FUZZ_CHECK(config->num_attention_heads % config->num_key_value_heads == 0);
    WEFT_FUZZ_CHECK(config->head_dim > 0);
  }
  (void)weft::parse_generation_config(text);
  return 0;
}
