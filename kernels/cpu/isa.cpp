#include "cpu/isa.h"

#include "core/cpu_features.h"
#include "weft/kernels/cpu_isa.h"

namespace weft::kernels {
namespace cpu {

Isa current_isa() {
#if defined(__x86_64__)
  const CpuFeatures& f = cpu_features();
  if (f.avx512f && f.avx512bw && f.avx512vl && f.avx2 && f.fma && f.f16c) return Isa::kAvx512;
  if (f.avx2 && f.fma && f.f16c) return Isa::kAvx2;
#endif
  return Isa::kPortable;
}

const VecOps& vec_ops(Isa isa) {
#if defined(__x86_64__)
  switch (isa) {
    case Isa::kAvx512:
      return kVecOpsAvx512;
    case Isa::kAvx2:
      return kVecOpsAvx2;
    case Isa::kPortable:
      break;
  }
#endif
  return kVecOpsPortable;
}

}  // namespace cpu

std::string_view cpu_kernel_isa() {
  switch (cpu::current_isa()) {
    case cpu::Isa::kAvx512:
      return "avx512";
    case cpu::Isa::kAvx2:
      return "avx2";
    case cpu::Isa::kPortable:
      break;
  }
  return "portable";
}

}  // namespace weft::kernels
