#ifndef CFILEOPS_H
#define CFILEOPS_H
#include <sys/types.h>
#include <stdint.h>

/// Reflink `src` into `dst` (both open descriptors). Returns 0, or -1 with errno set
/// (EOPNOTSUPP / EXDEV / EINVAL where the file system cannot share extents).
int cfileops_ficlone(int dst_fd, int src_fd);

/// copy_file_range(2) from the current offsets; returns bytes copied, 0 at EOF, -1 with errno.
ssize_t cfileops_copy_file_range(int src_fd, int dst_fd, size_t len);

/// fdatasync-free full fsync, retried on EINTR. Returns 0 or -1 with errno.
int cfileops_fsync(int fd);
/// syncfs(2): flushes the whole file system holding `fd`, retried on EINTR. Returns 0 or -1 with errno.
int cfileops_syncfs(int fd);

/// sync_file_range(SYNC_FILE_RANGE_WRITE): starts writeback of the whole file without waiting.
/// Not a durability barrier (fsync/syncfs is); it lets the disk work while the CPU hashes the next file.
int cfileops_start_writeback(int fd);
#endif
