/* bootstrap.c — rank environment (torchrun / xstage launch) and the tiny TCP bootstrap that
 * carries rank 0's ncclUniqueId to the other ranks. Pure POSIX C: no CUDA, no NCCL, so it is
 * tested on any machine (src/nocuda/world.c compiles this file too).
 *
 * Protocol (one round, every step bounded by the deadline):
 *   rank 0 listens on MASTER_PORT, accepts WORLD_SIZE-1 connections; each client sends its
 *   rank as 4 bytes (big endian); rank 0 answers with "XSBOOT01", the payload length (4 bytes)
 *   and the payload. Clients retry connecting until the deadline (rank 0 may start later).
 */
#if !defined(_POSIX_C_SOURCE) || _POSIX_C_SOURCE < 200809L
#undef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif
#include "core/internal.h"
#include "world/bootstrap.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

/* Parse environment variable `name` as an integer in [lo, hi]; `def` (may be NULL = required)
 * when unset. */
static xs_result env_int(int* out, const char* name, const char* def, long lo, long hi) {
  const char* s = getenv(name);
  if (!s || !s[0]) {
    if (!def) return xsi_set_error(XS_ERR_INVALID_ARG, "environment variable %s is not set", name);
    s = def;
  }
  char* end = NULL;
  errno = 0;
  long v = strtol(s, &end, 10);
  if (end == s || *end != '\0' || errno == ERANGE)
    return xsi_set_error(XS_ERR_INVALID_ARG, "%s='%s' is not an integer", name, s);
  if (v < lo || v > hi)
    return xsi_set_error(XS_ERR_INVALID_ARG, "%s=%ld is out of range [%ld, %ld]", name, v, lo, hi);
  *out = (int)v;
  return XS_OK;
}

xs_result xs_world_env_read(xs_world_env* out) {
  XSI_ARG(out != NULL, "out is NULL");
  xs_world_env e;
  memset(&e, 0, sizeof e);
  XSI_CHECK(env_int(&e.world_size, "WORLD_SIZE", NULL, 1, XS_MAX_RANKS));
  XSI_CHECK(env_int(&e.rank, "RANK", NULL, 0, e.world_size - 1));
  char def_local[16];
  snprintf(def_local, sizeof def_local, "%d", e.rank);
  XSI_CHECK(env_int(&e.local_rank, "LOCAL_RANK", def_local, 0, 1023));
  XSI_CHECK(env_int(&e.master_port, "MASTER_PORT", NULL, 1, 65535));
  const char* addr = getenv("MASTER_ADDR");
  if (!addr || !addr[0]) addr = "127.0.0.1";
  XSI_ARG(strlen(addr) < sizeof e.master_addr, "MASTER_ADDR is longer than %zu characters",
          sizeof e.master_addr - 1);
  snprintf(e.master_addr, sizeof e.master_addr, "%s", addr);
  *out = e;
  return XS_OK;
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Wait until fd is readable/writable or the deadline passes. 0 = ready. */
static int wait_fd(int fd, short events, double deadline) {
  for (;;) {
    double left = deadline - now_s();
    if (left <= 0) return -1;
    struct pollfd p = {fd, events, 0};
    int r = poll(&p, 1, (int)(left * 1000.0) + 1);
    if (r > 0) return 0;
    if (r < 0 && errno != EINTR) return -1;
  }
}

static int send_all(int fd, const void* buf, size_t n, double deadline) {
  const char* p = (const char*)buf;
  while (n) {
    if (wait_fd(fd, POLLOUT, deadline)) return -1;
    ssize_t k = send(fd, p, n, MSG_NOSIGNAL);
    if (k < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (k <= 0) return -1;
    p += k;
    n -= (size_t)k;
  }
  return 0;
}

static int recv_all(int fd, void* buf, size_t n, double deadline) {
  char* p = (char*)buf;
  while (n) {
    if (wait_fd(fd, POLLIN, deadline)) return -1;
    ssize_t k = recv(fd, p, n, 0);
    if (k < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (k <= 0) return -1;
    p += k;
    n -= (size_t)k;
  }
  return 0;
}

static const char g_magic[8] = {'X', 'S', 'B', 'O', 'O', 'T', '0', '1'};

static xs_result serve(const xs_world_env* env, const void* data, size_t len, double deadline) {
  xs_result res = XS_OK;
  int one = 1, served = 0;
  int ls = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in a;
  if (ls < 0) XSI_FAIL(res, XS_ERR_IO, fail, "bootstrap: socket: %s", strerror(errno));
  setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  memset(&a, 0, sizeof a);
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_ANY);
  a.sin_port = htons((uint16_t)env->master_port);
  if (bind(ls, (struct sockaddr*)&a, sizeof a) || listen(ls, XS_MAX_RANKS * 2))
    XSI_FAIL(res, XS_ERR_IO, fail, "bootstrap: rank 0 cannot listen on port %d: %s",
             env->master_port, strerror(errno));
  while (served < env->world_size - 1) {
    if (wait_fd(ls, POLLIN, deadline))
      XSI_FAIL(res, XS_ERR_TIMEOUT, fail, "bootstrap: rank 0 saw %d of %d ranks join on port %d",
               served + 1, env->world_size, env->master_port);
    int c = accept(ls, NULL, NULL);
    if (c < 0) continue;
    uint32_t peer = 0, nlen = htonl((uint32_t)len);
    int bad = recv_all(c, &peer, 4, deadline) || send_all(c, g_magic, 8, deadline) ||
              send_all(c, &nlen, 4, deadline) || send_all(c, data, len, deadline);
    close(c);
    if (!bad) served++;
  }
fail:
  if (ls >= 0) close(ls);
  return res;
}

static xs_result fetch(const xs_world_env* env, void* data, size_t len, double deadline) {
  struct addrinfo hints, *ai = NULL;
  char port[16];
  memset(&hints, 0, sizeof hints);
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_STREAM;
  snprintf(port, sizeof port, "%d", env->master_port);
  int gai = getaddrinfo(env->master_addr, port, &hints, &ai);
  if (gai != 0 || !ai)
    return xsi_set_error(XS_ERR_INVALID_ARG, "bootstrap: MASTER_ADDR '%s': %s", env->master_addr,
                         gai_strerror(gai));
  xs_result res = XS_ERR_TIMEOUT;
  while (now_s() < deadline) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) break;
    if (connect(fd, ai->ai_addr, ai->ai_addrlen) == 0) {
      uint32_t me = htonl((uint32_t)env->rank), nlen = 0;
      char magic[8];
      int bad = send_all(fd, &me, 4, deadline) || recv_all(fd, magic, 8, deadline) ||
                recv_all(fd, &nlen, 4, deadline);
      if (!bad && (memcmp(magic, g_magic, 8) != 0 || ntohl(nlen) != len)) {
        close(fd);
        freeaddrinfo(ai);
        return xsi_set_error(XS_ERR_PARSE, "bootstrap: %s:%d is not an xstage rank 0",
                             env->master_addr, env->master_port);
      }
      if (!bad && !recv_all(fd, data, len, deadline)) {
        close(fd);
        res = XS_OK;
        break;
      }
    }
    close(fd);
    struct timespec ts = {0, 50 * 1000 * 1000};
    nanosleep(&ts, NULL);
  }
  freeaddrinfo(ai);
  if (res != XS_OK)
    return xsi_set_error(XS_ERR_TIMEOUT, "bootstrap: rank %d could not fetch the id from %s:%d",
                         env->rank, env->master_addr, env->master_port);
  return XS_OK;
}

xs_result xsi_bootstrap_exchange(const xs_world_env* env, void* data, size_t len,
                                 double timeout_s) {
  XSI_ARG(env != NULL && data != NULL && len > 0 && len < (1u << 20), "bad bootstrap arguments");
  XSI_ARG(timeout_s > 0, "bootstrap timeout must be > 0");
  if (env->world_size == 1) return XS_OK;
  double deadline = now_s() + timeout_s;
  return env->rank == 0 ? serve(env, data, len, deadline) : fetch(env, data, len, deadline);
}
