#include "model/gguf_file.h"

#include <algorithm>
#include <cstring>
#include <fstream>
#include <limits>
#include "absl/strings/string_view.h"

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"

namespace weft {
namespace {

constexpr uint32_t kMagic = 0x46554747;  // "GGUF" read as a little-endian u32
constexpr uint64_t kDefaultAlignment = 32;

// ggml's tensor type ids (ggml.h enum ggml_type), those weft computes with.
absl::StatusOr<DType> dtype_from_ggml(uint32_t type) {
  switch (type) {
    case 0: return DType::kF32;
    case 1: return DType::kF16;
    case 2: return DType::kQ4_0;
    case 3: return DType::kQ4_1;
    case 6: return DType::kQ5_0;
    case 7: return DType::kQ5_1;
    case 8: return DType::kQ8_0;
    case 12: return DType::kQ4_K;
    case 13: return DType::kQ5_K;
    case 14: return DType::kQ6_K;
    case 30: return DType::kBF16;
  }
  static const char* const kNames[] = {
      "F32", "F16", "Q4_0", "Q4_1", "Q4_2 (removed)", "Q4_3 (removed)", "Q5_0", "Q5_1", "Q8_0",
      "Q8_1", "Q2_K", "Q3_K", "Q4_K", "Q5_K", "Q6_K", "Q8_K", "IQ2_XXS", "IQ2_XS", "IQ3_XXS",
      "IQ1_S", "IQ4_NL", "IQ3_S", "IQ2_S", "IQ4_XS", "I8", "I16", "I32", "I64", "F64", "IQ1_M",
      "BF16", "Q4_0_4_4 (removed)", "Q4_0_4_8 (removed)", "Q4_0_8_8 (removed)", "TQ1_0", "TQ2_0",
      "IQ4_NL_4_4 (removed)", "IQ4_NL_4_8 (removed)", "IQ4_NL_8_8 (removed)", "MXFP4"};
  const std::string name = type < std::size(kNames) ? kNames[type] : "unknown";
  return absl::InvalidArgumentError(absl::StrCat(
      "ggml tensor type ", type, " (", name,
      ") is not supported (supported: F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q4_K, Q5_K, "
      "Q6_K)"));
}

// A bounds-checked little-endian reader over the mapped bytes. Every read checks that the bytes
// remain; an error names the file and where (`context`).
class Reader {
 public:
  Reader(const uint8_t* data, uint64_t size, std::string file)
      : data_(data), size_(size), file_(std::move(file)) {}

  uint64_t position() const { return pos_; }
  uint64_t remaining() const { return size_ - pos_; }

  absl::Status error(absl::string_view context, absl::string_view what) const {
    return absl::InvalidArgumentError(
        absl::StrCat(file_, ": ", context, ": ", what, " (at byte ", pos_, " of ", size_, ")"));
  }

  template <typename T>
  absl::StatusOr<T> read(absl::string_view context) {
    if (remaining() < sizeof(T)) return error(context, "the file ends inside it");
    T value;
    std::memcpy(&value, data_ + pos_, sizeof(T));
    pos_ += sizeof(T);
    return value;
  }

  absl::StatusOr<std::string> read_string(absl::string_view context, uint64_t limit) {
    WEFT_ASSIGN_OR_RETURN(uint64_t length, read<uint64_t>(context));
    if (length > limit) {
      return error(context, absl::StrCat("a string of ", length, " bytes exceeds the limit of ",
                                         limit));
    }
    if (length > remaining()) {
      return error(context, absl::StrCat("a string of ", length,
                                         " bytes runs past the end of the file"));
    }
    std::string out(reinterpret_cast<const char*>(data_ + pos_), length);
    pos_ += length;
    return out;
  }

 private:
  const uint8_t* data_;
  uint64_t size_;
  std::string file_;
  uint64_t pos_ = 0;
};

// The fewest bytes one value of `type` occupies: bounds an element count by the bytes left.
uint64_t min_value_bytes(GgufType type) {
  switch (type) {
    case GgufType::kU8: case GgufType::kI8: case GgufType::kBool: return 1;
    case GgufType::kU16: case GgufType::kI16: return 2;
    case GgufType::kU32: case GgufType::kI32: case GgufType::kF32: return 4;
    default: return 8;  // u64, i64, f64, string length, array header (type + count > 8)
  }
}

absl::StatusOr<GgufType> read_type(Reader& in, const std::string& context) {
  WEFT_ASSIGN_OR_RETURN(uint32_t raw, in.read<uint32_t>(context));
  if (raw > static_cast<uint32_t>(GgufType::kF64)) {
    return in.error(context, absl::StrCat("unknown metadata value type ", raw));
  }
  return static_cast<GgufType>(raw);
}

absl::StatusOr<GgufValue> read_scalar(Reader& in, GgufType type, const std::string& context) {
  GgufValue v;
  v.type = type;
  switch (type) {
    case GgufType::kU8: { WEFT_ASSIGN_OR_RETURN(uint8_t x, in.read<uint8_t>(context)); v.integer = x; break; }
    case GgufType::kI8: { WEFT_ASSIGN_OR_RETURN(int8_t x, in.read<int8_t>(context)); v.integer = x; break; }
    case GgufType::kU16: { WEFT_ASSIGN_OR_RETURN(uint16_t x, in.read<uint16_t>(context)); v.integer = x; break; }
    case GgufType::kI16: { WEFT_ASSIGN_OR_RETURN(int16_t x, in.read<int16_t>(context)); v.integer = x; break; }
    case GgufType::kU32: { WEFT_ASSIGN_OR_RETURN(uint32_t x, in.read<uint32_t>(context)); v.integer = x; break; }
    case GgufType::kI32: { WEFT_ASSIGN_OR_RETURN(int32_t x, in.read<int32_t>(context)); v.integer = x; break; }
    case GgufType::kI64: { WEFT_ASSIGN_OR_RETURN(int64_t x, in.read<int64_t>(context)); v.integer = x; break; }
    case GgufType::kU64: {
      WEFT_ASSIGN_OR_RETURN(uint64_t x, in.read<uint64_t>(context));
      if (x > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
        return in.error(context, absl::StrCat("u64 value ", x, " is out of range"));
      }
      v.integer = static_cast<int64_t>(x);
      break;
    }
    case GgufType::kF32: { WEFT_ASSIGN_OR_RETURN(float x, in.read<float>(context)); v.real = x; break; }
    case GgufType::kF64: { WEFT_ASSIGN_OR_RETURN(double x, in.read<double>(context)); v.real = x; break; }
    case GgufType::kBool: {
      WEFT_ASSIGN_OR_RETURN(uint8_t x, in.read<uint8_t>(context));
      if (x > 1) return in.error(context, absl::StrCat("bool value ", int{x}, " is not 0 or 1"));
      v.integer = x;
      break;
    }
    case GgufType::kString: {
      WEFT_ASSIGN_OR_RETURN(v.text, in.read_string(context, GgufFile::kMaxStringBytes));
      break;
    }
    case GgufType::kArray: return in.error(context, "arrays of arrays are not supported");
  }
  return v;
}

absl::StatusOr<GgufValue> read_value(Reader& in, GgufType type, const std::string& context) {
  if (type != GgufType::kArray) return read_scalar(in, type, context);
  GgufValue v;
  v.type = GgufType::kArray;
  WEFT_ASSIGN_OR_RETURN(v.element_type, read_type(in, context));
  WEFT_ASSIGN_OR_RETURN(uint64_t count, in.read<uint64_t>(context));
  if (count > GgufFile::kMaxArrayItems) {
    return in.error(context, absl::StrCat("an array of ", count, " items exceeds the limit of ",
                                          GgufFile::kMaxArrayItems));
  }
  if (count > in.remaining() / min_value_bytes(v.element_type)) {
    return in.error(context, absl::StrCat("an array of ", count,
                                          " items runs past the end of the file"));
  }
  v.items.reserve(count);
  for (uint64_t i = 0; i < count; ++i) {
    WEFT_ASSIGN_OR_RETURN(GgufValue item, read_scalar(in, v.element_type, context));
    v.items.push_back(std::move(item));
  }
  return v;
}

absl::StatusOr<GgufTensorInfo> read_tensor_info(Reader& in, const std::string& name) {
  const std::string context = absl::StrCat("tensor '", name, "'");
  WEFT_ASSIGN_OR_RETURN(uint32_t rank, in.read<uint32_t>(context));
  if (rank == 0 || rank > GgufFile::kMaxRank) {
    return in.error(context, absl::StrCat(rank, " dimensions (expected 1..", GgufFile::kMaxRank,
                                          ")"));
  }
  std::vector<int64_t> ne(rank);
  // The product of the non-zero dimensions must fit too: a zero dimension makes the element count
  // 0, but code that multiplies the dimensions in another order would overflow before reaching it.
  uint64_t numel = 1;
  uint64_t nonzero_product = 1;
  for (uint32_t d = 0; d < rank; ++d) {
    WEFT_ASSIGN_OR_RETURN(uint64_t n, in.read<uint64_t>(context));
    if (n > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) ||
        __builtin_mul_overflow(nonzero_product, std::max<uint64_t>(n, 1), &nonzero_product) ||
        nonzero_product > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      return in.error(context, "its element count overflows");
    }
    numel *= n;
    ne[d] = static_cast<int64_t>(n);
  }
  WEFT_ASSIGN_OR_RETURN(uint32_t ggml_type, in.read<uint32_t>(context));
  auto dtype = dtype_from_ggml(ggml_type);
  if (!dtype.ok()) return in.error(context, dtype.status().message());
  WEFT_ASSIGN_OR_RETURN(uint64_t offset, in.read<uint64_t>(context));
  GgufTensorInfo info;
  info.dtype = *dtype;
  info.shape.assign(ne.rbegin(), ne.rend());
  info.offset = offset;
  const int64_t block = dtype_block_elems(info.dtype);
  if (ne[0] % block != 0) {
    return in.error(context, absl::StrCat("its rows of ", ne[0], " elements are not whole ",
                                          dtype_name(info.dtype), " blocks of ", block));
  }
  // numel < 2^63 and block bytes <= 8 per element for plain types, <= 34/32 for blocks: no overflow.
  if (__builtin_mul_overflow(numel / block, dtype_block_bytes(info.dtype), &info.bytes)) {
    return in.error(context, "its byte size overflows");
  }
  return info;
}

}  // namespace

const char* gguf_type_name(GgufType type) {
  static const char* const kNames[] = {"u8",  "i8",     "u16",   "i16", "u32", "i32", "f32",
                                       "bool", "string", "array", "u64", "i64", "f64"};
  const auto i = static_cast<uint32_t>(type);
  return i < std::size(kNames) ? kNames[i] : "?";
}

bool GgufValue::is_integer() const {
  switch (type) {
    case GgufType::kU8: case GgufType::kI8: case GgufType::kU16: case GgufType::kI16:
    case GgufType::kU32: case GgufType::kI32: case GgufType::kU64: case GgufType::kI64:
      return true;
    default:
      return false;
  }
}

absl::StatusOr<std::shared_ptr<GgufFile>> GgufFile::open(const std::filesystem::path& path) {
  std::shared_ptr<GgufFile> self(new GgufFile());
  self->self_ = self;
  WEFT_ASSIGN_OR_RETURN(self->mapping_, MappedFile::open(path));
  Reader in(self->mapping_.data(), self->mapping_.size(), path.string());

  WEFT_ASSIGN_OR_RETURN(uint32_t magic, in.read<uint32_t>("header"));
  if (magic != kMagic) return in.error("header", "not a GGUF file (no \"GGUF\" magic)");
  WEFT_ASSIGN_OR_RETURN(self->version_, in.read<uint32_t>("header"));
  if (self->version_ != 2 && self->version_ != 3) {
    return in.error("header", absl::StrCat("GGUF version ", self->version_,
                                           " is not supported (supported: 2, 3)"));
  }
  WEFT_ASSIGN_OR_RETURN(uint64_t tensor_count, in.read<uint64_t>("header"));
  WEFT_ASSIGN_OR_RETURN(uint64_t metadata_count, in.read<uint64_t>("header"));
  if (tensor_count > kMaxTensors) {
    return in.error("header", absl::StrCat(tensor_count, " tensors exceed the limit of ",
                                           kMaxTensors));
  }
  if (metadata_count > kMaxMetadata) {
    return in.error("header", absl::StrCat(metadata_count,
                                           " metadata entries exceed the limit of ", kMaxMetadata));
  }
  // Each entry needs at least a name length and a type (metadata) or a rank, one dimension, a
  // type and an offset (tensors): a count the remaining bytes cannot hold is refused up front.
  if (metadata_count > in.remaining() / 13 || tensor_count > in.remaining() / 32) {
    return in.error("header", absl::StrCat(metadata_count, " metadata entries and ", tensor_count,
                                           " tensors cannot fit in the file"));
  }

  for (uint64_t i = 0; i < metadata_count; ++i) {
    WEFT_ASSIGN_OR_RETURN(std::string key,
                          in.read_string(absl::StrCat("metadata entry ", i), kMaxNameBytes));
    const std::string context = absl::StrCat("metadata '", key, "'");
    WEFT_ASSIGN_OR_RETURN(GgufType type, read_type(in, context));
    WEFT_ASSIGN_OR_RETURN(GgufValue value, read_value(in, type, context));
    if (!self->metadata_.emplace(key, std::move(value)).second) {
      return in.error(context, "the key appears twice");
    }
  }

  uint64_t alignment = kDefaultAlignment;
  if (const GgufValue* a = self->find("general.alignment")) {
    if (!a->is_integer() || a->integer <= 0 || a->integer > (1 << 30) ||
        (a->integer & (a->integer - 1)) != 0) {
      return in.error("metadata 'general.alignment'", "must be a power of two up to 2^30");
    }
    alignment = static_cast<uint64_t>(a->integer);
  }

  for (uint64_t i = 0; i < tensor_count; ++i) {
    WEFT_ASSIGN_OR_RETURN(std::string name,
                          in.read_string(absl::StrCat("tensor description ", i), kMaxNameBytes));
    WEFT_ASSIGN_OR_RETURN(GgufTensorInfo info, read_tensor_info(in, name));
    if (info.offset % alignment != 0) {
      return in.error(absl::StrCat("tensor '", name, "'"),
                      absl::StrCat("data offset ", info.offset, " is not a multiple of the ",
                                   alignment, "-byte alignment"));
    }
    if (!self->tensors_.emplace(name, std::move(info)).second) {
      return in.error(absl::StrCat("tensor '", name, "'"), "the name appears twice");
    }
  }

  const uint64_t end_of_infos = in.position();
  self->data_offset_ = (end_of_infos + alignment - 1) / alignment * alignment;
  const uint64_t file_size = self->mapping_.size();
  if (tensor_count > 0 && self->data_offset_ > file_size) {
    return in.error("data section", "the file ends before the tensor data begins");
  }
  const uint64_t data_size = file_size > self->data_offset_ ? file_size - self->data_offset_ : 0;
  for (const auto& [name, info] : self->tensors_) {
    if (info.offset > data_size || info.bytes > data_size - info.offset) {
      return absl::InvalidArgumentError(absl::StrCat(
          path.string(), ": tensor '", name, "': its ", info.bytes, " bytes at data offset ",
          info.offset, " lie outside the file's ", data_size, " bytes of tensor data (truncated?)"));
    }
  }
  return self;
}

const GgufValue* GgufFile::find(const std::string& key) const {
  auto it = metadata_.find(key);
  return it == metadata_.end() ? nullptr : &it->second;
}

absl::StatusOr<Tensor> GgufFile::tensor(const std::string& name) const {
  auto it = tensors_.find(name);
  if (it == tensors_.end()) {
    return absl::NotFoundError(absl::StrCat(path().string(), ": no tensor '", name, "'"));
  }
  const GgufTensorInfo& info = it->second;
  void* data = const_cast<uint8_t*>(mapping_.data() + data_offset_ + info.offset);
  return Tensor::wrap(data, info.dtype, Shape::from_dims(info.shape),
                      std::static_pointer_cast<const void>(self_.lock()));
}

bool is_gguf_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  char magic[4] = {};
  return in.read(magic, 4) && std::memcmp(magic, "GGUF", 4) == 0;
}

}  // namespace weft
