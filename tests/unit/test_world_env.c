/* test_world_env.c — rank environment parsing (good and bad values), the TCP bootstrap on the
 * loopback with several ranks as threads, and trace files (RAW round trip, Chrome JSON, SVG). */
#include "core/internal.h"
#include "test.h"
#include "world/bootstrap.h"
#include "xstage/xstage.h"

#include <netinet/in.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static void set_env(const char* rank, const char* size, const char* local, const char* addr,
                    const char* port) {
  const char* names[5] = {"RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT"};
  const char* vals[5] = {rank, size, local, addr, port};
  for (int i = 0; i < 5; i++) {
    if (vals[i])
      setenv(names[i], vals[i], 1);
    else
      unsetenv(names[i]);
  }
}

static void test_env(void) {
  xs_world_env e;
  set_env("1", "4", NULL, NULL, "29500");
  XT_EQ_INT(xs_world_env_read(&e), XS_OK);
  XT_EQ_INT(e.rank, 1);
  XT_EQ_INT(e.world_size, 4);
  XT_EQ_INT(e.local_rank, 1); /* defaults to RANK */
  XT_CHECK(strcmp(e.master_addr, "127.0.0.1") == 0);
  XT_EQ_INT(e.master_port, 29500);
  set_env("3", "4", "0", "node7", "1");
  XT_EQ_INT(xs_world_env_read(&e), XS_OK);
  XT_EQ_INT(e.local_rank, 0);
  XT_CHECK(strcmp(e.master_addr, "node7") == 0);
  static const char* bad[][5] = {
      {NULL, "2", NULL, NULL, "29500"},  /* RANK unset */
      {"0", NULL, NULL, NULL, "29500"},  /* WORLD_SIZE unset */
      {"0", "2", NULL, NULL, NULL},      /* MASTER_PORT unset */
      {"2", "2", NULL, NULL, "29500"},   /* RANK >= WORLD_SIZE */
      {"-1", "2", NULL, NULL, "29500"},  /* negative */
      {"0", "9", NULL, NULL, "29500"},   /* more than 8 ranks */
      {"0", "0", NULL, NULL, "29500"},   /* no ranks */
      {"0x1", "2", NULL, NULL, "29500"}, /* not decimal */
      {"1 ", "2", NULL, NULL, "29500"},  /* trailing garbage */
      {"0", "2", "abc", NULL, "29500"},  /* LOCAL_RANK */
      {"0", "2", NULL, NULL, "70000"},   /* port range */
      {"0", "2", NULL, NULL, "0"},
      {"0", "99999999999999999999", NULL, NULL, "1"}, /* overflow */
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    set_env(bad[i][0], bad[i][1], bad[i][2], bad[i][3], bad[i][4]);
    xs_result r = xs_world_env_read(&e);
    XT_CHECK_MSG(r == XS_ERR_INVALID_ARG, "case %zu gave %d", i, (int)r);
    XT_CHECK(strlen(xs_last_error()) > 0);
  }
  set_env("0", "2", NULL, NULL, "70000");
  xs_world_env_read(&e);
  XT_CHECK(strstr(xs_last_error(), "MASTER_PORT") != NULL);
  set_env(NULL, NULL, NULL, NULL, NULL);
}

/* A free TCP port on the loopback (bind to 0, read it back). */
static int free_port(void) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in a;
  socklen_t len = sizeof a;
  memset(&a, 0, sizeof a);
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (fd < 0 || bind(fd, (struct sockaddr*)&a, sizeof a) ||
      getsockname(fd, (struct sockaddr*)&a, &len)) {
    if (fd >= 0) close(fd);
    return 0;
  }
  close(fd);
  return ntohs(a.sin_port);
}

typedef struct boot_arg {
  xs_world_env env;
  unsigned char data[128];
  xs_result res;
} boot_arg;

static void* boot_thread(void* p) {
  boot_arg* a = (boot_arg*)p;
  a->res = xsi_bootstrap_exchange(&a->env, a->data, sizeof a->data, 10.0);
  return NULL;
}

static void test_bootstrap(void) {
  int port = free_port();
  XT_CHECK(port > 0);
  enum { W = 5 };
  boot_arg args[W];
  pthread_t th[W];
  for (int r = W - 1; r >= 0; r--) { /* clients start before the server: they must retry */
    memset(&args[r], 0, sizeof args[r]);
    args[r].env.rank = r;
    args[r].env.world_size = W;
    args[r].env.master_port = port;
    snprintf(args[r].env.master_addr, sizeof args[r].env.master_addr, "127.0.0.1");
    if (r == 0)
      for (int i = 0; i < 128; i++)
        args[r].data[i] = (unsigned char)(i * 7 + 3);
    if (r == 0) usleep(200000);
    XT_CHECK(pthread_create(&th[r], NULL, boot_thread, &args[r]) == 0);
  }
  for (int r = 0; r < W; r++)
    pthread_join(th[r], NULL);
  for (int r = 0; r < W; r++) {
    XT_CHECK_MSG(args[r].res == XS_OK, "rank %d: %d", r, (int)args[r].res);
    XT_CHECK(memcmp(args[r].data, args[0].data, 128) == 0);
  }
  /* a client with no server times out, bounded */
  boot_arg lone;
  memset(&lone, 0, sizeof lone);
  lone.env.rank = 1;
  lone.env.world_size = 2;
  lone.env.master_port = free_port();
  snprintf(lone.env.master_addr, sizeof lone.env.master_addr, "127.0.0.1");
  XT_EQ_INT(xsi_bootstrap_exchange(&lone.env, lone.data, 16, 0.3), XS_ERR_TIMEOUT);
  /* a server whose clients never come, bounded */
  lone.env.rank = 0;
  XT_EQ_INT(xsi_bootstrap_exchange(&lone.env, lone.data, 16, 0.3), XS_ERR_TIMEOUT);
  XT_CHECK(strstr(xs_last_error(), "1 of 2 ranks") != NULL);
  /* W = 1: nothing to exchange */
  lone.env.world_size = 1;
  XT_EQ_INT(xsi_bootstrap_exchange(&lone.env, lone.data, 16, 0.3), XS_OK);
  strcpy(lone.env.master_addr, "no.such.host.invalid");
  lone.env.world_size = 2;
  lone.env.rank = 1;
  XT_EQ_INT(xsi_bootstrap_exchange(&lone.env, lone.data, 16, 0.3), XS_ERR_INVALID_ARG);
}

static void test_trace_files(void) {
  xs_trace_event ev[] = {
      {1000, 0, 5, XS_TRACE_TILE_BEGIN, 0, 0},  {1500, 0, 0, XS_TRACE_WAIT_BEGIN, 0, 0},
      {1700, 0, 0, XS_TRACE_WAIT_END, 0, 0},    {2000, 0, 5, XS_TRACE_TILE_END, 0, 0},
      {2100, 3, 1, XS_TRACE_BURST_BEGIN, 1, 0}, {2600, 3, 1, XS_TRACE_BURST_END, 1, 0},
      {2700, 3, 2, XS_TRACE_TILE_BEGIN, 1, 0}, /* unmatched: runs to the end */
      {2800, 3, 2, XS_TRACE_WAIT_END, 1, 0},   /* end without begin: dropped */
  };
  size_t n = sizeof ev / sizeof ev[0];
  char raw[] = "/tmp/xs_trace_XXXXXX";
  int fd = mkstemp(raw);
  XT_CHECK(fd >= 0);
  close(fd);
  XT_EQ_INT(xs_trace_write(raw, ev, n, XS_TRACE_FORMAT_RAW), XS_OK);
  xs_trace_event* back = NULL;
  size_t m = 0;
  XT_EQ_INT(xs_trace_read(&back, &m, raw), XS_OK);
  XT_EQ_INT(m, n);
  for (size_t i = 0; back && i < n && i < m; i++)
    XT_CHECK(back[i].t_ns == ev[i].t_ns && back[i].cta == ev[i].cta && back[i].kind == ev[i].kind &&
             back[i].rank == ev[i].rank && back[i].arg == ev[i].arg);
  free(back);
  char* text = NULL;
  size_t len = 0;
  XT_EQ_INT(xs_trace_write(raw, ev, n, XS_TRACE_FORMAT_CHROME), XS_OK);
  {
    FILE* f = fopen(raw, "rb");
    XT_CHECK(f != NULL);
    text = (char*)calloc(1, 1 << 16);
    len = f ? fread(text, 1, (1 << 16) - 1, f) : 0;
    if (f) fclose(f);
  }
  XT_CHECK(len > 0 && strstr(text, "\"traceEvents\"") != NULL);
  XT_CHECK(strstr(text, "\"name\":\"wait\",\"cat\":\"xstage\",\"ph\":\"X\",\"pid\":0,\"tid\":0,"
                        "\"ts\":0.500,\"dur\":0.200") != NULL);
  XT_CHECK(strstr(text, "\"name\":\"tile\",\"cat\":\"xstage\",\"ph\":\"X\",\"pid\":1,\"tid\":3,"
                        "\"ts\":1.700,\"dur\":0.100") != NULL);
  XT_CHECK(strstr(text, "rank 1") != NULL);
  free(text);
  XT_EQ_INT(xs_trace_write(raw, ev, n, XS_TRACE_FORMAT_SVG), XS_OK);
  XT_EQ_INT(xs_trace_write(raw, ev, n, (xs_trace_format)9), XS_ERR_INVALID_ARG);
  XT_EQ_INT(xs_trace_write(raw, NULL, 0, XS_TRACE_FORMAT_CHROME), XS_OK); /* empty trace */
  /* malformed RAW files name the line */
  FILE* f = fopen(raw, "w");
  fprintf(f, "xstage-trace 1\n0 1 1 100 0\n0 1 9 200 0\n");
  fclose(f);
  XT_EQ_INT(xs_trace_read(&back, &m, raw), XS_ERR_PARSE);
  XT_CHECK(strstr(xs_last_error(), ":3:") != NULL);
  f = fopen(raw, "w");
  fprintf(f, "hello\n");
  fclose(f);
  XT_EQ_INT(xs_trace_read(&back, &m, raw), XS_ERR_PARSE);
  XT_EQ_INT(xs_trace_read(&back, &m, "/nonexistent/trace"), XS_ERR_IO);
  XT_CHECK(strcmp(xs_trace_kind_name(XS_TRACE_BURST_END), "burst") == 0);
  XT_CHECK(strcmp(xs_trace_kind_name(0), "?") == 0);
  remove(raw);
}

int main(void) {
  XT_RUN(test_env);
  XT_RUN(test_bootstrap);
  XT_RUN(test_trace_files);
  return XT_END();
}
