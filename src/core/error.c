/* error.c — result codes, xs_strerror, the thread-local error detail. */
#include "core/internal.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static _Thread_local char g_detail[1024];

const char* xs_strerror(xs_result res) {
  switch (res) {
  case XS_OK: return "success";
  case XS_ERR_INVALID_ARG: return "invalid argument";
  case XS_ERR_NO_MEMORY: return "out of host memory";
  case XS_ERR_IO: return "I/O error";
  case XS_ERR_PARSE: return "parse error";
  case XS_ERR_UNSUPPORTED: return "not supported in this build or on this machine";
  case XS_ERR_NO_DEVICE: return "no usable GPU";
  case XS_ERR_CUDA: return "CUDA error";
  case XS_ERR_NCCL: return "NCCL error";
  case XS_ERR_TIMEOUT: return "device-side wait timed out";
  case XS_ERR_EXHAUSTED: return "pool exhausted";
  case XS_ERR_STATE: return "invalid state";
  case XS_ERR_NUMERIC: return "numerical failure";
  case XS_ERR_INTERNAL: return "internal error";
  }
  return "unknown result code";
}

const char* xs_last_error(void) { return g_detail; }

const char* xs_version(void) { return "0.1.0"; }

xs_result xsi_set_errorv(xs_result res, const char* fmt, va_list ap) {
  vsnprintf(g_detail, sizeof g_detail, fmt, ap);
  return res;
}

xs_result xsi_set_error(xs_result res, const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  xsi_set_errorv(res, fmt, ap);
  va_end(ap);
  return res;
}

void xsi_error_prefix(const char* fmt, ...) {
  char prefix[512], old[sizeof g_detail];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(prefix, sizeof prefix, fmt, ap);
  va_end(ap);
  memcpy(old, g_detail, sizeof old);
  snprintf(g_detail, sizeof g_detail, "%.400s: %.600s", prefix, old);
}

void xsi_clear_error(void) { g_detail[0] = '\0'; }

int xsi_finite(double x) { return isfinite(x); }
