/*
 * One C client of fdb_c.h, timed: it dlopen()s the library it is given --
 * FDB5's libfdb5.so (the fdb5lib wheel) or fieldstore's -- and runs one
 * phase on NSTEPS x NLEVELS x NPARAMS fields of SIZE bytes with explicit
 * keys, from a new handle (the time includes opening it):
 *   archive    archive them all, flushing after each step (ROOT empty);
 *   list       list them (depth 3): next, and each one's location;
 *   list+keys  the same and each one's keys (a split key, every keyword);
 *   list-warm  list's listing ten times with the one handle: the median
 *              of the last nine (what a long-running reader sees);
 *   retrieve   retrieve them with one request, read in field-sized pieces.
 * Prints one JSON line. bench/capi/run.sh runs each phase in a new process,
 * as separate writer and reader programs would.
 *
 *   capi_bench LIBRARY ROOT SCHEMA SIZE NSTEPS NLEVELS NPARAMS LABEL PHASE
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fdb5/api/fdb_c.h"

/* The functions used, resolved from the library given. */
#define FUNCTIONS(X)                                                                            \
    X(fdb_initialise) X(fdb_error_string) X(fdb_new_handle_from_yaml) X(fdb_delete_handle)      \
    X(fdb_new_key) X(fdb_key_add) X(fdb_delete_key) X(fdb_archive) X(fdb_flush)                 \
    X(fdb_new_request) X(fdb_request_add) X(fdb_delete_request) X(fdb_list)                     \
    X(fdb_listiterator_next) X(fdb_listiterator_attrs) X(fdb_listiterator_splitkey)             \
    X(fdb_delete_listiterator) X(fdb_new_splitkey) X(fdb_splitkey_next_metadata)                \
    X(fdb_delete_splitkey) X(fdb_new_datareader) X(fdb_retrieve) X(fdb_datareader_open)         \
    X(fdb_datareader_read) X(fdb_datareader_close) X(fdb_delete_datareader)

#define DECLARE(name) static __typeof__(name)* p_##name;
FUNCTIONS(DECLARE)

static void check(int rc, const char* what) {
    if (rc != FDB_SUCCESS && rc != FDB_ITERATION_COMPLETE) {
        fprintf(stderr, "capi_bench: %s failed (%d): %s\n", what, rc, p_fdb_error_string(rc));
        exit(1);
    }
}
#define CALL(name, ...) check(p_##name(__VA_ARGS__), #name)

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static double cpu(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static const char* label;
static long size;
static long nfields;

static void report(const char* phase, double seconds, double cpu_seconds, long fields, long bytes) {
    printf("{\"impl\": \"%s\", \"size\": %ld, \"fields\": %ld, \"phase\": \"%s\", \"seconds\": %.6f, "
           "\"cpu_seconds\": %.6f, \"fields_per_s\": %.1f, \"mib_per_s\": %.2f}\n",
           label, size, fields, phase, seconds, cpu_seconds, (double)fields / seconds,
           (double)bytes / seconds / 1048576.0);
    fflush(stdout);
    if (fields != nfields) {
        fprintf(stderr, "capi_bench: %s: %ld fields, expected %ld\n", phase, fields, nfields);
        exit(1);
    }
}

static void set_values(fdb_request_t* req, const char* param, int n, int first, int stride) {
    char* text = malloc((size_t)n * 16 + 1);
    text[0] = 0;
    for (int i = 0; i < n; i++) sprintf(text + strlen(text), "%s%d", i ? "/" : "", first + i * stride);
    const char* values[] = {text};
    CALL(fdb_request_add, req, param, values, 1);
    free(text);
}

static const char* fixed[][2] = {{"class", "od"}, {"expver", "0001"}, {"stream", "oper"}, {"date", "20240101"},
                                 {"time", "0000"}, {"type", "fc"},     {"levtype", "pl"}};

/* Archive every field, flushing after each step. */
static void archive(fdb_handle_t* fdb, char* data, int nsteps, int nlevels, int nparams, double t0, double c0) {
    fdb_key_t* key = NULL;
    CALL(fdb_new_key, &key);
    for (int i = 0; i < 7; i++) CALL(fdb_key_add, key, fixed[i][0], fixed[i][1]);
    long archived = 0;
    for (int s = 0; s < nsteps; s++) {
        char step[16];
        snprintf(step, sizeof step, "%d", s);
        CALL(fdb_key_add, key, "step", step);
        for (int l = 0; l < nlevels; l++) {
            char level[16];
            snprintf(level, sizeof level, "%d", 100 + 10 * l);
            CALL(fdb_key_add, key, "levelist", level);
            for (int p = 0; p < nparams; p++) {
                char param[16];
                snprintf(param, sizeof param, "%d", 1 + p);
                CALL(fdb_key_add, key, "param", param);
                memcpy(data, &archived, sizeof archived); /* every field differs */
                CALL(fdb_archive, fdb, key, data, (size_t)size);
                archived++;
            }
        }
        CALL(fdb_flush, fdb);
    }
    report("archive+flush", now() - t0, cpu() - c0, archived, archived * size);
    CALL(fdb_delete_key, key);
}

/* List every field (depth 3): its location, and with `keys` its keys; the
 * number listed. Exits on a listing that misses bytes or keys. */
static long walk_list(fdb_handle_t* fdb, fdb_request_t* req, fdb_split_key_t* sk, int keys) {
    fdb_listiterator_t* it = NULL;
    CALL(fdb_list, fdb, req, &it, true, 3);
    long listed = 0, total = 0, metadata = 0;
    int rc;
    while ((rc = p_fdb_listiterator_next(it)) == FDB_SUCCESS) {
        const char* uri;
        size_t off, len;
        CALL(fdb_listiterator_attrs, it, &uri, &off, &len);
        total += (long)len;
        if (keys) {
            const char *k, *v;
            size_t level;
            CALL(fdb_listiterator_splitkey, it, sk);
            while (p_fdb_splitkey_next_metadata(sk, &k, &v, &level) == FDB_SUCCESS) metadata += k[0] + v[0];
        }
        listed++;
    }
    check(rc, "fdb_listiterator_next");
    CALL(fdb_delete_listiterator, it);
    if (total != nfields * size || (keys && metadata == 0)) {
        fprintf(stderr, "capi_bench: listed %ld bytes\n", total);
        exit(1);
    }
    return listed;
}

static void list(fdb_handle_t* fdb, fdb_request_t* req, int keys, double t0, double c0) {
    fdb_split_key_t* sk = NULL;
    CALL(fdb_new_splitkey, &sk);
    long listed = walk_list(fdb, req, sk, keys);
    report(keys ? "list+keys" : "list", now() - t0, cpu() - c0, listed, 0);
    CALL(fdb_delete_splitkey, sk);
}

static int by_value(const void* a, const void* b) {
    double x = *(const double*)a, y = *(const double*)b;
    return (x > y) - (x < y);
}

/* The listing of `list`, WARM + 1 times with the handle of the process:
 * the median of the last WARM (the first pays for opening the dataset and
 * for the first use of the library's code and data). */
#define WARM 9
static void list_warm(fdb_handle_t* fdb, fdb_request_t* req) {
    double wall[WARM], cpus[WARM];
    long listed = walk_list(fdb, req, NULL, 0);
    for (int i = 0; i < WARM; i++) {
        double t = now(), c = cpu();
        listed = walk_list(fdb, req, NULL, 0);
        wall[i] = now() - t;
        cpus[i] = cpu() - c;
    }
    qsort(wall, WARM, sizeof wall[0], by_value);
    qsort(cpus, WARM, sizeof cpus[0], by_value);
    report("list (warm)", wall[WARM / 2], cpus[WARM / 2], listed, 0);
}

/* Retrieve every field with one request; read field by field. */
static void retrieve(fdb_handle_t* fdb, fdb_request_t* req, char* data, double t0, double c0) {
    fdb_datareader_t* dr = NULL;
    CALL(fdb_new_datareader, &dr);
    CALL(fdb_retrieve, fdb, req, dr);
    long total_size = 0, got = 0, read_bytes = 0, fields_read = 0;
    CALL(fdb_datareader_open, dr, &total_size);
    for (;;) {
        long n = 0;
        while (n < size) {
            CALL(fdb_datareader_read, dr, data + n, size - n, &got);
            if (got == 0) break;
            n += got;
        }
        if (n == 0) break;
        read_bytes += n;
        fields_read++;
    }
    CALL(fdb_datareader_close, dr);
    report("retrieve", now() - t0, cpu() - c0, fields_read, read_bytes);
    if (read_bytes != nfields * size || total_size != read_bytes) {
        fprintf(stderr, "capi_bench: retrieved %ld bytes of %ld\n", read_bytes, total_size);
        exit(1);
    }
    CALL(fdb_delete_datareader, dr);
}

int main(int argc, char** argv) {
    if (argc != 10) {
        fprintf(stderr, "usage: %s LIBRARY ROOT SCHEMA SIZE NSTEPS NLEVELS NPARAMS LABEL PHASE\n", argv[0]);
        return 2;
    }
    void* lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        fprintf(stderr, "capi_bench: %s\n", dlerror());
        return 1;
    }
#define RESOLVE(name)                                                           \
    p_##name = (__typeof__(name)*)dlsym(lib, #name);                            \
    if (!p_##name) {                                                            \
        fprintf(stderr, "capi_bench: %s lacks %s\n", argv[1], #name);           \
        return 1;                                                               \
    }
    FUNCTIONS(RESOLVE)
    const char* root = argv[2];
    const char* schema = argv[3];
    size = atol(argv[4]);
    int nsteps = atoi(argv[5]), nlevels = atoi(argv[6]), nparams = atoi(argv[7]);
    label = argv[8];
    const char* phase = argv[9];
    nfields = (long)nsteps * nlevels * nparams;

    char config[8192];
    snprintf(config, sizeof config,
             "{type: local, engine: toc, schema: '%s', spaces: [{handler: Default, roots: [{path: '%s'}]}]}",
             schema, root);
    CALL(fdb_initialise);
    char* data = malloc((size_t)size);
    unsigned long x = 88172645463325252UL;
    for (long i = 0; i < size; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        data[i] = (char)x;
    }
    fdb_request_t* req = NULL;
    CALL(fdb_new_request, &req);
    for (int i = 0; i < 7; i++) {
        const char* v[] = {fixed[i][1]};
        CALL(fdb_request_add, req, fixed[i][0], v, 1);
    }

    if (strcmp(phase, "retrieve") == 0) {
        set_values(req, "step", nsteps, 0, 1);
        set_values(req, "levelist", nlevels, 100, 10);
        set_values(req, "param", nparams, 1, 1);
    }

    /* The time includes opening the handle. */
    fdb_handle_t* fdb = NULL;
    double t0 = now(), c0 = cpu();
    CALL(fdb_new_handle_from_yaml, &fdb, config, "");
    if (strcmp(phase, "archive") == 0) {
        archive(fdb, data, nsteps, nlevels, nparams, t0, c0);
    } else if (strcmp(phase, "list") == 0 || strcmp(phase, "list+keys") == 0) {
        list(fdb, req, strcmp(phase, "list+keys") == 0, t0, c0);
    } else if (strcmp(phase, "list-warm") == 0) {
        list_warm(fdb, req);
    } else if (strcmp(phase, "retrieve") == 0) {
        retrieve(fdb, req, data, t0, c0);
    } else {
        fprintf(stderr, "capi_bench: unknown phase %s\n", phase);
        return 2;
    }
    CALL(fdb_delete_handle, fdb);
    CALL(fdb_delete_request, req);
    free(data);
    return 0;
}
