// Row-wise kernels (RMSNorm variants, RoPE, SwiGLU, add, embedding, KV-cache write) against
// double-precision references written here, on every ISA path.
// Tolerances: norms and RoPE 1e-5 relative (+1e-6 absolute); SwiGLU 1e-6 relative (the vector
// exp is ~2 ulp; a 1e-4 error in one of its coefficients fails); GeGLU and soft-capping 1e-5
// relative plus a few ulp of the vector tanh near +-1 times the value it multiplies (1 + tanh
// cancels for very negative inputs, in torch too); embedding, add, scale and cache writes are
// exact.
#include <cmath>

#include "kernel_test_util.h"
#include "weft/kernels/activation.h"
#include "weft/kernels/attention.h"
#include "weft/kernels/embedding.h"
#include "weft/kernels/norm.h"
#include "weft/kernels/rope.h"

namespace weft::kernels {
namespace {

class ElementwiseTest : public IsaTest {};

std::vector<double> rms_ref(const std::vector<float>& x, const std::vector<float>& w, int64_t rows,
                            int64_t h, float eps) {
  std::vector<double> out(x.size());
  for (int64_t r = 0; r < rows; ++r) {
    double ss = 0;
    for (int64_t i = 0; i < h; ++i) ss += static_cast<double>(x[r * h + i]) * x[r * h + i];
    const double inv = 1.0 / std::sqrt(ss / h + eps);
    for (int64_t i = 0; i < h; ++i) out[r * h + i] = x[r * h + i] * inv * w[i];
  }
  return out;
}

void expect_near_all(const float* got, const std::vector<double>& ref, double rel, double abs,
                     const std::string& what) {
  int failures = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    if (std::fabs(got[i] - ref[i]) > rel * std::fabs(ref[i]) + abs && failures++ < 5) {
      ADD_FAILURE() << what << " [" << i << "] got " << got[i] << " want " << ref[i];
    }
  }
}

TEST_P(ElementwiseTest, RmsNorm) {
  ThreadPool pool(3);
  uint32_t seed = 1;
  for (DType wdt : kFloatDTypes) {
    for (int64_t h : {1, 7, 16, 33, 768}) {
      for (int64_t rows : {1, 5, 40}) {
        std::vector<float> xv = random_floats(static_cast<size_t>(rows * h), seed++, -3, 3);
        std::vector<float> wv = random_floats(static_cast<size_t>(h), seed++, 0.5f, 1.5f);
        Tensor x = make_f32(xv, {rows, h});
        Tensor w = make_stored(wv, wdt, {h});
        Tensor out = Tensor::zeros(DType::kF32, {rows, h});
        rms_norm(x, w, 1e-6f, out, pool);
        const std::vector<double> ref = rms_ref(xv, wv, rows, h, 1e-6f);
        expect_near_all(out.data_as<float>(), ref, 1e-5, 1e-6, "rms_norm h=" + std::to_string(h));
        rms_norm(x, w, 1e-6f, x, pool);  // in place
        expect_near_all(x.data_as<float>(), ref, 1e-5, 1e-6, "rms_norm in place");
      }
    }
  }
}

TEST_P(ElementwiseTest, AddRmsNorm) {
  ThreadPool pool(2);
  const int64_t rows = 9, h = 130;
  std::vector<float> rv = random_floats(rows * h, 1), xv = random_floats(rows * h, 2);
  std::vector<float> wv = random_floats(h, 3);
  Tensor res = make_f32(rv, {rows, h});
  Tensor x = make_f32(xv, {rows, h});
  Tensor w = make_stored(wv, DType::kBF16, {h});
  std::vector<float> sum(rv.size());
  std::vector<double> sum_d(rv.size());
  for (size_t i = 0; i < rv.size(); ++i) sum_d[i] = sum[i] = rv[i] + xv[i];
  add_rms_norm(res, x, w, 1e-5f, x, pool);  // out aliases x
  expect_near_all(res.data_as<float>(), sum_d, 0, 0, "residual");
  expect_near_all(x.data_as<float>(), rms_ref(sum, wv, rows, h, 1e-5f), 1e-5, 1e-6, "add_rms_norm");
}

TEST_P(ElementwiseTest, HeadRmsNorm) {
  ThreadPool pool(2);
  const int64_t tokens = 5, heads = 3, d = 20;
  std::vector<float> xv = random_floats(tokens * heads * d, 4, -2, 2);
  std::vector<float> wv = random_floats(d, 5);
  Tensor x = make_f32(xv, {tokens, heads, d});
  Tensor w = make_stored(wv, DType::kF16, {d});
  head_rms_norm(x, w, 1e-6f, pool);
  expect_near_all(x.data_as<float>(), rms_ref(xv, wv, tokens * heads, d, 1e-6f), 1e-5, 1e-6,
                  "head_rms_norm");
}

TEST_P(ElementwiseTest, RopeRotateHalf) {
  ThreadPool pool(3);
  for (int64_t d : {2, 6, 64, 128}) {
    const int64_t tokens = 11, heads = 3;
    std::vector<float> xv = random_floats(tokens * heads * d, 6 + d);
    std::vector<float> inv(d / 2);
    for (int64_t i = 0; i < d / 2; ++i)
      inv[i] = static_cast<float>(std::pow(10000.0, -2.0 * i / d));
    Tensor x = make_f32(xv, {tokens, heads, d});
    Tensor pos = Tensor::zeros(DType::kI32, {tokens});
    for (int64_t t = 0; t < tokens; ++t)
      pos.data_as<int32_t>()[t] = static_cast<int32_t>(t * 397 % 4096);
    Tensor inv_t = make_f32(inv, {d / 2});
    const float scaling = d == 64 ? 1.25f : 1.0f;
    apply_rope(x, pos, inv_t, scaling, pool);
    std::vector<double> ref(xv.size());
    for (int64_t t = 0; t < tokens; ++t) {
      for (int64_t h = 0; h < heads; ++h) {
        const float* xr = xv.data() + (t * heads + h) * d;
        double* rr = ref.data() + (t * heads + h) * d;
        for (int64_t i = 0; i < d / 2; ++i) {
          const float a = static_cast<float>(pos.data_as<int32_t>()[t]) * inv[i];
          const double c = std::cos(static_cast<double>(a)) * scaling;
          const double s = std::sin(static_cast<double>(a)) * scaling;
          rr[i] = xr[i] * c - xr[i + d / 2] * s;
          rr[i + d / 2] = xr[i + d / 2] * c + xr[i] * s;
        }
      }
    }
    expect_near_all(x.data_as<float>(), ref, 1e-5, 2e-6, "rope d=" + std::to_string(d));
  }
}

TEST_P(ElementwiseTest, SiluAndMul) {
  ThreadPool pool(2);
  for (int64_t inter : {1, 5, 16, 37, 2048}) {
    const int64_t rows = 4;
    std::vector<float> gu = random_floats(rows * 2 * inter, 7 + inter, -12, 12);
    // Extremes exercise the clamped exponent.
    gu[0] = -100.0f;
    if (inter > 1) gu[1] = 100.0f;
    Tensor g = make_f32(gu, {rows, 2 * inter});
    Tensor out = Tensor::zeros(DType::kF32, {rows, inter});
    silu_and_mul(g, out, pool);
    std::vector<double> ref(rows * inter);
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t j = 0; j < inter; ++j) {
        const double a = gu[r * 2 * inter + j], u = gu[r * 2 * inter + inter + j];
        ref[r * inter + j] = a / (1.0 + std::exp(-a)) * u;
      }
    }
    expect_near_all(out.data_as<float>(), ref, 1e-6, 1e-12,
                    "silu_and_mul i=" + std::to_string(inter));
  }
}

// gelu_tanh(x) * u against the formula in double, over the polynomial (|inner| < 0.625) and
// exponential branches of the vector tanh and the clamped tails.
TEST_P(ElementwiseTest, GeluTanhAndMul) {
  ThreadPool pool(2);
  for (int64_t inter : {1, 5, 16, 37, 2048}) {
    const int64_t rows = 4;
    std::vector<float> gu = random_floats(rows * 2 * inter, 11 + inter, -8, 8);
    gu[0] = -100.0f;
    if (inter > 1) gu[1] = 100.0f;
    if (inter > 2) gu[2] = 0.0f;
    Tensor g = make_f32(gu, {rows, 2 * inter});
    Tensor out = Tensor::zeros(DType::kF32, {rows, inter});
    gelu_tanh_and_mul(g, out, pool);
    int failures = 0;
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t j = 0; j < inter; ++j) {
        const double x = gu[r * 2 * inter + j], u = gu[r * 2 * inter + inter + j];
        const double inner = std::sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x);
        const double ref = 0.5 * x * (1.0 + std::tanh(inner)) * u;
        const double got = out.data_as<float>()[r * inter + j];
        if (std::fabs(got - ref) > 1e-5 * std::fabs(ref) + 6e-7 * std::fabs(x * u) + 1e-30 &&
            failures++ < 5) {
          ADD_FAILURE() << "gelu_tanh_and_mul i=" << inter << " x=" << x << " u=" << u << " got "
                        << got << " want " << ref;
        }
      }
    }
  }
}

// torch.nn.functional.gelu(x, approximate="tanh") in float32 (torch 2.15, CPU), to 2 ulp: the
// same formula and constants as transformers' gelu_pytorch_tanh.
TEST_P(ElementwiseTest, GeluTanhMatchesTorch) {
  ThreadPool pool(1);
  const std::vector<float> x = {-6.0f,         -3.0999999f,  -1.0f, -0.300000012f, 0.0f,
                                0.0199999996f, 0.699999988f, 1.5f,  2.9000001f,    8.0f};
  const std::vector<float> torch = {-0.0f,
                                    -2.626568079e-03f,
                                    -1.588079929e-01f,
                                    -1.146290824e-01f,
                                    0.0f,
                                    1.015956607e-02f,
                                    5.305701494e-01f,
                                    1.399571538e+00f,
                                    2.895033360e+00f,
                                    8.0f};
  const int64_t n = static_cast<int64_t>(x.size());
  std::vector<float> gu(x);
  gu.insert(gu.end(), x.size(), 1.0f);  // up = 1
  Tensor g = make_f32(gu, {1, 2 * n});
  Tensor out = Tensor::zeros(DType::kF32, {1, n});
  gelu_tanh_and_mul(g, out, pool);
  for (int64_t i = 0; i < n; ++i) {
    const float got = out.data_as<float>()[i];
    EXPECT_NEAR(got, torch[i], 2.5e-7f * std::max(1.0f, std::fabs(torch[i])) + 1e-9f)
        << "x = " << x[i];
  }
}

TEST_P(ElementwiseTest, SoftcapInplace) {
  ThreadPool pool(2);
  for (int64_t n : {1, 7, 16, 33, 10000}) {
    for (float cap : {0.5f, 20.0f}) {
      std::vector<float> v = random_floats(n, 21 + n, -60, 60);
      v[0] = 1e-4f;
      Tensor x = make_f32(v, {n});
      softcap_inplace(x, cap, pool);
      std::vector<double> ref(n);
      for (int64_t i = 0; i < n; ++i) ref[i] = cap * std::tanh(static_cast<double>(v[i]) / cap);
      expect_near_all(x.data_as<float>(), ref, 1e-5, 4e-7 * cap, "softcap n=" + std::to_string(n));
      for (int64_t i = 0; i < n; ++i) ASSERT_LE(std::fabs(x.data_as<float>()[i]), cap);
    }
  }
}

TEST_P(ElementwiseTest, ScaleInplace) {
  ThreadPool pool(2);
  for (int64_t n : {1, 17, 10000}) {
    std::vector<float> a = random_floats(n, 31);
    Tensor y = make_f32(a, {n});
    scale_inplace(y, 55.5f, pool);
    std::vector<double> ref(n);
    for (int64_t i = 0; i < n; ++i) ref[i] = a[i] * 55.5f;
    expect_near_all(y.data_as<float>(), ref, 0, 0, "scale_inplace");
  }
}

TEST_P(ElementwiseTest, AddInplace) {
  ThreadPool pool(2);
  for (int64_t n : {1, 17, 10000}) {
    std::vector<float> a = random_floats(n, 8), b = random_floats(n, 9);
    Tensor y = make_f32(a, {n});
    Tensor x = make_f32(b, {n});
    add_inplace(y, x, pool);
    std::vector<double> ref(n);
    for (int64_t i = 0; i < n; ++i) ref[i] = a[i] + b[i];
    expect_near_all(y.data_as<float>(), ref, 0, 0, "add_inplace");
  }
}

TEST_P(ElementwiseTest, EmbeddingShardedLookup) {
  ThreadPool pool(2);
  for (DType dt : kFloatDTypes) {
    const int64_t rows = 20, h = 37, vocab_start = 10;
    std::vector<float> tv = random_floats(rows * h, 10);
    Tensor table = make_stored(tv, dt, {rows, h});
    const std::vector<int32_t> id_list = {10, 29, 30, 9, 0, 15, 15, -1, 100};
    Tensor ids = Tensor::zeros(DType::kI32, {static_cast<int64_t>(id_list.size())});
    std::copy(id_list.begin(), id_list.end(), ids.data_as<int32_t>());
    Tensor out = make_f32(std::vector<float>(id_list.size() * h, 7.0f), {9, h});
    embedding_lookup(table, ids, vocab_start, out, pool);
    std::vector<double> ref(id_list.size() * h, 0.0);
    for (size_t t = 0; t < id_list.size(); ++t) {
      const int64_t local = id_list[t] - vocab_start;
      if (local < 0 || local >= rows) continue;
      for (int64_t i = 0; i < h; ++i) ref[t * h + i] = tv[local * h + i];
    }
    expect_near_all(out.data_as<float>(), ref, 0, 0,
                    std::string("embedding ") + std::string(dtype_name(dt)));
  }
}

TEST_P(ElementwiseTest, WriteKvCacheRoundsAndSkipsNegativeSlots) {
  ThreadPool pool(2);
  for (DType dt : kFloatDTypes) {
    const int64_t blocks = 4, bs = 3, kvh = 2, d = 19, tokens = 5;
    std::vector<float> kv = random_floats(tokens * kvh * d, 11),
                       vv = random_floats(tokens * kvh * d, 12);
    Tensor k = make_f32(kv, {tokens, kvh, d});
    Tensor v = make_f32(vv, {tokens, kvh, d});
    std::vector<float> sentinel(blocks * bs * kvh * d, 0.5f);
    Tensor kc = make_stored(sentinel, dt, {blocks, bs, kvh, d});
    Tensor vc = make_stored(sentinel, dt, {blocks, bs, kvh, d});
    const std::vector<int64_t> slot_list = {7, -1, 0, 11, 5};
    Tensor slots = Tensor::zeros(DType::kI64, {tokens});
    std::copy(slot_list.begin(), slot_list.end(), slots.data_as<int64_t>());
    write_kv_cache(k, v, slots, kc, vc, pool);
    // Expected cache contents: sentinel everywhere, the rounded rows at their slots.
    std::vector<float> k_want(sentinel), v_want(sentinel);
    for (int64_t t = 0; t < tokens; ++t) {
      if (slot_list[t] < 0) continue;
      for (int64_t i = 0; i < kvh * d; ++i) {
        k_want[slot_list[t] * kvh * d + i] = kv[t * kvh * d + i];
        v_want[slot_list[t] * kvh * d + i] = vv[t * kvh * d + i];
      }
    }
    Tensor k_ref = make_stored(k_want, dt, {blocks, bs, kvh, d});
    Tensor v_ref = make_stored(v_want, dt, {blocks, bs, kvh, d});
    EXPECT_EQ(std::memcmp(kc.data(), k_ref.data(), kc.nbytes()), 0) << dtype_name(dt);
    EXPECT_EQ(std::memcmp(vc.data(), v_ref.data(), vc.nbytes()), 0) << dtype_name(dt);
  }
}

WEFT_INSTANTIATE_ISA_TESTS(ElementwiseTest);

}  // namespace
}  // namespace weft::kernels
