/* json.c — a strict RFC 8259 JSON reader into the xsi_json DOM (see json.h).
 *
 * One recursive-descent pass over (text, len). Every read is bounded by `len`, so the input
 * needs no NUL terminator. Nesting is limited to XSI_JSON_MAX_DEPTH containers, which also bounds
 * the recursion of the parser and of xsi_json_free. Strings must be valid UTF-8; escapes
 * (\uXXXX with surrogate pairs included) are decoded to UTF-8. \u0000 is rejected because the
 * DOM stores NUL-terminated strings. Numbers follow the RFC grammar exactly (no leading zeros,
 * no NaN/Infinity, no '+') and must be finite as a double. */
#include "core/json.h"
#include "core/internal.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define XSI_JSON_MAX_DEPTH 64 /* containers nested inside each other, top level included */

typedef struct jparser {
  const char* s;
  size_t len;        /* bytes in s */
  size_t pos;        /* next byte to read; pos <= len */
  int line;          /* 1-based line of pos */
  size_t line_start; /* offset of the first byte of `line` */
  const char* name;  /* prefix of error details */
} jparser;

/* Record "<name>:<line>:<col>: <what>" for byte offset `at` (on the current line). */
static xs_result jerr(const jparser* p, size_t at, const char* fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
static xs_result jerr(const jparser* p, size_t at, const char* fmt, ...) {
  char what[256];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(what, sizeof what, fmt, ap);
  va_end(ap);
  size_t col = (at >= p->line_start ? at - p->line_start : 0) + 1;
  return xsi_set_error(XS_ERR_PARSE, "%s:%d:%zu: %s", p->name, p->line, col, what);
}

/* A printable description of byte c for messages: 'x' or byte 0xNN. */
static const char* describe(unsigned char c, char buf[16]) {
  if (c >= 0x20 && c < 0x7f)
    snprintf(buf, 16, "'%c'", c);
  else
    snprintf(buf, 16, "byte 0x%02x", c);
  return buf;
}

static void skip_ws(jparser* p) {
  while (p->pos < p->len) {
    char c = p->s[p->pos];
    if (c == '\n') {
      p->line++;
      p->line_start = p->pos + 1;
    } else if (c != ' ' && c != '\t' && c != '\r') {
      return;
    }
    p->pos++;
  }
}

static xsi_json* new_node(xsi_json_type type, int line) {
  xsi_json* v = calloc(1, sizeof *v);
  if (v) {
    v->type = type;
    v->line = line;
  }
  return v;
}

void xsi_json_free(xsi_json* v) {
  if (!v) return;
  for (size_t i = 0; i < v->len; i++) {
    xsi_json_free(v->items[i]);
    if (v->keys) free(v->keys[i]);
  }
  free(v->items);
  free(v->keys);
  free(v->str);
  free(v);
}

static int hexval(unsigned char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

/* The 4 hex digits at s[k..k+4) (all below end) as a code unit, or -1. */
static long hex4(const char* s, size_t k, size_t end) {
  if (k + 4 > end) return -1;
  long v = 0;
  for (size_t i = 0; i < 4; i++) {
    int h = hexval((unsigned char)s[k + i]);
    if (h < 0) return -1;
    v = v * 16 + h;
  }
  return v;
}

static size_t put_utf8(char* o, unsigned long cp) {
  if (cp < 0x80) {
    o[0] = (char)cp;
    return 1;
  }
  if (cp < 0x800) {
    o[0] = (char)(0xC0 | (cp >> 6));
    o[1] = (char)(0x80 | (cp & 0x3F));
    return 2;
  }
  if (cp < 0x10000) {
    o[0] = (char)(0xE0 | (cp >> 12));
    o[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
    o[2] = (char)(0x80 | (cp & 0x3F));
    return 3;
  }
  o[0] = (char)(0xF0 | (cp >> 18));
  o[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
  o[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
  o[3] = (char)(0x80 | (cp & 0x3F));
  return 4;
}

/* Length of the valid UTF-8 sequence at s[k..end) (lead byte >= 0x80), or 0 if invalid
 * (bad lead, truncated, bad continuation, overlong, surrogate, above U+10FFFF). */
static size_t utf8_len(const unsigned char* s, size_t k, size_t end) {
  unsigned char c = s[k];
  size_t n;
  unsigned long cp;
  if (c >= 0xC2 && c <= 0xDF)
    n = 2, cp = c & 0x1F;
  else if (c >= 0xE0 && c <= 0xEF)
    n = 3, cp = c & 0x0F;
  else if (c >= 0xF0 && c <= 0xF4)
    n = 4, cp = c & 0x07;
  else
    return 0;
  if (k + n > end) return 0;
  for (size_t i = 1; i < n; i++) {
    if ((s[k + i] & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (s[k + i] & 0x3F);
  }
  if ((n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000) || cp > 0x10FFFF) return 0;
  if (cp >= 0xD800 && cp <= 0xDFFF) return 0;
  return n;
}

/* Parse the string whose opening quote is at p->pos into a new NUL-terminated buffer. */
static xs_result parse_string(jparser* p, char** out) {
  const char* s = p->s;
  size_t open = p->pos, start = open + 1, i = start;
  /* Pass 1: find the closing quote. The decoded text is never longer than the raw text. */
  for (;;) {
    if (i >= p->len) return jerr(p, open, "unterminated string");
    unsigned char c = (unsigned char)s[i];
    if (c == '"') break;
    if (c < 0x20) return jerr(p, i, "control character (byte 0x%02x) in string", c);
    i += (c == '\\') ? 2 : 1;
  }
  size_t end = i;
  char* buf = malloc(end - start + 1);
  if (!buf) return xsi_set_error(XS_ERR_NO_MEMORY, "%s: out of memory", p->name);
  size_t o = 0, k = start;
  char d[16];
  /* Pass 2: decode. A backslash at k < end always has its escape byte at k + 1 < end. */
  while (k < end) {
    unsigned char c = (unsigned char)s[k];
    if (c >= 0x80) {
      size_t n = utf8_len((const unsigned char*)s, k, end);
      if (!n) {
        free(buf);
        return jerr(p, k, "invalid UTF-8 in string");
      }
      memcpy(buf + o, s + k, n);
      o += n;
      k += n;
      continue;
    }
    if (c != '\\') {
      buf[o++] = (char)c;
      k++;
      continue;
    }
    char e = s[k + 1];
    switch (e) {
    case '"':
      buf[o++] = '"';
      break;
    case '\\':
      buf[o++] = '\\';
      break;
    case '/':
      buf[o++] = '/';
      break;
    case 'b':
      buf[o++] = '\b';
      break;
    case 'f':
      buf[o++] = '\f';
      break;
    case 'n':
      buf[o++] = '\n';
      break;
    case 'r':
      buf[o++] = '\r';
      break;
    case 't':
      buf[o++] = '\t';
      break;
    case 'u': {
      long cp = hex4(s, k + 2, end);
      if (cp < 0) {
        free(buf);
        return jerr(p, k, "invalid \\u escape (needs 4 hex digits)");
      }
      size_t used = 6;
      if (cp >= 0xDC00 && cp <= 0xDFFF) {
        free(buf);
        return jerr(p, k, "unpaired low surrogate \\u%04lx", cp);
      }
      if (cp >= 0xD800 && cp <= 0xDBFF) {
        long lo = (k + 7 < end && s[k + 6] == '\\' && s[k + 7] == 'u') ? hex4(s, k + 8, end) : -1;
        if (lo < 0xDC00 || lo > 0xDFFF) {
          free(buf);
          return jerr(p, k, "high surrogate \\u%04lx not followed by a low surrogate", cp);
        }
        cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
        used = 12;
      }
      if (cp == 0) {
        free(buf);
        return jerr(p, k, "\\u0000 is not allowed in strings");
      }
      o += put_utf8(buf + o, (unsigned long)cp);
      k += used;
      continue;
    }
    default:
      free(buf);
      return jerr(p, k, "invalid escape '\\' followed by %s", describe((unsigned char)e, d));
    }
    k += 2;
  }
  buf[o] = '\0';
  p->pos = end + 1;
  *out = buf;
  return XS_OK;
}

static int is_digit(const jparser* p, size_t k) {
  return k < p->len && p->s[k] >= '0' && p->s[k] <= '9';
}

static xs_result parse_number(jparser* p, double* out) {
  size_t st = p->pos, k = st;
  if (k < p->len && p->s[k] == '-') k++;
  if (!is_digit(p, k)) return jerr(p, st, "invalid number (expected a digit)");
  if (p->s[k] == '0') {
    k++;
    if (is_digit(p, k)) return jerr(p, st, "invalid number (leading zero)");
  } else {
    while (is_digit(p, k))
      k++;
  }
  if (k < p->len && p->s[k] == '.') {
    k++;
    if (!is_digit(p, k)) return jerr(p, k, "invalid number (expected a digit after '.')");
    while (is_digit(p, k))
      k++;
  }
  if (k < p->len && (p->s[k] == 'e' || p->s[k] == 'E')) {
    k++;
    if (k < p->len && (p->s[k] == '+' || p->s[k] == '-')) k++;
    if (!is_digit(p, k)) return jerr(p, k, "invalid number (expected a digit in the exponent)");
    while (is_digit(p, k))
      k++;
  }
  /* NOTE: strtod needs a NUL-terminated copy; the grammar above already fixed its extent. */
  size_t n = k - st;
  char small[64];
  char* buf = n < sizeof small ? small : malloc(n + 1);
  if (!buf) return xsi_set_error(XS_ERR_NO_MEMORY, "%s: out of memory", p->name);
  memcpy(buf, p->s + st, n);
  buf[n] = '\0';
  double x = strtod(buf, NULL);
  if (buf != small) free(buf);
  if (!isfinite(x)) return jerr(p, st, "number out of range");
  *out = x;
  p->pos = k;
  return XS_OK;
}

static xs_result parse_value(jparser* p, int depth, xsi_json** out);

/* Append (key, child) to container v whose arrays hold *cap entries. Takes ownership. */
static xs_result append(jparser* p, xsi_json* v, size_t* cap, char* key, xsi_json* child) {
  if (v->len == *cap) {
    size_t nc = *cap ? *cap * 2 : 4;
    xsi_json** items = realloc(v->items, nc * sizeof *items);
    if (items) v->items = items;
    char** keys = v->type == XSI_JSON_OBJECT ? realloc(v->keys, nc * sizeof *keys) : NULL;
    if (keys) v->keys = keys;
    if (!items || (v->type == XSI_JSON_OBJECT && !keys)) {
      free(key);
      xsi_json_free(child);
      return xsi_set_error(XS_ERR_NO_MEMORY, "%s: out of memory", p->name);
    }
    *cap = nc;
  }
  v->items[v->len] = child;
  if (v->keys) v->keys[v->len] = key;
  v->len++;
  return XS_OK;
}

/* Parse an array or object whose opening bracket is at p->pos into v. */
static xs_result parse_container(jparser* p, int depth, xsi_json* v) {
  int is_obj = v->type == XSI_JSON_OBJECT;
  char close = is_obj ? '}' : ']', d[16];
  size_t cap = 0;
  if (depth >= XSI_JSON_MAX_DEPTH)
    return jerr(p, p->pos, "nesting deeper than %d levels", XSI_JSON_MAX_DEPTH);
  p->pos++;
  skip_ws(p);
  if (p->pos < p->len && p->s[p->pos] == close) {
    p->pos++;
    return XS_OK;
  }
  for (;;) {
    char* key = NULL;
    xsi_json* child = NULL;
    skip_ws(p);
    if (is_obj) {
      if (p->pos >= p->len) return jerr(p, p->pos, "unexpected end of input in object");
      if (p->s[p->pos] != '"')
        return jerr(p, p->pos, "expected a string key, got %s",
                    describe((unsigned char)p->s[p->pos], d));
      size_t kpos = p->pos;
      XSI_CHECK(parse_string(p, &key));
      for (size_t i = 0; i < v->len; i++) {
        if (strcmp(v->keys[i], key) == 0) {
          xs_result r = jerr(p, kpos, "duplicate key '%.100s'", key);
          free(key);
          return r;
        }
      }
      skip_ws(p);
      if (p->pos >= p->len || p->s[p->pos] != ':') {
        free(key);
        return jerr(p, p->pos, "expected ':' after key");
      }
      p->pos++;
    }
    xs_result r = parse_value(p, depth + 1, &child);
    if (r != XS_OK) {
      free(key);
      return r;
    }
    XSI_CHECK(append(p, v, &cap, key, child));
    skip_ws(p);
    if (p->pos >= p->len)
      return jerr(p, p->pos, "unexpected end of input in %s", is_obj ? "object" : "array");
    char c = p->s[p->pos];
    if (c == close) {
      p->pos++;
      return XS_OK;
    }
    if (c != ',')
      return jerr(p, p->pos, "expected ',' or '%c', got %s", close, describe((unsigned char)c, d));
    p->pos++;
  }
}

static int match_word(const jparser* p, const char* w) {
  size_t n = strlen(w);
  return p->len - p->pos >= n && memcmp(p->s + p->pos, w, n) == 0;
}

static xs_result parse_value(jparser* p, int depth, xsi_json** out) {
  char d[16];
  skip_ws(p);
  if (p->pos >= p->len) return jerr(p, p->pos, "unexpected end of input (expected a value)");
  char c = p->s[p->pos];
  xsi_json_type type;
  if (c == '{')
    type = XSI_JSON_OBJECT;
  else if (c == '[')
    type = XSI_JSON_ARRAY;
  else if (c == '"')
    type = XSI_JSON_STRING;
  else if (c == 't' || c == 'f')
    type = XSI_JSON_BOOL;
  else if (c == 'n')
    type = XSI_JSON_NULL;
  else if (c == '-' || (c >= '0' && c <= '9'))
    type = XSI_JSON_NUMBER;
  else
    return jerr(p, p->pos, "unexpected %s (expected a value)", describe((unsigned char)c, d));
  xsi_json* v = new_node(type, p->line);
  if (!v) return xsi_set_error(XS_ERR_NO_MEMORY, "%s: out of memory", p->name);
  xs_result r = XS_OK;
  switch (type) {
  case XSI_JSON_OBJECT:
  case XSI_JSON_ARRAY:
    r = parse_container(p, depth, v);
    break;
  case XSI_JSON_STRING:
    r = parse_string(p, &v->str);
    break;
  case XSI_JSON_NUMBER:
    r = parse_number(p, &v->num);
    break;
  case XSI_JSON_BOOL:
  case XSI_JSON_NULL: {
    const char* w = c == 't' ? "true" : c == 'f' ? "false" : "null";
    if (!match_word(p, w)) {
      r = jerr(p, p->pos, "invalid literal (expected '%s')", w);
      break;
    }
    p->pos += strlen(w);
    v->num = c == 't' ? 1.0 : 0.0;
    break;
  }
  }
  if (r != XS_OK) {
    xsi_json_free(v);
    return r;
  }
  *out = v;
  return XS_OK;
}

xs_result xsi_json_parse(xsi_json** out, const char* text, size_t len, const char* name) {
  XSI_ARG(out && (text || !len), "xsi_json_parse: NULL argument");
  *out = NULL;
  jparser p = {text ? text : "", len, 0, 1, 0, name ? name : "<json>"};
  xsi_json* v = NULL;
  XSI_CHECK(parse_value(&p, 0, &v));
  skip_ws(&p);
  if (p.pos < p.len) {
    char d[16];
    xs_result r =
        jerr(&p, p.pos, "unexpected %s after the value", describe((unsigned char)p.s[p.pos], d));
    xsi_json_free(v);
    return r;
  }
  *out = v;
  return XS_OK;
}

const xsi_json* xsi_json_get(const xsi_json* obj, const char* key) {
  if (!obj || obj->type != XSI_JSON_OBJECT || !key) return NULL;
  for (size_t i = 0; i < obj->len; i++)
    if (strcmp(obj->keys[i], key) == 0) return obj->items[i];
  return NULL;
}

static const char* type_name(xsi_json_type t) {
  switch (t) {
  case XSI_JSON_NULL:
    return "null";
  case XSI_JSON_BOOL:
    return "a boolean";
  case XSI_JSON_NUMBER:
    return "a number";
  case XSI_JSON_STRING:
    return "a string";
  case XSI_JSON_ARRAY:
    return "an array";
  case XSI_JSON_OBJECT:
    return "an object";
  }
  return "unknown";
}

/* The member `key` of obj in *m (NULL when missing and optional), or an XS_ERR_PARSE detail. */
static xs_result get_member(const xsi_json** m, const xsi_json* obj, const char* key, int optional,
                            const char* name, xsi_json_type want) {
  if (!name) name = "<json>";
  if (!key) return xsi_set_error(XS_ERR_INVALID_ARG, "%s: NULL key", name);
  if (!obj || obj->type != XSI_JSON_OBJECT)
    return xsi_set_error(XS_ERR_PARSE, "%s:%d: expected an object holding '%.100s'", name,
                         obj ? obj->line : 0, key);
  *m = xsi_json_get(obj, key);
  if (!*m) {
    if (optional) return XS_OK;
    return xsi_set_error(XS_ERR_PARSE, "%s:%d: missing key '%.100s'", name, obj->line, key);
  }
  if ((*m)->type != want)
    return xsi_set_error(XS_ERR_PARSE, "%s:%d: '%.100s' must be %s, got %s", name, (*m)->line, key,
                         type_name(want), type_name((*m)->type));
  return XS_OK;
}

xs_result xsi_json_get_number(double* out, const xsi_json* obj, const char* key, int optional,
                              const char* name) {
  XSI_ARG(out, "xsi_json_get_number: NULL out");
  const xsi_json* m = NULL;
  XSI_CHECK(get_member(&m, obj, key, optional, name, XSI_JSON_NUMBER));
  if (!m) return XS_OK;
  if (!isfinite(m->num))
    return xsi_set_error(XS_ERR_PARSE, "%s:%d: '%.100s' is not finite", name ? name : "<json>",
                         m->line, key);
  *out = m->num;
  return XS_OK;
}

xs_result xsi_json_get_string(const char** out, const xsi_json* obj, const char* key, int optional,
                              const char* name) {
  XSI_ARG(out, "xsi_json_get_string: NULL out");
  const xsi_json* m = NULL;
  XSI_CHECK(get_member(&m, obj, key, optional, name, XSI_JSON_STRING));
  if (!m) return XS_OK;
  if (!m->str)
    return xsi_set_error(XS_ERR_PARSE, "%s:%d: '%.100s' has no text", name ? name : "<json>",
                         m->line, key);
  *out = m->str;
  return XS_OK;
}
