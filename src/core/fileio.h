/* fileio.h — whole-file reads and atomic writes (never leave a partial output file). */
#ifndef XSTAGE_CORE_FILEIO_H
#define XSTAGE_CORE_FILEIO_H

#include "xstage/xstage.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Read a whole file into a NUL-terminated buffer (*out, caller frees with free()).
 * Files over max_bytes (0 = 1 GiB) fail with XS_ERR_IO naming the file. */
xs_result xsi_read_file(char** out, size_t* out_len, const char* path, size_t max_bytes);

/* Write data to `path` atomically: writes `path.tmp.<pid>` then renames it over `path`.
 * On any failure the temporary is removed and `path` is untouched. */
xs_result xsi_write_file_atomic(const char* path, const void* data, size_t len);

#ifdef __cplusplus
}
#endif
#endif
