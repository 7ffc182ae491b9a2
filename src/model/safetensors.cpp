#include "model/safetensors.h"


#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/status_macros.h"
#include "model/json_reader.h"

namespace weft {
namespace {

using nlohmann::json;


const char* safetensors_dtype_name(DType dtype) {
  switch (dtype) {
    case DType::kF32:
      return "F32";
    case DType::kF16:
      return "F16";
    case DType::kBF16:
      return "BF16";
    case DType::kI32:
      return "I32";
    case DType::kI64:
      return "I64";
    case DType::kI8:
      return "I8";
    case DType::kU8:
      return "U8";
    case DType::kF8E4M3:
      return "F8_E4M3";
    default:  // block-quantized dtypes come only from GGUF files
      return "?";
  }
}

std::string errno_text() { return std::strerror(errno); }

// Validates one header entry against the data section of `data_size` bytes.
absl::StatusOr<SafetensorsEntry> parse_entry(const std::string& file, const std::string& name,
                                             const json& value, uint64_t data_size) {
  const std::string where = absl::StrCat(file, ": tensor '", name, "'");
  auto fail = [&where](auto&&... parts) {
    return absl::InvalidArgumentError(absl::StrCat(where, ": ", parts...));
  };
  if (!value.is_object()) return fail("entry must be an object, got ", json_type_name(value));
  SafetensorsEntry entry;

  auto dtype_it = value.find("dtype");
  if (dtype_it == value.end()) return fail("missing 'dtype'");
  if (!dtype_it->is_string())
    return fail("'dtype' must be a string, got ", json_type_name(*dtype_it));
  auto dtype = dtype_from_safetensors(dtype_it->get_ref<const std::string&>());
  if (!dtype.ok()) return fail(std::string(dtype.status().message()));
  entry.dtype = *dtype;

  auto shape_it = value.find("shape");
  if (shape_it == value.end()) return fail("missing 'shape'");
  if (!shape_it->is_array())
    return fail("'shape' must be a list of integers, got ", json_type_name(*shape_it));
  if (shape_it->size() > static_cast<size_t>(SafetensorsFile::kMaxRank)) {
    return fail("rank ", shape_it->size(), " exceeds the supported maximum of ",
                SafetensorsFile::kMaxRank);
  }
  uint64_t numel = 1;
  bool numel_overflow = false;
  for (const json& dim : *shape_it) {
    if (!dim.is_number_integer())
      return fail("'shape' must be a list of integers, found ", json_type_name(dim));
    if (!dim.is_number_unsigned() && dim.get<int64_t>() < 0) {
      return fail("negative dimension ", dim.get<int64_t>(), " in 'shape'");
    }
    const uint64_t d = dim.get<uint64_t>();
    if (d > static_cast<uint64_t>(INT64_MAX))
      return fail("dimension ", d, " in 'shape' is too large");
    entry.shape.push_back(static_cast<int64_t>(d));
    numel_overflow |= __builtin_mul_overflow(numel, d, &numel);
  }

  auto offsets_it = value.find("data_offsets");
  if (offsets_it == value.end()) return fail("missing 'data_offsets'");
  const json& offsets = *offsets_it;
  if (!offsets.is_array() || offsets.size() != 2 || !offsets[0].is_number_unsigned() ||
      !offsets[1].is_number_unsigned()) {
    return fail(std::string("'data_offsets' must be a list of two non-negative integers, got "),
                offsets.dump());
  }
  entry.begin = offsets[0].get<uint64_t>();
  entry.end = offsets[1].get<uint64_t>();
  if (entry.begin > entry.end) {
    return fail("data_offsets [", entry.begin, ", ", entry.end, "] has begin > end");
  }
  if (entry.end > data_size) {
    return fail("data_offsets [", entry.begin, ", ", entry.end, "] run past the data section (",
                data_size, " bytes)");
  }
  uint64_t expected_bytes = 0;
  numel_overflow |= __builtin_mul_overflow(numel, static_cast<uint64_t>(dtype_size(entry.dtype)),
                                           &expected_bytes);
  if (numel_overflow || expected_bytes != entry.end - entry.begin) {
    return fail("data_offsets [", entry.begin, ", ", entry.end, "] hold ", entry.end - entry.begin,
                " bytes, but shape ", Shape::from_dims(entry.shape).to_string(), " of ",
                safetensors_dtype_name(entry.dtype), " needs ",
                numel_overflow ? std::string("more than 2^64") : absl::StrCat(expected_bytes));
  }
  return entry;
}

absl::Status check_metadata(const std::string& file, const json& value) {
  if (!value.is_object()) {
    return absl::InvalidArgumentError(absl::StrCat(
        file, ": '__metadata__' must be an object of strings, got ", json_type_name(value)));
  }
  for (const auto& [key, item] : value.items()) {
    if (!item.is_string()) {
      return absl::InvalidArgumentError(absl::StrCat(file, ": '__metadata__' value of '", key,
                                                     "' must be a string, got ",
                                                     json_type_name(item)));
    }
  }
  return absl::OkStatus();
}

absl::Status check_overlaps(const std::string& file,
                            const std::map<std::string, SafetensorsEntry>& entries) {
  std::vector<std::tuple<uint64_t, uint64_t, const std::string*>> ranges;
  for (const auto& [name, entry] : entries) {
    if (entry.end > entry.begin) ranges.emplace_back(entry.begin, entry.end, &name);
  }
  std::sort(ranges.begin(), ranges.end());
  // Sorted by begin, a range overlaps an earlier one exactly when it starts before the furthest
  // end seen so far.
  for (size_t i = 1, furthest = 0; i < ranges.size(); ++i) {
    const auto& [prev_begin, prev_end, prev_name] = ranges[furthest];
    const auto& [begin, end, name] = ranges[i];
    if (begin < prev_end) {
      return absl::InvalidArgumentError(
          absl::StrCat(file, ": tensor '", *name, "' data_offsets [", begin, ", ", end,
                       "] overlap tensor '", *prev_name, "' [", prev_begin, ", ", prev_end, "]"));
    }
    if (end > prev_end) furthest = i;
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::shared_ptr<SafetensorsFile>> SafetensorsFile::open(
    const std::filesystem::path& path) {
  const std::string file = path.string();
  std::shared_ptr<SafetensorsFile> self(new SafetensorsFile());
  self->self_ = self;
  WEFT_ASSIGN_OR_RETURN(self->mapping_, MappedFile::open(path));
  const uint64_t file_size = self->mapping_.size();
  const uint8_t* map = self->mapping_.data();
  if (file_size < 8) {
    return absl::InvalidArgumentError(absl::StrCat(
        file, ": file is ", file_size, " bytes, shorter than the 8-byte header length prefix"));
  }

  uint64_t header_len = 0;
  for (int i = 7; i >= 0; --i) header_len = (header_len << 8) | map[i];
  if (header_len > kMaxHeaderBytes) {
    return absl::InvalidArgumentError(absl::StrCat(
        file, ": header length ", header_len, " exceeds the limit of ", kMaxHeaderBytes, " bytes"));
  }
  if (header_len > file_size - 8) {
    return absl::InvalidArgumentError(absl::StrCat(file, ": header length ", header_len,
                                                   " runs past the end of the file (", file_size,
                                                   " bytes)"));
  }
  self->data_offset_ = 8 + header_len;
  const uint64_t data_size = file_size - self->data_offset_;

  const std::string_view header(reinterpret_cast<const char*>(map + 8), header_len);
  WEFT_ASSIGN_OR_RETURN(json root, parse_json_strict(header, absl::StrCat(file, " (header)"),
                                                          kMaxTensors + 1));  // + "__metadata__"
  if (!root.is_object()) {
    return absl::InvalidArgumentError(
        absl::StrCat(file, ": header must be a JSON object, got ", json_type_name(root)));
  }
  for (const auto& [name, value] : root.items()) {
    if (name == "__metadata__") {
      WEFT_RETURN_IF_ERROR(check_metadata(file, value));
      continue;
    }
    WEFT_ASSIGN_OR_RETURN(SafetensorsEntry entry, parse_entry(file, name, value, data_size));
    self->entries_.emplace(name, std::move(entry));
  }
  WEFT_RETURN_IF_ERROR(check_overlaps(file, self->entries_));
  return self;
}

absl::StatusOr<Tensor> SafetensorsFile::tensor(const std::string& name) const {
  auto it = entries_.find(name);
  if (it == entries_.end()) {
    return absl::NotFoundError(absl::StrCat(path().string(), ": no tensor '", name, "'"));
  }
  const SafetensorsEntry& entry = it->second;
  // The mapping is read-only: writing through this tensor faults.
  void* data = const_cast<uint8_t*>(mapping_.data() + data_offset_ + entry.begin);
  // The format allows any byte offset; reading elements through a misaligned pointer is
  // undefined behaviour (and faults in aligned vector loads), so such tensors are copied.
  if (reinterpret_cast<uintptr_t>(data) % dtype_size(entry.dtype) != 0) {
    Tensor copy = Tensor::empty(entry.dtype, Shape::from_dims(entry.shape));
    std::memcpy(copy.data(), data, entry.end - entry.begin);
    return copy;
  }
  return Tensor::wrap(data, entry.dtype, Shape::from_dims(entry.shape),
                      std::static_pointer_cast<const void>(self_.lock()));
}

absl::Status write_safetensors(const std::filesystem::path& path,
                               const std::map<std::string, Tensor>& tensors) {
  const std::string file = path.string();
  json header = json::object();
  uint64_t offset = 0;
  for (const auto& [name, tensor] : tensors) {
    if (name == "__metadata__") {
      return absl::InvalidArgumentError(
          absl::StrCat(file, ": '__metadata__' is not a valid tensor name"));
    }
    if (!tensor.defined()) {
      return absl::InvalidArgumentError(absl::StrCat(file, ": tensor '", name, "' has no data"));
    }
    if (tensor.view().device != Device::kCpu) {
      return absl::InvalidArgumentError(
          absl::StrCat(file, ": tensor '", name, "' is not on the CPU"));
    }
    std::vector<int64_t> shape;
    for (int i = 0; i < tensor.shape().rank(); ++i) shape.push_back(tensor.dim(i));
    header[name] = {{"dtype", safetensors_dtype_name(tensor.dtype())},
                    {"shape", shape},
                    {"data_offsets", {offset, offset + tensor.nbytes()}}};
    offset += tensor.nbytes();
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');

  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out)
    return absl::PermissionDeniedError(absl::StrCat("cannot create ", file, ": ", errno_text()));
  uint8_t length[8];
  for (int i = 0; i < 8; ++i)
    length[i] = static_cast<uint8_t>(static_cast<uint64_t>(text.size()) >> (8 * i));
  out.write(reinterpret_cast<const char*>(length), 8);
  out.write(text.data(), static_cast<std::streamsize>(text.size()));
  for (const auto& [name, tensor] : tensors) {
    out.write(static_cast<const char*>(tensor.data()),
              static_cast<std::streamsize>(tensor.nbytes()));
  }
  out.close();
  if (!out) return absl::DataLossError(absl::StrCat("error writing ", file, ": ", errno_text()));
  return absl::OkStatus();
}

}  // namespace weft
