/* durable.so: what a power cut would leave of a file, kept beside it.
 *
 * LD_PRELOAD=durable.so POWERCUT_PREFIX=/path/games.db referee ...
 *
 * After every fsync() or fdatasync() of a file whose path starts with
 * POWERCUT_PREFIX, the file's whole content is copied to PATH.durable (a
 * temporary file renamed over it): what the disk is sure to hold.  A
 * simulated power cut (powercut.py) kills the process and puts each file's
 * .durable copy in its place, or removes a file that was never flushed:
 * everything written but not yet fsynced is lost, as the model of a
 * power cut says.  SQLite reaches fsync and fdatasync through libc, so the
 * interposition sees every flush of its database and journal.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int (*real_fsync)(int);
static int (*real_fdatasync)(int);

static void keep_durable(int fd) {
    const char *prefix = getenv("POWERCUT_PREFIX");
    if (!prefix || !*prefix) return;
    char link[64], path[PATH_MAX], tmp[PATH_MAX + 16], done[PATH_MAX + 16];
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    ssize_t n = readlink(link, path, sizeof path - 1);
    if (n <= 0) return;
    path[n] = '\0';
    if (strncmp(path, prefix, strlen(prefix)) != 0) return;
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) return;
    snprintf(tmp, sizeof tmp, "%s.durable-tmp", path);
    snprintf(done, sizeof done, "%s.durable", path);
    int in = open(path, O_RDONLY | O_CLOEXEC); /* the fd itself may be write-only */
    if (in < 0) return;
    int out = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (out < 0) { close(in); return; }
    char buffer[1 << 16];
    off_t at = 0;
    for (;;) {
        ssize_t got = pread(in, buffer, sizeof buffer, at);
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0) break;
        ssize_t put = 0;
        while (put < got) {
            ssize_t w = write(out, buffer + put, (size_t)(got - put));
            if (w < 0 && errno == EINTR) continue;
            if (w <= 0) { close(in); close(out); unlink(tmp); return; }
            put += w;
        }
        at += got;
    }
    close(in);
    close(out);
    rename(tmp, done);
}

int fsync(int fd) {
    if (!real_fsync) real_fsync = dlsym(RTLD_NEXT, "fsync");
    int status = real_fsync(fd);
    if (status == 0) keep_durable(fd);
    return status;
}

int fdatasync(int fd) {
    if (!real_fdatasync) real_fdatasync = dlsym(RTLD_NEXT, "fdatasync");
    int status = real_fdatasync(fd);
    if (status == 0) keep_durable(fd);
    return status;
}
