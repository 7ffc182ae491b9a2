#include "core/cpu_features.h"

#if defined(__linux__)
#include <sys/syscall.h>
#include <unistd.h>
#endif


namespace weft {
namespace {

#if defined(__x86_64__) || defined(__i386__)
bool os_allows_amx_tiles() {
#if defined(__linux__) && defined(__x86_64__)
  constexpr long kArchReqXcompPerm = 0x1023;
  constexpr long kXfeatureXtiledata = 18;
  return syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) == 0;
#else
  return false;
#endif
}
#endif

CpuFeatures detect() {
  CpuFeatures f;
#if defined(__x86_64__) || defined(__i386__)
  __builtin_cpu_init();
  f.avx2 = __builtin_cpu_supports("avx2");
  f.fma = __builtin_cpu_supports("fma");
  f.avx512f = __builtin_cpu_supports("avx512f");
  f.avx512bw = __builtin_cpu_supports("avx512bw");
  f.avx512vl = __builtin_cpu_supports("avx512vl");
  f.avx512bf16 = __builtin_cpu_supports("avx512bf16");
  f.amd = __builtin_cpu_is("amd");
  // f16c, avx512fp16 and amx are not known to every compiler's __builtin_cpu_supports (gcc 12
  // lacks f16c/amx, clang 14 avx512fp16): read CPUID directly.
  unsigned a, b, c, d;
  __asm__ volatile("cpuid" : "=a"(a), "=b"(b), "=c"(c), "=d"(d) : "a"(1), "c"(0));
  f.f16c = (c >> 29) & 1u;
  __asm__ volatile("cpuid" : "=a"(a), "=b"(b), "=c"(c), "=d"(d) : "a"(7), "c"(0));
  f.avx512fp16 = f.avx512f && ((d >> 23) & 1u);
  f.avx512vnni = f.avx512f && ((c >> 11) & 1u);  // avx512f also implies OS support (XCR0)
  // AMX also needs the kernel's leave to use its 8 KiB tile state (Linux 5.16+: arch_prctl
  // ARCH_REQ_XCOMP_PERM for XFEATURE_XTILEDATA, granted to the whole process).
  f.amx_bf16 = ((d >> 22) & 1u) && ((d >> 24) & 1u) && os_allows_amx_tiles();
#endif
  return f;
}

CpuFeatures& mutable_features() {
  static CpuFeatures features = detect();
  return features;
}

}  // namespace

std::string CpuFeatures::to_string() const {
  std::string s;
  auto add = [&](bool on, const char* name) {
    if (!on) return;
    if (!s.empty()) s += ' ';
    s += name;
  };
  add(avx2, "avx2");
  add(fma, "fma");
  add(f16c, "f16c");
  add(avx512f, "avx512f");
  add(avx512bw, "avx512bw");
  add(avx512vl, "avx512vl");
  add(avx512bf16, "avx512bf16");
  add(avx512vnni, "avx512vnni");
  add(avx512fp16, "avx512fp16");
  add(amx_bf16, "amx_bf16");
  return s.empty() ? "portable" : s;
}

const CpuFeatures& cpu_features() { return mutable_features(); }

absl::Status limit_cpu_features(std::string_view isa) {
  CpuFeatures f = detect();
  if (isa == "portable") {
    f = CpuFeatures{};
  } else if (isa == "avx2") {
    f.avx512f = f.avx512bw = f.avx512vl = f.avx512bf16 = f.avx512fp16 = f.amx_bf16 = false;
    f.avx512vnni = false;
  } else if (isa == "avx512-novnni") {
    f.avx512vnni = false;
  } else if (isa == "avx512-noamx") {
    f.amx_bf16 = false;
  } else if (isa != "native") {
    return absl::InvalidArgumentError("unknown CPU ISA \"" + std::string(isa) +
                                      "\" (expected native, avx512-noamx, avx512-novnni, avx2 or portable)");
  }
  mutable_features() = f;
  return absl::OkStatus();
}

}  // namespace weft
