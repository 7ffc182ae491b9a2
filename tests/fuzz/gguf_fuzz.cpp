// Fuzzes GgufFile::open (header, typed metadata, tensor descriptions, data) on arbitrary file
// contents, and the metadata readers that build config.json / tokenizer.json from what it accepts.
// Properties: nothing reads outside the file, and every tensor it accepts lies inside it with
// exactly the bytes its dtype and shape need (checked by reading each tensor's first and last byte).
#include <cstddef>
#include <cstdint>

#include "fuzz_util.h"
#include "model/gguf_file.h"
#include "model/gguf_model_files.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::filesystem::path path = weft::fuzz::scratch_dir() / "model.gguf";
  weft::fuzz::write_file(path, std::string_view(reinterpret_cast<const char*>(data), size));
  auto file = weft::GgufFile::open(path);
  if (!file.ok()) return 0;
  for (const auto& [name, info] : (*file)->tensors()) {
    auto tensor = (*file)->tensor(name);
    WEFT_FUZZ_CHECK(tensor.ok());
    WEFT_FUZZ_CHECK(tensor->nbytes() == info.bytes);
    if (tensor->nbytes() > 0) {
      const auto* bytes = static_cast<const volatile uint8_t*>(tensor->data());
      (void)bytes[0];
      (void)bytes[tensor->nbytes() - 1];
    }
  }
  (void)weft::gguf_config_json(**file);
  (void)weft::gguf_tokenizer_json(**file);
  (void)weft::gguf_tokenizer_config_json(**file);
  return 0;
}
