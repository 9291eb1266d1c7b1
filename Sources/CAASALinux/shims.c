// accept4 needs _GNU_SOURCE, which must not leak into the Swift-visible header.
#define _GNU_SOURCE
#include <fcntl.h>
#include <unistd.h>
#include <sys/socket.h>
#include "CAASALinux.h"

int CAASALinux_accept4(int sockfd, int flags) { return accept4(sockfd, NULL, NULL, flags); }

int CAASALinux_pipe_cloexec(int fds[2]) { return pipe2(fds, O_CLOEXEC); }

int CAASALinux_open_location(const char *path) { return open(path, O_PATH | O_CLOEXEC); }

int CAASALinux_open_directory_location(int directory, const char *name) {
    return openat(directory, name, O_PATH | O_DIRECTORY | O_CLOEXEC);
}

int CAASALinux_open_location_at(int directory, const char *name) { return openat(directory, name, O_PATH | O_CLOEXEC); }

#include <sys/syscall.h>

ssize_t CAASALinux_getdents64(int fd, void *buffer, size_t size) { return syscall(SYS_getdents64, fd, buffer, size); }

#include <stdio.h>

int CAASALinux_renameat2(const char *from, const char *to, unsigned int flags) {
    return renameat2(AT_FDCWD, from, AT_FDCWD, to, flags);
}

#include <errno.h>
#include <sys/stat.h>

int CAASALinux_mount_id(int fd, uint64_t *id) {
    struct statx st;
    if (statx(fd, "", AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW, STATX_MNT_ID, &st) != 0) return -1;
    if (!(st.stx_mask & STATX_MNT_ID)) {
        errno = ENOSYS;
        return -1;
    }
    *id = st.stx_mnt_id;
    return 0;
}

#include <sched.h>
#include <sys/mount.h>

int CAASALinux_bind_in_private_namespace(const char *from, const char *to) {
    if (unshare(CLONE_NEWNS) != 0) return -1;
    if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0) return -1;
    return mount(from, to, NULL, MS_BIND, NULL);
}

#include <spawn.h>

int CAASALinux_spawn_close_from(posix_spawn_file_actions_t *actions, int from) {
    return posix_spawn_file_actions_addclosefrom_np(actions, from);
}

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>

// Writes "LISTEN_PID=<pid>" into buffer (at least 32 bytes) with async-signal-safe code only.
static void listen_pid_entry(char *buffer, pid_t pid) {
    static const char prefix[] = "LISTEN_PID=";
    char digits[16];
    int n = 0;
    unsigned long value = (unsigned long)pid;
    do {
        digits[n++] = (char)('0' + value % 10);
        value /= 10;
    } while (value != 0 && n < (int)sizeof(digits));
    memcpy(buffer, prefix, sizeof(prefix) - 1);
    int at = (int)sizeof(prefix) - 1;
    while (n > 0) buffer[at++] = digits[--n];
    buffer[at] = '\0';
}

// Closes descriptors from `from` to `to` (-1: all above), async-signal-safe: close_range where
// the kernel has it, else one by one up to `highest`.
static void close_between(int from, int to, int highest) {
    if (syscall(SYS_close_range, (unsigned)from, to < 0 ? ~0U : (unsigned)to, 0) == 0) return;
    int last = to < 0 || to > highest ? highest : to;
    for (int fd = from; fd <= last; fd++) close(fd);
}

pid_t CAASALinux_spawn_passing(const char *path, char *const argv[], char *envp[], int pid_slot, const int *fds, int count,
                               int highest_fd) {
    if (count < 0 || count > CAASALinux_SPAWN_MAX_DESCRIPTORS) {
        errno = EINVAL;
        return -1;
    }
    // Every descriptor is first copied above the target range (in the parent, where allocating
    // is allowed), so that moving one into place in the child never overwrites one still to move.
    int base = 3 + count;
    int *moved = malloc(sizeof(int) * (size_t)(count > 0 ? count : 1));
    if (moved == NULL) return -1;
    int made = 0;
    for (; made < count; made++) {
        moved[made] = fcntl(fds[made], F_DUPFD_CLOEXEC, base);
        if (moved[made] < 0) break;
    }
    // execve's failure comes back through this pipe (closed on a successful exec).
    int report[2] = {-1, -1};
    pid_t pid = -1;
    int saved = 0;
    if (made == count && pipe2(report, O_CLOEXEC) == 0) {
        pid = fork();
        if (pid == 0) {
            // The child: only async-signal-safe calls from here to execve (the parent has threads).
            char entry[32];
            listen_pid_entry(entry, getpid());
            if (pid_slot >= 0) envp[pid_slot] = entry;
            // The report pipe moves above the target range first, so no listener lands on it.
            int keep = report[1];
            if (keep < base) keep = fcntl(report[1], F_DUPFD_CLOEXEC, base);
            if (keep < 0) _exit(127);
            int failure = 0;
            for (int i = 0; i < count && failure == 0; i++) {
                // dup2 clears close-on-exec on the copy: these, and only these, survive execve.
                if (dup2(moved[i], 3 + i) < 0) failure = errno;
            }
            if (failure == 0) {
                // Nothing else is inherited: not the parent's connections, not its files (the
                // report pipe is close-on-exec).
                if (keep > base) close_between(base, keep - 1, highest_fd);
                close_between(keep + 1, -1, highest_fd);
                // The new program starts with no blocked signal and default dispositions.
                sigset_t none;
                sigemptyset(&none);
                sigprocmask(SIG_SETMASK, &none, NULL);
                signal(SIGPIPE, SIG_DFL);
                execve(path, argv, envp);
                failure = errno;
            }
            ssize_t ignored = write(keep, &failure, sizeof(failure));
            (void)ignored;
            _exit(127);
        }
        saved = errno;
        close(report[1]);
        if (pid > 0) {
            int failure = 0;
            ssize_t n;
            do {
                n = read(report[0], &failure, sizeof(failure));
            } while (n < 0 && errno == EINTR);
            if (n == (ssize_t)sizeof(failure)) {
                // It never ran: reap it and say why.
                int status;
                while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
                pid = -1;
                saved = failure;
            }
        }
        close(report[0]);
    } else {
        saved = errno;
    }
    for (int i = 0; i < made; i++) close(moved[i]);
    free(moved);
    errno = saved;
    return pid;
}
