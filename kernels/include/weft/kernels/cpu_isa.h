// Which instruction-set path the CPU kernels take right now.
#pragma once

#include <string_view>

namespace weft::kernels {

// "avx512", "avx2" or "portable": the widest path that weft::cpu_features() allows at the moment
// of the call (weft::limit_cpu_features changes it). AVX-512 needs avx512f+bw+vl; AVX2 needs
// avx2+fma+f16c. For logs, benchmark headers and tests.
std::string_view cpu_kernel_isa();

}  // namespace weft::kernels
