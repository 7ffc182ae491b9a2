// The CUDA elementwise kernels against their CPU twins (kernels/include/weft/kernels/*.h) over
// many shapes, in F32, F16 and BF16. Inputs are drawn already representable in the tested dtype,
// so the CPU twin (F32) and the GPU kernel see the same values; the GPU result is then one
// rounding to the dtype away from an F32 computation, and tolerances say how far that is.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <vector>

#include "core/tensor.h"
#include "core/thread_pool.h"
#include "cuda_ops_test_util.h"
#include "model/rope.h"
#include "weft/kernels/activation.h"
#include "weft/kernels/attention.h"
#include "weft/kernels/cuda/activation.h"
#include "weft/kernels/cuda/embedding.h"
#include "weft/kernels/cuda/norm.h"
#include "weft/kernels/cuda/rope_kv_cache.h"
#include "weft/kernels/cuda_device.h"
#include "weft/kernels/embedding.h"
#include "weft/kernels/norm.h"
#include "weft/kernels/rope.h"

namespace weft {
namespace {

using kernels::cuda::DeviceBuffer;
using test::HostArray;

constexpr DType kActDTypes[] = {DType::kF32, DType::kF16, DType::kBF16};

TensorView view(void* data, DType dtype, Shape shape) {
  TensorView v;
  v.data = data;
  v.dtype = dtype;
  v.shape = shape;
  return v;
}

// |gpu - ref| <= rel * |ref| + abs: `rel` covers the final rounding to the dtype (half an ulp,
// doubled for the F32 differences before it: summation order, expf / sincosf vs libm ulps).
::testing::AssertionResult close(float gpu, float ref, float rel, float abs_tol) {
  if (std::fabs(gpu - ref) <= rel * std::fabs(ref) + abs_tol) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "gpu " << gpu << " vs cpu " << ref;
}

class CudaOpsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (kernels::cuda_device_count() == 0) GTEST_SKIP() << "no CUDA GPU";
  }
  ThreadPool pool_{2};
  std::mt19937 rng_{1234};
};

TEST_F(CudaOpsTest, EmbeddingGatherMatchesCpu) {
  for (DType dt : kActDTypes) {
    for (bool f32_out : {false, true}) {
      for (int64_t hidden : {1, 7, 64, 130, 4096}) {
        for (int64_t vocab_start : {0, 100}) {
          const int64_t rows = 300, tokens = 37;
          SCOPED_TRACE(testing::Message() << dtype_name(dt) << " f32_out=" << f32_out
                                          << " hidden=" << hidden << " start=" << vocab_start);
          HostArray table = test::random_array(dt, rows * hidden, -2.0f, 2.0f, rng_);
          std::uniform_int_distribution<int32_t> id_dist(0, 450);  // some ids outside the shard
          std::vector<int32_t> ids(tokens);
          for (auto& id : ids) id = id_dist(rng_);
          std::vector<float> ref(tokens * hidden);
          kernels::embedding_lookup(view(table.data(), dt, {rows, hidden}),
                                    view(ids.data(), DType::kI32, {tokens}), vocab_start,
                                    view(ref.data(), DType::kF32, {tokens, hidden}), pool_);
          const DType out_dt = f32_out ? DType::kF32 : dt;
          DeviceBuffer d_table = test::upload(table), d_ids = test::upload(ids);
          DeviceBuffer d_out = test::device_zeros(tokens * hidden * dtype_size(out_dt));
          ASSERT_TRUE(kernels::cuda::embedding_gather(d_table.data(), dt, rows, hidden,
                                                      d_ids.as<int32_t>(), tokens, vocab_start,
                                                      d_out.data(), out_dt, nullptr)
                          .ok());
          test::sync_device();
          const HostArray out = test::download(d_out, out_dt, tokens * hidden);
          // A gather is a copy: exact.
          for (int64_t i = 0; i < tokens * hidden; ++i) ASSERT_EQ(out.get(i), ref[i]) << i;
        }
      }
    }
  }
}

TEST_F(CudaOpsTest, RmsNormMatchesCpu) {
  for (DType dt : kActDTypes) {
    for (DType wdt : {dt, DType::kF32}) {
      for (int64_t hidden : {1, 8, 100, 128, 1000, 4096, 5123}) {
        for (int64_t rows : {1, 3, 17}) {
          for (int misalign : {0, 1}) {  // an odd element offset forces the scalar path
            SCOPED_TRACE(testing::Message() << dtype_name(dt) << "/" << dtype_name(wdt)
                                            << " hidden=" << hidden << " rows=" << rows
                                            << " misalign=" << misalign);
            const int64_t n = rows * hidden;
            HostArray x = test::random_array(dt, n + misalign, -3.0f, 3.0f, rng_);
            HostArray w = test::random_array(wdt, hidden, 0.5f, 1.5f, rng_);
            std::vector<float> xf = x.to_floats();
            xf.erase(xf.begin(), xf.begin() + misalign);
            std::vector<float> ref(n);
            const std::vector<float> wf = w.to_floats();
            kernels::rms_norm(view(xf.data(), DType::kF32, {rows, hidden}),
                              view(const_cast<float*>(wf.data()), DType::kF32, {hidden}), 1e-6f,
                              view(ref.data(), DType::kF32, {rows, hidden}), pool_);
            DeviceBuffer d_x = test::upload(x), d_w = test::upload(w);
            DeviceBuffer d_out = test::device_zeros((n + misalign) * dtype_size(dt));
            char* xp = static_cast<char*>(d_x.data()) + misalign * dtype_size(dt);
            char* op = static_cast<char*>(d_out.data()) + misalign * dtype_size(dt);
            ASSERT_TRUE(kernels::cuda::rms_norm(xp, d_w.data(), op, rows, hidden, 1e-6f, dt, wdt,
                                                nullptr)
                            .ok());
            test::sync_device();
            const HostArray out = test::download(d_out, dt, n + misalign);
            const float rel = 2.0f * test::unit_roundoff(dt) + 1e-5f;
            for (int64_t i = 0; i < n; ++i) {
              ASSERT_TRUE(close(out.get(i + misalign), ref[i], rel, 1e-6f)) << i;
            }
          }
        }
      }
    }
  }
}

TEST_F(CudaOpsTest, RmsNormInPlace) {
  const int64_t rows = 5, hidden = 256;
  const DType dt = DType::kBF16;
  HostArray x = test::random_array(dt, rows * hidden, -3.0f, 3.0f, rng_);
  HostArray w = test::random_array(dt, hidden, 0.5f, 1.5f, rng_);
  std::vector<float> ref(rows * hidden), xf = x.to_floats(), wf = w.to_floats();
  kernels::rms_norm(view(xf.data(), DType::kF32, {rows, hidden}),
                    view(wf.data(), DType::kF32, {hidden}), 1e-5f,
                    view(ref.data(), DType::kF32, {rows, hidden}), pool_);
  DeviceBuffer d_x = test::upload(x), d_w = test::upload(w);
  ASSERT_TRUE(kernels::cuda::rms_norm(d_x.data(), d_w.data(), d_x.data(), rows, hidden, 1e-5f, dt,
                                      dt, nullptr)
                  .ok());
  test::sync_device();
  const HostArray out = test::download(d_x, dt, rows * hidden);
  for (int64_t i = 0; i < rows * hidden; ++i) {
    ASSERT_TRUE(close(out.get(i), ref[i], 2.0f * test::unit_roundoff(dt) + 1e-5f, 1e-6f)) << i;
  }
}

// residual = round(residual + x) (exact rounding of the F32 sum: compared bit for bit), and
// out = rms_norm(residual) as the CPU computes it from that stored residual. For F32 the whole
// result is also compared with the CPU's fused add_rms_norm.
TEST_F(CudaOpsTest, AddRmsNormMatchesCpu) {
  for (DType dt : kActDTypes) {
    for (int64_t hidden : {3, 64, 1000, 4096}) {
      for (int64_t rows : {1, 7}) {
        SCOPED_TRACE(testing::Message() << dtype_name(dt) << " hidden=" << hidden
                                        << " rows=" << rows);
        const int64_t n = rows * hidden;
        HostArray res = test::random_array(dt, n, -4.0f, 4.0f, rng_);
        HostArray x = test::random_array(dt, n, -1.0f, 1.0f, rng_);
        HostArray w = test::random_array(dt, hidden, 0.5f, 1.5f, rng_);
        std::vector<float> res_ref(n), ref(n);
        for (int64_t i = 0; i < n; ++i) res_ref[i] = test::round_to(dt, res.get(i) + x.get(i));
        std::vector<float> wf = w.to_floats();
        kernels::rms_norm(view(res_ref.data(), DType::kF32, {rows, hidden}),
                          view(wf.data(), DType::kF32, {hidden}), 1e-6f,
                          view(ref.data(), DType::kF32, {rows, hidden}), pool_);
        if (dt == DType::kF32) {
          std::vector<float> r2 = res.to_floats(), x2 = x.to_floats(), o2(n);
          kernels::add_rms_norm(view(r2.data(), DType::kF32, {rows, hidden}),
                                view(x2.data(), DType::kF32, {rows, hidden}),
                                view(wf.data(), DType::kF32, {hidden}), 1e-6f,
                                view(o2.data(), DType::kF32, {rows, hidden}), pool_);
          EXPECT_EQ(r2, res_ref);
          for (int64_t i = 0; i < n; ++i) ASSERT_TRUE(close(o2[i], ref[i], 1e-6f, 1e-7f));
        }
        DeviceBuffer d_res = test::upload(res), d_x = test::upload(x), d_w = test::upload(w);
        DeviceBuffer d_out = test::device_zeros(n * dtype_size(dt));
        ASSERT_TRUE(kernels::cuda::add_rms_norm(d_res.data(), d_x.data(), d_w.data(),
                                                d_out.data(), rows, hidden, 1e-6f, dt, dt,
                                                nullptr)
                        .ok());
        test::sync_device();
        const HostArray out = test::download(d_out, dt, n);
        const HostArray res_out = test::download(d_res, dt, n);
        const float rel = 2.0f * test::unit_roundoff(dt) + 1e-5f;
        for (int64_t i = 0; i < n; ++i) {
          ASSERT_EQ(res_out.get(i), res_ref[i]) << i;
          ASSERT_TRUE(close(out.get(i), ref[i], rel, 1e-6f)) << i;
        }
      }
    }
  }
}

// Qwen3 q/k norm, including heads that sit inside a wider fused-qkv row (token_stride > heads *
// head_dim): the columns outside the normalised heads must be untouched.
TEST_F(CudaOpsTest, HeadRmsNormMatchesCpu) {
  for (DType dt : kActDTypes) {
    for (int head_dim : {64, 80, 128}) {
      for (int heads : {1, 4, 8}) {
        for (int64_t tokens : {1, 7, 33}) {
          for (int64_t extra : {0, 96}) {
            SCOPED_TRACE(testing::Message() << dtype_name(dt) << " d=" << head_dim
                                            << " heads=" << heads << " tokens=" << tokens
                                            << " extra=" << extra);
            const int64_t stride = heads * head_dim + extra;
            HostArray x = test::random_array(dt, tokens * stride, -3.0f, 3.0f, rng_);
            HostArray w = test::random_array(dt, head_dim, 0.5f, 1.5f, rng_);
            std::vector<float> packed(tokens * heads * head_dim);
            for (int64_t t = 0; t < tokens; ++t) {
              for (int64_t j = 0; j < heads * head_dim; ++j) {
                packed[t * heads * head_dim + j] = x.get(t * stride + j);
              }
            }
            std::vector<float> wf = w.to_floats();
            kernels::head_rms_norm(view(packed.data(), DType::kF32, {tokens, heads, head_dim}),
                                   view(wf.data(), DType::kF32, {head_dim}), 1e-6f, pool_);
            DeviceBuffer d_x = test::upload(x), d_w = test::upload(w);
            ASSERT_TRUE(kernels::cuda::head_rms_norm(d_x.data(), d_w.data(), tokens, heads,
                                                     head_dim, stride, 1e-6f, dt, dt, nullptr)
                            .ok());
            test::sync_device();
            const HostArray out = test::download(d_x, dt, tokens * stride);
            const float rel = 2.0f * test::unit_roundoff(dt) + 1e-5f;
            for (int64_t t = 0; t < tokens; ++t) {
              for (int64_t j = 0; j < stride; ++j) {
                const int64_t i = t * stride + j;
                if (j < heads * head_dim) {
                  ASSERT_TRUE(close(out.get(i), packed[t * heads * head_dim + j], rel, 1e-6f));
                } else {
                  ASSERT_EQ(out.get(i), x.get(i)) << "column outside the heads changed";
                }
              }
            }
          }
        }
      }
    }
  }
}

struct RopeCase {
  const char* name;
  RopeScaling scaling;
  double theta;
  float attention_scaling;  // a non-1 factor exercises the multiply the CPU applies
};

// RoPE on q and k plus the paged cache write, against apply_rope + write_kv_cache. The inv_freq
// tables come from model/rope.h for each scaling type. Caches start zeroed; slots nobody wrote
// must stay zero.
TEST_F(CudaOpsTest, RopeAndKvCacheWriteMatchCpu) {
  RopeScaling linear;
  linear.type = RopeScalingType::kLinear;
  linear.factor = 4.0;
  RopeScaling llama3;
  llama3.type = RopeScalingType::kLlama3;
  llama3.factor = 8.0;
  llama3.original_max_position_embeddings = 8192;
  const RopeCase cases[] = {{"default", RopeScaling{}, 10000.0, 1.0f},
                            {"linear", linear, 1e6, 1.0f},
                            {"llama3", llama3, 500000.0, 1.0f},
                            {"scaled", RopeScaling{}, 10000.0, 0.75f}};
  struct Heads {
    int q, kv;
  };
  int iteration = 0;
  for (const RopeCase& rc : cases) {
    for (DType dt : kActDTypes) {
      for (int head_dim : {64, 80, 128}) {
        for (Heads hs : {Heads{8, 8}, Heads{8, 4}, Heads{8, 2}, Heads{16, 2}, Heads{8, 1}}) {
          for (int block_size : {16, 32}) {
            for (bool fused : {false, true}) {
              ++iteration;
              const int64_t tokens = iteration % 3 == 0 ? 1 : (iteration % 3 == 1 ? 7 : 40);
              SCOPED_TRACE(testing::Message()
                           << rc.name << " " << dtype_name(dt) << " d=" << head_dim << " heads="
                           << hs.q << "/" << hs.kv << " block=" << block_size
                           << " fused=" << fused << " tokens=" << tokens);
              ModelConfig config;
              config.head_dim = head_dim;
              config.rope_theta = rc.theta;
              config.rope_scaling = rc.scaling;
              config.max_position_embeddings = 131072;
              const std::vector<float> inv_freq = rope_inv_freq(config);
              ASSERT_EQ(inv_freq.size(), static_cast<size_t>(head_dim / 2));

              const int64_t qw = int64_t{hs.q} * head_dim, kw = int64_t{hs.kv} * head_dim;
              // Fused: one [tokens, q | k | v] buffer; else three packed ones.
              const int64_t row = fused ? qw + 2 * kw : 0;
              const int64_t q_stride = fused ? row : qw, kv_stride = fused ? row : kw;
              HostArray qkv = test::random_array(
                  dt, fused ? tokens * row : tokens * (qw + 2 * kw), -2.0f, 2.0f, rng_);
              auto at = [&](int part, int64_t t, int64_t j) {  // part 0 q, 1 k, 2 v
                if (fused) return t * row + (part == 0 ? 0 : part == 1 ? qw : qw + kw) + j;
                return part == 0 ? t * qw + j
                                 : tokens * qw + (part == 2 ? tokens * kw : 0) + t * kw + j;
              };
              std::vector<float> q(tokens * qw), k(tokens * kw), v(tokens * kw);
              for (int64_t t = 0; t < tokens; ++t) {
                for (int64_t j = 0; j < qw; ++j) q[t * qw + j] = qkv.get(at(0, t, j));
                for (int64_t j = 0; j < kw; ++j) {
                  k[t * kw + j] = qkv.get(at(1, t, j));
                  v[t * kw + j] = qkv.get(at(2, t, j));
                }
              }
              std::vector<int32_t> positions(tokens);
              std::uniform_int_distribution<int32_t> pos_dist(0, 8191);
              for (auto& p : positions) p = pos_dist(rng_);
              positions[0] = 100000;  // a long-context angle
              const int64_t num_blocks = (tokens + block_size - 1) / block_size + 3;
              std::vector<int64_t> slots(num_blocks * block_size);
              std::iota(slots.begin(), slots.end(), 0);
              std::shuffle(slots.begin(), slots.end(), rng_);
              slots.resize(tokens);
              if (tokens > 1) slots[1] = -1;  // skipped token

              std::vector<float> freq = inv_freq;
              kernels::apply_rope(view(q.data(), DType::kF32, {tokens, hs.q, head_dim}),
                                  view(positions.data(), DType::kI32, {tokens}),
                                  view(freq.data(), DType::kF32, {head_dim / 2}),
                                  rc.attention_scaling, pool_);
              kernels::apply_rope(view(k.data(), DType::kF32, {tokens, hs.kv, head_dim}),
                                  view(positions.data(), DType::kI32, {tokens}),
                                  view(freq.data(), DType::kF32, {head_dim / 2}),
                                  rc.attention_scaling, pool_);
              const int64_t cache_n = num_blocks * block_size * kw;
              std::vector<float> kc(cache_n, 0.0f), vc(cache_n, 0.0f);
              const Shape cache_shape{num_blocks, block_size, hs.kv, head_dim};
              kernels::write_kv_cache(view(k.data(), DType::kF32, {tokens, hs.kv, head_dim}),
                                      view(v.data(), DType::kF32, {tokens, hs.kv, head_dim}),
                                      view(slots.data(), DType::kI64, {tokens}),
                                      view(kc.data(), DType::kF32, cache_shape),
                                      view(vc.data(), DType::kF32, cache_shape), pool_);

              DeviceBuffer d_qkv = test::upload(qkv), d_pos = test::upload(positions),
                           d_freq = test::upload(inv_freq), d_slots = test::upload(slots);
              DeviceBuffer d_kc = test::device_zeros(cache_n * dtype_size(dt));
              DeviceBuffer d_vc = test::device_zeros(cache_n * dtype_size(dt));
              char* base = static_cast<char*>(d_qkv.data());
              const size_t es = dtype_size(dt);
              kernels::cuda::RopeKvCacheArgs a;
              a.act = dt;
              a.tokens = tokens;
              a.num_heads = hs.q;
              a.num_kv_heads = hs.kv;
              a.head_dim = head_dim;
              a.q = base + at(0, 0, 0) * es;
              a.q_stride = q_stride;
              a.k = base + at(1, 0, 0) * es;
              a.k_stride = kv_stride;
              a.v = base + at(2, 0, 0) * es;
              a.v_stride = kv_stride;
              a.positions = d_pos.as<int32_t>();
              a.inv_freq = d_freq.as<float>();
              a.attention_scaling = rc.attention_scaling;
              a.slots = d_slots.as<int64_t>();
              a.k_cache = d_kc.data();
              a.v_cache = d_vc.data();
              ASSERT_TRUE(kernels::cuda::rope_and_write_kv_cache(a, nullptr).ok());
              test::sync_device();
              const HostArray out = test::download(d_qkv, dt, qkv.size());
              const HostArray kc_out = test::download(d_kc, dt, cache_n);
              const HostArray vc_out = test::download(d_vc, dt, cache_n);
              // Rotation outputs are x1 c - x2 s with |x| <= 2: the F32 parts differ by a few
              // ulps of 4 (libm cos vs sincosf, FMA), then one rounding to the dtype.
              const float rel = 2.0f * test::unit_roundoff(dt);
              const float abs_tol = 4e-6f;
              for (int64_t t = 0; t < tokens; ++t) {
                for (int64_t j = 0; j < qw; ++j) {
                  ASSERT_TRUE(close(out.get(at(0, t, j)), q[t * qw + j], rel, abs_tol)) << t;
                }
                for (int64_t j = 0; j < kw; ++j) {
                  ASSERT_TRUE(close(out.get(at(1, t, j)), k[t * kw + j], rel, abs_tol)) << t;
                  ASSERT_EQ(out.get(at(2, t, j)), v[t * kw + j]) << "v must not change";
                }
              }
              for (int64_t i = 0; i < cache_n; ++i) {
                ASSERT_TRUE(close(kc_out.get(i), kc[i], rel, abs_tol)) << i;
                ASSERT_EQ(vc_out.get(i), vc[i]) << i;  // v is copied: exact
              }
              // The cached k is the rotated k itself, bit for bit.
              for (int64_t t = 0; t < tokens; ++t) {
                if (slots[t] < 0) continue;
                for (int64_t j = 0; j < kw; ++j) {
                  ASSERT_EQ(kc_out.get(slots[t] * kw + j), out.get(at(1, t, j)));
                }
              }
            }
          }
        }
      }
    }
  }
}

TEST_F(CudaOpsTest, SiluAndMulMatchesCpu) {
  for (DType dt : kActDTypes) {
    for (int64_t inter : {1, 7, 64, 1000, 1376}) {
      for (int64_t rows : {1, 3, 17}) {
        SCOPED_TRACE(testing::Message() << dtype_name(dt) << " inter=" << inter
                                        << " rows=" << rows);
        HostArray gu = test::random_array(dt, rows * 2 * inter, -6.0f, 6.0f, rng_);
        std::vector<float> gf = gu.to_floats(), ref(rows * inter);
        kernels::silu_and_mul(view(gf.data(), DType::kF32, {rows, 2 * inter}),
                              view(ref.data(), DType::kF32, {rows, inter}), pool_);
        DeviceBuffer d_gu = test::upload(gu);
        DeviceBuffer d_out = test::device_zeros(rows * inter * dtype_size(dt));
        ASSERT_TRUE(
            kernels::cuda::silu_and_mul(d_gu.data(), d_out.data(), rows, inter, dt, nullptr).ok());
        test::sync_device();
        const HostArray out = test::download(d_out, dt, rows * inter);
        // expf vs the CPU's vectorised exp: a few F32 ulps before the final rounding.
        const float rel = 2.0f * test::unit_roundoff(dt) + 2e-6f;
        for (int64_t i = 0; i < rows * inter; ++i) {
          ASSERT_TRUE(close(out.get(i), ref[i], rel, 1e-6f)) << i;
        }
      }
    }
  }
}

TEST_F(CudaOpsTest, BiasAddAndAddInplaceMatchCpu) {
  for (DType dt : kActDTypes) {
    for (DType bdt : {dt, DType::kF32}) {
      for (int64_t cols : {1, 9, 64, 1000, 4096}) {
        const int64_t rows = 5, n = rows * cols;
        SCOPED_TRACE(testing::Message() << dtype_name(dt) << "/" << dtype_name(bdt)
                                        << " cols=" << cols);
        HostArray y = test::random_array(dt, n, -3.0f, 3.0f, rng_);
        HostArray x = test::random_array(dt, n, -3.0f, 3.0f, rng_);
        HostArray bias = test::random_array(bdt, cols, -1.0f, 1.0f, rng_);
        // bias_add: y + bias, rounded once (compared exactly).
        std::vector<float> ref_bias(n);
        for (int64_t i = 0; i < n; ++i) ref_bias[i] = test::round_to(dt, y.get(i) + bias.get(i % cols));
        // add_inplace: the CPU twin in F32, then one rounding (exact).
        std::vector<float> ref_add = y.to_floats(), xf = x.to_floats();
        kernels::add_inplace(view(ref_add.data(), DType::kF32, {n}),
                             view(xf.data(), DType::kF32, {n}), pool_);
        DeviceBuffer d_y = test::upload(y), d_x = test::upload(x), d_b = test::upload(bias);
        ASSERT_TRUE(
            kernels::cuda::bias_add(d_y.data(), d_b.data(), rows, cols, dt, bdt, nullptr).ok());
        test::sync_device();
        const HostArray after_bias = test::download(d_y, dt, n);
        for (int64_t i = 0; i < n; ++i) ASSERT_EQ(after_bias.get(i), ref_bias[i]) << i;
        DeviceBuffer d_y2 = test::upload(y);
        ASSERT_TRUE(kernels::cuda::add_inplace(d_y2.data(), d_x.data(), n, dt, nullptr).ok());
        test::sync_device();
        const HostArray after_add = test::download(d_y2, dt, n);
        for (int64_t i = 0; i < n; ++i) {
          ASSERT_EQ(after_add.get(i), test::round_to(dt, ref_add[i])) << i;
        }
      }
    }
  }
}

// Argument errors come back as InvalidArgument naming the op, without touching the device.
TEST(CudaOpsArgs, BadArgumentsAreRejected) {
  const absl::Status bad_dtype = kernels::cuda::rms_norm(nullptr, nullptr, nullptr, 1, 8, 1e-6f,
                                                         DType::kI32, DType::kF32, nullptr);
  EXPECT_EQ(bad_dtype.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(bad_dtype.message().find("rms_norm"), absl::string_view::npos);
  kernels::cuda::RopeKvCacheArgs a;
  a.tokens = 1;
  a.num_heads = 1;
  a.num_kv_heads = 1;
  a.head_dim = 7;
  EXPECT_EQ(kernels::cuda::rope_and_write_kv_cache(a, nullptr).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(kernels::cuda::embedding_gather(nullptr, DType::kBF16, 4, 8, nullptr, 1, 0, nullptr,
                                            DType::kF16, nullptr)
                .code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace weft
