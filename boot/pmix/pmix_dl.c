//go:build cgo

/* Trampolines from Go to libpmix through the pointers bootpmix_load found. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pmix_dl.h"

_Static_assert(sizeof(bootpmix_proc_t) == 260, "pmix_proc_t is 260 bytes in the PMIx ABI");
_Static_assert(sizeof(bootpmix_value_t) == 32, "pmix_value_t is 32 bytes in the PMIx ABI");
_Static_assert(offsetof(bootpmix_value_t, data) == 8, "pmix_value_t's data is at offset 8");
_Static_assert(sizeof(bootpmix_info_t) == 552, "pmix_info_t is 552 bytes in the PMIx ABI");
_Static_assert(offsetof(bootpmix_info_t, value) == 520, "pmix_info_t's value is at offset 520");

int bootpmix_load(const char *name, bootpmix_api *api, char *err, size_t errlen)
{
    /* RTLD_GLOBAL: libpmix loads plugins that expect its symbols in the
     * global scope, as they are when an MPI library linked it. The handle
     * is never closed: libpmix starts threads. */
    void *h = dlopen(name, RTLD_NOW | RTLD_GLOBAL);
    if (h == NULL) {
        const char *e = dlerror();
        snprintf(err, errlen, "%s", e ? e : "dlopen failed");
        return -1;
    }
    static const char *names[] = {"PMIx_Init", "PMIx_Finalize", "PMIx_Put", "PMIx_Commit", "PMIx_Fence",
                                  "PMIx_Get", "PMIx_Abort", "PMIx_Error_string", "PMIx_Get_version"};
    void **slots[] = {(void **)&api->init, (void **)&api->finalize, (void **)&api->put,
                      (void **)&api->commit, (void **)&api->fence, (void **)&api->get,
                      (void **)&api->abort, (void **)&api->error_string, (void **)&api->get_version};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        *slots[i] = dlsym(h, names[i]);
        if (*slots[i] == NULL) {
            snprintf(err, errlen, "%s has no %s (not a PMIx client library?)", name, names[i]);
            return -1;
        }
    }
    return 0;
}

int bootpmix_init(const bootpmix_api *api, bootpmix_proc_t *me)
{
    memset(me, 0, sizeof *me);
    return api->init(me, NULL, 0);
}

int bootpmix_finalize(const bootpmix_api *api) { return api->finalize(NULL, 0); }

int bootpmix_put_bytes(const bootpmix_api *api, const char *key, const void *data, size_t n)
{
    bootpmix_value_t v;
    memset(&v, 0, sizeof v);
    v.type = BOOTPMIX_BYTE_OBJECT;
    v.data.bo.bytes = (char *)data; /* PMIx_Put copies the value */
    v.data.bo.size = n;
    return api->put(BOOTPMIX_GLOBAL, key, &v);
}

int bootpmix_commit(const bootpmix_api *api) { return api->commit(); }

int bootpmix_fence(const bootpmix_api *api, int collect)
{
    if (!collect)
        return api->fence(NULL, 0, NULL, 0);
    bootpmix_info_t info;
    memset(&info, 0, sizeof info);
    strcpy(info.key, "pmix.collect"); /* PMIX_COLLECT_DATA */
    info.value.type = BOOTPMIX_BOOL;
    info.value.data.flag = 1;
    return api->fence(NULL, 0, &info, 1);
}

/* Frees a value PMIx_Get returned, for the types we ask for (what
 * PMIX_VALUE_RELEASE does for them). */
static void release(bootpmix_value_t *v)
{
    if (v->type == BOOTPMIX_BYTE_OBJECT)
        free(v->data.bo.bytes);
    free(v);
}

int bootpmix_get_bytes(const bootpmix_api *api, const bootpmix_proc_t *me, uint32_t rank, const char *key,
                       void **data, size_t *n)
{
    bootpmix_proc_t p = *me;
    p.rank = rank;
    bootpmix_value_t *v = NULL;
    int rc = api->get(&p, key, NULL, 0, &v);
    if (rc != BOOTPMIX_SUCCESS)
        return rc;
    if (v == NULL)
        return -1;
    if (v->type != BOOTPMIX_BYTE_OBJECT) {
        release(v);
        return -2;
    }
    *data = v->data.bo.bytes;
    *n = v->data.bo.size;
    v->data.bo.bytes = NULL;
    release(v);
    return BOOTPMIX_SUCCESS;
}

int bootpmix_get_job_uint(const bootpmix_api *api, const bootpmix_proc_t *me, const char *key, uint64_t *out)
{
    bootpmix_proc_t p = *me;
    p.rank = BOOTPMIX_RANK_WILDCARD;
    bootpmix_value_t *v = NULL;
    int rc = api->get(&p, key, NULL, 0, &v);
    if (rc != BOOTPMIX_SUCCESS)
        return rc;
    if (v == NULL)
        return -1;
    rc = BOOTPMIX_SUCCESS;
    switch (v->type) {
    case BOOTPMIX_UINT32: *out = v->data.uint32; break;
    case BOOTPMIX_UINT64: *out = v->data.uint64; break;
    case BOOTPMIX_SIZE: *out = v->data.size; break;
    case BOOTPMIX_UINT: *out = (unsigned)v->data.integer; break;
    case BOOTPMIX_INT:
    case BOOTPMIX_INT32: *out = v->data.integer < 0 ? 0 : (uint64_t)v->data.integer; break;
    default: rc = -2;
    }
    release(v);
    return rc;
}

int bootpmix_abort(const bootpmix_api *api, int status, const char *msg)
{
    return api->abort(status, msg, NULL, 0);
}

const char *bootpmix_error_string(const bootpmix_api *api, int status) { return api->error_string(status); }

const char *bootpmix_version(const bootpmix_api *api) { return api->get_version(); }
