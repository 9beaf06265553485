/* csv.c — a strict CSV reader (see csv.h).
 *
 * Layout: the text is copied once into an owned buffer and split in place: every field is a
 * NUL-terminated slice of that buffer (quoted fields are unescaped in place; "" shrinks to ").
 * Field pointers of all rows live in one array (nrows * ncols, grown by doubling) and `rows[r]`
 * points at row r's slice of it, so a file costs four allocations however many rows it has.
 *
 * Grammar: lines end in LF or CRLF (a CR before LF, or at the end of the text, is dropped).
 * A line whose first byte is '#', or that holds only spaces/tabs, is skipped (outside quotes).
 * A field is either unquoted (no '"', no NUL) or fully quoted: '"' ... '"' where "" is a quote
 * and commas, CR and LF are literal; after the closing quote comes ',' or the line end.
 * The first non-skipped line is the header. Fields are not trimmed. */
#include "core/csv.h"
#include "core/internal.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* The allocation behind an xsi_csv (the public struct comes first). */
typedef struct csv_impl {
  xsi_csv pub;
  char* buf;     /* owned copy of the text; fields point into it */
  char** fields; /* (nrows + 1) * ncols field pointers; header is row 0 */
} csv_impl;

void xsi_csv_free(xsi_csv* csv) {
  if (!csv) return;
  csv_impl* c = (csv_impl*)csv;
  free(c->buf);
  free(c->fields);
  free(c->pub.rows);
  free(c->pub.row_line);
  free(c);
}

typedef struct cparser {
  char* s; /* the owned buffer (len bytes + NUL) */
  size_t len, pos;
  int line; /* 1-based line of pos */
  const char* name;
  char** fields; /* field pointers of all rows so far */
  size_t nfields, cap;
} cparser;

static int push_field(cparser* p, char* f) {
  if (p->nfields == p->cap) {
    size_t nc = p->cap ? p->cap * 2 : 64;
    char** a = realloc(p->fields, nc * sizeof *a);
    if (!a) return 0;
    p->fields = a;
    p->cap = nc;
  }
  p->fields[p->nfields++] = f;
  return 1;
}

/* 1 when the line starting at p->pos is a comment or blank; then p->pos is moved past it. */
static int skip_line_if_empty(cparser* p) {
  size_t k = p->pos;
  if (k < p->len && p->s[k] != '#') {
    while (k < p->len && (p->s[k] == ' ' || p->s[k] == '\t'))
      k++;
    if (k < p->len && p->s[k] == '\r') k++;
    if (k < p->len && p->s[k] != '\n') return 0;
  }
  while (k < p->len && p->s[k] != '\n')
    k++;
  p->pos = k < p->len ? k + 1 : k;
  p->line++;
  return 1;
}

/* Parse one record starting at p->pos (not at the end, not a skipped line): push its fields
 * and set *count. Stops after the line end. `expect` (0 = any) bounds the field count. */
static xs_result parse_record(cparser* p, size_t* count, size_t expect, int rec_line) {
  char* s = p->s;
  size_t n = 0;
  for (;;) {
    char* field = s + p->pos;
    char* o = field;
    if (p->pos < p->len && s[p->pos] == '"') {
      int qline = p->line;
      p->pos++;
      for (;;) {
        if (p->pos >= p->len)
          return xsi_set_error(XS_ERR_PARSE, "%s:%d: unterminated quoted field", p->name, qline);
        char c = s[p->pos];
        if (c == '"') {
          if (p->pos + 1 < p->len && s[p->pos + 1] == '"') {
            *o++ = '"';
            p->pos += 2;
            continue;
          }
          p->pos++;
          break;
        }
        if (c == '\0')
          return xsi_set_error(XS_ERR_PARSE, "%s:%d: NUL byte in field", p->name, p->line);
        if (c == '\n') p->line++;
        *o++ = c;
        p->pos++;
      }
    } else {
      while (p->pos < p->len) {
        char c = s[p->pos];
        if (c == ',' || c == '\n') break;
        if (c == '\r' && (p->pos + 1 == p->len || s[p->pos + 1] == '\n')) break;
        if (c == '"')
          return xsi_set_error(XS_ERR_PARSE, "%s:%d: field %zu: quote inside an unquoted field",
                               p->name, p->line, n + 1);
        if (c == '\0')
          return xsi_set_error(XS_ERR_PARSE, "%s:%d: NUL byte in field", p->name, p->line);
        p->pos++;
      }
      o = s + p->pos;
    }
    /* p->pos is at ',', CR (of CRLF or at the end), LF, or the end of the text. */
    char sep = p->pos < p->len ? s[p->pos] : '\n';
    int lf = 0;
    if (sep == '\r') {
      p->pos++;
      sep = '\n';
    }
    if (sep != ',' && sep != '\n')
      return xsi_set_error(XS_ERR_PARSE, "%s:%d: field %zu: text after the closing quote", p->name,
                           p->line, n + 1);
    if (expect && n == expect)
      return xsi_set_error(XS_ERR_PARSE, "%s:%d: more than %zu fields (the header has %zu)",
                           p->name, rec_line, expect, expect);
    if (!push_field(p, field)) return xsi_set_error(XS_ERR_NO_MEMORY, "%s: out of memory", p->name);
    n++;
    if (p->pos < p->len) { /* past ',' or LF */
      lf = s[p->pos] == '\n';
      p->pos++;
    }
    /* NOTE: the terminator may overwrite the separator, so it is written only after the
     * separator was read. */
    *o = '\0';
    if (sep == '\n') {
      p->line += lf;
      break;
    }
    if (p->pos >= p->len) { /* "a,b," at the very end: one more, empty field */
      if (expect && n == expect)
        return xsi_set_error(XS_ERR_PARSE, "%s:%d: more than %zu fields (the header has %zu)",
                             p->name, rec_line, expect, expect);
      if (!push_field(p, s + p->len))
        return xsi_set_error(XS_ERR_NO_MEMORY, "%s: out of memory", p->name);
      n++;
      break;
    }
  }
  *count = n;
  return XS_OK;
}

static int cmp_str(const void* a, const void* b) {
  return strcmp(*(char* const*)a, *(char* const*)b);
}

/* Header names must be non-empty and unique (checked by sorting a copy: O(n log n)). */
static xs_result check_header(const cparser* p, char** header, size_t ncols, int line) {
  for (size_t i = 0; i < ncols; i++)
    if (!header[i][0])
      return xsi_set_error(XS_ERR_PARSE, "%s:%d: column %zu has an empty name", p->name, line,
                           i + 1);
  char** sorted = malloc(ncols * sizeof *sorted);
  if (!sorted) return xsi_set_error(XS_ERR_NO_MEMORY, "%s: out of memory", p->name);
  memcpy(sorted, header, ncols * sizeof *sorted);
  qsort(sorted, ncols, sizeof *sorted, cmp_str);
  for (size_t i = 1; i < ncols; i++) {
    if (strcmp(sorted[i - 1], sorted[i]) == 0) {
      xs_result r =
          xsi_set_error(XS_ERR_PARSE, "%s:%d: duplicate column '%.100s'", p->name, line, sorted[i]);
      free(sorted);
      return r;
    }
  }
  free(sorted);
  return XS_OK;
}

xs_result xsi_csv_parse(xsi_csv** out, const char* text, size_t len, const char* name,
                        size_t max_rows) {
  XSI_ARG(out && (text || !len), "xsi_csv_parse: NULL argument");
  *out = NULL;
  xs_result res = XS_OK;
  int* lines = NULL;
  size_t nrows = 0, lcap = 0;
  cparser p = {NULL, len, 0, 1, name ? name : "<csv>", NULL, 0, 0};
  csv_impl* c = calloc(1, sizeof *c);
  p.s = malloc(len + 1);
  if (!c || !p.s) XSI_FAIL(res, XS_ERR_NO_MEMORY, fail, "%s: out of memory", p.name);
  if (len) memcpy(p.s, text, len);
  p.s[len] = '\0';

  /* Header: the first line that is not a comment or blank. */
  while (p.pos < p.len && skip_line_if_empty(&p)) {
  }
  if (p.pos >= p.len) XSI_FAIL(res, XS_ERR_PARSE, fail, "%s: no header row", p.name);
  int hline = p.line;
  size_t ncols = 0;
  XSI_CHECK_GOTO(parse_record(&p, &ncols, 0, hline), res, fail);
  XSI_CHECK_GOTO(check_header(&p, p.fields, ncols, hline), res, fail);

  while (p.pos < p.len) {
    if (skip_line_if_empty(&p)) continue;
    int rline = p.line;
    if (max_rows && nrows == max_rows)
      XSI_FAIL(res, XS_ERR_PARSE, fail, "%s:%d: more than %zu data rows", p.name, rline, max_rows);
    size_t n = 0;
    XSI_CHECK_GOTO(parse_record(&p, &n, ncols, rline), res, fail);
    if (n != ncols)
      XSI_FAIL(res, XS_ERR_PARSE, fail, "%s:%d: %zu fields, but the header has %zu", p.name, rline,
               n, ncols);
    if (nrows == lcap) {
      lcap = lcap ? lcap * 2 : 64;
      int* l = realloc(lines, lcap * sizeof *l);
      if (!l) XSI_FAIL(res, XS_ERR_NO_MEMORY, fail, "%s: out of memory", p.name);
      lines = l;
    }
    lines[nrows++] = rline;
  }

  c->pub.rows = malloc((nrows ? nrows : 1) * sizeof *c->pub.rows);
  if (!c->pub.rows) XSI_FAIL(res, XS_ERR_NO_MEMORY, fail, "%s: out of memory", p.name);
  for (size_t r = 0; r < nrows; r++)
    c->pub.rows[r] = p.fields + (r + 1) * ncols;
  c->pub.name = name;
  c->pub.ncols = ncols;
  c->pub.header = p.fields;
  c->pub.nrows = nrows;
  c->pub.row_line = lines;
  c->buf = p.s;
  c->fields = p.fields;
  *out = &c->pub;
  return XS_OK;
fail:
  free(lines);
  free(p.fields);
  free(p.s);
  if (c) free(c->pub.rows);
  free(c);
  return res;
}

long xsi_csv_col(const xsi_csv* csv, const char* col) {
  if (!csv || !col) return -1;
  for (size_t i = 0; i < csv->ncols; i++)
    if (strcmp(csv->header[i], col) == 0) return (long)i;
  return -1;
}

xs_result xsi_csv_require(long* idx, const xsi_csv* csv, const char* col) {
  XSI_ARG(idx && csv && col, "xsi_csv_require: NULL argument");
  *idx = xsi_csv_col(csv, col);
  if (*idx < 0)
    return xsi_set_error(XS_ERR_PARSE, "%s: missing column '%.100s'",
                         csv->name ? csv->name : "<csv>", col);
  return XS_OK;
}

/* The field (r, col) in *f after checking the indices. */
static xs_result field_at(const char** f, const xsi_csv* csv, size_t r, long col) {
  XSI_ARG(csv, "xsi_csv: NULL table");
  XSI_ARG(r < csv->nrows, "%s: row %zu out of range (%zu rows)", csv->name ? csv->name : "<csv>", r,
          csv->nrows);
  XSI_ARG(col >= 0 && (size_t)col < csv->ncols, "%s: column %ld out of range (%zu columns)",
          csv->name ? csv->name : "<csv>", col, csv->ncols);
  *f = csv->rows[r][col];
  return XS_OK;
}

/* Decimal number syntax: [+-]digits[.digits][(e|E)[+-]digits], at least one mantissa digit. */
static int is_decimal(const char* s) {
  int digits = 0;
  if (*s == '+' || *s == '-') s++;
  while (*s >= '0' && *s <= '9')
    s++, digits++;
  if (*s == '.') {
    s++;
    while (*s >= '0' && *s <= '9')
      s++, digits++;
  }
  if (!digits) return 0;
  if (*s == 'e' || *s == 'E') {
    s++;
    if (*s == '+' || *s == '-') s++;
    if (!(*s >= '0' && *s <= '9')) return 0;
    while (*s >= '0' && *s <= '9')
      s++;
  }
  return *s == '\0';
}

xs_result xsi_csv_number(double* out, const xsi_csv* csv, size_t r, long col) {
  XSI_ARG(out, "xsi_csv_number: NULL out");
  const char* f = NULL;
  XSI_CHECK(field_at(&f, csv, r, col));
  const char* nm = csv->name ? csv->name : "<csv>";
  /* NOTE: the syntax is checked first so that strtod's extras (nan, inf, hex, leading
   * whitespace) are rejected; the number itself is converted by strtod. */
  if (!is_decimal(f))
    return xsi_set_error(XS_ERR_PARSE, "%s:%d: field '%.100s': '%.60s' is not a number", nm,
                         csv->row_line[r], csv->header[col], f);
  double x = strtod(f, NULL);
  if (!isfinite(x))
    return xsi_set_error(XS_ERR_PARSE, "%s:%d: field '%.100s': '%.60s' is out of range", nm,
                         csv->row_line[r], csv->header[col], f);
  *out = x;
  return XS_OK;
}

xs_result xsi_csv_int(long long* out, const xsi_csv* csv, size_t r, long col, long long lo,
                      long long hi) {
  XSI_ARG(out, "xsi_csv_int: NULL out");
  const char* f = NULL;
  XSI_CHECK(field_at(&f, csv, r, col));
  const char* nm = csv->name ? csv->name : "<csv>";
  const char* d = f + (*f == '+' || *f == '-');
  int ok = *d != '\0';
  for (; *d; d++)
    ok = ok && *d >= '0' && *d <= '9';
  if (!ok)
    return xsi_set_error(XS_ERR_PARSE, "%s:%d: field '%.100s': '%.60s' is not an integer", nm,
                         csv->row_line[r], csv->header[col], f);
  errno = 0;
  long long v = strtoll(f, NULL, 10);
  if (errno == ERANGE || v < lo || v > hi)
    return xsi_set_error(XS_ERR_PARSE, "%s:%d: field '%.100s': %.60s is out of range [%lld, %lld]",
                         nm, csv->row_line[r], csv->header[col], f, lo, hi);
  *out = v;
  return XS_OK;
}
