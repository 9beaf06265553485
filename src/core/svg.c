/* svg.c — minimal SVG line/scatter plots (see svg.h).
 *
 * Layout: a fixed margin holds the title (top), the tick labels and the axis labels (left,
 * bottom); the legend sits in the top-right corner of the plot area on a translucent box.
 * Axes: the data range (of points valid on both axes) is widened to "nice" tick values,
 * steps of 1, 2 or 5 x 10^k on linear axes and whole decades on log10 axes (with unlabelled
 * 2..9 minor ticks when there are few decades). A point whose x or y is NaN/inf, or
 * non-positive on a log axis, is dropped and breaks its polyline. All text is XML-escaped. */
#include "core/svg.h"
#include "core/fileio.h"
#include "core/internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ML 80.0 /* left margin: y tick labels and y label, px */
#define MR 24.0 /* right margin, px */
#define MT 48.0 /* top margin: title, px */
#define MB 60.0 /* bottom margin: x tick labels and x label, px */
#define MAX_TICKS 64

/* Distinguishable colours (the Tableau 10 palette), used when a series' colour is 0. */
static const unsigned k_palette[] = {0x1f77b4, 0xff7f0e, 0x2ca02c, 0xd62728, 0x9467bd,
                                     0x8c564b, 0xe377c2, 0x7f7f7f, 0xbcbd22, 0x17becf};

static void copy_text(char* dst, size_t cap, const char* src) {
  snprintf(dst, cap, "%s", src ? src : "");
}

void xsi_plot_init(xsi_plot* p, const char* title, const char* xlabel, const char* ylabel) {
  if (!p) return;
  memset(p, 0, sizeof *p);
  copy_text(p->title, sizeof p->title, title);
  copy_text(p->xlabel, sizeof p->xlabel, xlabel);
  copy_text(p->ylabel, sizeof p->ylabel, ylabel);
  p->width = 800;
  p->height = 500;
}

xs_result xsi_plot_series(xsi_plot* p, const char* label, const double* x, const double* y,
                          size_t n, xsi_style style, unsigned color) {
  XSI_ARG(p, "xsi_plot_series: NULL plot");
  XSI_ARG(!n || (x && y), "xsi_plot_series: NULL x or y with n = %zu", n);
  XSI_ARG(style == XSI_STYLE_LINE || style == XSI_STYLE_DASHED || style == XSI_STYLE_POINTS,
          "xsi_plot_series: unknown style %d", (int)style);
  XSI_ARG(n <= ((size_t)1 << 40), "xsi_plot_series: n = %zu too large", n);
  xsi_series* s = realloc(p->series, (p->nseries + 1) * sizeof *s);
  if (!s) return xsi_set_error(XS_ERR_NO_MEMORY, "xsi_plot_series: out of memory");
  p->series = s;
  xsi_series* ns = &s[p->nseries];
  memset(ns, 0, sizeof *ns);
  if (n) {
    ns->x = malloc(n * sizeof *ns->x);
    ns->y = malloc(n * sizeof *ns->y);
    if (!ns->x || !ns->y) {
      free(ns->x);
      free(ns->y);
      return xsi_set_error(XS_ERR_NO_MEMORY, "xsi_plot_series: out of memory");
    }
    memcpy(ns->x, x, n * sizeof *x);
    memcpy(ns->y, y, n * sizeof *y);
  }
  copy_text(ns->label, sizeof ns->label, label);
  ns->n = n;
  ns->style = style;
  ns->color = color & 0xFFFFFF;
  p->nseries++;
  return XS_OK;
}

void xsi_plot_free(xsi_plot* p) {
  if (!p) return;
  for (size_t i = 0; i < p->nseries; i++) {
    free(p->series[i].x);
    free(p->series[i].y);
  }
  free(p->series);
  p->series = NULL;
  p->nseries = 0;
}

static void put_escaped(xsi_strbuf* sb, const char* s) {
  for (; *s; s++) {
    switch (*s) {
    case '&':
      xsi_sb_puts(sb, "&amp;");
      break;
    case '<':
      xsi_sb_puts(sb, "&lt;");
      break;
    case '>':
      xsi_sb_puts(sb, "&gt;");
      break;
    case '"':
      xsi_sb_puts(sb, "&quot;");
      break;
    case '\'':
      xsi_sb_puts(sb, "&apos;");
      break;
    default:
      /* NOTE: control characters other than tab/newline are not allowed in XML 1.0. */
      if ((unsigned char)*s >= 0x20 || *s == '\t' || *s == '\n') xsi_sb_append(sb, s, 1);
    }
  }
}

typedef struct axis {
  int log;       /* 1: positions are log10 of the data */
  double lo, hi; /* axis range in position space (log10 for log axes); lo < hi */
  double step;   /* linear: tick spacing; log: decades between labelled ticks */
  size_t nticks;
  double ticks[MAX_TICKS]; /* labelled ticks, position space */
} axis;

static int point_ok(const xsi_plot* p, double x, double y) {
  return isfinite(x) && isfinite(y) && (!p->logx || x > 0) && (!p->logy || y > 0);
}

static double nice_step(double span, double target) {
  double raw = span / target, mag = pow(10.0, floor(log10(raw))), f = raw / mag;
  return (f < 1.5 ? 1.0 : f < 3.0 ? 2.0 : f < 7.0 ? 5.0 : 10.0) * mag;
}

/* Build axis `a` from the data range [mn, mx] (position space; mn > mx when no data). */
static void make_axis(axis* a, int log_axis, double mn, double mx) {
  a->log = log_axis;
  a->nticks = 0;
  if (mn > mx) mn = 0.0, mx = 1.0;
  if (log_axis) {
    double lo = floor(mn), hi = ceil(mx);
    if (hi <= lo) hi = lo + 1.0;
    double k = ceil((hi - lo) / 8.0);
    lo = floor(lo / k) * k;
    hi = ceil(hi / k) * k;
    a->lo = lo, a->hi = hi, a->step = k;
    for (double t = lo; t <= hi + 0.5 * k && a->nticks < MAX_TICKS; t += k)
      a->ticks[a->nticks++] = t;
    return;
  }
  /* Keep the span finite and resolvable relative to the values' magnitude. */
  mn = fmax(mn, -1e300), mx = fmin(mx, 1e300);
  double mag = fmax(fabs(mn), fabs(mx)), minspan = mag > 0 ? mag * 1e-9 : 1.0;
  if (mx - mn < minspan) {
    double mid = 0.5 * (mn + mx), half = mag > 0 ? fmax(mag * 0.05, minspan) : 1.0;
    mn = mid - half, mx = mid + half;
  }
  double step = nice_step(mx - mn, 6.0);
  a->lo = floor(mn / step) * step, a->hi = ceil(mx / step) * step, a->step = step;
  if (!(a->hi > a->lo)) a->hi = a->lo + step;
  double n = floor((a->hi - a->lo) / step + 0.5);
  for (double i = 0; i <= n && a->nticks < MAX_TICKS; i++)
    a->ticks[a->nticks++] = a->lo + i * step;
}

/* Pixel of position t on an axis spanning pixels [p0, p1], clamped to keep numbers short. */
static double to_px(const axis* a, double t, double p0, double p1) {
  double v = p0 + (t - a->lo) / (a->hi - a->lo) * (p1 - p0);
  return fmax(-1e5, fmin(1e5, v));
}

static double pos_of(int log_axis, double v) {
  return log_axis ? log10(v) : v;
}

/* Tick label of position t. */
static void tick_label(char* buf, size_t cap, const axis* a, double t) {
  if (a->log) {
    int d = (int)lround(t);
    if (d >= -4 && d <= 5)
      snprintf(buf, cap, "%g", pow(10.0, d));
    else
      snprintf(buf, cap, "1e%d", d);
    return;
  }
  if (fabs(t) < a->step * 1e-6) t = 0.0; /* no "-0" or 1e-17 from rounding */
  double mag = fmax(fabs(a->lo), fabs(a->hi));
  int k = (int)floor(log10(a->step) + 1e-9);
  if (mag >= 1e6 || mag < 1e-3) {
    int digits = (int)floor(log10(mag)) - k + 1;
    digits = digits < 1 ? 1 : digits > 15 ? 15 : digits;
    snprintf(buf, cap, "%.*g", digits, t);
  } else {
    snprintf(buf, cap, "%.*f", k < 0 ? -k : 0, t);
  }
}

static size_t text_chars(const char* s) { /* UTF-8 characters, for legend sizing */
  size_t n = 0;
  for (; *s; s++)
    n += ((unsigned char)*s & 0xC0) != 0x80;
  return n;
}

static void render_axes(const xsi_plot* p, xsi_strbuf* sb, const axis* ax, const axis* ay,
                        double x0, double x1, double y0, double y1) {
  char lab[64];
  xsi_sb_puts(sb, "<g stroke=\"#e6e6e6\" stroke-width=\"1\">\n");
  for (size_t i = 0; i < ax->nticks; i++) {
    double px = to_px(ax, ax->ticks[i], x0, x1);
    xsi_sb_printf(sb, "<line x1=\"%.2f\" y1=\"%.2f\" x2=\"%.2f\" y2=\"%.2f\"/>\n", px, y0, px, y1);
  }
  for (size_t i = 0; i < ay->nticks; i++) {
    double py = to_px(ay, ay->ticks[i], y1, y0);
    xsi_sb_printf(sb, "<line x1=\"%.2f\" y1=\"%.2f\" x2=\"%.2f\" y2=\"%.2f\"/>\n", x0, py, x1, py);
  }
  xsi_sb_puts(sb, "</g>\n<g stroke=\"black\" stroke-width=\"1\">\n");
  for (int dim = 0; dim < 2; dim++) { /* minor decade ticks on log axes */
    const axis* a = dim ? ay : ax;
    if (!a->log || a->step != 1.0 || a->hi - a->lo > 6.0) continue;
    for (double d = a->lo; d < a->hi; d++) {
      for (int m = 2; m <= 9; m++) {
        double t = d + log10((double)m);
        if (dim) {
          double py = to_px(a, t, y1, y0);
          xsi_sb_printf(sb, "<line x1=\"%.2f\" y1=\"%.2f\" x2=\"%.2f\" y2=\"%.2f\"/>\n", x0, py,
                        x0 - 3, py);
        } else {
          double px = to_px(a, t, x0, x1);
          xsi_sb_printf(sb, "<line x1=\"%.2f\" y1=\"%.2f\" x2=\"%.2f\" y2=\"%.2f\"/>\n", px, y1, px,
                        y1 + 3);
        }
      }
    }
  }
  for (size_t i = 0; i < ax->nticks; i++) {
    double px = to_px(ax, ax->ticks[i], x0, x1);
    xsi_sb_printf(sb, "<line x1=\"%.2f\" y1=\"%.2f\" x2=\"%.2f\" y2=\"%.2f\"/>\n", px, y1, px,
                  y1 + 6);
  }
  for (size_t i = 0; i < ay->nticks; i++) {
    double py = to_px(ay, ay->ticks[i], y1, y0);
    xsi_sb_printf(sb, "<line x1=\"%.2f\" y1=\"%.2f\" x2=\"%.2f\" y2=\"%.2f\"/>\n", x0 - 6, py, x0,
                  py);
  }
  xsi_sb_printf(sb, "<rect x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" height=\"%.2f\" fill=\"none\"/>\n",
                x0, y0, x1 - x0, y1 - y0);
  xsi_sb_puts(sb, "</g>\n<g fill=\"#222222\">\n");
  for (size_t i = 0; i < ax->nticks; i++) {
    tick_label(lab, sizeof lab, ax, ax->ticks[i]);
    xsi_sb_printf(sb, "<text x=\"%.2f\" y=\"%.2f\" text-anchor=\"middle\">%s</text>\n",
                  to_px(ax, ax->ticks[i], x0, x1), y1 + 20, lab);
  }
  for (size_t i = 0; i < ay->nticks; i++) {
    tick_label(lab, sizeof lab, ay, ay->ticks[i]);
    xsi_sb_printf(sb, "<text x=\"%.2f\" y=\"%.2f\" text-anchor=\"end\">%s</text>\n", x0 - 9,
                  to_px(ay, ay->ticks[i], y1, y0) + 4, lab);
  }
  xsi_sb_printf(sb, "<text x=\"%.2f\" y=\"%.2f\" text-anchor=\"middle\" font-size=\"14\">",
                0.5 * (x0 + x1), y1 + 44);
  put_escaped(sb, p->xlabel);
  xsi_sb_printf(sb,
                "</text>\n<text transform=\"translate(18 %.2f) rotate(-90)\" "
                "text-anchor=\"middle\" font-size=\"14\">",
                0.5 * (y0 + y1));
  put_escaped(sb, p->ylabel);
  xsi_sb_puts(sb, "</text>\n</g>\n");
}

static unsigned series_color(const xsi_plot* p, size_t i) {
  unsigned c = p->series[i].color;
  return c ? c : k_palette[i % (sizeof k_palette / sizeof k_palette[0])];
}

static void render_series(const xsi_plot* p, size_t si, xsi_strbuf* sb, const axis* ax,
                          const axis* ay, double x0, double x1, double y0, double y1) {
  const xsi_series* s = &p->series[si];
  unsigned col = series_color(p, si);
  if (s->style == XSI_STYLE_POINTS) {
    xsi_sb_printf(sb, "<g fill=\"#%06x\">\n", col);
    for (size_t i = 0; i < s->n; i++) {
      if (!point_ok(p, s->x[i], s->y[i])) continue;
      xsi_sb_printf(sb, "<circle cx=\"%.2f\" cy=\"%.2f\" r=\"3\"/>\n",
                    to_px(ax, pos_of(p->logx, s->x[i]), x0, x1),
                    to_px(ay, pos_of(p->logy, s->y[i]), y1, y0));
    }
    xsi_sb_puts(sb, "</g>\n");
    return;
  }
  xsi_sb_printf(sb, "<g fill=\"none\" stroke=\"#%06x\" stroke-width=\"2\"%s>\n", col,
                s->style == XSI_STYLE_DASHED ? " stroke-dasharray=\"6 4\"" : "");
  size_t i = 0;
  while (i < s->n) { /* one polyline per run of valid points */
    while (i < s->n && !point_ok(p, s->x[i], s->y[i]))
      i++;
    size_t start = i;
    while (i < s->n && point_ok(p, s->x[i], s->y[i]))
      i++;
    if (i == start) break;
    if (i - start == 1) { /* an isolated point would be invisible as a line */
      xsi_sb_printf(sb, "<circle cx=\"%.2f\" cy=\"%.2f\" r=\"2\" fill=\"#%06x\"/>\n",
                    to_px(ax, pos_of(p->logx, s->x[start]), x0, x1),
                    to_px(ay, pos_of(p->logy, s->y[start]), y1, y0), col);
      continue;
    }
    xsi_sb_puts(sb, "<polyline points=\"");
    for (size_t k = start; k < i; k++)
      xsi_sb_printf(sb, "%s%.2f,%.2f", k == start ? "" : " ",
                    to_px(ax, pos_of(p->logx, s->x[k]), x0, x1),
                    to_px(ay, pos_of(p->logy, s->y[k]), y1, y0));
    xsi_sb_puts(sb, "\"/>\n");
  }
  xsi_sb_puts(sb, "</g>\n");
}

static void render_legend(const xsi_plot* p, xsi_strbuf* sb, double x1, double y0) {
  size_t n = 0, maxc = 0;
  for (size_t i = 0; i < p->nseries; i++) {
    if (!p->series[i].label[0]) continue;
    n++;
    size_t c = text_chars(p->series[i].label);
    maxc = c > maxc ? c : maxc;
  }
  if (!n) return;
  double w = 44.0 + 7.0 * (double)maxc, h = 8.0 + 18.0 * (double)n;
  double lx = x1 - w - 8, ly = y0 + 8, row = ly + 15;
  xsi_sb_printf(sb,
                "<g font-size=\"12\">\n<rect x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" "
                "height=\"%.2f\" fill=\"white\" fill-opacity=\"0.85\" stroke=\"#999999\"/>\n",
                lx, ly, w, h);
  for (size_t i = 0; i < p->nseries; i++) {
    const xsi_series* s = &p->series[i];
    if (!s->label[0]) continue;
    unsigned col = series_color(p, i);
    if (s->style == XSI_STYLE_POINTS)
      xsi_sb_printf(sb, "<circle cx=\"%.2f\" cy=\"%.2f\" r=\"3\" fill=\"#%06x\"/>\n", lx + 19,
                    row - 4, col);
    else
      xsi_sb_printf(sb,
                    "<line x1=\"%.2f\" y1=\"%.2f\" x2=\"%.2f\" y2=\"%.2f\" stroke=\"#%06x\" "
                    "stroke-width=\"2\"%s/>\n",
                    lx + 8, row - 4, lx + 30, row - 4, col,
                    s->style == XSI_STYLE_DASHED ? " stroke-dasharray=\"6 4\"" : "");
    xsi_sb_printf(sb, "<text x=\"%.2f\" y=\"%.2f\">", lx + 36, row);
    put_escaped(sb, s->label);
    xsi_sb_puts(sb, "</text>\n");
    row += 18;
  }
  xsi_sb_puts(sb, "</g>\n");
}

xs_result xsi_plot_render(const xsi_plot* p, xsi_strbuf* out) {
  XSI_ARG(p && out, "xsi_plot_render: NULL argument");
  double W = p->width > 0 ? p->width : 800, H = p->height > 0 ? p->height : 500;
  if (W < ML + MR + 40) W = ML + MR + 40;
  if (H < MT + MB + 40) H = MT + MB + 40;
  double x0 = ML, x1 = W - MR, y0 = MT, y1 = H - MB;
  double mnx = INFINITY, mxx = -INFINITY, mny = INFINITY, mxy = -INFINITY;
  for (size_t s = 0; s < p->nseries; s++) {
    const xsi_series* se = &p->series[s];
    for (size_t i = 0; i < se->n; i++) {
      if (!point_ok(p, se->x[i], se->y[i])) continue;
      double px = pos_of(p->logx, se->x[i]), py = pos_of(p->logy, se->y[i]);
      mnx = fmin(mnx, px), mxx = fmax(mxx, px), mny = fmin(mny, py), mxy = fmax(mxy, py);
    }
  }
  axis ax, ay;
  make_axis(&ax, p->logx, mnx, mxx);
  make_axis(&ay, p->logy, mny, mxy);

  xsi_sb_printf(out,
                "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
                "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"%.0f\" "
                "height=\"%.0f\" viewBox=\"0 0 %.0f %.0f\" font-family=\"sans-serif\" "
                "font-size=\"12\">\n",
                W, H, W, H);
  xsi_sb_printf(out, "<rect x=\"0\" y=\"0\" width=\"%.0f\" height=\"%.0f\" fill=\"white\"/>\n", W,
                H);
  xsi_sb_printf(out,
                "<defs><clipPath id=\"xs-plot-area\"><rect x=\"%.2f\" y=\"%.2f\" "
                "width=\"%.2f\" height=\"%.2f\"/></clipPath></defs>\n",
                x0, y0, x1 - x0, y1 - y0);
  xsi_sb_printf(out, "<text x=\"%.2f\" y=\"28\" text-anchor=\"middle\" font-size=\"16\">", 0.5 * W);
  put_escaped(out, p->title);
  xsi_sb_puts(out, "</text>\n");
  render_axes(p, out, &ax, &ay, x0, x1, y0, y1);
  xsi_sb_puts(out, "<g clip-path=\"url(#xs-plot-area)\">\n");
  for (size_t s = 0; s < p->nseries; s++)
    render_series(p, s, out, &ax, &ay, x0, x1, y0, y1);
  xsi_sb_puts(out, "</g>\n");
  render_legend(p, out, x1, y0);
  xsi_sb_puts(out, "</svg>\n");
  xs_result r = xsi_sb_status(out);
  if (r != XS_OK) return xsi_set_error(r, "xsi_plot_render: out of memory");
  return XS_OK;
}

xs_result xsi_plot_write(const xsi_plot* p, const char* path) {
  XSI_ARG(p && path, "xsi_plot_write: NULL argument");
  xsi_strbuf sb = XSI_STRBUF_INIT;
  xs_result r = xsi_plot_render(p, &sb);
  if (r == XS_OK) r = xsi_write_file_atomic(path, sb.data, sb.len);
  xsi_sb_free(&sb);
  return r;
}
