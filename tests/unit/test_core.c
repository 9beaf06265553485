/* test_core.c — error codes, strbuf, atomic file writes. */
#include "core/fileio.h"
#include "core/internal.h"
#include "core/strbuf.h"
#include "test.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void test_strerror(void) {
  for (int r = 0; r <= XS_ERR_INTERNAL; r++) XT_CHECK(strlen(xs_strerror((xs_result)r)) > 0);
  XT_CHECK(strcmp(xs_strerror((xs_result)999), "unknown result code") == 0);
  xsi_set_error(XS_ERR_PARSE, "f.csv:%d: bad", 3);
  XT_CHECK(strcmp(xs_last_error(), "f.csv:3: bad") == 0);
  xsi_error_prefix("loading %s", "x");
  XT_CHECK(strcmp(xs_last_error(), "loading x: f.csv:3: bad") == 0);
}

static void test_strbuf(void) {
  xsi_strbuf sb = XSI_STRBUF_INIT;
  xsi_sb_json_string(&sb, "a\"b\\\n\x01");
  XT_CHECK(strcmp(sb.data, "\"a\\\"b\\\\\\n\\u0001\"") == 0);
  xsi_sb_free(&sb);
  xsi_sb_json_number(&sb, 0.1);
  XT_CHECK(strcmp(sb.data, "0.1") == 0);
  xsi_sb_free(&sb);
  xsi_sb_json_number(&sb, 1.0 / 3.0);
  XT_CHECK(strtod(sb.data, NULL) == 1.0 / 3.0);
  xsi_sb_free(&sb);
  for (int i = 0; i < 10000; i++) xsi_sb_printf(&sb, "%d,", i);
  XT_CHECK(sb.len > 40000 && xsi_sb_status(&sb) == XS_OK);
  xsi_sb_free(&sb);
  xsi_sb_free(NULL);
}

static void test_atomic_write(void) {
  char path[] = "/tmp/xs_test_atomic_XXXXXX";
  int fd = mkstemp(path);
  XT_CHECK(fd >= 0);
  close(fd);
  XT_CHECK(xsi_write_file_atomic(path, "hello", 5) == XS_OK);
  char* data = NULL;
  size_t len = 0;
  XT_CHECK(xsi_read_file(&data, &len, path, 0) == XS_OK);
  XT_CHECK(len == 5 && data && strcmp(data, "hello") == 0);
  free(data);
  XT_CHECK(xsi_read_file(&data, &len, path, 3) == XS_ERR_IO); /* over the limit */
  XT_CHECK(xsi_write_file_atomic("/nonexistent-dir/x", "a", 1) == XS_ERR_IO);
  XT_CHECK(strstr(xs_last_error(), "/nonexistent-dir/x") != NULL);
  XT_CHECK(xsi_read_file(&data, &len, "/nonexistent-dir/x", 0) == XS_ERR_IO);
  remove(path);
}

int main(void) {
  XT_RUN(test_strerror);
  XT_RUN(test_strbuf);
  XT_RUN(test_atomic_write);
  return XT_END();
}
