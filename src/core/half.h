// Scalar conversions between float and the 16-bit float formats stored in model files.
// bf16: the upper 16 bits of an IEEE float (round to nearest even on the way down).
// f16: IEEE binary16, via the compiler's _Float16 where it exists, else in integer code.
#pragma once

#include <cstdint>
#include <cstring>

namespace weft {

inline float bf16_to_float(uint16_t bits) {
  uint32_t u = static_cast<uint32_t>(bits) << 16;
  float f;
  std::memcpy(&f, &u, sizeof(f));
  return f;
}

inline uint16_t float_to_bf16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof(u));
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((u >> 16) | 0x40u);  // NaN
  u += 0x7fffu + ((u >> 16) & 1u);
  return static_cast<uint16_t>(u >> 16);
}

#if defined(__FLT16_MAX__)  // the compiler has _Float16 (GCC; clang 15+ on x86)

inline float f16_to_float(uint16_t bits) {
  _Float16 h;
  std::memcpy(&h, &bits, sizeof(h));
  return static_cast<float>(h);
}

inline uint16_t float_to_f16(float f) {
  _Float16 h = static_cast<_Float16>(f);
  uint16_t bits;
  std::memcpy(&bits, &h, sizeof(bits));
  return bits;
}

#else  // e.g. clang 14, which builds the fuzz targets: the same conversions in integer code

inline float f16_to_float(uint16_t bits) {
  const uint32_t sign = static_cast<uint32_t>(bits & 0x8000u) << 16;
  const uint32_t exp = (bits >> 10) & 0x1fu, mant = bits & 0x3ffu;
  float f;
  if (exp == 0) {  // zero or subnormal: mant * 2^-24
    f = static_cast<float>(mant) * 5.9604644775390625e-8f;
    return sign ? -f : f;
  }
  const uint32_t u = exp == 31 ? sign | 0x7f800000u | (mant << 13)            // inf / NaN
                               : sign | ((exp + 112) << 23) | (mant << 13);  // 127 - 15
  std::memcpy(&f, &u, sizeof(f));
  return f;
}

// Round to nearest even, overflow to infinity, as a hardware conversion does.
inline uint16_t float_to_f16(float f) {
  uint32_t x;
  std::memcpy(&x, &f, sizeof(x));
  const uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000u);
  x &= 0x7fffffffu;
  if (x > 0x7f800000u) return sign | 0x7e00u;   // NaN
  if (x >= 0x47800000u) return sign | 0x7c00u;  // >= 2^16 (and inf): infinity
  if (x < 0x38800000u) {  // below 2^-14: a subnormal (or zero) in units of 2^-24
    float a;
    std::memcpy(&a, &x, sizeof(a));
    const float units = a * 16777216.0f;  // exact: a power of two
    uint32_t r = static_cast<uint32_t>(units);
    const float rest = units - static_cast<float>(r);
    if (rest > 0.5f || (rest == 0.5f && (r & 1u))) ++r;
    return static_cast<uint16_t>(sign | r);  // r == 0x400 is the smallest normal, as it should be
  }
  uint32_t h = ((((x >> 23) - 112u) << 10) | ((x & 0x7fffffu) >> 13));
  const uint32_t rem = x & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) ++h;  // a carry into the exponent is right
  return static_cast<uint16_t>(sign | h);
}

#endif

}  // namespace weft
