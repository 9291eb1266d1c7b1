// accept4 needs _GNU_SOURCE, which must not leak into the Swift-visible header.
#define _GNU_SOURCE
#include <fcntl.h>
#include <unistd.h>
#include <sys/socket.h>
#include "CAASALinux.h"

int CAASALinux_accept4(int sockfd, int flags) { return accept4(sockfd, NULL, NULL, flags); }

int CAASALinux_pipe_cloexec(int fds[2]) { return pipe2(fds, O_CLOEXEC); }

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

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

pid_t CAASALinux_spawn_passing(const char *path, char *const argv[], char *envp[], int pid_slot, const int *fds, int count,
                               int highest_fd) {
    if (count < 0 || count > 128) {
        errno = EINVAL;
        return -1;
    }
    pid_t pid = fork();
    if (pid != 0) return pid;

    // The child: only async-signal-safe calls from here to execve (the parent has threads).
    char entry[32];
    listen_pid_entry(entry, getpid());
    if (pid_slot >= 0) envp[pid_slot] = entry;

    // Every descriptor moves above the target range first, so that moving one into place can
    // never overwrite another that is still to be moved.
    int moved[128];
    int base = 3 + count;
    for (int i = 0; i < count; i++) {
        moved[i] = fcntl(fds[i], F_DUPFD, base);
        if (moved[i] < 0) _exit(127);
    }
    for (int i = 0; i < count; i++) {
        // dup2 clears close-on-exec on the copy: these, and only these, survive execve.
        if (dup2(moved[i], 3 + i) < 0) _exit(127);
    }
    // Nothing else is inherited: not the parent's connections, not its files.
    if (syscall(SYS_close_range, (unsigned)base, ~0U, 0) != 0) {
        for (int fd = base; fd <= highest_fd; fd++) close(fd);
    }
    // The new program starts with no blocked signal and default dispositions.
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    signal(SIGPIPE, SIG_DFL);
    execve(path, argv, envp);
    _exit(127);
}
