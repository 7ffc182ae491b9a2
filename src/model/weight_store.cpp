#include "model/weight_store.h"

#include <algorithm>
#include <cstring>
#include <set>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "model/checkpoint_weights.h"
#include "model/gguf_model_files.h"
#include "model/json_reader.h"
#include "model/model_files.h"
#include "model/weight_slice.h"

namespace weft {
namespace {

constexpr char kSingleFile[] = "model.safetensors";
constexpr char kIndexFile[] = "model.safetensors.index.json";


// Reads weight_map from the index: tensor name -> shard file name.
absl::StatusOr<std::map<std::string, std::string>> read_weight_map(
    const std::filesystem::path& index_path) {
  const std::string source = index_path.string();
  WEFT_ASSIGN_OR_RETURN(std::string text, read_json_file(index_path));
  WEFT_ASSIGN_OR_RETURN(nlohmann::json root, parse_json_strict(text, source));
  if (!root.is_object()) {
    return absl::InvalidArgumentError(
        absl::StrCat(source, ": expected a JSON object, got ", json_type_name(root)));
  }
  auto it = root.find("weight_map");
  if (it == root.end() || !it->is_object()) {
    return absl::InvalidArgumentError(
        absl::StrCat(source, ": field 'weight_map' must be an object {tensor: file}, got ",
                     it == root.end() ? "nothing" : json_type_name(*it)));
  }
  std::map<std::string, std::string> weight_map;
  for (const auto& [name, file] : it->items()) {
    if (!file.is_string()) {
      return absl::InvalidArgumentError(absl::StrCat(source, ": weight_map entry for tensor '",
                                                     name, "' must be a file name string, got ",
                                                     json_type_name(file)));
    }
    const std::string& shard = file.get_ref<const std::string&>();
    const std::filesystem::path shard_path(shard);
    // Shards live beside the index; refusing other paths keeps an index from reaching elsewhere.
    if (shard.empty() || shard_path.is_absolute() || shard_path.has_parent_path()) {
      return absl::InvalidArgumentError(
          absl::StrCat(source, ": weight_map entry for tensor '", name, "' names '", shard,
                       "', expected a file name in ", index_path.parent_path().string()));
    }
    weight_map.emplace(name, shard);
  }
  return weight_map;
}

}  // namespace

absl::StatusOr<WeightStore> WeightStore::open_gguf(const std::filesystem::path& path) {
  WeightStore store;
  store.dir_ = path;
  WEFT_ASSIGN_OR_RETURN(store.gguf_, GgufFile::open(path));
  for (const auto& [name, info] : store.gguf_->tensors()) {
    std::optional<std::string> hf = gguf_to_hf_tensor_name(name);
    if (!hf) {
      return absl::InvalidArgumentError(absl::StrCat(
          path.string(), ": tensor '", name, "' is not one weft knows how to use"));
    }
    store.gguf_names_.emplace(*hf, name);
    store.index_.emplace(*hf, 0);
  }
  return store;
}

absl::StatusOr<Tensor> WeightStore::gguf_tensor(const std::string& hf_name) const {
  WEFT_ASSIGN_OR_RETURN(Tensor stored, gguf_->tensor(gguf_names_.at(hf_name)));
  if (!gguf_rows_are_rope_permuted(*gguf_, hf_name)) return stored;
  WEFT_ASSIGN_OR_RETURN(int64_t heads, gguf_permuted_heads(*gguf_, hf_name));
  const int64_t rows = stored.dim(0);
  if (heads <= 0 || rows % (2 * heads) != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        gguf_->path().string(), ": tensor '", gguf_names_.at(hf_name), "' has ", rows,
        " rows, not a whole number of rotary pairs for ", heads, " heads"));
  }
  const int64_t head_dim = rows / heads, half = head_dim / 2;
  const size_t row_bytes = stored.nbytes() / static_cast<size_t>(rows);
  Tensor out = Tensor::empty(stored.dtype(), stored.shape());
  const char* src = static_cast<const char*>(stored.data());
  char* dst = static_cast<char*>(out.data());
  for (int64_t h = 0; h < heads; ++h) {
    for (int64_t i = 0; i < half; ++i) {
      for (int64_t j = 0; j < 2; ++j) {
        const int64_t hf_row = h * head_dim + j * half + i;
        const int64_t gguf_row = h * head_dim + 2 * i + j;
        std::memcpy(dst + hf_row * row_bytes, src + gguf_row * row_bytes, row_bytes);
      }
    }
  }
  gguf_->release_pages(stored.data(), stored.nbytes());
  return out;
}

absl::StatusOr<WeightStore> WeightStore::open(const std::filesystem::path& model_dir) {
  if (auto gguf = gguf_model_file(model_dir)) return open_gguf(*gguf);
  std::error_code ec;
  if (!std::filesystem::is_directory(model_dir, ec)) {
    return absl::NotFoundError(
        absl::StrCat("model directory ", model_dir.string(), " does not exist"));
  }
  WeightStore store;
  store.dir_ = model_dir;
  const std::filesystem::path index_path = model_dir / kIndexFile;
  const std::filesystem::path single_path = model_dir / kSingleFile;

  if (std::filesystem::exists(index_path, ec)) {
    WEFT_ASSIGN_OR_RETURN(auto weight_map, read_weight_map(index_path));
    std::map<std::string, size_t> shard_index;  // shard file name -> files_ index
    for (const auto& [name, shard] : weight_map) {
      if (shard_index.count(shard)) continue;
      const std::filesystem::path shard_path = model_dir / shard;
      if (!std::filesystem::exists(shard_path, ec)) {
        return absl::NotFoundError(absl::StrCat(index_path.string(), " maps tensor '", name,
                                                "' to ", shard_path.string(),
                                                ", which does not exist"));
      }
      WEFT_ASSIGN_OR_RETURN(auto file, SafetensorsFile::open(shard_path));
      shard_index.emplace(shard, store.files_.size());
      store.files_.push_back(std::move(file));
    }
    for (const auto& [name, shard] : weight_map) {
      if (!store.files_[shard_index.at(shard)]->contains(name)) {
        return absl::InvalidArgumentError(absl::StrCat(index_path.string(), " maps tensor '", name,
                                                       "' to ", shard,
                                                       ", which has no such tensor"));
      }
    }
  } else if (std::filesystem::exists(single_path, ec)) {
    WEFT_ASSIGN_OR_RETURN(auto file, SafetensorsFile::open(single_path));
    store.files_.push_back(std::move(file));
  } else {
    return absl::NotFoundError(
        absl::StrCat("no ", kSingleFile, " or ", kIndexFile, " in ", model_dir.string()));
  }

  // Every tensor of every shard is indexed (not only those the index lists), so a tensor stored
  // twice is caught even when the index points at one copy.
  for (size_t f = 0; f < store.files_.size(); ++f) {
    for (const auto& [name, entry] : store.files_[f]->entries()) {
      auto [it, inserted] = store.index_.emplace(name, f);
      if (!inserted) {
        return absl::InvalidArgumentError(absl::StrCat("tensor '", name, "' is stored in both ",
                                                       store.files_[it->second]->path().string(),
                                                       " and ", store.files_[f]->path().string()));
      }
    }
  }
  WEFT_ASSIGN_OR_RETURN(store.quantization_, read_checkpoint_quantization(model_dir));
  WEFT_RETURN_IF_ERROR(store.index_quantized_modules());
  return store;
}

absl::Status WeightStore::index_quantized_modules() {
  if (!quantization_.enabled()) return absl::OkStatus();
  const std::string kScale = quantized_module_suffix(quantization_);
  std::set<std::string> modules;  // every module with a weight, quantized or not
  for (const auto& [name, file] : index_) {
    if (name.size() > kScale.size() &&
        name.compare(name.size() - kScale.size(), kScale.size(), kScale) == 0) {
      quantized_modules_.insert(name.substr(0, name.size() - kScale.size()));
    }
  }
  for (const std::string& module : quantized_modules_) {
    const std::string marker = quantized_marker_tensor(quantization_.scheme_for(module), module);
    auto it = index_.find(marker);
    if (it == index_.end()) {
      return absl::InvalidArgumentError(absl::StrCat(
          dir_.string(), ": quantized module '", module, "' has '", module, kScale, "' but no '", marker,
          "'"));
    }
    index_.emplace(module + ".weight", it->second);
  }
  for (const auto& [name, file] : index_) {
    if (name.size() > 7 && name.compare(name.size() - 7, 7, ".weight") == 0) {
      modules.insert(name.substr(0, name.size() - 7));
    }
  }
  modules.insert("lm_head");  // listed in ignore even when tied to the embedding
  for (const std::string& entry : quantization_.ignore) {
    bool known = false;
    for (const std::string& module : modules) known = known || ignore_entry_matches(entry, module);
    if (!known) {
      return absl::InvalidArgumentError(absl::StrCat(
          dir_.string(), "/config.json: quantization_config field '", quantization_.ignore_field,
          "' names '", entry,
          "', which matches no module of this checkpoint"));
    }
  }
  for (const std::string& module : quantized_modules_) {
    if (!quantization_.quantizes(module)) {
      return absl::InvalidArgumentError(absl::StrCat(
          dir_.string(), ": module '", module,
          "' is stored quantized but quantization_config's '", quantization_.ignore_field,
          "' keeps it dense"));
    }
  }
  return absl::OkStatus();
}

bool WeightStore::is_quantized_module(const std::string& module) const {
  return quantized_modules_.count(module) != 0;
}

absl::StatusOr<Tensor> WeightStore::stored_tensor(const std::string& name) const {
  auto it = index_.find(name);
  if (it == index_.end() || !files_[it->second]->contains(name)) {
    return absl::NotFoundError(absl::StrCat("tensor '", name, "' not found"));
  }
  return files_[it->second]->tensor(name);
}

bool WeightStore::contains(const std::string& name) const { return index_.count(name) != 0; }

std::vector<std::string> WeightStore::names() const {
  std::vector<std::string> out;
  out.reserve(index_.size());
  for (const auto& [name, file] : index_) out.push_back(name);
  return out;
}

absl::StatusOr<Tensor> WeightStore::get(const std::string& name, const Shape& expected) const {
  auto it = index_.find(name);
  if (it == index_.end()) {
    return absl::NotFoundError(absl::StrCat("tensor '", name, "' not found in ", dir_.string()));
  }
  if (gguf_) {
    const GgufTensorInfo& info = gguf_->tensors().at(gguf_names_.at(name));
    const Shape actual = Shape::from_dims(info.shape);
    if (!(actual == expected)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "tensor '", gguf_names_.at(name), "' (", name, ") in ", gguf_->path().string(),
          " has shape ", actual.to_string(), ", expected ", expected.to_string(),
          " from its metadata"));
    }
    return gguf_tensor(name);
  }
  const SafetensorsFile& file = *files_[it->second];
  const size_t dot = name.rfind('.');
  if (dot != std::string::npos && quantized_modules_.count(name.substr(0, dot))) {
    const std::string module = name.substr(0, dot), field = name.substr(dot + 1);
    const StoredTensorLookup lookup = [this](const std::string& n) { return stored_tensor(n); };
    const CheckpointQuantization& scheme = quantization_.scheme_for(module);
    if (field == "weight") {
      return convert_checkpoint_weight(scheme, module, expected, lookup, file.path().string());
    }
    if (field == "weight_scale" && scheme.format == StoredWeightFormat::kInt8Channel &&
        expected.rank() == 1) {
      return convert_checkpoint_row_scales(scheme, module, expected[0], lookup,
                                           file.path().string());
    }
  }
  const Shape actual = Shape::from_dims(file.entries().at(name).shape);
  if (!(actual == expected)) {
    return absl::InvalidArgumentError(absl::StrCat("tensor '", name, "' in ", file.path().string(),
                                                   " has shape ", actual.to_string(), ", expected ",
                                                   expected.to_string(), " from config.json"));
  }
  return file.tensor(name);
}

absl::StatusOr<Tensor> WeightStore::get_slice(const std::string& name, const Shape& expected,
                                              int dim, int64_t begin, int64_t count) const {
  WEFT_ASSIGN_OR_RETURN(Tensor full, get(name, expected));
  WEFT_ASSIGN_OR_RETURN(WeightSlice slice, slice_weight(full, name, expected, dim, begin, count));
  // A copy holds this rank's part; the rest of the tensor belongs to other ranks.
  if (slice.copied) release(full);
  return std::move(slice.tensor);
}

bool WeightStore::is_mapped(const Tensor& t) const {
  if (!t.defined()) return false;
  if (gguf_ && gguf_->holds(t.data(), t.nbytes())) return true;
  for (const auto& file : files_) {
    if (file->holds(t.data(), t.nbytes())) return true;
  }
  return false;
}

void WeightStore::release(const Tensor& view) const {
  if (view.defined()) release(view.data(), view.nbytes());
}

void WeightStore::release(const void* data, size_t bytes) const {
  if (gguf_) {
    gguf_->release_pages(data, bytes);
    return;
  }
  for (const auto& file : files_) {
    if (file->release_pages(data, bytes)) return;
  }
}

}  // namespace weft
