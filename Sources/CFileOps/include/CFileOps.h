#ifndef CFILEOPS_H
#define CFILEOPS_H
#include <sys/types.h>
#include <stdint.h>

/// Reflink `src` into `dst` (both open descriptors). Returns 0, or -1 with errno set
/// (EOPNOTSUPP / EXDEV / EINVAL where the file system cannot share extents).
int cfileops_ficlone(int dst_fd, int src_fd);

/// fdatasync-free full fsync, retried on EINTR. Returns 0 or -1 with errno.
int cfileops_fsync(int fd);
/// syncfs(2): flushes the whole file system holding `fd`, retried on EINTR. Returns 0 or -1 with errno.
int cfileops_syncfs(int fd);

/// sync_file_range(SYNC_FILE_RANGE_WRITE): starts writeback of the whole file without waiting.
/// Not a durability barrier (fsync/syncfs is); it lets the disk work while the CPU hashes the next file.
int cfileops_start_writeback(int fd);

/// Turns O_DIRECT on or off for an open descriptor (fcntl F_SETFL). Returns 0, or -1 with errno set
/// (EINVAL where the file system has no direct I/O).
int cfileops_set_direct(int fd, int on);

/// mallopt(M_ARENA_MAX, count) where the C library is glibc (a no-op elsewhere): threads that
/// allocate share at most `count` malloc arenas instead of up to eight per core, each of which keeps
/// what its threads freed.
void cfileops_limit_malloc_arenas(int count);

/// mallopt(M_MMAP_THRESHOLD, bytes) where the C library is glibc (a no-op elsewhere): allocations of
/// `bytes` or more get pages of their own, returned to the system when freed. Setting it also stops
/// glibc from raising the threshold each time such a block is freed, after which growing buffers
/// (a dictionary's storage, SQLite's) are carved from the heap and their freed pages stay resident.
void cfileops_fix_malloc_mmap_threshold(int bytes);

/// renameat2(RENAME_NOREPLACE): renames `from` to `to` only when `to` does not exist (EEXIST
/// otherwise), atomically. Returns 0, or -1 with errno set (EINVAL where the file system cannot).
int cfileops_rename_noreplace(const char *from, const char *to);

/// The commit this binary was built from, as the build defined it
/// (`swift build -Xcc -DRECEIPT_COMMIT='"abc1234"'`), or "unknown" for a plain `swift build`.
const char *cfileops_build_commit(void);
#endif
