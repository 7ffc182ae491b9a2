// Fuzzes SafetensorsFile::open (8-byte length + JSON header + data) on arbitrary file contents.
// Properties: open() never reads outside the file, and every tensor it accepts lies inside the
// data section with exactly numel * dtype-size bytes (checked by reading each accepted tensor's
// first and last byte).
#include <cstddef>
#include <cstdint>

#include "fuzz_util.h"
#include "model/safetensors.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::filesystem::path path = weft::fuzz::scratch_dir() / "model.safetensors";
  weft::fuzz::write_file(path, std::string_view(reinterpret_cast<const char*>(data), size));
  auto file = weft::SafetensorsFile::open(path);
  if (!file.ok()) return 0;
  for (const auto& [name, entry] : (*file)->entries()) {
    WEFT_FUZZ_CHECK(entry.begin <= entry.end);
    WEFT_FUZZ_CHECK(entry.end <= size);
    auto tensor = (*file)->tensor(name);
    WEFT_FUZZ_CHECK(tensor.ok());
    WEFT_FUZZ_CHECK(tensor->nbytes() == entry.end - entry.begin);
    if (tensor->nbytes() > 0) {
      const auto* bytes = static_cast<const volatile uint8_t*>(tensor->data());
      (void)bytes[0];
      (void)bytes[tensor->nbytes() - 1];
    }
  }
  return 0;
}
