/*
 * capi_singleton.c - calls every function of acp.h once, as a single process
 * started without a launcher: the error values before acp_init and after
 * acp_finalize, argv rewriting, and each call's normal result.
 *
 * Run without arguments. It re-executes itself (posix_spawn, never a bare
 * fork: the Go runtime is loaded) to check what ends a process or prints on
 * stderr: acp_abort, option errors, ACP_VERBOSE messages.
 */
#include <pthread.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "acp.h"

extern char **environ;

static int failures;

#define CHECK(cond)                                                        \
    do {                                                                   \
        if (!(cond)) {                                                     \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__,         \
                    __LINE__, #cond);                                      \
            failures++;                                                    \
        }                                                                  \
    } while (0)

/* Every call must give its documented error value when no engine runs. */
static void check_error_values(void)
{
    int x = 0;
    CHECK(acp_finalize() == -1);
    CHECK(acp_reset(0) == -1);
    CHECK(acp_sync() == -1);
    CHECK(acp_rank() == -1);
    CHECK(acp_procs() == -1);
    CHECK(acp_query_starter_ga(0) == ACP_GA_NULL);
    CHECK(acp_register_memory(&x, sizeof x, 0) == ACP_ATKEY_NULL);
    CHECK(acp_unregister_memory(1) == -1);
    CHECK(acp_query_ga(1, &x) == ACP_GA_NULL);
    CHECK(acp_query_address(1) == NULL);
    CHECK(acp_query_rank(1) == -1);
    CHECK(acp_query_color(1) == -1);
    CHECK(acp_colors() == -1);
    CHECK(acp_copy(1, 2, 8, ACP_HANDLE_NULL) == ACP_HANDLE_NULL);
    CHECK(acp_cas4(8, 16, 0, 1, ACP_HANDLE_NULL) == ACP_HANDLE_NULL);
    CHECK(acp_cas8(8, 16, 0, 1, ACP_HANDLE_NULL) == ACP_HANDLE_NULL);
    CHECK(acp_swap4(8, 16, 1, ACP_HANDLE_NULL) == ACP_HANDLE_NULL);
    CHECK(acp_swap8(8, 16, 1, ACP_HANDLE_NULL) == ACP_HANDLE_NULL);
    CHECK(acp_add4(8, 16, 1, ACP_HANDLE_NULL) == ACP_HANDLE_NULL);
    CHECK(acp_add8(8, 16, 1, ACP_HANDLE_NULL) == ACP_HANDLE_NULL);
    CHECK(acp_xor4(8, 16, 1, ACP_HANDLE_NULL) == ACP_HANDLE_NULL);
    CHECK(acp_xor8(8, 16, 1, ACP_HANDLE_NULL) == ACP_HANDLE_NULL);
    CHECK(acp_or4(8, 16, 1, ACP_HANDLE_NULL) == ACP_HANDLE_NULL);
    CHECK(acp_or8(8, 16, 1, ACP_HANDLE_NULL) == ACP_HANDLE_NULL);
    CHECK(acp_and4(8, 16, 1, ACP_HANDLE_NULL) == ACP_HANDLE_NULL);
    CHECK(acp_and8(8, 16, 1, ACP_HANDLE_NULL) == ACP_HANDLE_NULL);
    acp_complete(1);
    acp_complete(ACP_HANDLE_ALL);
    CHECK(acp_inquire(1) == 0);
}

static void check_init(void)
{
    char *args[] = {"prog", "a", "--acp-size-smem", "4096", "b", NULL};
    int argc = 5;
    char **argv = args;
    CHECK(acp_init(&argc, &argv) == 0);
    CHECK(argc == 3);
    CHECK(argv == args);
    CHECK(strcmp(argv[0], "prog") == 0);
    CHECK(strcmp(argv[1], "a") == 0);
    CHECK(strcmp(argv[2], "b") == 0);
    CHECK(argv[3] == NULL);
    CHECK(acp_init(&argc, &argv) == -1); /* twice: refused */
    CHECK(acp_rank() == 0);
    CHECK(acp_procs() == 1);
    CHECK(acp_colors() >= 1);
}

static void check_gmm(void)
{
    static uint64_t buf[8];
    acp_ga_t s = acp_query_starter_ga(0);
    CHECK(s != ACP_GA_NULL);
    CHECK(acp_query_starter_ga(1) == ACP_GA_NULL);
    CHECK(acp_query_starter_ga(-1) == ACP_GA_NULL);
    CHECK(acp_query_address(s) != NULL);
    CHECK(acp_query_address(ACP_GA_NULL) == NULL);
    CHECK(acp_query_rank(s) == 0);
    CHECK(acp_query_color(s) == 0);
    CHECK(acp_query_rank(ACP_GA_NULL) == -1);
    CHECK(acp_query_color(ACP_GA_NULL) == -1);

    acp_atkey_t key = acp_register_memory(buf, sizeof buf, 0);
    CHECK(key != ACP_ATKEY_NULL);
    CHECK(acp_register_memory(NULL, 8, 0) == ACP_ATKEY_NULL);
    CHECK(acp_register_memory(buf, sizeof buf, acp_colors()) == ACP_ATKEY_NULL);
    acp_ga_t ga = acp_query_ga(key, &buf[1]);
    CHECK(ga != ACP_GA_NULL);
    CHECK(acp_query_address(ga) == (void *)&buf[1]);
    CHECK(acp_query_ga(key, &buf[8]) == ACP_GA_NULL); /* one past the end */
    CHECK(acp_unregister_memory(key) == 0);
    CHECK(acp_unregister_memory(key) == -1); /* twice */
    CHECK(acp_unregister_memory(ACP_ATKEY_NULL) == -1);
    CHECK(acp_unregister_memory(s) == -1); /* starter memory */
}

static void check_copy(void)
{
    static char buf[64];
    acp_ga_t s = acp_query_starter_ga(0);
    char *smem = acp_query_address(s);
    acp_atkey_t key = acp_register_memory(buf, sizeof buf, 0);
    acp_ga_t ga = acp_query_ga(key, buf);

    strcpy(smem, "hello");
    acp_handle_t h = acp_copy(ga, s, 6, ACP_HANDLE_NULL);
    CHECK(h > 0);
    acp_complete(h);
    CHECK(acp_inquire(h) == 0);
    CHECK(strcmp(buf, "hello") == 0);

    acp_handle_t h2 = acp_copy(s + 100, ga, 6, ACP_HANDLE_ALL);
    CHECK(h2 == h + 1); /* consecutive handles */
    CHECK(acp_copy(s, s, 0, ACP_HANDLE_CONT) > 0);
    CHECK(acp_copy(s, ga, 6, h2) > 0);
    acp_complete(ACP_HANDLE_ALL);
    CHECK(strcmp(smem + 100, "hello") == 0);

    /* --acp-size-smem 4096 was applied: the starter memory ends at 4096. */
    CHECK(acp_copy(s + 4000, ga, 64, ACP_HANDLE_NULL) > 0);
    CHECK(acp_copy(s + 4090, ga, 64, ACP_HANDLE_NULL) == ACP_HANDLE_NULL);
    CHECK(acp_copy(ACP_GA_NULL, ga, 8, ACP_HANDLE_NULL) == ACP_HANDLE_NULL);
    CHECK(acp_copy(s, ga, 8, 1000000) == ACP_HANDLE_NULL); /* order not issued */

    acp_complete(ACP_HANDLE_ALL);
    acp_complete(ACP_HANDLE_NULL);
    acp_complete(1000000); /* never issued: returns */
    CHECK(acp_inquire(ACP_HANDLE_NULL) == 0);
    CHECK(acp_inquire(ACP_HANDLE_ALL) == 0);
    CHECK(acp_inquire(1000000) == 0);
    CHECK(acp_unregister_memory(key) == 0);
}

static void check_atomics(void)
{
    acp_ga_t s = acp_query_starter_ga(0);
    char *smem = acp_query_address(s);
    uint32_t *w4 = (uint32_t *)(smem + 64), *r4 = (uint32_t *)(smem + 72);
    uint64_t *w8 = (uint64_t *)(smem + 80), *r8 = (uint64_t *)(smem + 88);
    acp_ga_t gw4 = s + 64, gr4 = s + 72, gw8 = s + 80, gr8 = s + 88;

    *w4 = 5;
    acp_complete(acp_cas4(gr4, gw4, 5, 6, ACP_HANDLE_NULL));
    CHECK(*r4 == 5 && *w4 == 6);
    acp_complete(acp_cas4(gr4, gw4, 5, 7, ACP_HANDLE_NULL)); /* fails */
    CHECK(*r4 == 6 && *w4 == 6);
    acp_complete(acp_swap4(gr4, gw4, 10, ACP_HANDLE_NULL));
    CHECK(*r4 == 6 && *w4 == 10);
    acp_complete(acp_add4(gr4, gw4, 0xffffffffu, ACP_HANDLE_NULL));
    CHECK(*r4 == 10 && *w4 == 9);
    acp_complete(acp_xor4(gr4, gw4, 3, ACP_HANDLE_NULL));
    CHECK(*r4 == 9 && *w4 == 10);
    acp_complete(acp_or4(gr4, gw4, 5, ACP_HANDLE_NULL));
    CHECK(*r4 == 10 && *w4 == 15);
    acp_complete(acp_and4(gr4, gw4, 6, ACP_HANDLE_NULL));
    CHECK(*r4 == 15 && *w4 == 6);

    *w8 = 1ull << 40;
    acp_complete(acp_cas8(gr8, gw8, 1ull << 40, 2ull << 40, ACP_HANDLE_NULL));
    CHECK(*r8 == 1ull << 40 && *w8 == 2ull << 40);
    acp_complete(acp_swap8(gr8, gw8, 7, ACP_HANDLE_NULL));
    CHECK(*r8 == 2ull << 40 && *w8 == 7);
    acp_complete(acp_add8(gr8, gw8, 1ull << 33, ACP_HANDLE_NULL));
    CHECK(*r8 == 7 && *w8 == (1ull << 33) + 7);
    acp_complete(acp_xor8(gr8, gw8, 7, ACP_HANDLE_NULL));
    CHECK(*w8 == 1ull << 33);
    acp_complete(acp_or8(gr8, gw8, 1, ACP_HANDLE_NULL));
    CHECK(*w8 == (1ull << 33) + 1);
    acp_complete(acp_and8(gr8, gw8, 1, ACP_HANDLE_NULL));
    CHECK(*r8 == (1ull << 33) + 1 && *w8 == 1);

    CHECK(acp_add4(gr4, gw4 + 1, 1, ACP_HANDLE_NULL) == ACP_HANDLE_NULL);
    CHECK(acp_add8(gr8, gw8 + 4, 1, ACP_HANDLE_NULL) == ACP_HANDLE_NULL);
}

/* Several threads issue at once: every add must land exactly once. */
enum { THREADS = 4, ADDS = 2000 };

static void *adder(void *arg)
{
    acp_ga_t s = acp_query_starter_ga(acp_rank());
    acp_ga_t result = s + 256 + 8 * (size_t)arg;
    for (int i = 0; i < ADDS; i++)
        acp_complete(acp_add8(result, s + 200, 1, ACP_HANDLE_NULL));
    return NULL;
}

static void check_threads(void)
{
    pthread_t t[THREADS];
    uint64_t *counter = (uint64_t *)((char *)acp_query_address(acp_query_starter_ga(0)) + 200);
    *counter = 0;
    for (long i = 0; i < THREADS; i++)
        pthread_create(&t[i], NULL, adder, (void *)i);
    for (int i = 0; i < THREADS; i++)
        pthread_join(t[i], NULL);
    CHECK(*counter == THREADS * ADDS);
}

static void check_sync_reset(void)
{
    acp_ga_t s = acp_query_starter_ga(0);
    char *smem = acp_query_address(s);
    static uint64_t buf[2];
    acp_atkey_t key = acp_register_memory(buf, sizeof buf, 0);

    CHECK(acp_sync() == 0);
    CHECK(acp_reset(1) == -1); /* not a permutation of 0..0 */
    smem[0] = 'x';
    CHECK(acp_reset(0) == 0);
    CHECK(smem[0] == 0);                      /* starter memory cleared */
    CHECK(acp_unregister_memory(key) == -1);  /* registrations dropped */
    CHECK(acp_copy(s, s + 8, 8, ACP_HANDLE_NULL) == 1); /* handles restart */
    acp_complete(ACP_HANDLE_ALL);
}

/* Runs this program again in mode, with stdout and stderr in out. */
static int run_self(const char *self, const char *mode, char *const extra_env, char *out, size_t outsize)
{
    int fds[2];
    if (pipe(fds) != 0)
        return -1;
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, fds[1], 1);
    posix_spawn_file_actions_adddup2(&fa, fds[1], 2);
    posix_spawn_file_actions_addclose(&fa, fds[0]);

    char *env[256];
    int n = 0;
    for (char **e = environ; *e && n < 250; e++)
        if (strncmp(*e, "ACP_", 4) != 0)
            env[n++] = *e;
    if (extra_env)
        env[n++] = extra_env;
    env[n] = NULL;

    char *argv[] = {(char *)self, (char *)mode, NULL};
    pid_t pid;
    int rc = posix_spawn(&pid, self, &fa, NULL, argv, env);
    posix_spawn_file_actions_destroy(&fa);
    close(fds[1]);
    if (rc != 0) {
        close(fds[0]);
        return -1;
    }
    size_t got = 0;
    ssize_t k;
    while (got + 1 < outsize && (k = read(fds[0], out + got, outsize - 1 - got)) > 0)
        got += (size_t)k;
    out[got] = 0;
    close(fds[0]);
    int status;
    waitpid(pid, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

static void expect_child(const char *self, const char *mode, char *env, int code, const char *text)
{
    char out[8192];
    int rc = run_self(self, mode, env, out, sizeof out);
    if (rc != code || strstr(out, text) == NULL) {
        fprintf(stderr, "mode %s: exit %d (want %d), output:\n%s\n(want it to contain \"%s\")\n",
                mode, rc, code, out, text);
        failures++;
    }
}

/* Child modes: each ends the process its own way. */
static int child(const char *mode)
{
    if (strcmp(mode, "abort-before-init") == 0) {
        printf("stdout is flushed"); /* no newline: only exit() flushes it */
        acp_abort(NULL);
    }
    if (strcmp(mode, "abort-running") == 0) {
        acp_init(NULL, NULL);
        acp_abort("bye");
    }
    if (strcmp(mode, "bad-option") == 0) {
        char *args[] = {"prog", "--acp-no-such-option", "1", NULL};
        int argc = 3;
        char **argv = args;
        return acp_init(&argc, &argv) == -1 ? 0 : 1;
    }
    if (strcmp(mode, "misuse-before-init") == 0) {
        return acp_rank() == -1 ? 0 : 1;
    }
    if (strcmp(mode, "verbose") == 0) {
        char *args[] = {"prog", "--acp-verbose", "1", NULL};
        int argc = 3;
        char **argv = args;
        if (acp_init(&argc, &argv) != 0 || argc != 1 || argv[1] != NULL)
            return 1;
        acp_copy(ACP_GA_NULL, acp_query_starter_ga(0), 8, ACP_HANDLE_NULL);
        acp_finalize();
        return acp_procs() == -1 ? 0 : 1;
    }
    return 2;
}

int main(int argc, char **argv)
{
    if (argc > 1)
        return child(argv[1]);

    check_error_values();
    check_init();
    check_gmm();
    check_copy();
    check_atomics();
    check_threads();
    check_sync_reset();
    CHECK(acp_finalize() == 0);
    check_error_values(); /* after acp_finalize */
    CHECK(acp_init(NULL, NULL) == -1);

    expect_child(argv[0], "abort-before-init", NULL, 255, "acp: acp_abort: (no message)");
    expect_child(argv[0], "abort-before-init", NULL, 255, "stdout is flushed");
    expect_child(argv[0], "abort-running", NULL, 255, "acp[0]: acp_abort: bye");
    expect_child(argv[0], "bad-option", NULL, 0, "acp: invalid option \"--acp-no-such-option\"");
    expect_child(argv[0], "misuse-before-init", "ACP_VERBOSE=1", 0, "acp: acp_rank: called before acp_init");
    expect_child(argv[0], "verbose", NULL, 0, "acp[0]: acp_copy(0x0, ");
    expect_child(argv[0], "verbose", NULL, 0, "acp: acp_procs: called after acp_finalize");

    if (failures) {
        fprintf(stderr, "capi_singleton: %d check(s) failed\n", failures);
        return 1;
    }
    printf("capi_singleton: all checks passed\n");
    return 0;
}
