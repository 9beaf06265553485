/* gpu.c — is a CUDA GPU usable in this process? */
#include "cli/cli.h"

#include <stdio.h>
#ifdef XS_HAVE_CUDA
#include <cuda_runtime.h>
#endif

int cli_have_gpu(char* name, size_t n) {
#ifdef XS_HAVE_CUDA
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count < 1) {
    cudaGetLastError();
    return 0;
  }
  struct cudaDeviceProp prop;
  if (cudaGetDeviceProperties(&prop, 0) != cudaSuccess) return 0;
  if (name) snprintf(name, n, "%s", prop.name);
  return 1;
#else
  (void)name;
  (void)n;
  return 0;
#endif
}

int cli_gpu_count(void) {
#ifdef XS_HAVE_CUDA
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  return count;
#else
  return 0;
#endif
}
