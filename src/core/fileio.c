/* fileio.c — whole-file reads and atomic writes (see fileio.h). */
#include "core/fileio.h"
#include "core/internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

xs_result xsi_read_file(char** out, size_t* out_len, const char* path, size_t max_bytes) {
  XSI_ARG(out && path, "xsi_read_file: NULL argument");
  if (!max_bytes) max_bytes = (size_t)1 << 30;
  *out = NULL;
  if (out_len) *out_len = 0;
  FILE* f = fopen(path, "rb");
  if (!f) return xsi_set_error(XS_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
  size_t cap = 1 << 16, len = 0;
  char* buf = malloc(cap);
  if (!buf) {
    fclose(f);
    return xsi_set_error(XS_ERR_NO_MEMORY, "%s: out of memory", path);
  }
  for (;;) {
    if (len + 1 >= cap) {
      if (cap > max_bytes) {
        free(buf);
        fclose(f);
        return xsi_set_error(XS_ERR_IO, "%s: file larger than %zu bytes", path, max_bytes);
      }
      char* p = realloc(buf, cap * 2);
      if (!p) {
        free(buf);
        fclose(f);
        return xsi_set_error(XS_ERR_NO_MEMORY, "%s: out of memory", path);
      }
      buf = p;
      cap *= 2;
    }
    size_t n = fread(buf + len, 1, cap - 1 - len, f);
    len += n;
    if (n == 0) break;
  }
  int err = ferror(f);
  fclose(f);
  if (err) {
    free(buf);
    return xsi_set_error(XS_ERR_IO, "%s: read error", path);
  }
  if (len > max_bytes) {
    free(buf);
    return xsi_set_error(XS_ERR_IO, "%s: file larger than %zu bytes", path, max_bytes);
  }
  buf[len] = '\0';
  *out = buf;
  if (out_len) *out_len = len;
  return XS_OK;
}

xs_result xsi_write_file_atomic(const char* path, const void* data, size_t len) {
  XSI_ARG(path && (data || !len), "xsi_write_file_atomic: NULL argument");
  char tmp[4096];
  int n = snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid());
  if (n < 0 || (size_t)n >= sizeof tmp) return xsi_set_error(XS_ERR_IO, "%s: path too long", path);
  FILE* f = fopen(tmp, "wb");
  if (!f) return xsi_set_error(XS_ERR_IO, "%s: cannot create: %s", path, strerror(errno));
  int ok = fwrite(data, 1, len, f) == len;
  ok = (fflush(f) == 0) && ok;
  ok = (fclose(f) == 0) && ok;
  if (!ok || rename(tmp, path) != 0) {
    int e = errno;
    remove(tmp);
    return xsi_set_error(XS_ERR_IO, "%s: cannot write: %s", path, strerror(e));
  }
  return XS_OK;
}
