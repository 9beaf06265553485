/* test_svg.c — SVG plots: well-formed output, escaped labels, nice ticks, log axes, files. */
#include "core/fileio.h"
#include "core/svg.h"
#include "test.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* 1 when every tag opened in `s` is closed in order (a stack of names), entities in text and
 * attributes are the five XML ones, and there is exactly one root <svg> element. */
static int well_formed(const char* s) {
  char stack[64][32];
  int depth = 0, roots = 0;
  while (*s) {
    if (*s == '&') {
      if (strncmp(s, "&amp;", 5) && strncmp(s, "&lt;", 4) && strncmp(s, "&gt;", 4) &&
          strncmp(s, "&quot;", 6) && strncmp(s, "&apos;", 6))
        return 0;
      s++;
      continue;
    }
    if (*s == '>') return 0; /* outside a tag: our writer always escapes it */
    if (*s != '<') {
      s++;
      continue;
    }
    if (s[1] == '?') { /* XML declaration */
      const char* e = strstr(s, "?>");
      if (!e) return 0;
      s = e + 2;
      continue;
    }
    int closing = s[1] == '/';
    const char* name = s + 1 + closing;
    size_t n = strcspn(name, " />\n");
    if (n == 0 || n >= 32) return 0;
    const char* end = strchr(name, '>');
    if (!end) return 0;
    for (const char* q = name; q < end; q++)
      if (*q == '<') return 0;
    if (closing) {
      if (depth == 0 || strncmp(stack[depth - 1], name, n) || stack[depth - 1][n]) return 0;
      depth--;
    } else if (end[-1] != '/') {
      if (depth == 64) return 0;
      memcpy(stack[depth], name, n);
      stack[depth][n] = '\0';
      if (depth == 0) roots++;
      depth++;
    }
    s = end + 1;
  }
  return depth == 0 && roots == 1;
}

static size_t count(const char* s, const char* what) {
  size_t n = 0, k = strlen(what);
  for (const char* p = strstr(s, what); p; p = strstr(p + k, what))
    n++;
  return n;
}

static void test_render(void) {
  xsi_plot p;
  xsi_plot_init(&p, "T_iss <vs> G & \"V\" 'q'", "gap G (ns)", "T_iss <ns>");
  double x[6] = {0, 2, 4, NAN, 8, 10}, y[6] = {0.013, 0.02, 0.05, 0.06, INFINITY, 0.087};
  XT_CHECK(xsi_plot_series(&p, "closed form <max>", x, y, 6, XSI_STYLE_LINE, 0) == XS_OK);
  XT_CHECK(xsi_plot_series(&p, "fluid & queue", x, y, 6, XSI_STYLE_DASHED, 0xabcdef) == XS_OK);
  XT_CHECK(xsi_plot_series(&p, "measured", x, y, 6, XSI_STYLE_POINTS, 0) == XS_OK);
  x[0] = 1234; /* the plot owns copies */
  XT_CHECK(p.series[0].x[0] == 0.0);
  xsi_strbuf sb = XSI_STRBUF_INIT;
  XT_CHECK(xsi_plot_render(&p, &sb) == XS_OK && sb.data);
  if (!sb.data) return;
  const char* s = sb.data;
  XT_CHECK(well_formed(s));
  XT_CHECK(strstr(s, "T_iss &lt;vs&gt; G &amp; &quot;V&quot; &apos;q&apos;") != NULL);
  XT_CHECK(strstr(s, ">T_iss &lt;ns&gt;</text>") != NULL);
  XT_CHECK(strstr(s, ">closed form &lt;max&gt;</text>") != NULL);
  XT_CHECK(strstr(s, ">fluid &amp; queue</text>") != NULL);
  XT_CHECK(strstr(s, "<max>") == NULL);
  /* nice ticks: x 0..10 by 2, y 0.01..0.09 by 0.01 */
  XT_CHECK(strstr(s, ">0</text>") && strstr(s, ">4</text>") && strstr(s, ">10</text>"));
  XT_CHECK(strstr(s, ">0.01</text>") && strstr(s, ">0.05</text>") && strstr(s, ">0.09</text>"));
  XT_CHECK(strstr(s, ">0.013</text>") == NULL);
  /* the NaN at index 3 and inf at index 4 break each line into [0..2] and [5] */
  XT_EQ_INT(count(s, "<polyline"), 2);
  XT_EQ_INT(count(s, "<circle"), 2 + 4 + 1); /* 2 isolated line points, 4 markers, 1 legend */
  XT_CHECK(strstr(s, "stroke=\"#abcdef\"") && strstr(s, "stroke-dasharray"));
  XT_CHECK(strstr(s, "nan") == NULL && strstr(s, "inf") == NULL);
  xsi_sb_free(&sb);
  xsi_plot_free(&p);
  xsi_plot_free(&p); /* idempotent */
  xsi_plot_free(NULL);
}

static void test_log_axes(void) {
  xsi_plot p;
  xsi_plot_init(&p, "log", "V (bytes)", "t (us)");
  p.logx = p.logy = 1;
  double x[7] = {1e3, 1e4, -1, 1e5, 1e6, 0, 1e7}, y[7] = {1, 0, 10, -5, 100, 50, 1000};
  XT_CHECK(xsi_plot_series(&p, "pts", x, y, 7, XSI_STYLE_POINTS, 0) == XS_OK);
  xsi_strbuf sb = XSI_STRBUF_INIT;
  XT_CHECK(xsi_plot_render(&p, &sb) == XS_OK && sb.data);
  if (sb.data) {
    XT_CHECK(well_formed(sb.data));
    /* valid: (1e3,1), (1e6,100), (1e7,1000) -> 3 markers + 1 legend marker */
    XT_EQ_INT(count(sb.data, "<circle"), 3 + 1);
    XT_CHECK(strstr(sb.data, ">1000</text>") && strstr(sb.data, ">100000</text>"));
    XT_CHECK(strstr(sb.data, ">1e7</text>") && strstr(sb.data, ">1</text>"));
  }
  xsi_sb_free(&sb);
  xsi_plot_free(&p);

  /* A huge decade range thins the labels; nothing non-finite leaks out. */
  xsi_plot_init(&p, "wide", "x", "y");
  p.logy = 1;
  double xs[3] = {0, 1, 2}, ys[3] = {1e-300, 1, 1e300};
  XT_CHECK(xsi_plot_series(&p, "", xs, ys, 3, XSI_STYLE_LINE, 0) == XS_OK);
  XT_CHECK(xsi_plot_render(&p, &sb) == XS_OK && sb.data);
  if (sb.data) {
    XT_CHECK(well_formed(sb.data));
    XT_CHECK(count(sb.data, "</text>") < 40);
    XT_CHECK(strstr(sb.data, "nan") == NULL && strstr(sb.data, "inf") == NULL);
    XT_CHECK(strstr(sb.data, "<rect x=\"0\"") != NULL);
  }
  xsi_sb_free(&sb);
  xsi_plot_free(&p);
}

static void test_degenerate(void) {
  xsi_plot p;
  xsi_strbuf sb = XSI_STRBUF_INIT;
  xsi_plot_init(&p, "empty", NULL, NULL);
  XT_CHECK(xsi_plot_render(&p, &sb) == XS_OK && sb.data && well_formed(sb.data));
  XT_CHECK(sb.data && strstr(sb.data, "</svg>") && strstr(sb.data, ">empty</text>"));
  xsi_sb_free(&sb);
  /* only invalid points, a constant series, extreme magnitudes */
  double nan2[2] = {NAN, INFINITY}, c[3] = {5, 5, 5}, big[2] = {-1e308, 1e308};
  XT_CHECK(xsi_plot_series(&p, "invalid", nan2, nan2, 2, XSI_STYLE_LINE, 0) == XS_OK);
  XT_CHECK(xsi_plot_render(&p, &sb) == XS_OK && sb.data && well_formed(sb.data));
  xsi_sb_free(&sb);
  XT_CHECK(xsi_plot_series(&p, "const", c, c, 3, XSI_STYLE_POINTS, 0) == XS_OK);
  XT_CHECK(xsi_plot_render(&p, &sb) == XS_OK && sb.data && well_formed(sb.data));
  XT_CHECK(sb.data && strstr(sb.data, ">5.0</text>") != NULL);
  xsi_sb_free(&sb);
  XT_CHECK(xsi_plot_series(&p, "big", big, big, 2, XSI_STYLE_LINE, 0) == XS_OK);
  XT_CHECK(xsi_plot_series(&p, "none", NULL, NULL, 0, XSI_STYLE_LINE, 0) == XS_OK);
  XT_CHECK(xsi_plot_render(&p, &sb) == XS_OK && sb.data && well_formed(sb.data));
  XT_CHECK(sb.data && strlen(sb.data) < 20000);
  XT_CHECK(sb.data && !strstr(sb.data, "nan") && !strstr(sb.data, "inf"));
  xsi_sb_free(&sb);
  /* bad arguments */
  XT_CHECK(xsi_plot_series(&p, "x", NULL, c, 3, XSI_STYLE_LINE, 0) == XS_ERR_INVALID_ARG);
  XT_CHECK(xsi_plot_series(&p, "x", c, c, 3, (xsi_style)9, 0) == XS_ERR_INVALID_ARG);
  XT_CHECK(xsi_plot_series(NULL, "x", c, c, 3, XSI_STYLE_LINE, 0) == XS_ERR_INVALID_ARG);
  XT_CHECK(xsi_plot_render(NULL, &sb) == XS_ERR_INVALID_ARG);
  XT_EQ_INT(p.nseries, 4);
  xsi_plot_free(&p);
}

static void test_palette(void) {
  xsi_plot p;
  xsi_plot_init(&p, "palette", "x", "y");
  double x[2] = {0, 1}, y[2] = {0, 1};
  for (int i = 0; i < 8; i++) {
    char lab[16];
    snprintf(lab, sizeof lab, "s%d", i);
    XT_CHECK(xsi_plot_series(&p, lab, x, y, 2, XSI_STYLE_LINE, 0) == XS_OK);
  }
  xsi_strbuf sb = XSI_STRBUF_INIT;
  XT_CHECK(xsi_plot_render(&p, &sb) == XS_OK && sb.data);
  /* eight distinct stroke colours, each used by a line and its legend entry */
  int distinct = 0;
  for (int i = 0; i < 8 && sb.data; i++) {
    const char* at = strstr(sb.data, "<g fill=\"none\" stroke=\"#");
    for (int k = 0; k < i && at; k++)
      at = strstr(at + 1, "<g fill=\"none\" stroke=\"#");
    if (!at) break;
    char col[8];
    memcpy(col, at + 23, 7);
    col[7] = '\0';
    distinct += count(sb.data, col) == 2;
  }
  XT_EQ_INT(distinct, 8);
  xsi_sb_free(&sb);
  xsi_plot_free(&p);
}

static void test_write(void) {
  xsi_plot p;
  xsi_plot_init(&p, "file", "x", "y");
  double x[3] = {1, 2, 3}, y[3] = {3, 1, 2};
  XT_CHECK(xsi_plot_series(&p, "s", x, y, 3, XSI_STYLE_LINE, 0) == XS_OK);
  char path[64];
  snprintf(path, sizeof path, "/tmp/xs_test_svg_%ld.svg", (long)getpid());
  XT_CHECK(xsi_plot_write(&p, path) == XS_OK);
  char* data = NULL;
  size_t len = 0;
  xsi_strbuf sb = XSI_STRBUF_INIT;
  XT_CHECK(xsi_read_file(&data, &len, path, 0) == XS_OK);
  XT_CHECK(xsi_plot_render(&p, &sb) == XS_OK);
  XT_CHECK(data && sb.data && len == sb.len && memcmp(data, sb.data, len) == 0);
  XT_CHECK(xsi_plot_write(&p, "/nonexistent-dir/p.svg") == XS_ERR_IO);
  free(data);
  xsi_sb_free(&sb);
  remove(path);
  xsi_plot_free(&p);
}

int main(void) {
  XT_RUN(test_render);
  XT_RUN(test_log_axes);
  XT_RUN(test_degenerate);
  XT_RUN(test_palette);
  XT_RUN(test_write);
  return XT_END();
}
