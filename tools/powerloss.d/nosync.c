/* The negative control of tools/powerloss: fsync, fdatasync, syncfs, sync_file_range, sync and
 * msync succeed without doing anything, so nothing a program writes is durable when it exits.
 * Preloaded into `receipt`, it must make the power-loss checks fail, or they cannot see anything. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stddef.h>
#include <sys/types.h>

int fsync(int fd) { (void)fd; return 0; }
int fdatasync(int fd) { (void)fd; return 0; }
int syncfs(int fd) { (void)fd; return 0; }
void sync(void) {}
int sync_file_range(int fd, off_t offset, off_t nbytes, unsigned int flags) {
    (void)fd; (void)offset; (void)nbytes; (void)flags; return 0;
}
int msync(void *addr, size_t length, int flags) { (void)addr; (void)length; (void)flags; return 0; }
