/* test.h — a tiny test harness. Each test file is one executable registered with ctest.
 *
 *   static void test_foo(void) { XT_CHECK(1 + 1 == 2); XT_NEAR(x, 3.0, 1e-9); }
 *   int main(void) { XT_RUN(test_foo); return XT_END(); }
 *
 * Prints one line per failed check (file:line, expression, values) and ends with
 * "N passed, N failed". GPU tests call XT_SKIP("no GPU") which exits with 77 (ctest: Skipped). */
#ifndef XSTAGE_TEST_H
#define XSTAGE_TEST_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int xt_checks_failed_ = 0, xt_tests_passed_ = 0, xt_tests_failed_ = 0;

#define XT_CHECK(cond)                                                                             \
  do {                                                                                             \
    if (!(cond)) {                                                                                 \
      fprintf(stderr, "  FAIL %s:%d: %s\n", __FILE__, __LINE__, #cond);                            \
      xt_checks_failed_++;                                                                         \
    }                                                                                              \
  } while (0)

#define XT_CHECK_MSG(cond, ...)                                                                    \
  do {                                                                                             \
    if (!(cond)) {                                                                                 \
      fprintf(stderr, "  FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond);                            \
      fprintf(stderr, __VA_ARGS__);                                                                \
      fprintf(stderr, "\n");                                                                       \
      xt_checks_failed_++;                                                                         \
    }                                                                                              \
  } while (0)

/* |a - b| <= rel * max(|a|, |b|) + 1e-300, and neither is NaN. */
#define XT_NEAR(a, b, rel)                                                                         \
  do {                                                                                             \
    double xt_a_ = (double)(a), xt_b_ = (double)(b);                                               \
    double xt_m_ = fabs(xt_a_) > fabs(xt_b_) ? fabs(xt_a_) : fabs(xt_b_);                          \
    if (!(fabs(xt_a_ - xt_b_) <= (rel) * xt_m_ + 1e-300)) {                                        \
      fprintf(stderr, "  FAIL %s:%d: %s = %.17g, %s = %.17g (rel tol %g)\n", __FILE__, __LINE__,  \
              #a, xt_a_, #b, xt_b_, (double)(rel));                                                \
      xt_checks_failed_++;                                                                         \
    }                                                                                              \
  } while (0)

#define XT_EQ_INT(a, b)                                                                            \
  do {                                                                                             \
    long long xt_a_ = (long long)(a), xt_b_ = (long long)(b);                                      \
    if (xt_a_ != xt_b_) {                                                                          \
      fprintf(stderr, "  FAIL %s:%d: %s = %lld, expected %s = %lld\n", __FILE__, __LINE__, #a,    \
              xt_a_, #b, xt_b_);                                                                   \
      xt_checks_failed_++;                                                                         \
    }                                                                                              \
  } while (0)

/* XT_ONLY=name (environment): run only the test of that name (the others are not counted). */
#define XT_RUN(fn)                                                                                 \
  do {                                                                                             \
    const char* xt_only_ = getenv("XT_ONLY");                                                      \
    if (xt_only_ && *xt_only_ && strcmp(xt_only_, #fn) != 0) break;                               \
    int xt_before_ = xt_checks_failed_;                                                            \
    fn();                                                                                          \
    if (xt_checks_failed_ == xt_before_) {                                                         \
      xt_tests_passed_++;                                                                          \
      printf("ok   %s\n", #fn);                                                                    \
    } else {                                                                                       \
      xt_tests_failed_++;                                                                          \
      printf("FAIL %s\n", #fn);                                                                    \
    }                                                                                              \
    fflush(stdout);                                                                                \
  } while (0)

#define XT_END()                                                                                   \
  (printf("%d passed, %d failed\n", xt_tests_passed_, xt_tests_failed_),                           \
   xt_tests_failed_ ? 1 : 0)

#define XT_SKIP(...)                                                                               \
  do {                                                                                             \
    printf("SKIPPED: ");                                                                           \
    printf(__VA_ARGS__);                                                                           \
    printf("\n");                                                                                  \
    exit(77);                                                                                      \
  } while (0)

/* Deterministic xorshift RNG for tests. */
static inline unsigned long long xt_rand_u64(unsigned long long* s) {
  unsigned long long x = *s;
  x ^= x << 13;
  x ^= x >> 7;
  x ^= x << 17;
  return *s = x;
}
static inline double xt_rand_uniform(unsigned long long* s) { /* [0, 1) */
  return (double)(xt_rand_u64(s) >> 11) * (1.0 / 9007199254740992.0);
}

#endif
