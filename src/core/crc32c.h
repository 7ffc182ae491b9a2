// CRC-32C (Castagnoli polynomial, as iSCSI, ext4 and LevelDB use it) of a byte range: the SSE4.2
// crc32 instruction where the CPU has it, else a table. crc32c("123456789") == 0xE3069283.
#pragma once

#include <cstddef>
#include <cstdint>

namespace weft {

// Extends `crc` (0 to start) over `data`.
uint32_t crc32c(const void* data, size_t size, uint32_t crc = 0);

}  // namespace weft
