// Glibc as imported by Swift does not define _GNU_SOURCE, which hides copy_file_range,
// and FICLONE is an _IOW macro Swift cannot import: this file exposes both.
#define _GNU_SOURCE
#include "CFileOps.h"
#include <errno.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <fcntl.h>
#include <linux/fs.h>

int cfileops_ficlone(int dst_fd, int src_fd) {
#ifdef FICLONE
    return ioctl(dst_fd, FICLONE, src_fd);
#else
    errno = EOPNOTSUPP;
    return -1;
#endif
}

ssize_t cfileops_copy_file_range(int src_fd, int dst_fd, size_t len) {
    ssize_t n;
    do { n = copy_file_range(src_fd, NULL, dst_fd, NULL, len, 0); } while (n < 0 && errno == EINTR);
    return n;
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
