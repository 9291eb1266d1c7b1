// accept4 needs _GNU_SOURCE, which must not leak into the Swift-visible header.
#define _GNU_SOURCE
#include <sys/socket.h>
#include "CAASALinux.h"

int CAASALinux_accept4(int sockfd, int flags) { return accept4(sockfd, NULL, NULL, flags); }
