/* test_csv.c — the strict CSV reader: quoting, line ends, comments, errors naming file and line,
 * typed fields, and a million-row file (count, values, time). */
#include "core/csv.h"
#include "core/internal.h"
#include "core/strbuf.h"
#include "test.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

static xsi_csv* parse(const char* text) {
  xsi_csv* c = (xsi_csv*)0x1; /* poisoned: parse must reset it */
  xs_result r = xsi_csv_parse(&c, text, strlen(text), "t.csv", 0);
  if (r != XS_OK) {
    fprintf(stderr, "  unexpected failure: %s\n", xs_last_error());
    XT_CHECK(c == NULL);
    return NULL;
  }
  return c;
}

/* 1 when `text` fails with XS_ERR_PARSE and the detail contains `what`. */
static int fails_with(const char* text, size_t max_rows, const char* what) {
  xsi_csv* c = NULL;
  xs_result r = xsi_csv_parse(&c, text, strlen(text), "t.csv", max_rows);
  int ok = r == XS_ERR_PARSE && c == NULL && strstr(xs_last_error(), what) != NULL;
  if (!ok) fprintf(stderr, "  input [%s] -> %d '%s'\n", text, (int)r, xs_last_error());
  xsi_csv_free(c);
  return ok;
}

static void test_basic(void) {
  xsi_csv* c = parse("# measured on h200\nK,V,T\n\n1,4096,2.5\n# mid comment\n  \n2,8192,3.25\n");
  XT_CHECK(c != NULL);
  if (!c) return;
  XT_EQ_INT(c->ncols, 3);
  XT_EQ_INT(c->nrows, 2);
  XT_CHECK(strcmp(c->header[0], "K") == 0 && strcmp(c->header[2], "T") == 0);
  XT_CHECK(strcmp(c->rows[1][1], "8192") == 0);
  XT_EQ_INT(c->row_line[0], 4);
  XT_EQ_INT(c->row_line[1], 7);
  XT_EQ_INT(xsi_csv_col(c, "V"), 1);
  XT_EQ_INT(xsi_csv_col(c, "missing"), -1);
  long idx = -5;
  XT_CHECK(xsi_csv_require(&idx, c, "T") == XS_OK && idx == 2);
  XT_CHECK(xsi_csv_require(&idx, c, "Q") == XS_ERR_PARSE);
  XT_CHECK(strcmp(xs_last_error(), "t.csv: missing column 'Q'") == 0);
  double x = 0;
  long long k = 0;
  XT_CHECK(xsi_csv_number(&x, c, 1, 2) == XS_OK && x == 3.25);
  XT_CHECK(xsi_csv_int(&k, c, 1, 1, 0, 1 << 20) == XS_OK && k == 8192);
  XT_CHECK(xsi_csv_number(&x, c, 2, 0) == XS_ERR_INVALID_ARG); /* row out of range */
  XT_CHECK(xsi_csv_number(&x, c, 0, 3) == XS_ERR_INVALID_ARG); /* column out of range */
  XT_CHECK(xsi_csv_number(&x, c, 0, -1) == XS_ERR_INVALID_ARG);
  xsi_csv_free(c);
  xsi_csv_free(NULL);
  /* header only, no final newline */
  c = parse("a,b");
  XT_CHECK(c && c->ncols == 2 && c->nrows == 0);
  xsi_csv_free(c);
}

static void test_quotes_and_line_ends(void) {
  xsi_csv* c = parse("name,\"note, with comma\"\r\n"
                     "\"a \"\"quoted\"\" word\",\"two\nlines\"\r\n"
                     "\"\",plain\r\n"
                     "x,\"crlf\r\ninside\"\n"
                     "last,row");
  XT_CHECK(c != NULL);
  if (!c) return;
  XT_EQ_INT(c->nrows, 4);
  XT_CHECK(strcmp(c->header[1], "note, with comma") == 0);
  XT_CHECK(strcmp(c->rows[0][0], "a \"quoted\" word") == 0);
  XT_CHECK(strcmp(c->rows[0][1], "two\nlines") == 0);
  XT_CHECK(strcmp(c->rows[1][0], "") == 0 && strcmp(c->rows[1][1], "plain") == 0);
  XT_CHECK(strcmp(c->rows[2][1], "crlf\r\ninside") == 0);
  XT_CHECK(strcmp(c->rows[3][1], "row") == 0);
  XT_EQ_INT(c->row_line[0], 2);
  XT_EQ_INT(c->row_line[1], 4); /* the quoted newline counts */
  XT_EQ_INT(c->row_line[2], 5);
  XT_EQ_INT(c->row_line[3], 7);
  xsi_csv_free(c);
  /* empty fields, trailing empty field, CR only at the very end */
  c = parse("a,b,c\n,,\n1,2,\r");
  XT_CHECK(c && c->nrows == 2);
  if (c && c->nrows == 2) {
    XT_CHECK(strcmp(c->rows[0][2], "") == 0 && strcmp(c->rows[1][2], "") == 0);
    XT_CHECK(strcmp(c->rows[1][1], "2") == 0);
  }
  xsi_csv_free(c);
  c = parse("a,b\n1,");
  XT_CHECK(c && c->nrows == 1 && strcmp(c->rows[0][1], "") == 0);
  xsi_csv_free(c);
}

static void test_errors(void) {
  XT_CHECK(fails_with("", 0, "t.csv: no header row"));
  XT_CHECK(fails_with("# only a comment\n\n", 0, "no header row"));
  XT_CHECK(fails_with("a,b\n1,2\n3\n", 0, "t.csv:3: 1 fields, but the header has 2"));
  XT_CHECK(fails_with("a,b\n1,2,3\n", 0, "t.csv:2: more than 2 fields"));
  XT_CHECK(fails_with("a,,b\n", 0, "t.csv:1: column 2 has an empty name"));
  XT_CHECK(fails_with("# c\nx,y,x\n", 0, "t.csv:2: duplicate column 'x'"));
  XT_CHECK(fails_with("a\n\"open\n\n", 0, "t.csv:2: unterminated quoted field"));
  XT_CHECK(fails_with("a,b\n\"q\"x,2\n", 0, "t.csv:2: field 1: text after the closing quote"));
  XT_CHECK(fails_with("a,b\n1,x\"y\n", 0, "t.csv:2: field 2: quote inside"));
  XT_CHECK(fails_with("a\n1\n2\n3\n", 2, "t.csv:4: more than 2 data rows"));
  xsi_csv* c = NULL;
  XT_CHECK(xsi_csv_parse(&c, "a\n1\n2\n", 6, "t.csv", 2) == XS_OK && c && c->nrows == 2);
  xsi_csv_free(c);
  c = NULL;
  XT_CHECK(xsi_csv_parse(&c, "a,b\n1\0002\n", 8, "t.csv", 0) == XS_ERR_PARSE && !c);
  XT_CHECK(strstr(xs_last_error(), "NUL byte") != NULL);
  XT_CHECK(xsi_csv_parse(NULL, "a", 1, "t.csv", 0) == XS_ERR_INVALID_ARG);
  /* bounded by len: the header "a,b" is cut to "a" */
  XT_CHECK(xsi_csv_parse(&c, "a,b\n", 1, "t.csv", 0) == XS_OK && c && c->ncols == 1);
  xsi_csv_free(c);
}

static void test_numbers(void) {
  xsi_csv* c = parse("K,x\n"
                     "1,1.5\n2,-3e2\n3,abc\n4,nan\n5,inf\n6,1e999\n7, 2\n8,\n9,0x10\n10,.5\n"
                     "11,1e3\n12,+7\n13,99999999999999999999\n14,-1e-400\n15,2.\n");
  XT_CHECK(c != NULL);
  if (!c) return;
  double x = -1;
  long long k = -1;
  XT_CHECK(xsi_csv_number(&x, c, 0, 1) == XS_OK && x == 1.5);
  XT_CHECK(xsi_csv_number(&x, c, 1, 1) == XS_OK && x == -300.0);
  x = 42;
  XT_CHECK(xsi_csv_number(&x, c, 2, 1) == XS_ERR_PARSE && x == 42);
  XT_CHECK(strcmp(xs_last_error(), "t.csv:4: field 'x': 'abc' is not a number") == 0);
  XT_CHECK(xsi_csv_number(&x, c, 3, 1) == XS_ERR_PARSE); /* nan */
  XT_CHECK(xsi_csv_number(&x, c, 4, 1) == XS_ERR_PARSE); /* inf */
  XT_CHECK(xsi_csv_number(&x, c, 5, 1) == XS_ERR_PARSE); /* overflows to inf */
  XT_CHECK(strstr(xs_last_error(), "out of range") != NULL);
  XT_CHECK(xsi_csv_number(&x, c, 6, 1) == XS_ERR_PARSE); /* leading space */
  XT_CHECK(xsi_csv_number(&x, c, 7, 1) == XS_ERR_PARSE); /* empty */
  XT_CHECK(xsi_csv_number(&x, c, 8, 1) == XS_ERR_PARSE); /* hex */
  XT_CHECK(xsi_csv_number(&x, c, 9, 1) == XS_OK && x == 0.5);
  XT_CHECK(xsi_csv_number(&x, c, 13, 1) == XS_OK && x == 0.0); /* underflow is finite */
  XT_CHECK(xsi_csv_number(&x, c, 14, 1) == XS_OK && x == 2.0);
  XT_CHECK(xsi_csv_int(&k, c, 0, 0, 1, 100) == XS_OK && k == 1);
  XT_CHECK(xsi_csv_int(&k, c, 0, 1, -10, 10) == XS_ERR_PARSE); /* 1.5 */
  XT_CHECK(strstr(xs_last_error(), "'1.5' is not an integer") != NULL);
  XT_CHECK(xsi_csv_int(&k, c, 10, 1, 0, 10000) == XS_ERR_PARSE); /* 1e3: integer syntax only */
  XT_CHECK(xsi_csv_int(&k, c, 11, 1, 0, 10) == XS_OK && k == 7);
  XT_CHECK(xsi_csv_int(&k, c, 12, 1, 0, 100) == XS_ERR_PARSE); /* beyond long long */
  XT_CHECK(xsi_csv_int(&k, c, 14, 0, 1, 14) == XS_ERR_PARSE);  /* 15 > hi */
  XT_CHECK(strcmp(xs_last_error(), "t.csv:16: field 'K': 15 is out of range [1, 14]") == 0);
  XT_CHECK(xsi_csv_int(&k, c, 7, 1, 0, 1) == XS_ERR_PARSE); /* empty */
  xsi_csv_free(c);
}

static double now_s(void) {
  struct timespec ts;
  timespec_get(&ts, TIME_UTC); /* C11; wall clock is fine for a coarse bound */
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void test_million_rows(void) {
  const size_t n = 1000000;
  xsi_strbuf sb = XSI_STRBUF_INIT;
  xsi_sb_puts(&sb, "# generated\nrow,K,V,T_ns,label\n");
  for (size_t i = 0; i < n; i++)
    xsi_sb_printf(&sb, "%zu,%zu,%zu,%.3f,%s\n", i, 1 + i % 132, (i % 64 + 1) * 4096,
                  0.25 * (double)i, (i % 1000 == 0) ? "\"q,x\"" : "p");
  XT_CHECK(xsi_sb_status(&sb) == XS_OK);
  xsi_csv* c = NULL;
  double t0 = now_s();
  xs_result r = xsi_csv_parse(&c, sb.data, sb.len, "big.csv", 0);
  double t1 = now_s();
  XT_CHECK(r == XS_OK && c != NULL);
  if (c) {
    XT_EQ_INT(c->nrows, n);
    long long v = 0;
    double t = 0;
    size_t probe[] = {0, 1, 999, 1000, 123457, n - 1};
    for (size_t i = 0; i < sizeof probe / sizeof probe[0]; i++) {
      size_t row = probe[i];
      XT_CHECK(xsi_csv_int(&v, c, row, 0, 0, (long long)n) == XS_OK && v == (long long)row);
      XT_CHECK(xsi_csv_int(&v, c, row, 2, 0, 1 << 20) == XS_OK &&
               v == (long long)((row % 64 + 1) * 4096));
      XT_CHECK(xsi_csv_number(&t, c, row, 3) == XS_OK && t == 0.25 * (double)row);
      XT_CHECK(strcmp(c->rows[row][4], row % 1000 == 0 ? "q,x" : "p") == 0);
      XT_EQ_INT(c->row_line[row], row + 3);
    }
  }
  printf("     1,000,000 rows (%.1f MB) parsed in %.0f ms\n", (double)sb.len / 1e6,
         1e3 * (t1 - t0));
  XT_CHECK(t1 - t0 < 3.0); /* a few hundred ms expected; generous for loaded machines */
  xsi_csv_free(c);
  xsi_sb_free(&sb);
}

static void test_random_garbage(void) {
  const char* base = "a,b,\"c\"\r\n1,\"x,\"\"y\",3\n# c\n4,5,6\n";
  size_t n = strlen(base);
  char buf[64];
  unsigned long long seed = 99;
  const char alphabet[] = ",\"\r\n#a1 \0";
  for (int it = 0; it < 20000; it++) {
    memcpy(buf, base, n);
    for (int m = 0; m < 3; m++)
      buf[xt_rand_u64(&seed) % n] = alphabet[xt_rand_u64(&seed) % (sizeof alphabet - 1)];
    size_t len = (size_t)(xt_rand_u64(&seed) % (n + 1));
    xsi_csv* c = NULL;
    xs_result r = xsi_csv_parse(&c, buf, len, "r.csv", 0);
    XT_CHECK(r == XS_OK || r == XS_ERR_PARSE);
    XT_CHECK((r == XS_OK) == (c != NULL));
    if (c) {
      for (size_t i = 0; i < c->nrows; i++)
        for (size_t j = 0; j < c->ncols; j++)
          XT_CHECK(c->rows[i][j] != NULL);
    } else {
      XT_CHECK(strncmp(xs_last_error(), "r.csv", 5) == 0);
    }
    xsi_csv_free(c);
  }
}

int main(void) {
  XT_RUN(test_basic);
  XT_RUN(test_quotes_and_line_ends);
  XT_RUN(test_errors);
  XT_RUN(test_numbers);
  XT_RUN(test_million_rows);
  XT_RUN(test_random_garbage);
  return XT_END();
}
