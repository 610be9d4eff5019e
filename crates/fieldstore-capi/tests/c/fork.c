/*
 * A fork after fdb_initialise, while other threads are inside the library,
 * must not deadlock the child: the parent forks repeatedly while two
 * threads create and delete objects, fail calls (the failure handler and
 * the error record) and list; each child opens its own handle, archives,
 * flushes, lists and retrieves (one in 20; the others only touch the
 * library's global state), and exits. A child that does not finish
 * within the timeout is a deadlock. Run by tests/c_api.rs:
 *
 *   fork WORKDIR
 */
#define _POSIX_C_SOURCE 200809L
#define _DEFAULT_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "fdb5/api/fdb_c.h"

#define FORKS 200
#define TIMEOUT_MS 20000

static char config[8192];
static volatile int stop = 0;
static int handled = 0;

static void on_failure(void* context, int code) {
    (void)context;
    (void)code;
    __atomic_add_fetch(&handled, 1, __ATOMIC_RELAXED);
}

static fdb_key_t* key_of(const char* step) {
    fdb_key_t* key = NULL;
    fdb_new_key(&key);
    const char* pairs[][2] = {{"class", "od"}, {"expver", "0001"}, {"stream", "oper"}, {"date", "20230101"},
                              {"time", "0000"}, {"domain", "g"},   {"type", "fc"},      {"levtype", "sfc"},
                              {"step", step},   {"param", "167"}};
    for (size_t p = 0; p < sizeof pairs / sizeof pairs[0]; p++) fdb_key_add(key, pairs[p][0], pairs[p][1]);
    return key;
}

static void* busy(void* arg) {
    (void)arg;
    fdb_handle_t* fdb = NULL;
    if (fdb_new_handle_from_yaml(&fdb, config, "") != FDB_SUCCESS) return NULL;
    for (long round = 0; !stop; round++) {
        /* Mostly the object table, which every call takes a lock of. */
        fdb_key_t* key = key_of("0");
        fdb_key_add(key, NULL, NULL); /* fails: error record + handler */
        fdb_delete_key(key);
        if (round % 64 == 0) {
            fdb_listiterator_t* it = NULL;
            if (fdb_list(fdb, NULL, &it, true, 3) == FDB_SUCCESS) {
                while (fdb_listiterator_next(it) == FDB_SUCCESS) {
                }
                fdb_delete_listiterator(it);
            }
        }
    }
    fdb_delete_handle(fdb);
    return NULL;
}

/* The child's work: its own root, archive, flush, list, retrieve. */
static int child(const char* work, int n) {
    /* Objects in every part of the object table, and a failed call (the
     * failure handler's lock): any lock a parent thread held at the fork
     * would hang here. */
    fdb_key_t* keys[64];
    for (int i = 0; i < 64; i++) fdb_new_key(&keys[i]);
    for (int i = 0; i < 64; i++) fdb_delete_key(keys[i]);
    if (fdb_delete_key(keys[0]) != FDB_ERROR_GENERAL_EXCEPTION) return 9;
    if (n % 20 != 0) return 0; /* the whole work in one child of 20 */
    char root[4096], cfg[8192];
    snprintf(root, sizeof root, "%s/child-%d", work, n);
    mkdir(root, 0755);
    snprintf(cfg, sizeof cfg, "{type: local, spaces: [{roots: [{path: '%s'}]}]}", root);
    fdb_handle_t* fdb = NULL;
    if (fdb_new_handle_from_yaml(&fdb, cfg, "") != FDB_SUCCESS) return 10;
    fdb_key_t* key = key_of("6");
    if (fdb_archive(fdb, key, "child data", 10) != FDB_SUCCESS) return 11;
    fdb_delete_key(key);
    if (fdb_flush(fdb) != FDB_SUCCESS) return 12;
    fdb_listiterator_t* it = NULL;
    if (fdb_list(fdb, NULL, &it, true, 3) != FDB_SUCCESS) return 13;
    int listed = 0;
    while (fdb_listiterator_next(it) == FDB_SUCCESS) listed++;
    fdb_delete_listiterator(it);
    if (listed != 1) return 14;
    fdb_request_t* req = NULL;
    fdb_new_request(&req);
    const char* all[] = {"all"};
    fdb_request_add(req, "step", all, 1);
    fdb_datareader_t* dr = NULL;
    fdb_new_datareader(&dr);
    if (fdb_retrieve(fdb, req, dr) != FDB_SUCCESS) return 15;
    char buf[32];
    long got = 0;
    if (fdb_datareader_read(dr, buf, sizeof buf, &got) != FDB_SUCCESS || got != 10) return 16;
    fdb_delete_datareader(dr);
    fdb_delete_request(req);
    if (fdb_delete_handle(fdb) != FDB_SUCCESS) return 17;
    return 0;
}

static long now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000L + ts.tv_nsec / 1000000L;
}

int main(int argc, char** argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: %s WORKDIR\n", argv[0]);
        return 2;
    }
    char root[4096];
    snprintf(root, sizeof root, "%s/fork-root", argv[1]);
    mkdir(root, 0755);
    snprintf(config, sizeof config, "{type: local, spaces: [{roots: [{path: '%s'}]}]}", root);
    if (fdb_initialise() != FDB_SUCCESS) return 3;
    fdb_set_failure_handler(on_failure, NULL);
    fdb_handle_t* fdb = NULL;
    if (fdb_new_handle_from_yaml(&fdb, config, "") != FDB_SUCCESS) return 4;
    fdb_key_t* key = key_of("0");
    fdb_archive(fdb, key, "parent", 6);
    fdb_delete_key(key);
    fdb_flush(fdb);
    pthread_t threads[2];
    for (int t = 0; t < 2; t++) pthread_create(&threads[t], NULL, busy, NULL);
    int failures = 0;
    for (int n = 0; n < FORKS; n++) {
        pid_t pid = fork();
        if (pid == 0) _exit(child(argv[1], n));
        int status = 0;
        long start = now_ms();
        pid_t done = 0;
        while ((done = waitpid(pid, &status, WNOHANG)) == 0 && now_ms() - start < TIMEOUT_MS) usleep(1000);
        if (done == 0) {
            fprintf(stderr, "fork %d: the child did not finish in %d ms (deadlock)\n", n, TIMEOUT_MS);
            kill(pid, SIGKILL);
            waitpid(pid, &status, 0);
            failures++;
        } else if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
            fprintf(stderr, "fork %d: the child failed (status %d)\n", n, status);
            failures++;
        }
    }
    stop = 1;
    for (int t = 0; t < 2; t++) pthread_join(threads[t], NULL);
    fdb_delete_handle(fdb);
    printf("fork: %d forks, %d failures, %d failures handled in the parent\n", FORKS, failures,
           __atomic_load_n(&handled, __ATOMIC_RELAXED));
    return failures == 0 ? 0 : 1;
}
