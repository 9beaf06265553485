/* strbuf.c — growable strings (see strbuf.h). */
#include "core/strbuf.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void xsi_sb_free(xsi_strbuf* sb) {
  if (!sb) return;
  free(sb->data);
  sb->data = NULL;
  sb->len = sb->cap = 0;
  sb->oom = 0;
}

static int reserve(xsi_strbuf* sb, size_t extra) {
  if (sb->oom) return 0;
  if (sb->len + extra + 1 <= sb->cap) return 1;
  size_t cap = sb->cap ? sb->cap : 256;
  while (cap < sb->len + extra + 1) cap *= 2;
  char* p = realloc(sb->data, cap);
  if (!p) {
    sb->oom = 1;
    return 0;
  }
  sb->data = p;
  sb->cap = cap;
  return 1;
}

void xsi_sb_append(xsi_strbuf* sb, const char* s, size_t n) {
  if (!reserve(sb, n)) return;
  memcpy(sb->data + sb->len, s, n);
  sb->len += n;
  sb->data[sb->len] = '\0';
}

void xsi_sb_puts(xsi_strbuf* sb, const char* s) { xsi_sb_append(sb, s, strlen(s)); }

void xsi_sb_printf(xsi_strbuf* sb, const char* fmt, ...) {
  va_list ap, ap2;
  va_start(ap, fmt);
  va_copy(ap2, ap);
  int n = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  if (n >= 0 && reserve(sb, (size_t)n)) {
    vsnprintf(sb->data + sb->len, (size_t)n + 1, fmt, ap2);
    sb->len += (size_t)n;
  }
  va_end(ap2);
}

void xsi_sb_json_string(xsi_strbuf* sb, const char* s) {
  xsi_sb_append(sb, "\"", 1);
  for (const unsigned char* p = (const unsigned char*)s; *p; p++) {
    switch (*p) {
    case '"': xsi_sb_puts(sb, "\\\""); break;
    case '\\': xsi_sb_puts(sb, "\\\\"); break;
    case '\n': xsi_sb_puts(sb, "\\n"); break;
    case '\r': xsi_sb_puts(sb, "\\r"); break;
    case '\t': xsi_sb_puts(sb, "\\t"); break;
    default:
      if (*p < 0x20) xsi_sb_printf(sb, "\\u%04x", *p);
      else xsi_sb_append(sb, (const char*)p, 1);
    }
  }
  xsi_sb_append(sb, "\"", 1);
}

void xsi_sb_json_number(xsi_strbuf* sb, double x) {
  if (!isfinite(x)) {
    xsi_sb_puts(sb, "null");
    return;
  }
  char buf[40];
  for (int prec = 15; prec <= 17; prec++) { /* shortest of 15..17 digits that round-trips */
    snprintf(buf, sizeof buf, "%.*g", prec, x);
    if (strtod(buf, NULL) == x) break;
  }
  xsi_sb_puts(sb, buf);
}

xs_result xsi_sb_status(const xsi_strbuf* sb) { return sb->oom ? XS_ERR_NO_MEMORY : XS_OK; }
