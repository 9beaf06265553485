/* calib.c — the xbench / calibration GPU entry points in a build without CUDA: each returns
 * XS_ERR_UNSUPPORTED and says so. The pure parts (sweep planner, CSV writer, analysis) are in
 * src/model/sweep.c and work in every build. */
#include "core/internal.h"

#include <stddef.h>

static xs_result no_cuda(const char* fn) {
  return xsi_set_error(XS_ERR_UNSUPPORTED,
                       "%s: this build of xstage has no CUDA (rebuild with "
                       "nvcc on the PATH)",
                       fn);
}

xs_result xs_xbench_create(xs_xbench** out, int device, xs_target target, size_t ring_bytes) {
  if (out) *out = NULL;
  return no_cuda("xs_xbench_create");
}

xs_result xs_xbench_destroy(xs_xbench* b) {
  return b ? no_cuda("xs_xbench_destroy") : XS_OK;
}

xs_result xs_xbench_info(int* sm_count, double* fma_iters_per_ns, const xs_xbench* b) {
  return no_cuda("xs_xbench_info");
}

xs_result xs_xbench_measure(xs_xbench_burst* bursts, xs_xbench_stamp* stamps,
                            xs_xbench_summary* summary, xs_xbench* b, const xs_xbench_config* cfg) {
  return no_cuda("xs_xbench_measure");
}

xs_result xs_xbench_run(xs_xbench_burst* bursts, xs_xbench_stamp* stamps,
                        xs_xbench_summary* summary, const xs_xbench_config* cfg) {
  return no_cuda("xs_xbench_run");
}

xs_result xs_memcpy_bandwidth(double* d2h_gbps, double* h2d_gbps, int device, size_t bytes,
                              int reps) {
  return no_cuda("xs_memcpy_bandwidth");
}

xs_result xs_memcpy_peer_bandwidth(double* out_gbps, double* in_gbps, int device, const int* peers,
                                   int npeers, size_t bytes, int reps) {
  return no_cuda("xs_memcpy_peer_bandwidth");
}

xs_result xs_calibrate(xs_link_profile* profile, xs_calib_report* report,
                       const xs_calib_config* cfg) {
  return no_cuda("xs_calibrate");
}

xs_result xs_calibrate_quick(xs_link_profile* profile, xs_calib_report* report,
                             const char* out_dir) {
  return no_cuda("xs_calibrate_quick");
}
