/* nodelay.c -- an experiment's shim, not part of fieldstore: preloaded into aviso-server
 * (bench/aviso/run.sh with SERVER_NODELAY=1), it sets TCP_NODELAY on every connection the server
 * accepts. aviso-server 0.13.1 (actix-web) keeps the OS default, Nagle's algorithm on: an event of
 * its SSE stream written while the listener has not yet acknowledged the previous one waits for that
 * acknowledgement, which the listener's kernel may delay by 40 ms. Comparing runs with and without
 * the shim says how much of the flush -> listener latency that costs. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

static int nodelay(int fd) {
    int one = 1;
    if (fd >= 0)
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    return fd;
}

int accept4(int s, struct sockaddr *a, socklen_t *l, int flags) {
    static int (*real)(int, struct sockaddr *, socklen_t *, int);
    if (!real)
        real = (int (*)(int, struct sockaddr *, socklen_t *, int))dlsym(RTLD_NEXT, "accept4");
    return nodelay(real(s, a, l, flags));
}

int accept(int s, struct sockaddr *a, socklen_t *l) {
    static int (*real)(int, struct sockaddr *, socklen_t *);
    if (!real)
        real = (int (*)(int, struct sockaddr *, socklen_t *))dlsym(RTLD_NEXT, "accept");
    return nodelay(real(s, a, l));
}
