/* memwatch.c - the event reader of package memwatch.
 *
 * A thread that munmaps (or drops, or moves) a watched range waits in the
 * kernel until the event is read. So the reader must never wait for
 * anything that thread may hold: it is a plain thread, not one of Go's
 * (whose scheduler could need a new thread, and its malloc, to run a
 * goroutine), it allocates nothing, and it holds nothing but the spin
 * lock below, which no holder keeps across a call that could wait. */
#define _GNU_SOURCE
#include "memwatch.h"

#include <errno.h>
#include <linux/userfaultfd.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sched.h>
#include <stdint.h>
#include <fcntl.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

static void lock(struct memwatch *w)
{
    while (__atomic_exchange_n(&w->lock, 1, __ATOMIC_ACQUIRE))
        sched_yield();
}

static void unlock(struct memwatch *w) { __atomic_store_n(&w->lock, 0, __ATOMIC_RELEASE); }

static void push(struct memwatch *w, uint64_t start, uint64_t end)
{
    if (w->count == MEMWATCH_RING) {
        w->lost = 1;
        return;
    }
    uint32_t i = (w->head + w->count) % MEMWATCH_RING;
    w->ring[i][0] = start;
    w->ring[i][1] = end;
    w->count++;
}

/* Reads every queued event into the ring. Locked. */
static void drain(struct memwatch *w)
{
    struct uffd_msg m[16];
    for (;;) {
        ssize_t n = read(w->uffd, m, sizeof m);
        if (n < (ssize_t)sizeof m[0])
            return; /* EAGAIN: nothing more */
        for (int i = 0; i < (int)(n / (ssize_t)sizeof m[0]); i++) {
            switch (m[i].event) {
            case UFFD_EVENT_UNMAP:
            case UFFD_EVENT_REMOVE:
                push(w, m[i].arg.remove.start, m[i].arg.remove.end);
                break;
            case UFFD_EVENT_REMAP: /* the old range is gone */
                push(w, m[i].arg.remap.from, m[i].arg.remap.from + m[i].arg.remap.len);
                break;
            case UFFD_EVENT_PAGEFAULT: {
                /* Never expected (nothing is write-protected): drop the
                 * watch of the page, which lets the thread go on. */
                uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE);
                struct uffdio_range r = {m[i].arg.pagefault.address & ~(page - 1), page};
                ioctl(w->uffd, UFFDIO_UNREGISTER, &r);
                push(w, r.start, r.start + r.len);
                break;
            }
            }
        }
    }
}

static void *reader(void *arg)
{
    struct memwatch *w = arg;
    sigset_t all;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, NULL); /* signals are the Go runtime's business */
    struct pollfd fds[2] = {{.fd = w->uffd, .events = POLLIN}, {.fd = w->wakefd, .events = POLLIN}};
    while (!__atomic_load_n(&w->stop, __ATOMIC_ACQUIRE)) {
        if (poll(fds, 2, -1) < 0 && errno != EINTR)
            break;
        lock(w);
        drain(w);
        unlock(w);
    }
    return NULL;
}

int memwatch_open(int *api)
{
    *api = 0;
    int flags = O_CLOEXEC | O_NONBLOCK;
    int fd = (int)syscall(SYS_userfaultfd, flags | UFFD_USER_MODE_ONLY);
    if (fd < 0 && errno == EINVAL)
        /* Before Linux 5.11 there is no user-mode-only flag, and
         * unprivileged use is governed by vm.unprivileged_userfaultfd. */
        fd = (int)syscall(SYS_userfaultfd, flags);
    if (fd < 0)
        return -errno;
    struct uffdio_api a = {.api = UFFD_API, .features = UFFD_FEATURE_EVENT_UNMAP | UFFD_FEATURE_EVENT_REMOVE | UFFD_FEATURE_EVENT_REMAP};
    if (ioctl(fd, UFFDIO_API, &a) < 0) {
        int e = errno;
        close(fd);
        *api = 1;
        return -e;
    }
    return fd;
}

int memwatch_watch(struct memwatch *w, uint64_t start, uint64_t len)
{
    struct uffdio_register r = {.range = {start, len}, .mode = UFFDIO_REGISTER_MODE_WP};
    return ioctl(w->uffd, UFFDIO_REGISTER, &r) < 0 ? errno : 0;
}

void memwatch_unwatch(struct memwatch *w, uint64_t start, uint64_t len)
{
    struct uffdio_range r = {start, len};
    ioctl(w->uffd, UFFDIO_UNREGISTER, &r);
}

int memwatch_start(struct memwatch *w)
{
    w->wakefd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (w->wakefd < 0)
        return errno;
    pthread_attr_t a;
    pthread_attr_init(&a);
    pthread_attr_setstacksize(&a, 64 << 10);
    int rc = pthread_create(&w->thread, &a, reader, w);
    pthread_attr_destroy(&a);
    if (rc != 0) {
        close(w->wakefd);
        return rc;
    }
    return 0;
}

void memwatch_stop(struct memwatch *w)
{
    __atomic_store_n(&w->stop, 1, __ATOMIC_RELEASE);
    uint64_t one = 1;
    (void)!write(w->wakefd, &one, sizeof one);
    pthread_join(w->thread, NULL);
    close(w->wakefd);
}

int memwatch_take(struct memwatch *w, uint64_t (*out)[2], int max)
{
    lock(w);
    drain(w);
    if (w->lost) {
        w->lost = 0;
        w->head = w->count = 0;
        unlock(w);
        return -1;
    }
    int n = 0;
    while (n < max && w->count > 0) {
        out[n][0] = w->ring[w->head][0];
        out[n][1] = w->ring[w->head][1];
        w->head = (w->head + 1) % MEMWATCH_RING;
        w->count--;
        n++;
    }
    unlock(w);
    return n;
}
