/*
 * putpingpong.h - the put pingpong of acpbench, shared with mpi_pingpong
 * --with-acp (both measure ACP the same way): the layout of each rank's
 * starter memory, the wait for a flag byte, one message, and the starter
 * size to ask acp_init for. The including program defines max_size (the
 * largest message) before it includes this file.
 */
#ifndef ACP_BENCH_PUTPINGPONG_H
#define ACP_BENCH_PUTPINGPONG_H

#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "acp.h"

/* Layout: [0, max) receive buffer (the peer writes here), [max + 64,
 * 2 max + 64) send buffer, then two bytes for the 0-byte row: my flag's
 * source and, 128 bytes on, the peer's flag's landing place. */
static size_t send_off(void) { return max_size + 64; }
static size_t flag_off(void) { return 2 * max_size + 128; }
/* The peer's flag lands 128 bytes after my flag's source: not in the same
 * 128-byte pair of cache lines, which the adjacent-line prefetcher fetches
 * together. Within one pair, the peer's write into its line also fetched my
 * source's line, and each write of my source byte first took that line
 * back (5 runs each, alternated: the 0-byte row took 0.09-0.30 us one way
 * where 1 byte took 0.07-0.08; 128 bytes apart, 0.086-0.094). */
#define FLAG_IN 128
/* The byte of the settling get (the first access to the peer's memory
 * goes through Go, outside the timing). */
static size_t touch_off(void) { return flag_off() + 256; }
/* Starter bytes the pingpong's layout takes; an including program that
 * keeps more there (acpbench putbw -starter) sets smem_extra before
 * acp_init and uses the bytes from pingpong_smem() on. */
static size_t smem_extra;
static size_t pingpong_smem(void) { return 2 * max_size + 4096; }
static size_t smem_needed(void) { return pingpong_smem() + smem_extra; }

/* Returns the argv to give acp_init: the program's, plus --acp-size-smem
 * when the command line does not set it. */
static char **with_starter_size(int *argc, char **argv)
{
    for (int i = 1; i < *argc; i++)
        if (strcmp(argv[i], "--acp-size-smem") == 0)
            return argv;
    char **out = calloc((size_t)*argc + 3, sizeof *out);
    static char size[32];
    snprintf(size, sizeof size, "%zu", smem_needed());
    memcpy(out, argv, (size_t)*argc * sizeof *out);
    out[(*argc)++] = "--acp-size-smem";
    out[(*argc)++] = size;
    out[*argc] = NULL;
    return out;
}

/* Waits until *p == v. Polls without yielding for the first 4096 turns (a
 * few microseconds: a message between processes of one host arrives well
 * within them), then yields every 256 turns: on an oversubscribed machine,
 * or over the network, the peer and the library's progress need the core
 * too. Yielding from the start put a system call into many waits of a
 * same-host pingpong, and the answer that landed during one waited for its
 * return (2 processes on 2 CPUs, 6 runs each, alternated: 0.33-0.40 us one
 * way at 1 byte, 0.29 without; over udp no change). */
static void wait_byte(volatile uint8_t *p, uint8_t v)
{
    for (unsigned i = 1; __atomic_load_n(p, __ATOMIC_ACQUIRE) != v; i++)
        if (i > 4096 && i % 256 == 0)
            sched_yield();
}

/* One message of n bytes from my send buffer into the peer's receive
 * buffer, flag value v in the last byte, and its completion; 0 when
 * acp_copy refused it. A 0-byte message is a 0-byte copy and the flag: the
 * flag first, as a program that signals would issue it, then the copy,
 * which moves nothing, and one completion for both. The copy's cost
 * (12-20 ns on vm-2c) is then paid while the flag travels instead of
 * before it leaves. */
static int put_msg(acp_ga_t mine, acp_ga_t peer, size_t n, uint8_t v, uint8_t *sendbuf, uint8_t *flagbuf)
{
    acp_handle_t h;
    if (n > 0) {
        sendbuf[n - 1] = v;
        h = acp_copy(peer, mine + send_off(), n, ACP_HANDLE_NULL);
    } else {
        flagbuf[0] = v;
        if (acp_copy(peer + flag_off() + FLAG_IN, mine + flag_off(), 1, ACP_HANDLE_NULL) == ACP_HANDLE_NULL)
            return 0;
        h = acp_copy(peer, mine + send_off(), 0, ACP_HANDLE_NULL);
    }
    if (h == ACP_HANDLE_NULL)
        return 0;
    acp_complete(h);
    return 1;
}

#endif
