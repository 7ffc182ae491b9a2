#include "core/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"

namespace weft {

absl::StatusOr<MappedFile> MappedFile::open(const std::filesystem::path& path) {
  const std::string file = path.string();
  const int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    return absl::NotFoundError(absl::StrCat("cannot open ", file, ": ", std::strerror(errno)));
  }
  struct stat st {};
  if (fstat(fd, &st) != 0) {
    const std::string error = std::strerror(errno);
    ::close(fd);
    return absl::InternalError(absl::StrCat("cannot stat ", file, ": ", error));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    return absl::InvalidArgumentError(absl::StrCat(file, ": not a regular file"));
  }
  MappedFile mapped;
  mapped.path_ = path;
  mapped.size_ = static_cast<size_t>(st.st_size);
  if (mapped.size_ > 0) {
    void* map = mmap(nullptr, mapped.size_, PROT_READ, MAP_PRIVATE, fd, 0);
    const std::string error = std::strerror(errno);
    if (map == MAP_FAILED) {
      ::close(fd);
      return absl::InternalError(absl::StrCat("cannot mmap ", file, ": ", error));
    }
    mapped.data_ = static_cast<const uint8_t*>(map);
  }
  ::close(fd);
  return mapped;
}

MappedFile::MappedFile(MappedFile&& other) noexcept
    : path_(std::move(other.path_)),
      data_(std::exchange(other.data_, nullptr)),
      size_(std::exchange(other.size_, 0)) {}

MappedFile& MappedFile::operator=(MappedFile&& other) noexcept {
  if (this != &other) {
    if (data_ != nullptr) munmap(const_cast<uint8_t*>(data_), size_);
    path_ = std::move(other.path_);
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
  }
  return *this;
}

MappedFile::~MappedFile() {
  if (data_ != nullptr) munmap(const_cast<uint8_t*>(data_), size_);
}

bool MappedFile::holds(const void* data, size_t bytes) const {
  const uint8_t* begin = static_cast<const uint8_t*>(data);
  return data_ != nullptr && begin >= data_ && bytes <= size_ &&
         begin - data_ <= static_cast<ptrdiff_t>(size_ - bytes);
}

bool MappedFile::release_pages(const void* data, size_t bytes) const {
  if (!holds(data, bytes)) return false;
  const uint8_t* begin = static_cast<const uint8_t*>(data);
  const uintptr_t page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  const uintptr_t first = (reinterpret_cast<uintptr_t>(begin) + page - 1) / page * page;
  const uintptr_t last = (reinterpret_cast<uintptr_t>(begin) + bytes) / page * page;
  // MADV_DONTNEED on a read-only private file mapping (never written, so no private copies):
  // the pages leave the resident set and refault from the file's page cache if read again.
  if (last > first) madvise(reinterpret_cast<void*>(first), last - first, MADV_DONTNEED);
  return true;
}

}  // namespace weft
