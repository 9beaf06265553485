/* args.c — option parsing and formatting helpers for the CLI (see cli.h). */
#include "cli/cli.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

void cli_usage(const cli_cmd* c, FILE* f) {
  fprintf(f, "usage: xstage %s%s%s%s\n  %s\n", c->name, c->nopts ? " [options]" : "",
          c->usage && c->usage[0] ? " " : "", c->usage ? c->usage : "", c->summary);
  if (c->nopts) fprintf(f, "options:\n");
  for (int i = 0; i < c->nopts; i++) {
    char left[64];
    snprintf(left, sizeof left, "--%s%s%s", c->opts[i].name, c->opts[i].arg ? " " : "",
             c->opts[i].arg ? c->opts[i].arg : "");
    fprintf(f, "  %-24s %s\n", left, c->opts[i].help);
  }
  fprintf(f, "  %-24s %s\n", "--help", "show this help");
}

int cli_error(const cli_cmd* c, const char* fmt, ...) {
  va_list ap;
  fprintf(stderr, "xstage %s: ", c->name);
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fprintf(stderr, "\n(see 'xstage %s --help')\n", c->name);
  return 2;
}

int cli_fail(const cli_cmd* c, xs_result res, const char* what) {
  const char* d = xs_last_error();
  fprintf(stderr, "xstage %s: %s: %s%s%s\n", c->name, what, xs_strerror(res), d[0] ? ": " : "",
          d);
  return 1;
}

static cli_opt* find_opt(const cli_cmd* c, const char* name, size_t len) {
  for (int i = 0; i < c->nopts; i++)
    if (strlen(c->opts[i].name) == len && strncmp(c->opts[i].name, name, len) == 0)
      return &c->opts[i];
  return NULL;
}

int cli_parse(cli_cmd* c, int argc, char** argv) {
  c->npos = 0;
  for (int i = 0; i < c->nopts; i++) c->opts[i].value = NULL;
  int only_pos = 0;
  for (int i = 0; i < argc; i++) {
    const char* a = argv[i];
    if (!only_pos && strcmp(a, "--") == 0) {
      only_pos = 1;
      continue;
    }
    if (!only_pos && (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0)) {
      cli_usage(c, stdout);
      return 0;
    }
    if (!only_pos && a[0] == '-' && a[1] == '-' && a[2]) {
      const char* name = a + 2;
      const char* eq = strchr(name, '=');
      size_t len = eq ? (size_t)(eq - name) : strlen(name);
      cli_opt* o = find_opt(c, name, len);
      if (!o) return cli_error(c, "unknown option '%s'", a);
      if (o->value) return cli_error(c, "option '--%s' given twice", o->name);
      if (!o->arg) {
        if (eq) return cli_error(c, "option '--%s' takes no value", o->name);
        o->value = "1";
      } else if (eq) {
        o->value = eq + 1;
      } else {
        if (i + 1 >= argc) return cli_error(c, "option '--%s' needs a value (%s)", o->name, o->arg);
        o->value = argv[++i];
      }
      if (o->arg && !o->value[0]) return cli_error(c, "option '--%s' has an empty value", o->name);
      continue;
    }
    if (!only_pos && a[0] == '-' && a[1] && !(a[1] >= '0' && a[1] <= '9') && a[1] != '.')
      return cli_error(c, "unknown option '%s'", a);
    if (c->npos >= c->max_pos || c->npos >= CLI_MAX_POS)
      return cli_error(c, "unexpected argument '%s'", a);
    c->pos[c->npos++] = a;
  }
  if (c->npos < c->min_pos)
    return cli_error(c, "missing argument%s: %s", c->min_pos > 1 ? "s" : "", c->usage);
  return -1;
}

static const cli_opt* get(const cli_cmd* c, const char* name) {
  return find_opt(c, name, strlen(name));
}

const char* cli_get_str(const cli_cmd* c, const char* name, const char* def) {
  const cli_opt* o = get(c, name);
  return o && o->value ? o->value : def;
}

int cli_flag(const cli_cmd* c, const char* name) {
  const cli_opt* o = get(c, name);
  return o && o->value != NULL;
}

int cli_parse_value(const char* s, int kind, double* out) {
  errno = 0;
  char* end = NULL;
  double v = strtod(s, &end);
  if (end == s || errno == ERANGE || !isfinite(v)) return 1;
  while (*end == ' ') end++;
  double mul = 1.0;
  if (*end) {
    if (kind == 1) {
      static const struct { const char* s; double m; } u[] = {
          {"B", 1},        {"K", 1024.0},   {"KB", 1024.0}, {"KiB", 1024.0},
          {"M", 1048576.0}, {"MB", 1048576.0}, {"MiB", 1048576.0},
          {"G", 1073741824.0}, {"GB", 1073741824.0}, {"GiB", 1073741824.0}};
      int ok = 0;
      for (size_t i = 0; i < sizeof u / sizeof u[0]; i++)
        if (strcasecmp(end, u[i].s) == 0) mul = u[i].m, ok = 1;
      if (!ok) return 1;
    } else if (kind == 2) {
      if (strcmp(end, "ns") == 0) mul = 1;
      else if (strcmp(end, "us") == 0) mul = 1e3;
      else if (strcmp(end, "ms") == 0) mul = 1e6;
      else if (strcmp(end, "s") == 0) mul = 1e9;
      else return 1;
    } else {
      return 1;
    }
  }
  *out = v * mul;
  return isfinite(*out) ? 0 : 1;
}

static int get_value(const cli_cmd* c, const char* name, int kind, double def, double lo,
                     double hi, double* out) {
  const cli_opt* o = get(c, name);
  if (!o || !o->value) {
    *out = def;
    return 0;
  }
  double v;
  static const char* what[] = {"a number", "a size (e.g. 4MB)", "a time (e.g. 20us)"};
  if (cli_parse_value(o->value, kind, &v))
    return cli_error(c, "--%s: '%s' is not %s", name, o->value, what[kind]);
  if (v < lo || v > hi)
    return cli_error(c, "--%s: %g is out of range [%g, %g]", name, v, lo, hi);
  *out = v;
  return 0;
}

int cli_get_double(const cli_cmd* c, const char* name, double def, double lo, double hi,
                   double* out) {
  return get_value(c, name, 0, def, lo, hi, out);
}
int cli_get_bytes(const cli_cmd* c, const char* name, double def, double lo, double hi,
                  double* out) {
  return get_value(c, name, 1, def, lo, hi, out);
}
int cli_get_ns(const cli_cmd* c, const char* name, double def, double lo, double hi, double* out) {
  return get_value(c, name, 2, def, lo, hi, out);
}
int cli_get_long(const cli_cmd* c, const char* name, long def, long lo, long hi, long* out) {
  double v;
  int rc = get_value(c, name, 0, (double)def, (double)lo, (double)hi, &v);
  if (rc) return rc;
  if (v != floor(v)) return cli_error(c, "--%s: %g is not a whole number", name, v);
  *out = (long)v;
  return 0;
}

int cli_get_list(const cli_cmd* c, const char* name, int kind, double* out, int max, int* n) {
  const cli_opt* o = get(c, name);
  *n = 0;
  if (!o || !o->value) return 0;
  char buf[1024];
  snprintf(buf, sizeof buf, "%s", o->value);
  for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
    if (*n >= max) return cli_error(c, "--%s: more than %d values", name, max);
    if (cli_parse_value(tok, kind, &out[*n]))
      return cli_error(c, "--%s: '%s' is not a valid value", name, tok);
    (*n)++;
  }
  return 0;
}

static int g_progress_open = 0;
void cli_progress(const char* what, double fraction) {
  static int enabled = -1;
  if (enabled < 0) {
    const char* e = getenv("XSTAGE_PROGRESS");
    enabled = e ? atoi(e) != 0 : isatty(2);
  }
  if (!enabled) return;
  fprintf(stderr, "\r[%3.0f%%] %-60.60s", 100.0 * fraction, what);
  fflush(stderr);
  g_progress_open = 1;
}
void cli_progress_done(void) {
  if (g_progress_open) fprintf(stderr, "\n");
  g_progress_open = 0;
}

const char* cli_fmt_bytes(char* buf, size_t n, double b) {
  if (b >= 1073741824.0) snprintf(buf, n, "%.2f GiB", b / 1073741824.0);
  else if (b >= 1048576.0) snprintf(buf, n, "%.2f MiB", b / 1048576.0);
  else if (b >= 1024.0) snprintf(buf, n, "%.1f KiB", b / 1024.0);
  else snprintf(buf, n, "%.0f B", b);
  return buf;
}

const char* cli_fmt_ns(char* buf, size_t n, double ns) {
  if (!isfinite(ns)) snprintf(buf, n, "inf");
  else if (ns >= 1e9) snprintf(buf, n, "%.3g s", ns / 1e9);
  else if (ns >= 1e6) snprintf(buf, n, "%.3g ms", ns / 1e6);
  else if (ns >= 1e3) snprintf(buf, n, "%.3g us", ns / 1e3);
  else snprintf(buf, n, "%.3g ns", ns);
  return buf;
}
