/* cmd_launch.c — `xstage launch -n N [--timeout S] [--] cmd args...`: start N local ranks of a
 * command for the nccl world, torchrun style. Each child gets RANK, WORLD_SIZE, LOCAL_RANK,
 * MASTER_ADDR=127.0.0.1, MASTER_PORT=<a free port> and NCCL_NVLS_ENABLE=0. The launcher waits
 * for all of them and exits with the first non-zero status (128+signal for a killed child); on
 * the first failure it sends SIGTERM to the others and SIGKILL 5 s later, so it never hangs on
 * a rank stuck waiting for a dead peer. --timeout bounds the whole run (exit 124).
 */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif
#include "cli/cli.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define LAUNCH_MAX 8

static void usage(FILE* f) {
  fprintf(f,
          "usage: xstage launch -n N [--timeout SECONDS] [--] command [args...]\n"
          "  start N ranks (1..%d) of command on this machine for an nccl world\n"
          "options:\n"
          "  -n, --nprocs N           ranks to start\n"
          "  --timeout SECONDS        stop every rank after this long (exit 124; default: none)\n"
          "  --help                   show this help\n"
          "each rank gets RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR=127.0.0.1, MASTER_PORT and\n"
          "NCCL_NVLS_ENABLE=0; the exit status is the first non-zero one of the ranks\n",
          LAUNCH_MAX);
}

static int fail_usage(const char* fmt, const char* arg) {
  fprintf(stderr, "xstage launch: ");
  fprintf(stderr, fmt, arg);
  fprintf(stderr, "\n(see 'xstage launch --help')\n");
  return 2;
}

/* A TCP port that was free a moment ago on the loopback (0 on failure). */
static int free_port(void) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in a;
  socklen_t len = sizeof a;
  int port = 0;
  if (fd < 0) return 0;
  memset(&a, 0, sizeof a);
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (bind(fd, (struct sockaddr*)&a, sizeof a) == 0 &&
      getsockname(fd, (struct sockaddr*)&a, &len) == 0)
    port = ntohs(a.sin_port);
  close(fd);
  return port;
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void sleep_ms(int ms) {
  struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
}

static int status_code(int st) {
  if (WIFEXITED(st)) return WEXITSTATUS(st);
  if (WIFSIGNALED(st)) return 128 + WTERMSIG(st);
  return 1;
}

/* Stop every child still running: SIGTERM, then SIGKILL after grace_s. */
static void stop_all(pid_t* pid, int n, double grace_s) {
  for (int i = 0; i < n; i++)
    if (pid[i] > 0) kill(pid[i], SIGTERM);
  double end = now_s() + grace_s;
  for (;;) {
    int alive = 0;
    for (int i = 0; i < n; i++) {
      if (pid[i] <= 0) continue;
      int st;
      pid_t r = waitpid(pid[i], &st, WNOHANG);
      if (r == pid[i] || (r < 0 && errno == ECHILD))
        pid[i] = 0;
      else
        alive++;
    }
    if (!alive) return;
    if (now_s() > end) break;
    sleep_ms(20);
  }
  for (int i = 0; i < n; i++)
    if (pid[i] > 0) {
      kill(pid[i], SIGKILL);
      waitpid(pid[i], NULL, 0);
      pid[i] = 0;
    }
}

int cmd_launch(int argc, char** argv) {
  long n = 0;
  double timeout = 0;
  int cmd = -1;
  for (int i = 0; i < argc; i++) {
    const char* a = argv[i];
    if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
      usage(stdout);
      return 0;
    }
    if (!strcmp(a, "--")) {
      cmd = i + 1;
      break;
    }
    if (!strcmp(a, "-n") || !strcmp(a, "--nprocs") || !strcmp(a, "--timeout")) {
      if (i + 1 >= argc) return fail_usage("option '%s' needs a value", a);
      char* end = NULL;
      const char* v = argv[++i];
      if (a[1] == '-' && a[2] == 't') {
        timeout = strtod(v, &end);
        if (end == v || *end || !(timeout > 0)) return fail_usage("--timeout: '%s' is not > 0", v);
      } else {
        n = strtol(v, &end, 10);
        if (end == v || *end || n < 1 || n > LAUNCH_MAX)
          return fail_usage("-n: '%s' is not a rank count in 1..8", v);
      }
      continue;
    }
    if (a[0] == '-') return fail_usage("unknown option '%s'", a);
    cmd = i;
    break;
  }
  if (n == 0) return fail_usage("%s", "missing -n N");
  if (cmd < 0 || cmd >= argc) return fail_usage("%s", "missing the command to run");
  int port = free_port();
  if (!port) {
    fprintf(stderr, "xstage launch: cannot find a free TCP port: %s\n", strerror(errno));
    return 1;
  }
  pid_t pid[LAUNCH_MAX] = {0};
  fflush(stdout);
  fflush(stderr);
  for (int r = 0; r < n; r++) {
    pid_t p = fork();
    if (p < 0) {
      fprintf(stderr, "xstage launch: fork failed: %s\n", strerror(errno));
      stop_all(pid, (int)n, 5.0);
      return 1;
    }
    if (p == 0) {
      char buf[32];
      snprintf(buf, sizeof buf, "%d", r);
      setenv("RANK", buf, 1);
      setenv("LOCAL_RANK", buf, 1);
      snprintf(buf, sizeof buf, "%ld", n);
      setenv("WORLD_SIZE", buf, 1);
      setenv("LOCAL_WORLD_SIZE", buf, 1);
      setenv("MASTER_ADDR", "127.0.0.1", 1);
      snprintf(buf, sizeof buf, "%d", port);
      setenv("MASTER_PORT", buf, 1);
      setenv("NCCL_NVLS_ENABLE", "0", 1);
      execvp(argv[cmd], argv + cmd);
      fprintf(stderr, "xstage launch: rank %d: cannot run '%s': %s\n", r, argv[cmd],
              strerror(errno));
      _exit(127);
    }
    pid[r] = p;
  }
  int first = 0, left = (int)n;
  double deadline = timeout > 0 ? now_s() + timeout : 0;
  while (left > 0) {
    int st = 0;
    pid_t p = waitpid(-1, &st, WNOHANG);
    if (p < 0 && errno != EINTR) break;
    if (p <= 0) {
      if (deadline > 0 && now_s() > deadline) {
        fprintf(stderr, "xstage launch: timeout after %.1f s: stopping %d rank(s)\n", timeout,
                left);
        stop_all(pid, (int)n, 5.0);
        return 124;
      }
      sleep_ms(10);
      continue;
    }
    int r = 0;
    while (r < n && pid[r] != p)
      r++;
    if (r == n) continue; /* not one of ours */
    pid[r] = 0;
    left--;
    int code = status_code(st);
    if (code != 0 && first == 0) {
      first = code;
      if (left > 0) {
        fprintf(stderr, "xstage launch: rank %d exited with status %d: stopping the other %d\n", r,
                code, left);
        stop_all(pid, (int)n, 5.0);
        left = 0;
      }
    }
  }
  return first;
}
