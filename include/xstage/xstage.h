/* xstage.h — the public C API of xstage (umbrella header).
 *
 * Plain C11; compiles without CUDA. Device-side primitives live in <xstage/device.cuh>.
 *
 * Conventions (see shared/STYLE.md):
 *   - every public function returns xs_result; out-parameters come first;
 *   - every create has a destroy, and destroy(NULL) is a no-op returning XS_OK;
 *   - the library never prints and never exits: on failure it returns a code and leaves a
 *     human-readable detail (file, line, field...) in a thread-local buffer that
 *     xs_last_error() returns;
 *   - config structs carry a `size` field first and have an ..._INITIALIZER macro.
 *
 * Layers (one header each, all included here):
 *   xstage/model.h    the X-Stage link profile, predictors, fitting, planning   (pure C)
 *   xstage/balance.h  TEMPO expert-parallel dispatch                           (pure C)
 *   xstage/world.h    worlds, symmetric heap, status, tracing                   (host side)
 *   xstage/calib.h    X-Stage microbenchmarks and calibration                   (host side)
 *   xstage/gemm.h     Hopper GEMM engine (dense, grouped) with epilogue hooks   (host side)
 *   xstage/attention.h  Hopper attention forward with epilogue hooks           (host side)
 * GPU entry points return XS_ERR_UNSUPPORTED in a build without CUDA, XS_ERR_NO_DEVICE without
 * a GPU.
 */
#ifndef XSTAGE_XSTAGE_H
#define XSTAGE_XSTAGE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define XS_VERSION_MAJOR 0
#define XS_VERSION_MINOR 1
#define XS_VERSION_PATCH 0

/* One result enum for the whole library. Values are stable; append only. */
typedef enum xs_result {
  XS_OK = 0,
  XS_ERR_INVALID_ARG = 1, /* an argument is NULL, zero, negative, NaN, misaligned or out of range */
  XS_ERR_NO_MEMORY = 2,   /* host allocation failed */
  XS_ERR_IO = 3,          /* a file could not be opened, read or written */
  XS_ERR_PARSE = 4,       /* malformed CSV/JSON/arguments; detail names file, line and field */
  XS_ERR_UNSUPPORTED = 5, /* not built in (e.g. no CUDA) or not possible on this machine */
  XS_ERR_NO_DEVICE = 6,   /* no usable GPU */
  XS_ERR_CUDA = 7,        /* a CUDA runtime/driver call failed; detail has the CUDA message */
  XS_ERR_NCCL = 8,        /* an NCCL call failed */
  XS_ERR_TIMEOUT = 9,     /* a bounded device-side wait expired (see xs_world_status) */
  XS_ERR_EXHAUSTED = 10,  /* the symmetric heap (or another fixed pool) has no room */
  XS_ERR_STATE = 11,      /* call not valid in the object's current state (e.g. double free) */
  XS_ERR_NUMERIC = 12,    /* a fit or solve did not converge / data cannot determine it */
  XS_ERR_INTERNAL = 13,   /* a bug in xstage */
} xs_result;

/* Static description of a result code ("invalid argument", ...). Never NULL. */
const char* xs_strerror(xs_result res);

/* Detail of the last failure on this thread (e.g. "data.csv:12: field 'K': must be > 0").
 * Empty string when the last call succeeded or set no detail. Never NULL. The buffer is
 * owned by the library and valid until the next xstage call on this thread. */
const char* xs_last_error(void);

/* Library version string, e.g. "0.1.0". Never NULL. */
const char* xs_version(void);

#ifdef __cplusplus
}
#endif

#include "xstage/model.h"
#include "xstage/balance.h"
#include "xstage/world.h"
#include "xstage/calib.h"
#include "xstage/gemm.h"
#include "xstage/attention.h"

#endif /* XSTAGE_XSTAGE_H */
