/* cuda_check.h — checking CUDA runtime calls (only for code built with CUDA: src/world,
 * src/kernels). */
#ifndef XSTAGE_CORE_CUDA_CHECK_H
#define XSTAGE_CORE_CUDA_CHECK_H

#include "core/internal.h"

#include <cuda_runtime.h>

/* A CUDA call that fails sets XS_ERR_CUDA with file:line, the call and CUDA's message, and
 * jumps to `label` with `res` set. */
#define XSI_CUDA_GOTO(call, res, label)                                                            \
  do {                                                                                             \
    cudaError_t xsi_e_ = (call);                                                                   \
    if (xsi_e_ != cudaSuccess) {                                                                   \
      (res) = xsi_set_error(XS_ERR_CUDA, "%s:%d: %s: %s", __FILE__, __LINE__, #call,               \
                            cudaGetErrorString(xsi_e_));                                           \
      goto label;                                                                                  \
    }                                                                                              \
  } while (0)

#endif
