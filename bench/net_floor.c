/*
 * net_floor.c - what this host's kernel allows two processes that talk over
 * loopback sockets, with no library between them: the floor under the udp
 * rows of bench/compare (ACP over udp against Open MPI over TCP).
 *
 *   build/bench/net_floor [-min BYTES] [-max BYTES] [-reps N] [-rounds R] [-cpus A,B]
 *
 * Two processes (one forks the other), each pinned to one CPU (by default
 * the first two this process may use, where acprun binds two ranks), time
 * a pingpong of n-byte messages four ways:
 *
 *   udp-spin    a connected UDP socket pair; the receiver polls with a
 *               non-blocking recv, as a waiting thread of ACP's udp
 *               transport does
 *   tcp-spin    a TCP connection (TCP_NODELAY), polled the same way
 *   udp-block   UDP, the receiver asleep in a blocking recv: every message
 *               wakes it
 *   tcp-block   TCP, likewise
 *
 * and, for the spinning pair, how long the sender's send() takes: over
 * loopback the receiving side's network stack runs inside it.
 *
 * Each size runs R alternated rounds (default 5); the table shows the
 * median one-way time of each way in microseconds.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "floor.h"

#define MAX_SIZE 8192

enum { UDP_SPIN, TCP_SPIN, UDP_BLOCK, TCP_BLOCK, WAYS };

static int me;

static void fail(const char *what)
{
    fprintf(stderr, "net_floor: %s: %s\n", what, strerror(errno));
    exit(1);
}

/* A connected pair of sockets of type (SOCK_DGRAM or SOCK_STREAM) on
 * 127.0.0.1. */
static void socket_pair(int type, int fd[2])
{
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof a;
    if (type == SOCK_STREAM) {
        int l = socket(AF_INET, SOCK_STREAM, 0);
        if (l < 0 || bind(l, (struct sockaddr *)&a, sizeof a) != 0 || getsockname(l, (struct sockaddr *)&a, &len) != 0 ||
            listen(l, 1) != 0)
            fail("tcp listener");
        fd[1] = socket(AF_INET, SOCK_STREAM, 0);
        if (fd[1] < 0 || connect(fd[1], (struct sockaddr *)&a, sizeof a) != 0)
            fail("tcp connect");
        fd[0] = accept(l, NULL, NULL);
        if (fd[0] < 0)
            fail("tcp accept");
        close(l);
        int one = 1;
        setsockopt(fd[0], IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        setsockopt(fd[1], IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        return;
    }
    struct sockaddr_in b[2];
    for (int i = 0; i < 2; i++) {
        fd[i] = socket(AF_INET, SOCK_DGRAM, 0);
        b[i] = a;
        len = sizeof b[i];
        if (fd[i] < 0 || bind(fd[i], (struct sockaddr *)&b[i], sizeof b[i]) != 0 ||
            getsockname(fd[i], (struct sockaddr *)&b[i], &len) != 0)
            fail("udp socket");
    }
    if (connect(fd[0], (struct sockaddr *)&b[1], sizeof b[1]) != 0 ||
        connect(fd[1], (struct sockaddr *)&b[0], sizeof b[0]) != 0)
        fail("udp connect");
}

static char buf[MAX_SIZE];

/* Receives a whole message of n bytes (TCP may deliver it in pieces). */
static void recv_msg(int fd, size_t n, int block)
{
    size_t got = 0;
    while (got < n) {
        ssize_t r = recv(fd, buf + got, sizeof buf - got, block ? 0 : MSG_DONTWAIT);
        if (r > 0)
            got += (size_t)r;
        else if (r == 0)
            exit(1); /* the other side closed: it failed */
        else if (errno != EAGAIN && errno != EINTR)
            fail("recv");
    }
}

/* One pingpong of reps round trips (a tenth more first, untimed) on a
 * connected pair; rank 0's one-way time, and in *send_us the mean time
 * of its send() calls, in microseconds. Both processes call it. */
static double pingpong(int fd, int way, size_t n, int reps, double *send_us)
{
    int block = way == UDP_BLOCK || way == TCP_BLOCK, warm = reps / 10 + 2;
    size_t len = n > 0 ? n : 1; /* a datagram of 0 bytes is a message too, a TCP write of 0 is not */
    double t0 = 0, in_send = 0;
    for (int i = 0; i < warm + reps; i++) {
        if (i == warm)
            t0 = floor_now();
        for (int turn = 0; turn < 2; turn++) {
            if ((turn == 0) == (me == 0)) {
                double a = floor_now();
                if (send(fd, buf, len, 0) != (ssize_t)len)
                    fail("send");
                if (i >= warm)
                    in_send += floor_now() - a;
            } else {
                recv_msg(fd, len, block);
            }
        }
    }
    double t = (floor_now() - t0) / reps / 2;
    *send_us = in_send / reps * 1e6;
    return t * 1e6;
}

int main(int argc, char **argv)
{
    floor_opts o = {.min_size = 0, .max_size = 1024, .reps = 10000, .rounds = 5, .cpu = {-1, -1}};
    floor_parse(argc, argv, "net_floor", MAX_SIZE, &o);
    /* Every way's sockets before the fork: both processes hold both ends
     * and use one each. */
    int fds[WAYS][2];
    for (int w = 0; w < WAYS; w++)
        socket_pair(w == TCP_SPIN || w == TCP_BLOCK ? SOCK_STREAM : SOCK_DGRAM, fds[w]);
    fflush(stdout);
    pid_t child = fork();
    if (child < 0)
        fail("fork");
    me = child == 0;
    if (me == 1)
        prctl(PR_SET_PDEATHSIG, SIGKILL); /* never outlive the timing side */
    if (!floor_pin("net_floor", o.cpu[me]))
        return 2; /* the other side stops when its socket closes, or is killed with us */
    if (me == 0) {
        floor_title("net_floor: two processes on loopback sockets, no library", &o);
        printf("%13s%13s%13s%13s%13s%13s\n", "#bytes", "udp-spin", "tcp-spin", "udp-block", "tcp-block", "udp-send");
    }
    double t[WAYS][FLOOR_MAX_ROUNDS], s[FLOOR_MAX_ROUNDS];
    for (long n = o.min_size; n <= o.max_size; n = n ? 2 * n : 1) {
        for (int k = 0; k < o.rounds; k++)
            for (int w = 0; w < WAYS; w++) {
                double su = 0;
                t[w][k] = pingpong(fds[w][me], w, (size_t)n, (int)o.reps, &su);
                if (w == UDP_SPIN)
                    s[k] = su;
            }
        if (me == 0) {
            printf("%13ld", n);
            for (int w = 0; w < WAYS; w++)
                printf("%13.2f", floor_median(t[w], (int)o.rounds));
            printf("%13.2f\n", floor_median(s, (int)o.rounds));
            fflush(stdout);
        }
        if (n == o.max_size)
            break;
    }
    return floor_status(me, child);
}
