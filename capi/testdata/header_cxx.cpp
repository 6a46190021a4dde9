// header_cxx.cpp - acp.h compiles as C++ and its functions link with C
// linkage; runs as a single process.
#include <acp.h>
#include <acpbl_sync.h>

#include <cstdio>

int main(int argc, char **argv)
{
    static_assert(sizeof(acp_ga_t) == 8 && sizeof(acp_handle_t) == 8, "64-bit types");
    static_assert(ACP_HANDLE_ALL == static_cast<unsigned long long>(acp_handle_t(-1)), "ALL is -1");
    uint64_t t0 = get_clock();
    if (acp_init(&argc, &argv) != 0)
        return 1;
    acp_ga_t ga = acp_query_starter_ga(acp_rank());
    acp_complete(acp_copy(ga + 8, ga, 8, ACP_HANDLE_NULL));
    int ok = acp_procs() == 1 && acp_query_rank(ga) == 0 && get_clock() >= t0;
    if (acp_finalize() != 0 || !ok)
        return 1;
    std::printf("acp.h works from C++\n");
    return 0;
}
