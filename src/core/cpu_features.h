// Run-time CPU feature detection: kernels pick their widest supported path once.
#pragma once

#include <string>
#include <string_view>

#include "absl/status/status.h"

namespace weft {

struct CpuFeatures {
  bool avx2 = false;
  bool fma = false;
  bool f16c = false;
  bool avx512f = false;
  bool avx512bw = false;
  bool avx512vl = false;
  bool avx512bf16 = false;
  bool avx512vnni = false;  // vpdpbusd: the block-quantized linear's int8 dot products
  bool avx512fp16 = false;
  bool amx_bf16 = false;  // AMX-BF16 tiles, and the OS lets this process use them
  // The vendor is AMD. Zen 4 and later issue a 512-bit vdpbf16ps (32 BF16 multiply-adds) at the
  // rate of a 512-bit F32 FMA (16), so BF16 activations double the GEMM's arithmetic there;
  // Intel's AVX512-BF16 cores issue it at half the FMA rate (measured: no gain, see linear.h).
  bool amd = false;

  // "avx512f avx512bf16 ..." for logs and benchmark headers.
  std::string to_string() const;
};

// Detected once, on first call.
const CpuFeatures& cpu_features();

// Caps the features kernels may use: "native" (all detected), "avx512-noamx" (native without
// AMX: BF16-activation products on AVX512-BF16 instead), "avx512-novnni" (native without
// AVX512-VNNI: the AVX-512 path's fallback for int8 dot products), "avx2" (no AVX-512/AMX) or
// "portable" (scalar only). For tests and for the launcher's --cpu-isa flag; call it before the
// first kernel runs. An unknown name is an InvalidArgument.
absl::Status limit_cpu_features(std::string_view isa);

}  // namespace weft
