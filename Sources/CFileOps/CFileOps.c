// Glibc as imported by Swift does not define _GNU_SOURCE, which hides O_DIRECT and syncfs,
// and FICLONE is an _IOW macro Swift cannot import: this file exposes both.
#define _GNU_SOURCE
#include "CFileOps.h"
#include <errno.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <malloc.h>
#include <stdio.h>

int cfileops_ficlone(int dst_fd, int src_fd) {
#ifdef FICLONE
    return ioctl(dst_fd, FICLONE, src_fd);
#else
    errno = EOPNOTSUPP;
    return -1;
#endif
}

int cfileops_fsync(int fd) {
    int r;
    do { r = fsync(fd); } while (r < 0 && errno == EINTR);
    return r;
}

int cfileops_syncfs(int fd) {
    int r;
    do { r = syncfs(fd); } while (r < 0 && errno == EINTR);
    return r;
}

int cfileops_start_writeback(int fd) {
    return sync_file_range(fd, 0, 0, SYNC_FILE_RANGE_WRITE);
}

int cfileops_set_direct(int fd, int on) {
    int flags = fcntl(fd, F_GETFL);
    if (flags < 0) return -1;
    return fcntl(fd, F_SETFL, on ? (flags | O_DIRECT) : (flags & ~O_DIRECT));
}

/// malloc.h: see CFileOps.h.
void cfileops_limit_malloc_arenas(int count) {
#ifdef __GLIBC__
    mallopt(M_ARENA_MAX, count);
#else
    (void)count;
#endif
}

/// malloc.h: see CFileOps.h.
void cfileops_fix_malloc_mmap_threshold(int bytes) {
#ifdef __GLIBC__
    mallopt(M_MMAP_THRESHOLD, bytes);
#else
    (void)bytes;
#endif
}

int cfileops_rename_noreplace(const char *from, const char *to) {
    return renameat2(AT_FDCWD, from, AT_FDCWD, to, RENAME_NOREPLACE);
}

// A C define, because Swift's conditional compilation carries no strings: a release build passes
// the commit (tools/build-release does), a plain `swift build` needs nothing.
#ifndef RECEIPT_COMMIT
#define RECEIPT_COMMIT "unknown"
#endif
const char *cfileops_build_commit(void) {
    return RECEIPT_COMMIT;
}
