/*
 * t_bind: acprun --acp-bind thread pins the thread that calls acp_init,
 * and only that one.
 *
 * acprun gives rank i the i-th CPU in ACP_BIND_THREAD_CPU (when the ranks
 * are no more than its CPUs). After acp_init the main thread, which called
 * it, may run on that CPU alone; every other thread of the process (the
 * library's) keeps all the CPUs the process had. The ranks then exchange
 * puts and atomics, which start more library threads at times, and every
 * thread but the main one must still have all the CPUs: a thread the
 * library creates must not inherit the application thread's pin.
 *
 * Run with ACP_BIND=thread and --acp-size-smem 4096. ACPT_BIND_ROUNDS sets
 * the rounds of traffic (2,000): an emulated adapter runs fewer.
 */
#include "acptest.h"

#include <dirent.h>
#include <sys/syscall.h>

/* Cpus_allowed_list of one thread of this process ("" when unreadable). */
static void cpus_of(const char *tid, char *out, size_t len)
{
    char path[64], line[256];
    snprintf(path, sizeof path, "/proc/self/task/%s/status", tid);
    out[0] = 0;
    FILE *f = fopen(path, "r");
    if (!f)
        return;
    while (fgets(line, sizeof line, f))
        if (strncmp(line, "Cpus_allowed_list:", 18) == 0) {
            char *v = line + 18;
            v += strspn(v, " \t");
            v[strcspn(v, "\n")] = 0;
            snprintf(out, len, "%s", v);
        }
    fclose(f);
}

/* Checks every thread of the process: the main one has want_main, the
 * others want_rest. Returns the number of threads. */
static int check_threads(const char *when, const char *want_main, const char *want_rest)
{
    char self[32], got[256];
    snprintf(self, sizeof self, "%ld", (long)getpid());
    DIR *d = opendir("/proc/self/task");
    if (!d) {
        FAIL("%s: cannot list /proc/self/task", when);
        return 0;
    }
    int threads = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.')
            continue;
        threads++;
        cpus_of(e->d_name, got, sizeof got);
        if (got[0] == 0)
            continue; /* ended meanwhile */
        int is_main = strcmp(e->d_name, self) == 0;
        const char *want = is_main ? want_main : want_rest;
        CHECK(strcmp(got, want) == 0, "%s: thread %s (%s) may run on CPUs %s, want %s", when, e->d_name,
              is_main ? "the application's" : "the library's", got, want);
    }
    closedir(d);
    return threads;
}

int main(int argc, char **argv)
{
    /* What the process had before acp_init: what the library's threads keep. */
    char wide[256];
    char self[32];
    snprintf(self, sizeof self, "%ld", (long)getpid());
    cpus_of(self, wide, sizeof wide);
    acpt_init(&argc, &argv);
    int me = acp_rank(), n = acp_procs();
    acpt_need_smem(64);

    const char *cpu = getenv("ACP_BIND_THREAD_CPU");
    const char *bind = getenv("ACP_BIND");
    if (bind != NULL && strcmp(bind, "thread") == 0 && sysconf(_SC_NPROCESSORS_ONLN) >= n)
        CHECK(cpu != NULL, "ACP_BIND=thread with %d rank(s) on %ld CPU(s): acprun set no ACP_BIND_THREAD_CPU", n,
              sysconf(_SC_NPROCESSORS_ONLN));
    if (cpu == NULL) {
        /* Nobody pinned: every thread keeps what the process had. */
        check_threads("unpinned", wide, wide);
        return acpt_finish("t_bind");
    }
    CHECK((long)syscall(SYS_gettid) == (long)getpid(), "acp_init was called from the main thread");
    int threads = check_threads("after acp_init", cpu, wide);
    CHECK(threads > 1, "the library runs threads of its own (%d thread(s))", threads);

    /* Traffic: each rank adds to a counter on its right neighbour and puts
     * a word there, in rounds with a barrier each. */
    int rounds = (int)acpt_env_long("ACPT_BIND_ROUNDS", 2000, 1, 1000000);
    uint64_t *cnt = acpt_starter(0), *src = acpt_starter(8), *dst = acpt_starter(16);
    acp_ga_t mine = acp_query_starter_ga(me), right = acp_query_starter_ga((me + 1) % n);
    CHECK_INT(acp_sync(), 0, "acp_sync");
    for (int k = 1; k <= rounds; k++) {
        *src = (uint64_t)k;
        acp_handle_t h = acp_add8(mine + 24, right, 1, ACP_HANDLE_NULL);
        CHECK(h != ACP_HANDLE_NULL, "round %d: acp_add8 refused", k);
        h = acp_copy(right + 16, mine + 8, 8, h);
        CHECK(h != ACP_HANDLE_NULL, "round %d: acp_copy refused", k);
        acp_complete(h);
        CHECK_INT(acp_sync(), 0, "acp_sync in round %d", k);
        CHECK_HEX(*dst, (uint64_t)k, "round %d: the word from the left neighbour", k);
        CHECK_INT(acp_sync(), 0, "second acp_sync in round %d", k);
    }
    CHECK_HEX(*cnt, (uint64_t)rounds, "the counter the left neighbour added to");
    check_threads("after the traffic", cpu, wide);
    return acpt_finish("t_bind");
}
