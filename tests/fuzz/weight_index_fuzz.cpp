// Fuzzes WeightStore::open on an arbitrary model.safetensors.index.json beside two valid shards
// (a.safetensors with tensors "x" and "y", b.safetensors with "z"). Properties: no crash, and an
// accepted index maps only to tensors the shards hold.
#include <cstddef>
#include <cstdint>
#include <map>

#include "fuzz_util.h"
#include "model/safetensors.h"
#include "model/weight_store.h"

namespace {

const std::filesystem::path& model_dir() {
  static const std::filesystem::path dir = [] {
    std::filesystem::path d = weft::fuzz::scratch_dir() / "model";
    std::filesystem::create_directories(d);
    auto make = [](weft::Shape shape) {
      auto t = weft::Tensor::empty(weft::DType::kF32, shape);
      for (int64_t i = 0; i < t.numel(); ++i) static_cast<float*>(t.data())[i] = float(i);
      return t;
    };
    std::map<std::string, weft::Tensor> a{{"x", make(weft::Shape{2, 3})}, {"y", make(weft::Shape{4})}};
    std::map<std::string, weft::Tensor> b{{"z", make(weft::Shape{3, 2})}};
    if (!weft::write_safetensors(d / "a.safetensors", a).ok() ||
        !weft::write_safetensors(d / "b.safetensors", b).ok()) {
      std::abort();
    }
    return d;
  }();
  return dir;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::filesystem::path& dir = model_dir();
  weft::fuzz::write_file(dir / "model.safetensors.index.json",
                         std::string_view(reinterpret_cast<const char*>(data), size));
  auto store = weft::WeightStore::open(dir);
  if (!store.ok()) return 0;
  for (const std::string& name : store->names()) {
    WEFT_FUZZ_CHECK(name == "x" || name == "y" || name == "z");
    WEFT_FUZZ_CHECK(store->contains(name));
  }
  return 0;
}
