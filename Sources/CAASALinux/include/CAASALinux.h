#ifndef CAASALINUX_H
#define CAASALINUX_H

// Linux system calls and constants that Swift's Glibc module does not expose: epoll, eventfd,
// accept4, malloc_trim (the same gap swift-nio fills with CNIOLinux).

#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <malloc.h>
#include <sys/types.h>

// accept4 is a GNU extension the header hides without _GNU_SOURCE; shims.c defines it.
int CAASALinux_accept4(int sockfd, int flags);

// pipe2 with O_CLOEXEC (also hidden without _GNU_SOURCE): no process started meanwhile inherits it.
int CAASALinux_pipe_cloexec(int fds[2]);

// open(path, O_PATH | O_CLOEXEC): a descriptor naming the file (symbolic links followed) without
// opening it, so that fstat can tell a device or FIFO from a regular file before anything opens
// it (opening some devices acts: a tape rewinds, a watchdog arms). O_PATH needs _GNU_SOURCE.
int CAASALinux_open_location(const char *path);

// openat(directory, name, O_PATH | O_DIRECTORY | O_CLOEXEC): a descriptor for the directory the
// entry `name` of `directory` leads to (symbolic links followed), to open names in with openat;
// it needs search permission only, as a path walk through it does. Anything but a directory
// fails ENOTDIR, unopened.
int CAASALinux_open_directory_location(int directory, const char *name);

// openat(directory, name, O_PATH | O_CLOEXEC): `open_location` for an entry of an open directory,
// a symbolic link followed from there (a relative target resolves in that very directory).
int CAASALinux_open_location_at(int directory, const char *name);

// getdents64(2) on an open directory: the listing without fdopendir's fstat, fcntl calls and
// buffer (a site directory per site is listed at a full load). Returns bytes read, 0 at the end,
// or -1 with errno set.
ssize_t CAASALinux_getdents64(int fd, void *buffer, size_t size);

// renameat2(2) (glibc 2.28, GNU only): RENAME_NOREPLACE (1) creates a name that must not exist,
// RENAME_EXCHANGE (2) swaps two names in one step; the tenant API puts whole site directories
// in place with them.
int CAASALinux_renameat2(const char *from, const char *to, unsigned int flags);

#include <stdint.h>
// statx(2) with STATX_MNT_ID (Linux 5.8) on an open descriptor: the id of the mount it is on.
// Two bind mounts of one filesystem share st_dev; only the mount id tells them apart. Returns 0,
// or -1 with errno set (ENOSYS when the kernel does not report mount ids). GNU only.
int CAASALinux_mount_id(int fd, uint64_t *id);

// For tests of mount crossings, on a thread of their own: unshare(CLONE_NEWNS) for the calling
// thread, its mounts made private (nothing it mounts reaches the machine), then `from` bound at
// `to`. Returns 0, or -1 with errno set (EPERM without CAP_SYS_ADMIN). The thread must end after.
int CAASALinux_bind_in_private_namespace(const char *from, const char *to);

#include <spawn.h>
// posix_spawn_file_actions_addclosefrom_np (glibc 2.34, GNU only): the new program starts with
// every descriptor from `from` up closed, whatever the parent forgot to mark close-on-exec
// (libcurl's sockets among them).
int CAASALinux_spawn_close_from(posix_spawn_file_actions_t *actions, int from);

// epoll_event is packed on x86-64; these keep Swift from depending on its layout.
static inline struct epoll_event CAASALinux_epoll_event(uint32_t events, uint64_t data) {
    struct epoll_event ev;
    ev.events = events;
    ev.data.u64 = data;
    return ev;
}

static inline uint64_t CAASALinux_epoll_event_data(const struct epoll_event *ev) { return ev->data.u64; }

static inline uint32_t CAASALinux_epoll_event_events(const struct epoll_event *ev) { return ev->events; }

// The epoll event bits are an enum of int in glibc's header; Swift imports them awkwardly.
static const uint32_t CAASALinux_EPOLLIN = EPOLLIN;
static const uint32_t CAASALinux_EPOLLOUT = EPOLLOUT;
static const uint32_t CAASALinux_EPOLLERR = EPOLLERR;
static const uint32_t CAASALinux_EPOLLHUP = EPOLLHUP;
static const uint32_t CAASALinux_EPOLLRDHUP = EPOLLRDHUP;
static const uint32_t CAASALinux_EPOLLEXCLUSIVE = EPOLLEXCLUSIVE;
static const int CAASALinux_SOCK_NONBLOCK = SOCK_NONBLOCK;
static const int CAASALinux_SOCK_CLOEXEC = SOCK_CLOEXEC;
static const int CAASALinux_EFD_NONBLOCK = EFD_NONBLOCK;
static const int CAASALinux_EFD_CLOEXEC = EFD_CLOEXEC;

// Starts `path` as a new process whose descriptors 3, 4, … are copies of `fds` (in order), with
// every other descriptor above 2 closed, no blocked signal, and envp[pid_slot] (when pid_slot is
// not negative) replaced by "LISTEN_PID=<its own pid>": socket activation as systemd passes
// listeners (sd_listen_fds(3)). `highest_fd` bounds the closing loop on kernels without
// close_range. Returns the new process's id, or -1 with errno set (execve's own errno when the
// program could not be run: ENOENT, EACCES, ENOEXEC…).
#define CAASALinux_SPAWN_MAX_DESCRIPTORS 4096
pid_t CAASALinux_spawn_passing(const char *path, char *const argv[], char *envp[], int pid_slot, const int *fds, int count,
                               int highest_fd);

#endif
