// Pearson's chi-square goodness-of-fit for the sampler's distribution tests, with the critical
// value computed from the chi-square distribution (regularised incomplete gamma, Numerical
// Recipes 6.2) rather than taken from a table. chi_square_test.cpp checks it against published
// table values.
#pragma once

#include <cmath>
#include <vector>

namespace weft::testing {

// Regularised upper incomplete gamma Q(a, x).
inline double gamma_q(double a, double x) {
  if (x <= 0.0) return 1.0;
  const double log_prefactor = -x + a * std::log(x) - std::lgamma(a);
  if (x < a + 1.0) {
    // Series for P(a, x).
    double term = 1.0 / a;
    double sum = term;
    for (int n = 1; n < 10000; ++n) {
      term *= x / (a + n);
      sum += term;
      if (std::fabs(term) < std::fabs(sum) * 1e-16) break;
    }
    return 1.0 - sum * std::exp(log_prefactor);
  }
  // Continued fraction for Q(a, x) (modified Lentz).
  constexpr double kTiny = 1e-300;
  double b = x + 1.0 - a;
  double c = 1.0 / kTiny;
  double d = 1.0 / b;
  double h = d;
  for (int i = 1; i < 10000; ++i) {
    const double an = -i * (i - a);
    b += 2.0;
    d = an * d + b;
    if (std::fabs(d) < kTiny) d = kTiny;
    c = b + an / c;
    if (std::fabs(c) < kTiny) c = kTiny;
    d = 1.0 / d;
    const double delta = d * c;
    h *= delta;
    if (std::fabs(delta - 1.0) < 1e-16) break;
  }
  return std::exp(log_prefactor) * h;
}

// P(X > x) for X ~ chi-square(df).
inline double chi_square_survival(double x, int df) { return gamma_q(df / 2.0, x / 2.0); }

// The x with P(X > x) = alpha, by bisection.
inline double chi_square_critical(int df, double alpha) {
  double lo = 0.0, hi = df + 100.0 * std::sqrt(2.0 * df) + 100.0;
  for (int i = 0; i < 200; ++i) {
    const double mid = 0.5 * (lo + hi);
    (chi_square_survival(mid, df) > alpha ? lo : hi) = mid;
  }
  return 0.5 * (lo + hi);
}

struct ChiSquareResult {
  double statistic = 0.0;
  int df = 0;
};

// Pools bins whose expected count is below 5 into one bin (the usual validity rule), then
// computes sum (observed - expected)^2 / expected with df = bins - 1.
inline ChiSquareResult chi_square(const std::vector<double>& observed,
                                  const std::vector<double>& expected) {
  ChiSquareResult r;
  double pooled_obs = 0.0, pooled_exp = 0.0;
  int bins = 0;
  for (size_t i = 0; i < observed.size(); ++i) {
    if (expected[i] < 5.0) {
      pooled_obs += observed[i];
      pooled_exp += expected[i];
      continue;
    }
    r.statistic += (observed[i] - expected[i]) * (observed[i] - expected[i]) / expected[i];
    ++bins;
  }
  if (pooled_exp > 0.0) {
    r.statistic += (pooled_obs - pooled_exp) * (pooled_obs - pooled_exp) / pooled_exp;
    ++bins;
  }
  r.df = bins - 1;
  return r;
}

}  // namespace weft::testing
