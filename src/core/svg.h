/* svg.h — minimal SVG line/scatter plots (for model plots, calibration, phase diagrams, traces).
 *
 * Usage: xsi_plot p; xsi_plot_init(&p, "title", "x label", "y label");
 *        xsi_plot_series(&p, "V=1MB closed form", xs, ys, n, XSI_STYLE_LINE, color);
 *        xsi_plot_write(&p, "out.svg");  xsi_plot_free(&p);
 * Output is self-contained SVG 1.1 with a legend; written atomically. */
#ifndef XSTAGE_CORE_SVG_H
#define XSTAGE_CORE_SVG_H

#include "xstage/xstage.h"
#include "core/strbuf.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum xsi_style {
  XSI_STYLE_LINE = 1,   /* solid polyline */
  XSI_STYLE_DASHED = 2, /* dashed polyline */
  XSI_STYLE_POINTS = 3, /* circles */
} xsi_style;

typedef struct xsi_series {
  char label[96];
  double* x;
  double* y;
  size_t n;
  xsi_style style;
  unsigned color; /* 0xRRGGBB; 0 = pick from the palette by series index */
} xsi_series;

typedef struct xsi_plot {
  char title[160], xlabel[96], ylabel[96];
  int logx, logy;   /* log10 axes (non-positive values are dropped) */
  int width, height; /* pixels; default 800 x 500 */
  size_t nseries;
  xsi_series* series; /* owned copies */
} xsi_plot;

void xsi_plot_init(xsi_plot* p, const char* title, const char* xlabel, const char* ylabel);
/* Copies x and y. */
xs_result xsi_plot_series(xsi_plot* p, const char* label, const double* x, const double* y,
                          size_t n, xsi_style style, unsigned color);
/* Render to a string buffer / to a file (atomic). */
xs_result xsi_plot_render(const xsi_plot* p, xsi_strbuf* out);
xs_result xsi_plot_write(const xsi_plot* p, const char* path);
void xsi_plot_free(xsi_plot* p); /* NULL-safe */

#ifdef __cplusplus
}
#endif
#endif
