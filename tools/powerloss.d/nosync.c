/* The negative controls of tools/powerloss, preloaded into `receipt`.
 *
 * Built plain: fsync, fdatasync, syncfs, sync_file_range, sync and msync succeed without doing
 * anything, so nothing a command writes is durable when it exits. The power-loss checks must fail,
 * or they cannot see anything.
 * Built with -DDIRECTORIES_ONLY: only the fsync of a directory (step 4 of the write order, "flush
 * the names") does nothing; whether a lost rename shows depends on what the file system orders on
 * its own. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stddef.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <unistd.h>

#ifdef DIRECTORIES_ONLY
static int is_directory(int fd) {
    struct stat st;
    return fstat(fd, &st) == 0 && S_ISDIR(st.st_mode);
}
int fsync(int fd) { return is_directory(fd) ? 0 : (int)syscall(SYS_fsync, fd); }
int fdatasync(int fd) { return is_directory(fd) ? 0 : (int)syscall(SYS_fdatasync, fd); }
#else
int fsync(int fd) { (void)fd; return 0; }
int fdatasync(int fd) { (void)fd; return 0; }
int syncfs(int fd) { (void)fd; return 0; }
void sync(void) {}
int sync_file_range(int fd, off_t offset, off_t nbytes, unsigned int flags) {
    (void)fd; (void)offset; (void)nbytes; (void)flags; return 0;
}
int msync(void *addr, size_t length, int flags) { (void)addr; (void)length; (void)flags; return 0; }
#endif
