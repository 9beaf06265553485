/* internal.h — internal helpers shared by every layer (not installed, not public).
 *
 * Error propagation in the NCCL style: a function sets `res` and jumps to one `fail:` block.
 *
 *   xs_result f(...) {
 *     xs_result res = XS_OK;
 *     XSI_CHECK_GOTO(g(...), res, fail);
 *     if (x <= 0) XSI_FAIL(res, XS_ERR_INVALID_ARG, fail, "x must be > 0 (got %g)", x);
 *     return XS_OK;
 *   fail:
 *     cleanup...; return res;
 *   }
 */
#ifndef XSTAGE_CORE_INTERNAL_H
#define XSTAGE_CORE_INTERNAL_H

#include "xstage/xstage.h"
#include <stdarg.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Record `res` and a printf-style detail for xs_last_error(). Returns `res`. */
xs_result xsi_set_error(xs_result res, const char* fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
xs_result xsi_set_errorv(xs_result res, const char* fmt, va_list ap);
/* Prefix the current detail with "prefix: " (adds context while an error propagates). */
void xsi_error_prefix(const char* fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 1, 2)))
#endif
    ;
/* Clear the detail (called at the start of public entry points that succeed). */
void xsi_clear_error(void);

#define XSI_CHECK(call)                                                                            \
  do {                                                                                             \
    xs_result xsi_r_ = (call);                                                                     \
    if (xsi_r_ != XS_OK) return xsi_r_;                                                            \
  } while (0)

#define XSI_CHECK_GOTO(call, res, label)                                                           \
  do {                                                                                             \
    (res) = (call);                                                                                \
    if ((res) != XS_OK) goto label;                                                                \
  } while (0)

#define XSI_FAIL(res, code, label, ...)                                                            \
  do {                                                                                             \
    (res) = xsi_set_error((code), __VA_ARGS__);                                                    \
    goto label;                                                                                    \
  } while (0)

/* Argument check: returns XS_ERR_INVALID_ARG naming the argument when `cond` is false. */
#define XSI_ARG(cond, ...)                                                                         \
  do {                                                                                             \
    if (!(cond)) return xsi_set_error(XS_ERR_INVALID_ARG, __VA_ARGS__);                            \
  } while (0)

/* 1 if x is finite (not NaN/inf). */
int xsi_finite(double x);

#ifdef __cplusplus
}
#endif
#endif
