/*
 * Four threads archive, flush, list and retrieve at once through
 * fieldstore's library: each with its own handle into a dataset of its own
 * and into one dataset they share, and all four through one shared handle.
 * Then every field is checked: listed once, bytes as archived; and one
 * list iterator and split key are shared by the four threads at once. Run
 * by tests/c_api.rs:
 *
 *   threads WORKDIR
 */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "fdb5/api/fdb_c.h"

#define THREADS 4
#define FIELDS 60  /* per thread and dataset */
#define SIZE 1000  /* bytes per field */

static char config[8192];
static fdb_handle_t* shared = NULL;
static pthread_mutex_t report = PTHREAD_MUTEX_INITIALIZER;
static int failures = 0;

static void fail(int thread, const char* what, int rc) {
    pthread_mutex_lock(&report);
    /* Each thread's own last error: FDB5 keeps one for the process. */
    fprintf(stderr, "thread %d: %s -> %d: %s\n", thread, what, rc, fdb_error_string(rc));
    failures++;
    pthread_mutex_unlock(&report);
}

#define CALL(t, call)                            \
    do {                                         \
        int rc_ = (call);                        \
        if (rc_ != FDB_SUCCESS) fail(t, #call, rc_); \
    } while (0)

/* The bytes of field (thread, dataset, i). */
static void fill(char* buf, int thread, int dataset, int i) {
    for (int b = 0; b < SIZE; b++) buf[b] = (char)(thread * 31 + dataset * 7 + i * 13 + b);
}

static fdb_key_t* key_of(int t, const char* date, const char* levtype, int i) {
    char step[16], param[16];
    fdb_key_t* key = NULL;
    snprintf(step, sizeof step, "%d", i);
    snprintf(param, sizeof param, "%d", 100 + t);
    CALL(t, fdb_new_key(&key));
    const char* pairs[][2] = {{"class", "od"}, {"expver", "0001"}, {"stream", "oper"}, {"date", date},
                              {"time", "0000"}, {"domain", "g"},   {"type", "fc"},      {"levtype", levtype},
                              {"step", step},   {"param", param}};
    for (size_t p = 0; p < sizeof pairs / sizeof pairs[0]; p++) CALL(t, fdb_key_add(key, pairs[p][0], pairs[p][1]));
    return key;
}

static long count(int t, fdb_handle_t* fdb) {
    fdb_listiterator_t* it = NULL;
    long n = 0;
    CALL(t, fdb_list(fdb, NULL, &it, true, 3));
    while (fdb_listiterator_next(it) == FDB_SUCCESS) n++;
    CALL(t, fdb_delete_listiterator(it));
    return n;
}

static void* worker(void* arg) {
    int t = (int)(long)arg;
    char own_date[32], buf[SIZE];
    snprintf(own_date, sizeof own_date, "2023010%d", t + 1);
    fdb_handle_t* fdb = NULL;
    CALL(t, fdb_new_handle_from_yaml(&fdb, config, ""));
    long last = 0;
    for (int i = 0; i < FIELDS; i++) {
        /* dataset 0: its own; 1: shared with the other threads; 2: through
         * the shared handle. */
        for (int d = 0; d < 3; d++) {
            fdb_key_t* key = key_of(t, d == 0 ? own_date : "20230201", d == 2 ? "pl" : "sfc", i);
            if (d == 2) CALL(t, fdb_key_add(key, "levelist", "500"));
            fill(buf, t, d, i);
            CALL(t, fdb_archive(d == 2 ? shared : fdb, key, buf, SIZE));
            CALL(t, fdb_delete_key(key));
        }
        if (i % 10 == 9) {
            CALL(t, fdb_flush(fdb));
            /* What others flushed meanwhile is visible; nothing goes away. */
            long n = count(t, fdb);
            if (n < last) fail(t, "listing shrank", (int)n);
            last = n;
        }
    }
    CALL(t, fdb_delete_handle(fdb));
    return NULL;
}

/* Every field of every thread is listed once and reads back as written. */
static void verify(fdb_handle_t* fdb) {
    long n = count(-1, fdb);
    if (n != THREADS * FIELDS * 3) fail(-1, "fields listed", (int)n);
    char buf[SIZE], want[SIZE];
    fdb_datareader_t* dr = NULL;
    CALL(-1, fdb_new_datareader(&dr));
    for (int t = 0; t < THREADS; t++) {
        char own_date[32], param[16];
        snprintf(own_date, sizeof own_date, "2023010%d", t + 1);
        snprintf(param, sizeof param, "%d", 100 + t);
        for (int d = 0; d < 3; d++) {
            fdb_request_t* req = NULL;
            CALL(-1, fdb_new_request(&req));
            const char* pairs[][2] = {{"class", "od"},  {"expver", "0001"},
                                      {"stream", "oper"}, {"date", d == 0 ? own_date : "20230201"},
                                      {"time", "0000"}, {"domain", "g"},
                                      {"type", "fc"},   {"levtype", d == 2 ? "pl" : "sfc"},
                                      {"step", "0/to/59/by/1"}, {"param", param}, {"levelist", "500"}};
            int np = d == 2 ? 11 : 10;
            for (int p = 0; p < np; p++) {
                const char* v[] = {pairs[p][1]};
                CALL(-1, fdb_request_add(req, pairs[p][0], v, 1));
            }
            /* A range is enumerated before fdb_retrieve, as FDB5 needs. */
            CALL(-1, fdb_expand_request(req));
            CALL(-1, fdb_retrieve(fdb, req, dr));
            long size = 0, got = 0;
            CALL(-1, fdb_datareader_open(dr, &size));
            if (size != FIELDS * SIZE) fail(t, "retrieved size", (int)size);
            for (int i = 0; i < FIELDS; i++) {
                CALL(-1, fdb_datareader_read(dr, buf, SIZE, &got));
                fill(want, t, d, i);
                if (got != SIZE || memcmp(buf, want, SIZE) != 0) fail(t, "bytes differ", i);
            }
            CALL(-1, fdb_datareader_close(dr));
            CALL(-1, fdb_delete_request(req));
        }
    }
    CALL(-1, fdb_delete_datareader(dr));
}

/* One list iterator and one split key used by all four threads at once (a
 * client bug FDB5 does not survive): calls on each object are serialised,
 * so every element is handed out exactly once, and a call that finds the
 * iterator moved on by another thread is an error, never a crash. */
static fdb_listiterator_t* shared_it = NULL;
static fdb_split_key_t* shared_sk = NULL;
static long consumed[THREADS];

static pthread_barrier_t start;

static void* shared_worker(void* arg) {
    int t = (int)(long)arg;
    pthread_barrier_wait(&start);
    for (;;) {
        /* Let the others in between: no thread can take every element. */
        struct timespec pause = {0, 20000};
        nanosleep(&pause, NULL);
        int rc = fdb_listiterator_next(shared_it);
        if (rc == FDB_ITERATION_COMPLETE) break;
        if (rc != FDB_SUCCESS) {
            fail(t, "fdb_listiterator_next (shared)", rc);
            break;
        }
        consumed[t]++;
        const char *uri, *k, *v;
        size_t off, len, level;
        /* Another thread may have moved the iterator past its end since:
         * then an error; otherwise the current element's. */
        rc = fdb_listiterator_attrs(shared_it, &uri, &off, &len);
        if (rc == FDB_SUCCESS && len != SIZE) fail(t, "attrs (shared) length", (int)len);
        if (rc != FDB_SUCCESS && rc != FDB_ERROR_GENERAL_EXCEPTION) fail(t, "attrs (shared)", rc);
        if (fdb_listiterator_splitkey(shared_it, shared_sk) == FDB_SUCCESS) {
            while ((rc = fdb_splitkey_next_metadata(shared_sk, &k, &v, &level)) == FDB_SUCCESS) {
                if (level > 2 || k[0] == 0) fail(t, "metadata (shared)", (int)level);
            }
            if (rc != FDB_ITERATION_COMPLETE) fail(t, "fdb_splitkey_next_metadata (shared)", rc);
        }
    }
    return NULL;
}

static void share_one_iterator(fdb_handle_t* fdb) {
    CALL(-1, fdb_list(fdb, NULL, &shared_it, true, 3));
    CALL(-1, fdb_new_splitkey(&shared_sk));
    pthread_t threads[THREADS];
    pthread_barrier_init(&start, NULL, THREADS);
    for (long t = 0; t < THREADS; t++) pthread_create(&threads[t], NULL, shared_worker, (void*)t);
    long total = 0;
    for (int t = 0; t < THREADS; t++) {
        pthread_join(threads[t], NULL);
        total += consumed[t];
    }
    pthread_barrier_destroy(&start);
    if (total != THREADS * FIELDS * 3) fail(-1, "elements handed out by the shared iterator", (int)total);
    int sharing = 0;
    for (int t = 0; t < THREADS; t++) sharing += consumed[t] > 0;
    if (sharing < 2) fail(-1, "threads that got elements of the shared iterator (the test did not share it)", sharing);
    CALL(-1, fdb_delete_splitkey(shared_sk));
    CALL(-1, fdb_delete_listiterator(shared_it));
}

int main(int argc, char** argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: %s WORKDIR\n", argv[0]);
        return 2;
    }
    char root[4096];
    snprintf(root, sizeof root, "%s/threads-root", argv[1]);
    mkdir(root, 0755);
    snprintf(config, sizeof config, "{type: local, engine: toc, spaces: [{roots: [{path: '%s'}]}]}", root);
    CALL(-1, fdb_new_handle_from_yaml(&shared, config, ""));
    pthread_t threads[THREADS];
    for (long t = 0; t < THREADS; t++) pthread_create(&threads[t], NULL, worker, (void*)t);
    for (int t = 0; t < THREADS; t++) pthread_join(threads[t], NULL);
    CALL(-1, fdb_flush(shared));
    fdb_handle_t* fdb = NULL;
    CALL(-1, fdb_new_handle_from_yaml(&fdb, config, ""));
    verify(fdb);
    share_one_iterator(fdb);
    CALL(-1, fdb_delete_handle(fdb));
    CALL(-1, fdb_delete_handle(shared));
    if (fieldstore_live_objects() != 0) fail(-1, "objects left", (int)fieldstore_live_objects());
    printf("threads: %d threads x %d fields x 3 datasets; the shared iterator's elements by thread: %ld/%ld/%ld/%ld, %d failures\n",
           THREADS, FIELDS, consumed[0], consumed[1], consumed[2], consumed[3], failures);
    return failures == 0 ? 0 : 1;
}
