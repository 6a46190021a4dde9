/*
 * The few PMIx types, constants and functions libacp uses, declared here
 * so that libacp builds without the PMIx headers and runs without libpmix:
 * the library is opened with dlopen when a PMIx launcher started the job.
 *
 * The layouts are those of the PMIx standard's ABI, identical in OpenPMIx
 * 2.x to 5.x (pmix_common.h): pmix_proc_t is 260 bytes, pmix_value_t 32
 * (a 2-byte type, then an 8-aligned union of 24 bytes), pmix_info_t 552.
 * pmix_test.go compiles a check of these sizes against the real headers
 * when they are installed.
 */
#ifndef BOOTPMIX_DL_H
#define BOOTPMIX_DL_H

#include <stddef.h>
#include <stdint.h>

#define BOOTPMIX_MAX_NSLEN 255
#define BOOTPMIX_MAX_KEYLEN 511

#define BOOTPMIX_SUCCESS 0
#define BOOTPMIX_RANK_WILDCARD (UINT32_MAX - 1)
#define BOOTPMIX_GLOBAL 3 /* pmix_scope_t: share with all processes */

/* pmix_data_type_t values */
#define BOOTPMIX_BOOL 1
#define BOOTPMIX_SIZE 4
#define BOOTPMIX_INT 6
#define BOOTPMIX_INT32 9
#define BOOTPMIX_UINT 11
#define BOOTPMIX_UINT32 14
#define BOOTPMIX_UINT64 15
#define BOOTPMIX_BYTE_OBJECT 27

typedef struct {
    char nspace[BOOTPMIX_MAX_NSLEN + 1];
    uint32_t rank;
} bootpmix_proc_t;

typedef struct {
    char *bytes;
    size_t size;
} bootpmix_byte_object_t;

typedef struct {
    uint16_t type;
    union {
        _Bool flag;
        uint32_t uint32;
        uint64_t uint64;
        size_t size;
        int integer;
        bootpmix_byte_object_t bo;
        char space[24]; /* the largest member in the standard (pmix_envar_t) */
    } data;
} bootpmix_value_t;

typedef struct {
    char key[BOOTPMIX_MAX_KEYLEN + 1];
    uint32_t flags;
    bootpmix_value_t value;
} bootpmix_info_t;

/* The functions, found with dlsym. */
typedef struct {
    int (*init)(bootpmix_proc_t *proc, bootpmix_info_t *info, size_t ninfo);
    int (*finalize)(const bootpmix_info_t *info, size_t ninfo);
    int (*put)(uint8_t scope, const char *key, bootpmix_value_t *val);
    int (*commit)(void);
    int (*fence)(const bootpmix_proc_t *procs, size_t nprocs, const bootpmix_info_t *info, size_t ninfo);
    int (*get)(const bootpmix_proc_t *proc, const char *key, const bootpmix_info_t *info, size_t ninfo,
               bootpmix_value_t **val);
    int (*abort)(int status, const char *msg, bootpmix_proc_t *procs, size_t nprocs);
    const char *(*error_string)(int status);
    const char *(*get_version)(void);
} bootpmix_api;

/* Opens the library and finds every function; on failure returns -1 and
 * writes the reason into err. */
int bootpmix_load(const char *name, bootpmix_api *api, char *err, size_t errlen);

int bootpmix_init(const bootpmix_api *api, bootpmix_proc_t *me);
int bootpmix_finalize(const bootpmix_api *api);
int bootpmix_put_bytes(const bootpmix_api *api, const char *key, const void *data, size_t n);
int bootpmix_commit(const bootpmix_api *api);
int bootpmix_fence(const bootpmix_api *api, int collect);
/* On success *data is malloc'ed (free it) and *n its size. */
int bootpmix_get_bytes(const bootpmix_api *api, const bootpmix_proc_t *me, uint32_t rank, const char *key,
                       void **data, size_t *n);
/* A job-level unsigned number (PMIX_JOB_SIZE, PMIX_LOCAL_SIZE). */
int bootpmix_get_job_uint(const bootpmix_api *api, const bootpmix_proc_t *me, const char *key, uint64_t *out);
int bootpmix_abort(const bootpmix_api *api, int status, const char *msg);
const char *bootpmix_error_string(const bootpmix_api *api, int status);
const char *bootpmix_version(const bootpmix_api *api);

#endif
