/* memwatch.h - the event reader of package memwatch: a thread of its own
 * (not Go's) that reads a userfaultfd's events into a fixed ring. */
#ifndef ACP_MEMWATCH_H
#define ACP_MEMWATCH_H

#include <pthread.h>
#include <stdint.h>

#define MEMWATCH_RING 512

struct memwatch {
    int uffd, wakefd;
    /* Guards everything below and every read of uffd: a reader that
     * holds it after a munmap returned finds that munmap's event in the
     * ring or still queued. */
    int lock;
    uint32_t head, count; /* ring[head .. head+count) */
    int lost;             /* the ring overflowed: treat everything as gone */
    int stop;
    pthread_t thread;
    uint64_t ring[MEMWATCH_RING][2]; /* [start, end) */
};

/* Opens a userfaultfd (close-on-exec, non-blocking) that reports unmap,
 * remove and remap events: its descriptor, or -errno with *api set when
 * the kernel refused those events rather than the descriptor. */
int memwatch_open(int *api);
/* Watches the pages [start, start+len) in write-protect mode (nothing is
 * ever protected); 0 or an errno. */
int memwatch_watch(struct memwatch *w, uint64_t start, uint64_t len);
/* Stops watching the pages [start, start+len). */
void memwatch_unwatch(struct memwatch *w, uint64_t start, uint64_t len);
/* Starts the reader thread; 0 or an errno. */
int memwatch_start(struct memwatch *w);
/* Stops and joins it. */
void memwatch_stop(struct memwatch *w);
/* Reads what is queued and moves up to max ranges from the ring into out;
 * returns how many, or -1 when events were lost (everything counts as
 * gone). Call until it returns less than max. */
int memwatch_take(struct memwatch *w, uint64_t (*out)[2], int max);

#endif
