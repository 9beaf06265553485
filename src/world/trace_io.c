/* trace_io.c — kernel traces on the host: the RAW text format, Chrome trace-event JSON and an
 * SVG timeline. Pure C (src/nocuda/world.c compiles this file too, so `xstage trace` works in
 * any build).
 *
 * Begin/end events of one (rank, CTA) and one category (tile, burst, wait) are paired with a
 * stack, so spans may nest (a wait inside a tile). An end without a begin is dropped; a begin
 * without an end runs to the trace's last timestamp.
 */
#include "core/fileio.h"
#include "core/internal.h"
#include "core/strbuf.h"
#include "xstage/world.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char* xs_trace_kind_name(int kind) {
  switch (kind) {
  case XS_TRACE_TILE_BEGIN:
  case XS_TRACE_TILE_END:
    return "tile";
  case XS_TRACE_BURST_BEGIN:
  case XS_TRACE_BURST_END:
    return "burst";
  case XS_TRACE_WAIT_BEGIN:
  case XS_TRACE_WAIT_END:
    return "wait";
  default:
    return "?";
  }
}

typedef struct span {
  uint16_t rank;
  uint32_t cta;
  int cat; /* 0 tile, 1 burst, 2 wait */
  uint64_t t0, t1;
  uint32_t arg;
} span;

static int cmp_lane(const void* a, const void* b) {
  const xs_trace_event *x = (const xs_trace_event*)a, *y = (const xs_trace_event*)b;
  if (x->rank != y->rank) return x->rank < y->rank ? -1 : 1;
  if (x->cta != y->cta) return x->cta < y->cta ? -1 : 1;
  if (x->t_ns != y->t_ns) return x->t_ns < y->t_ns ? -1 : 1;
  return (x->kind & 1) ? 1 : -1; /* NOTE: at equal time an end (even kind) closes first */
}

#define MAX_DEPTH 64

/* Pair events into spans (sorted by lane, then start); tmin and tmax get the time range. */
static xs_result make_spans(span** out, size_t* nout, uint64_t* tmin, uint64_t* tmax,
                            const xs_trace_event* ev, size_t n) {
  *out = NULL;
  *nout = 0;
  *tmin = UINT64_MAX;
  *tmax = 0;
  if (n == 0) return XS_OK;
  xs_trace_event* s = (xs_trace_event*)malloc(n * sizeof *s);
  span* sp = (span*)malloc(n * sizeof *sp);
  if (!s || !sp) {
    free(s);
    free(sp);
    return xsi_set_error(XS_ERR_NO_MEMORY, "trace: out of host memory");
  }
  memcpy(s, ev, n * sizeof *s);
  qsort(s, n, sizeof *s, cmp_lane);
  for (size_t i = 0; i < n; i++) {
    if (s[i].t_ns < *tmin) *tmin = s[i].t_ns;
    if (s[i].t_ns > *tmax) *tmax = s[i].t_ns;
  }
  size_t ns = 0;
  for (size_t i = 0; i < n;) {
    size_t j = i;
    size_t stack[3][MAX_DEPTH];
    int depth[3] = {0, 0, 0};
    while (j < n && s[j].rank == s[i].rank && s[j].cta == s[i].cta)
      j++;
    for (size_t k = i; k < j; k++) {
      int kind = s[k].kind;
      if (kind < XS_TRACE_TILE_BEGIN || kind > XS_TRACE_WAIT_END) continue;
      int cat = (kind - 1) / 2;
      if (kind & 1) { /* begin */
        span x = {s[k].rank, s[k].cta, cat, s[k].t_ns, *tmax, s[k].arg};
        if (depth[cat] < MAX_DEPTH) stack[cat][depth[cat]++] = ns;
        sp[ns++] = x;
      } else if (depth[cat] > 0) {
        sp[stack[cat][--depth[cat]]].t1 = s[k].t_ns;
      }
    }
    i = j;
  }
  free(s);
  *out = sp;
  *nout = ns;
  return XS_OK;
}

static const char* g_cat_name[3] = {"tile", "burst", "wait"};
static const char* g_cat_color[3] = {"#4e79a7", "#e15759", "#f2a93b"};

static void write_chrome(xsi_strbuf* sb, const span* sp, size_t n, uint64_t t0) {
  xsi_sb_puts(sb, "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n");
  int named[XS_MAX_RANKS * 8] = {0};
  int first = 1;
  for (size_t i = 0; i < n; i++) {
    if (sp[i].rank < XS_MAX_RANKS * 8 && !named[sp[i].rank]) {
      named[sp[i].rank] = 1;
      xsi_sb_printf(sb,
                    "%s{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":%u,\"args\":{\"name\":"
                    "\"rank %u\"}}",
                    first ? "" : ",\n", sp[i].rank, sp[i].rank);
      first = 0;
    }
    xsi_sb_printf(sb,
                  "%s{\"name\":\"%s\",\"cat\":\"xstage\",\"ph\":\"X\",\"pid\":%u,\"tid\":%u,"
                  "\"ts\":%.3f,\"dur\":%.3f,\"args\":{\"arg\":%u}}",
                  first ? "" : ",\n", g_cat_name[sp[i].cat], sp[i].rank, sp[i].cta,
                  (double)(sp[i].t0 - t0) * 1e-3, (double)(sp[i].t1 - sp[i].t0) * 1e-3, sp[i].arg);
    first = 0;
  }
  xsi_sb_puts(sb, "\n]}\n");
}

static void write_svg(xsi_strbuf* sb, const span* sp, size_t n, uint64_t t0, uint64_t t1) {
  /* lanes: distinct (rank, cta) in span order (spans are sorted by lane) */
  size_t nlanes = 0;
  for (size_t i = 0; i < n; i++)
    if (i == 0 || sp[i].rank != sp[i - 1].rank || sp[i].cta != sp[i - 1].cta) nlanes++;
  const double left = 110, width = 1100, lane_h = 12, top = 40;
  double height = top + (double)nlanes * lane_h + 50;
  double range = t1 > t0 ? (double)(t1 - t0) : 1.0;
  xsi_sb_printf(sb,
                "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<svg xmlns=\"http://www.w3.org/2000/"
                "svg\" width=\"%.0f\" height=\"%.0f\" font-family=\"sans-serif\" "
                "font-size=\"10\">\n<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n"
                "<text x=\"%.0f\" y=\"20\" font-size=\"14\">xstage trace: %zu spans, %zu lanes, "
                "%.3f us</text>\n",
                left + width + 20, height, left, n, nlanes, range * 1e-3);
  for (int c = 0; c < 3; c++)
    xsi_sb_printf(
        sb,
        "<rect x=\"%.0f\" y=\"26\" width=\"10\" height=\"8\" fill=\"%s\"/><text x=\"%.0f\" "
        "y=\"34\">%s</text>\n",
        left + 420 + c * 70.0, g_cat_color[c], left + 433 + c * 70.0, g_cat_name[c]);
  size_t lane = 0;
  for (size_t i = 0; i < n; i++) {
    int new_lane = i == 0 || sp[i].rank != sp[i - 1].rank || sp[i].cta != sp[i - 1].cta;
    if (new_lane && i > 0) lane++;
    double y = top + (double)lane * lane_h;
    if (new_lane)
      xsi_sb_printf(sb, "<text x=\"4\" y=\"%.1f\">rank %u cta %u</text>\n", y + 9, sp[i].rank,
                    sp[i].cta);
    double x0 = left + width * (double)(sp[i].t0 - t0) / range;
    double w = width * (double)(sp[i].t1 - sp[i].t0) / range;
    double inset = sp[i].cat == 0 ? 0 : (sp[i].cat == 1 ? 2 : 4); /* nested spans drawn inside */
    xsi_sb_printf(
        sb,
        "<rect x=\"%.2f\" y=\"%.1f\" width=\"%.2f\" height=\"%.1f\" fill=\"%s\"><title>%s "
        "arg=%u: %.3f us</title></rect>\n",
        x0, y + inset, w < 0.5 ? 0.5 : w, lane_h - 1 - 2 * inset, g_cat_color[sp[i].cat],
        g_cat_name[sp[i].cat], sp[i].arg, (double)(sp[i].t1 - sp[i].t0) * 1e-3);
  }
  double ybase = top + (double)nlanes * lane_h + 14;
  for (int k = 0; k <= 5; k++)
    xsi_sb_printf(sb, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%.2f us</text>\n",
                  left + width * k / 5.0, ybase, range * 1e-3 * k / 5.0);
  xsi_sb_puts(sb, "</svg>\n");
}

xs_result xs_trace_write(const char* path, const xs_trace_event* ev, size_t n,
                         xs_trace_format fmt) {
  XSI_ARG(path != NULL, "path is NULL");
  XSI_ARG(ev != NULL || n == 0, "events are NULL");
  XSI_ARG(fmt == XS_TRACE_FORMAT_RAW || fmt == XS_TRACE_FORMAT_CHROME || fmt == XS_TRACE_FORMAT_SVG,
          "unknown trace format %d", (int)fmt);
  xsi_strbuf sb = XSI_STRBUF_INIT;
  xs_result res = XS_OK;
  if (fmt == XS_TRACE_FORMAT_RAW) {
    xsi_sb_puts(&sb, "xstage-trace 1\n# rank cta kind t_ns arg\n");
    for (size_t i = 0; i < n; i++)
      xsi_sb_printf(&sb, "%u %u %u %llu %u\n", ev[i].rank, ev[i].cta, ev[i].kind,
                    (unsigned long long)ev[i].t_ns, ev[i].arg);
  } else {
    span* sp = NULL;
    size_t ns = 0;
    uint64_t t0, t1;
    XSI_CHECK(make_spans(&sp, &ns, &t0, &t1, ev, n));
    if (fmt == XS_TRACE_FORMAT_CHROME)
      write_chrome(&sb, sp, ns, n ? t0 : 0);
    else
      write_svg(&sb, sp, ns, n ? t0 : 0, n ? t1 : 0);
    free(sp);
  }
  res = xsi_sb_status(&sb);
  if (res == XS_OK) res = xsi_write_file_atomic(path, sb.data ? sb.data : "", sb.len);
  xsi_sb_free(&sb);
  return res;
}

xs_result xs_trace_read(xs_trace_event** out, size_t* n, const char* path) {
  XSI_ARG(out != NULL && n != NULL && path != NULL, "out, n or path is NULL");
  *out = NULL;
  *n = 0;
  char* text = NULL;
  size_t len = 0;
  XSI_CHECK(xsi_read_file(&text, &len, path, 0));
  xs_result res = XS_OK;
  size_t cap = 1024, cnt = 0;
  int line = 0, header = 0;
  xs_trace_event* ev = (xs_trace_event*)malloc(cap * sizeof *ev);
  if (!ev) XSI_FAIL(res, XS_ERR_NO_MEMORY, fail, "trace: out of host memory");
  for (char *save = NULL, *l = strtok_r(text, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
    line++;
    while (*l == ' ' || *l == '\t' || *l == '\r')
      l++;
    if (!*l || *l == '#') continue;
    if (!header) {
      if (strncmp(l, "xstage-trace 1", 14) != 0)
        XSI_FAIL(res, XS_ERR_PARSE, fail, "%s:%d: not an xstage trace (expected 'xstage-trace 1')",
                 path, line);
      header = 1;
      continue;
    }
    unsigned rank, cta, kind, arg;
    unsigned long long t;
    char extra;
    if (sscanf(l, "%u %u %u %llu %u %c", &rank, &cta, &kind, &t, &arg, &extra) != 5 ||
        rank > 65535 || kind < XS_TRACE_TILE_BEGIN || kind > XS_TRACE_WAIT_END)
      XSI_FAIL(res, XS_ERR_PARSE, fail,
               "%s:%d: expected 'rank cta kind(1..6) t_ns arg', got '%.60s'", path, line, l);
    if (cnt == cap) {
      xs_trace_event* p = (xs_trace_event*)realloc(ev, 2 * cap * sizeof *ev);
      if (!p) XSI_FAIL(res, XS_ERR_NO_MEMORY, fail, "trace: out of host memory");
      ev = p;
      cap *= 2;
    }
    xs_trace_event e = {t, cta, arg, (uint16_t)kind, (uint16_t)rank, 0};
    ev[cnt++] = e;
  }
  if (!header) XSI_FAIL(res, XS_ERR_PARSE, fail, "%s: empty file, not an xstage trace", path);
  free(text);
  if (cnt == 0) {
    free(ev);
    ev = NULL;
  }
  *out = ev;
  *n = cnt;
  return XS_OK;
fail:
  free(text);
  free(ev);
  return res;
}
