/* bootstrap.h — the TCP bootstrap of the nccl world (pure POSIX; see bootstrap.c). */
#ifndef XSTAGE_WORLD_BOOTSTRAP_H
#define XSTAGE_WORLD_BOOTSTRAP_H

#include "xstage/world.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Rank 0 serves `len` bytes of `data` to the env->world_size - 1 other ranks, which receive
 * them into `data`. Returns within timeout_s: XS_ERR_TIMEOUT (naming who is missing),
 * XS_ERR_IO (cannot listen), XS_ERR_INVALID_ARG (bad MASTER_ADDR). W = 1: nothing to do. */
xs_result xsi_bootstrap_exchange(const xs_world_env* env, void* data, size_t len, double timeout_s);

#ifdef __cplusplus
}
#endif
#endif
