#include "model/safetensors.h"

#include <cstring>
#include <random>

#include "core/half.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "model_test_util.h"

namespace weft {
namespace {

using ::testing::HasSubstr;
using testing::read_bytes;
using testing::safetensors_bytes;
using testing::TempDir;
using testing::write_bytes;

// Opens `bytes` written to a file and returns the error (the test fails if it opened).
absl::Status open_error(const TempDir& dir, const std::string& bytes,
                        std::string* path_out = nullptr) {
  const std::filesystem::path path = dir / "bad.safetensors";
  write_bytes(path, bytes);
  if (path_out) *path_out = path.string();
  auto file = SafetensorsFile::open(path);
  EXPECT_FALSE(file.ok()) << "opened a bad file: " << bytes.substr(8);
  return file.ok() ? absl::OkStatus() : file.status();
}

// f32 tensor "w" of shape [2, 2] with its 16 bytes of data.
const char kGoodHeader[] = R"({"w":{"dtype":"F32","shape":[2,2],"data_offsets":[0,16]}})";
const std::string kSixteenBytes(16, '\1');

TEST(SafetensorsTest, ReadsFileWrittenByReferenceLibrary) {
  auto file = SafetensorsFile::open(std::string(WEFT_SOURCE_DIR) +
                                    "/tests/unit/model/fixtures/reference.safetensors");
  ASSERT_TRUE(file.ok()) << file.status();
  EXPECT_EQ((*file)->entries().size(), 8u);

  auto f32 = (*file)->tensor("f32");
  ASSERT_TRUE(f32.ok()) << f32.status();
  EXPECT_EQ(f32->dtype(), DType::kF32);
  EXPECT_EQ(f32->shape(), (Shape{2, 3, 4}));
  for (int i = 0; i < 24; ++i) EXPECT_EQ(f32->data_as<float>()[i], i * 0.25f - 3) << i;

  auto f16 = (*file)->tensor("f16");
  ASSERT_TRUE(f16.ok());
  EXPECT_EQ(f16->shape(), (Shape{5, 6}));
  for (int i = 0; i < 30; ++i)
    EXPECT_EQ(f16_to_float(f16->data_as<uint16_t>()[i]), i * 0.25f - 3) << i;

  auto bf16 = (*file)->tensor("bf16");
  ASSERT_TRUE(bf16.ok());
  EXPECT_EQ(bf16->shape(), (Shape{7}));
  for (int i = 0; i < 7; ++i)
    EXPECT_EQ(bf16_to_float(bf16->data_as<uint16_t>()[i]), i * 0.25f - 3) << i;

  auto i64 = (*file)->tensor("i64");
  ASSERT_TRUE(i64.ok());
  for (int i = 0; i < 4; ++i) {
    int64_t v;
    std::memcpy(&v, i64->data_as<char>() + 8 * i, 8);
    EXPECT_EQ(v, i * 1000000000000LL - 7);
  }
  auto i32 = (*file)->tensor("i32");
  ASSERT_TRUE(i32.ok());
  EXPECT_EQ(i32->data_as<int32_t>()[2], -3);

  auto scalar = (*file)->tensor("scalar");
  ASSERT_TRUE(scalar.ok());
  EXPECT_EQ(scalar->shape().rank(), 0);
  EXPECT_EQ(*scalar->data_as<float>(), 1.5f);

  auto empty = (*file)->tensor("empty");
  ASSERT_TRUE(empty.ok());
  EXPECT_EQ(empty->shape(), (Shape{0, 3}));
  EXPECT_EQ(empty->numel(), 0);

  auto rank4 = (*file)->tensor("model.layers.0.weight");
  ASSERT_TRUE(rank4.ok());
  EXPECT_EQ(rank4->shape(), (Shape{1, 2, 3, 4}));
  EXPECT_EQ(rank4->data_as<float>()[23], 23 * 0.25f - 3);
}

TEST(SafetensorsTest, RoundTripF32F16BF16IsZeroCopyAndKeepsMappingAlive) {
  TempDir dir;
  Tensor f32 = Tensor::zeros(DType::kF32, Shape{3, 5});
  Tensor f16 = Tensor::zeros(DType::kF16, Shape{4});
  Tensor bf16 = Tensor::zeros(DType::kBF16, Shape{2, 3, 2});
  Tensor i64 = Tensor::zeros(DType::kI64, Shape{2});
  for (int i = 0; i < 15; ++i) f32.data_as<float>()[i] = 0.5f * i - 1.0f;
  for (int i = 0; i < 4; ++i) f16.data_as<uint16_t>()[i] = float_to_f16(-2.0f + i);
  for (int i = 0; i < 12; ++i) bf16.data_as<uint16_t>()[i] = float_to_bf16(i * 1.5f);
  i64.data_as<int64_t>()[1] = -(1LL << 40);
  const std::filesystem::path path = dir / "m.safetensors";
  ASSERT_TRUE(
      write_safetensors(path, {{"a.f32", f32}, {"b.f16", f16}, {"c.bf16", bf16}, {"d.i64", i64}})
          .ok());

  // Header length is a multiple of 8, so the data section starts 8-aligned.
  const std::string bytes = read_bytes(path);
  uint64_t header_len = 0;
  std::memcpy(&header_len, bytes.data(), 8);
  EXPECT_EQ(header_len % 8, 0u);
  EXPECT_EQ(bytes.size(), 8 + header_len + 60 + 8 + 24 + 16);

  Tensor read_back;
  {
    auto file = SafetensorsFile::open(path);
    ASSERT_TRUE(file.ok()) << file.status();
    EXPECT_TRUE((*file)->contains("c.bf16"));
    EXPECT_FALSE((*file)->contains("missing"));
    auto a = (*file)->tensor("a.f32");
    auto again = (*file)->tensor("a.f32");
    ASSERT_TRUE(a.ok() && again.ok());
    EXPECT_EQ(a->data(), again->data());  // a view of the mapping, not a copy
    EXPECT_EQ(a->shape(), (Shape{3, 5}));
    EXPECT_EQ(std::memcmp(a->data(), f32.data(), f32.nbytes()), 0);
    auto b = (*file)->tensor("b.f16");
    auto c = (*file)->tensor("c.bf16");
    auto d = (*file)->tensor("d.i64");
    ASSERT_TRUE(b.ok() && c.ok() && d.ok());
    EXPECT_EQ(std::memcmp(b->data(), f16.data(), f16.nbytes()), 0);
    EXPECT_EQ(std::memcmp(c->data(), bf16.data(), bf16.nbytes()), 0);
    EXPECT_EQ(c->shape(), (Shape{2, 3, 2}));
    EXPECT_EQ(d->data_as<int64_t>()[1], -(1LL << 40));
    read_back = *c;
    auto missing = (*file)->tensor("zzz");
    EXPECT_THAT(missing.status().message(), HasSubstr("no tensor 'zzz'"));
    EXPECT_THAT(missing.status().message(), HasSubstr(path.string()));
  }
  // The file object is gone; the tensor's keep_alive still holds the mapping.
  EXPECT_EQ(bf16_to_float(read_back.data_as<uint16_t>()[11]), 16.5f);
}

TEST(SafetensorsTest, AcceptsMetadataOfStrings) {
  TempDir dir;
  write_bytes(
      dir / "m.safetensors",
      safetensors_bytes(
          R"({"__metadata__":{"format":"pt"},"w":{"dtype":"F32","shape":[2,2],"data_offsets":[0,16]}})",
          kSixteenBytes));
  auto file = SafetensorsFile::open(dir / "m.safetensors");
  ASSERT_TRUE(file.ok()) << file.status();
  EXPECT_EQ((*file)->entries().size(), 1u);
}

// Regression (UBSan, scripts/sanitize.sh): the format allows any data offset; a tensor that is
// not aligned to its element size must not come back as a misaligned view.
TEST(SafetensorsTest, MisalignedTensorIsReturnedAsAlignedCopy) {
  TempDir dir;
  std::string header = R"({"u":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},)"
                       R"("i":{"dtype":"I64","shape":[1],"data_offsets":[1,9]}})";
  header.append((8 - header.size() % 8) % 8, ' ');  // the data section starts 8-aligned
  std::string data(16, '\0');
  const int64_t value = -(1LL << 40);
  std::memcpy(data.data() + 1, &value, 8);
  write_bytes(dir / "m.safetensors", safetensors_bytes(header, data));
  auto file = SafetensorsFile::open(dir / "m.safetensors");
  ASSERT_TRUE(file.ok()) << file.status();
  auto t = (*file)->tensor("i");
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(reinterpret_cast<uintptr_t>(t->data()) % alignof(int64_t), 0u);
  EXPECT_EQ(t->data_as<int64_t>()[0], value);
}

// Header with `count` zero-size F32 tensors "t0", "t1", ...
std::string many_tensors_header(size_t count) {
  std::string header = "{";
  for (size_t i = 0; i < count; ++i) {
    if (i) header += ',';
    header += "\"t" + std::to_string(i) + "\":{\"dtype\":\"F32\",\"shape\":[0],\"data_offsets\":[0,0]}";
  }
  return header + "}";
}

// Regression (issue 18): a header of 65,536 zero-size tensors took 38 s to open (nlohmann's
// callback parser is quadratic in the members of an object of objects), and the tensor limit was
// checked only after the whole parse. At the limit it now opens in linear time (the ctest timeout
// catches a regression), and one past it is refused while parsing.
TEST(SafetensorsErrorTest, TensorCountLimitIsReachedInLinearTime) {
  TempDir dir;
  const std::filesystem::path path = dir / "many.safetensors";
  write_bytes(path, safetensors_bytes(many_tensors_header(SafetensorsFile::kMaxTensors), ""));
  auto file = SafetensorsFile::open(path);
  ASSERT_TRUE(file.ok()) << file.status();
  EXPECT_EQ((*file)->entries().size(), SafetensorsFile::kMaxTensors);
  absl::Status status =
      open_error(dir, safetensors_bytes(many_tensors_header(SafetensorsFile::kMaxTensors + 2), ""));
  EXPECT_THAT(status.message(), HasSubstr("more than 1048577 members"));
}

// Regression: a deeply nested value used to overflow the stack when the error message dumped it
// (nlohmann's dump and copy recurse); the header parser now refuses deep nesting up front.
TEST(SafetensorsErrorTest, DeeplyNestedHeader) {
  TempDir dir;
  const int depth = 200000;
  const std::string header = R"({"w":{"dtype":"F32","shape":[1],"data_offsets":)" +
                             std::string(depth, '[') + std::string(depth, ']') + "}}";
  std::string path;
  absl::Status status = open_error(dir, safetensors_bytes(header, kSixteenBytes), &path);
  EXPECT_THAT(status.message(), HasSubstr("nested deeper than 128"));
  EXPECT_THAT(status.message(), HasSubstr(path));
}

TEST(SafetensorsErrorTest, TruncatedFile) {
  TempDir dir;
  std::string path;
  const absl::Status status = open_error(dir, std::string("\x10\0\0", 3), &path);
  EXPECT_THAT(status.message(), HasSubstr(path));
  EXPECT_THAT(status.message(), HasSubstr("shorter than the 8-byte header length"));
}

TEST(SafetensorsErrorTest, MissingFile) {
  TempDir dir;
  auto file = SafetensorsFile::open(dir / "absent.safetensors");
  ASSERT_FALSE(file.ok());
  EXPECT_THAT(file.status().message(), HasSubstr("absent.safetensors"));
}

TEST(SafetensorsErrorTest, HeaderLengthPastEnd) {
  TempDir dir;
  std::string path;
  const absl::Status status =
      open_error(dir, safetensors_bytes(kGoodHeader, kSixteenBytes, 4096), &path);
  EXPECT_THAT(status.message(), HasSubstr(path));
  EXPECT_THAT(status.message(), HasSubstr("header length 4096 runs past the end of the file"));
}

TEST(SafetensorsErrorTest, HeaderTooLarge) {
  TempDir dir;
  std::string path;
  const absl::Status status =
      open_error(dir, safetensors_bytes(kGoodHeader, kSixteenBytes, (100ll << 20) + 1), &path);
  EXPECT_THAT(status.message(), HasSubstr(path));
  EXPECT_THAT(status.message(), HasSubstr("exceeds the limit of 104857600 bytes"));
  const absl::Status huge =
      open_error(dir, safetensors_bytes(kGoodHeader, kSixteenBytes, INT64_MAX));
  EXPECT_THAT(huge.message(), HasSubstr("exceeds the limit"));
}

TEST(SafetensorsErrorTest, InvalidJson) {
  TempDir dir;
  std::string path;
  absl::Status status = open_error(dir, safetensors_bytes(R"({"w":{"dtype":"F32",)", ""), &path);
  EXPECT_THAT(status.message(), HasSubstr(path));
  EXPECT_THAT(status.message(), HasSubstr("not valid JSON"));
  status = open_error(dir, safetensors_bytes(R"(["w"])", ""));
  EXPECT_THAT(status.message(), HasSubstr("header must be a JSON object, got array"));
  status = open_error(dir, safetensors_bytes("", ""));
  EXPECT_THAT(status.message(), HasSubstr("not valid JSON"));
}

TEST(SafetensorsErrorTest, OffsetsOutOfRange) {
  TempDir dir;
  std::string path;
  const absl::Status status =
      open_error(dir,
                 safetensors_bytes(R"({"w":{"dtype":"F32","shape":[4,4],"data_offsets":[0,64]}})",
                                   kSixteenBytes),
                 &path);
  EXPECT_THAT(status.message(), HasSubstr(path + ": tensor 'w'"));
  EXPECT_THAT(status.message(),
              HasSubstr("data_offsets [0, 64] run past the data section (16 bytes)"));
}

TEST(SafetensorsErrorTest, BeginAfterEnd) {
  TempDir dir;
  const absl::Status status = open_error(
      dir,
      safetensors_bytes(R"({"w":{"dtype":"U8","shape":[0],"data_offsets":[8,4]}})", kSixteenBytes));
  EXPECT_THAT(status.message(), HasSubstr("tensor 'w': data_offsets [8, 4] has begin > end"));
}

TEST(SafetensorsErrorTest, OverlappingOffsets) {
  TempDir dir;
  std::string path;
  const absl::Status status =
      open_error(dir,
                 safetensors_bytes(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                                   R"("b":{"dtype":"F32","shape":[3],"data_offsets":[4,16]}})",
                                   kSixteenBytes),
                 &path);
  EXPECT_THAT(status.message(), HasSubstr(path + ": tensor 'b'"));
  EXPECT_THAT(status.message(), HasSubstr("overlap tensor 'a' [0, 8]"));

  // A long range swallowing two later, mutually disjoint ones is still caught.
  const absl::Status nested =
      open_error(dir, safetensors_bytes(R"({"a":{"dtype":"U8","shape":[4],"data_offsets":[0,4]},)"
                                        R"("b":{"dtype":"U8","shape":[12],"data_offsets":[4,16]},)"
                                        R"("c":{"dtype":"U8","shape":[2],"data_offsets":[6,8]}})",
                                        kSixteenBytes));
  EXPECT_THAT(nested.message(), HasSubstr("tensor 'c' data_offsets [6, 8] overlap tensor 'b'"));
}

TEST(SafetensorsErrorTest, SizeMismatch) {
  TempDir dir;
  const absl::Status status = open_error(
      dir, safetensors_bytes(R"({"w":{"dtype":"F16","shape":[2,2],"data_offsets":[0,16]}})",
                             kSixteenBytes));
  EXPECT_THAT(status.message(), HasSubstr("tensor 'w'"));
  EXPECT_THAT(status.message(), HasSubstr("hold 16 bytes, but shape [2, 2] of F16 needs 8"));
  const absl::Status overflow = open_error(
      dir, safetensors_bytes(
               R"({"w":{"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,16]}})",
               kSixteenBytes));
  EXPECT_THAT(overflow.message(), HasSubstr("needs more than 2^64"));
}

TEST(SafetensorsErrorTest, DuplicateTensorNames) {
  TempDir dir;
  std::string path;
  const absl::Status status =
      open_error(dir,
                 safetensors_bytes(R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                                   R"("w":{"dtype":"F32","shape":[2],"data_offsets":[8,16]}})",
                                   kSixteenBytes),
                 &path);
  EXPECT_THAT(status.message(), HasSubstr(path));
  EXPECT_THAT(status.message(), HasSubstr("duplicate key 'w'"));
}

TEST(SafetensorsErrorTest, UnsupportedDtype) {
  TempDir dir;
  std::string path;
  const absl::Status status =
      open_error(dir,
                 safetensors_bytes(R"({"w":{"dtype":"F64","shape":[2],"data_offsets":[0,16]}})",
                                   kSixteenBytes),
                 &path);
  EXPECT_THAT(status.message(), HasSubstr(path + ": tensor 'w'"));
  EXPECT_THAT(status.message(), HasSubstr("unsupported safetensors dtype \"F64\""));
}

TEST(SafetensorsErrorTest, MalformedEntries) {
  TempDir dir;
  const std::vector<std::pair<std::string, std::string>> cases = {
      {R"({"w":{"shape":[4],"data_offsets":[0,16]}})", "tensor 'w': missing 'dtype'"},
      {R"({"w":{"dtype":"F32","data_offsets":[0,16]}})", "tensor 'w': missing 'shape'"},
      {R"({"w":{"dtype":"F32","shape":[4]}})", "tensor 'w': missing 'data_offsets'"},
      {R"({"w":{"dtype":7,"shape":[4],"data_offsets":[0,16]}})",
       "'dtype' must be a string, got integer"},
      {R"({"w":{"dtype":"F32","shape":"4","data_offsets":[0,16]}})",
       "'shape' must be a list of integers"},
      {R"({"w":{"dtype":"F32","shape":[4.0],"data_offsets":[0,16]}})",
       "'shape' must be a list of integers"},
      {R"({"w":{"dtype":"F32","shape":[-4],"data_offsets":[0,16]}})", "negative dimension -4"},
      {R"({"w":{"dtype":"F32","shape":[1,1,1,1,4],"data_offsets":[0,16]}})", "rank 5 exceeds"},
      {R"({"w":{"dtype":"F32","shape":[4],"data_offsets":[0]}})",
       "'data_offsets' must be a list of two"},
      {R"({"w":{"dtype":"F32","shape":[4],"data_offsets":[-1,15]}})",
       "'data_offsets' must be a list of two"},
      {R"({"w":[1,2]})", "tensor 'w': entry must be an object, got array"},
      {R"({"__metadata__":{"n":1},"w":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}})",
       "'__metadata__' value of 'n' must be a string"},
      {R"({"__metadata__":[],"w":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}})",
       "'__metadata__' must be an object"},
  };
  for (const auto& [header, expected] : cases) {
    SCOPED_TRACE(header);
    std::string path;
    const absl::Status status = open_error(dir, safetensors_bytes(header, kSixteenBytes), &path);
    EXPECT_THAT(status.message(), HasSubstr(path));
    EXPECT_THAT(status.message(), HasSubstr(expected));
  }
}

// Opening arbitrary corruptions of a valid file returns a status and never reads outside the
// mapping (run under -DWEFT_SANITIZE=address to make out-of-bounds reads fail loudly).
TEST(SafetensorsRobustnessTest, MutatedBytesNeverCrash) {
  TempDir dir;
  Tensor a = Tensor::zeros(DType::kF32, Shape{3, 4});
  Tensor b = Tensor::zeros(DType::kBF16, Shape{5});
  Tensor c = Tensor::zeros(DType::kI64, Shape{2, 1, 2});
  ASSERT_TRUE(write_safetensors(dir / "valid.safetensors", {{"a", a}, {"b", b}, {"c", c}}).ok());
  const std::string valid = read_bytes(dir / "valid.safetensors");
  std::mt19937 rng(20240611);
  const std::string kInteresting = "{}[]\":,0123456789-eE. \\\x80\xff\x00";
  int opened = 0, rejected = 0;
  for (int iteration = 0; iteration < 3000; ++iteration) {
    std::string bytes = valid;
    const int edits = 1 + static_cast<int>(rng() % 4);
    for (int e = 0; e < edits; ++e) {
      const size_t pos = rng() % bytes.size();
      switch (rng() % 5) {
        case 0:
          bytes[pos] = static_cast<char>(rng());
          break;
        case 1:
          bytes[pos] = kInteresting[rng() % kInteresting.size()];
          break;
        case 2:
          bytes.resize(pos);
          break;
        case 3:
          bytes.insert(pos, 1, kInteresting[rng() % kInteresting.size()]);
          break;
        case 4:  // the length prefix
          bytes[pos % 8] = static_cast<char>(rng());
          break;
      }
      if (bytes.empty()) break;
    }
    // A fresh file each time: rewriting a truncated file makes ext4 flush it on close (slow).
    const std::filesystem::path path =
        dir / (iteration % 2 == 0 ? "m0.safetensors" : "m1.safetensors");
    std::filesystem::remove(path);
    write_bytes(path, bytes);
    auto file = SafetensorsFile::open(path);
    if (!file.ok()) {
      ++rejected;
      EXPECT_FALSE(file.status().message().empty());
      continue;
    }
    ++opened;
    for (const auto& [name, entry] : (*file)->entries()) {
      auto tensor = (*file)->tensor(name);
      ASSERT_TRUE(tensor.ok()) << tensor.status();
      // Touch every byte the entry claims; an unchecked offset would fault here.
      volatile unsigned char sink = 0;
      for (size_t i = 0; i < tensor->nbytes(); ++i)
        sink = sink ^ tensor->data_as<unsigned char>()[i];
    }
  }
  EXPECT_GT(rejected, 1000);
  EXPECT_GT(opened, 0);
  RecordProperty("opened", opened);
  RecordProperty("rejected", rejected);
}

}  // namespace
}  // namespace weft
