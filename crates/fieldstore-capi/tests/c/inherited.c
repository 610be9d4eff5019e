/*
 * A handle inherited across fork() (issue 26, item 7). The parent archives
 * and flushes a field, archives a second (pending at the fork) and forks;
 * the child calls every function taking the inherited handle, each of which
 * must fail naming the parent's process, then exits; the parent archives a
 * third field and flushes. All three of the parent's fields must list and
 * read back with their bytes; nothing of the child's may appear. Run by
 * tests/c_api.rs:
 *
 *   inherited WORKDIR
 *
 * Prints "inherited: N checks, F failed"; exits 0 when F is 0.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fdb5/api/fdb_c.h"

#define SIZE 100000

static int checks = 0;
static int failures = 0;

#define CHECK(cond, ...)                                            \
    do {                                                            \
        checks++;                                                   \
        if (!(cond)) {                                              \
            fprintf(stderr, "%s:%d: %s: ", __FILE__, __LINE__, #cond); \
            fprintf(stderr, __VA_ARGS__);                           \
            fprintf(stderr, "\n");                                  \
            failures++;                                             \
        }                                                           \
    } while (0)

static fdb_key_t* key_of(const char* step) {
    fdb_key_t* key = NULL;
    fdb_new_key(&key);
    const char* pairs[][2] = {{"class", "od"}, {"expver", "0001"}, {"stream", "oper"}, {"date", "20230101"},
                              {"time", "0000"}, {"domain", "g"},   {"type", "fc"},      {"levtype", "sfc"},
                              {"step", step},   {"param", "167"}};
    for (size_t p = 0; p < sizeof pairs / sizeof pairs[0]; p++) fdb_key_add(key, pairs[p][0], pairs[p][1]);
    return key;
}

/* A request for the field of `step` (a retrieve needs every keyword). */
static fdb_request_t* request_of(const char* step) {
    fdb_request_t* req = NULL;
    fdb_new_request(&req);
    const char* pairs[][2] = {{"class", "od"}, {"expver", "0001"}, {"stream", "oper"}, {"date", "20230101"},
                              {"time", "0000"}, {"domain", "g"},   {"type", "fc"},      {"levtype", "sfc"},
                              {"step", step},   {"param", "167"}};
    for (size_t p = 0; p < sizeof pairs / sizeof pairs[0]; p++) fdb_request_add(req, pairs[p][0], &pairs[p][1], 1);
    return req;
}

/* The payload of step s: SIZE bytes, distinct per step. */
static char* payload(int s) {
    char* p = malloc(SIZE);
    memset(p, 'a' + s, SIZE);
    snprintf(p, 16, "step %d", s);
    return p;
}

static int archive(fdb_handle_t* fdb, int s) {
    char step[16];
    snprintf(step, sizeof step, "%d", s);
    fdb_key_t* key = key_of(step);
    char* data = payload(s);
    int rc = fdb_archive(fdb, key, data, SIZE);
    free(data);
    fdb_delete_key(key);
    return rc;
}

/* The call failed, with kind invalid input and a message naming the
 * parent's process id and what to do. */
static void refused(int rc, const char* call, pid_t parent) {
    char wanted[64];
    snprintf(wanted, sizeof wanted, "this handle was opened by process %d", (int)parent);
    const char* msg = fdb_error_string(rc);
    CHECK(rc == FDB_ERROR_GENERAL_EXCEPTION, "%s returned %d", call, rc);
    CHECK(strstr(msg, wanted) != NULL, "%s: message '%s' lacks '%s'", call, msg, wanted);
    CHECK(strstr(msg, "open a new handle in the child") != NULL, "%s: message '%s'", call, msg);
    CHECK(fieldstore_last_error_kind() == FIELDSTORE_INVALID_INPUT, "%s: kind %d", call,
          fieldstore_last_error_kind());
}

/* In the child: every function taking the handle fails. */
static void child(fdb_handle_t* fdb, pid_t parent) {
    refused(archive(fdb, 50), "fdb_archive", parent);
    refused(fdb_archive_multiple(fdb, NULL, "GRIB", 4), "fdb_archive_multiple", parent);
    refused(fdb_flush(fdb), "fdb_flush", parent);
    fdb_listiterator_t* it = NULL;
    refused(fdb_list(fdb, NULL, &it, true, 3), "fdb_list", parent);
    fdb_request_t* req = request_of("0");
    fdb_datareader_t* dr = NULL;
    fdb_new_datareader(&dr);
    refused(fdb_retrieve(fdb, req, dr), "fdb_retrieve", parent);
    fdb_wipe_iterator_t* wit = NULL;
    refused(fdb_wipe(fdb, req, false, false, false, &wit), "fdb_wipe", parent);
    fdb_purge_iterator_t* pit = NULL;
    refused(fdb_purge(fdb, req, false, false, &pit), "fdb_purge", parent);
    fdb_delete_datareader(dr);
    fdb_delete_request(req);
    /* Deleting releases the child's copy without touching the parent's
     * files, and says so. */
    int rc = fdb_delete_handle(fdb);
    refused(rc, "fdb_delete_handle", parent);
    CHECK(strstr(fdb_error_string(rc), "released in this process without flushing") != NULL, "message '%s'",
          fdb_error_string(rc));
    rc = fdb_flush(fdb);
    CHECK(rc == FDB_ERROR_GENERAL_EXCEPTION && strstr(fdb_error_string(rc), "was deleted") != NULL,
          "after delete: %d '%s'", rc, fdb_error_string(rc));
}

/* In the parent, after the child: steps 0..2 listed once each, with their
 * bytes. */
static void verify(fdb_handle_t* fdb) {
    fdb_listiterator_t* it = NULL;
    CHECK(fdb_list(fdb, NULL, &it, true, 3) == FDB_SUCCESS, "fdb_list: %s", fdb_error_string(1));
    int listed = 0;
    while (it && fdb_listiterator_next(it) == FDB_SUCCESS) listed++;
    if (it) fdb_delete_listiterator(it);
    CHECK(listed == 3, "%d fields listed, expected the parent's 3", listed);
    char* buf = malloc(SIZE + 1);
    for (int s = 0; s < 3; s++) {
        char step[16];
        snprintf(step, sizeof step, "%d", s);
        fdb_request_t* req = request_of(step);
        fdb_datareader_t* dr = NULL;
        fdb_new_datareader(&dr);
        int rc = fdb_retrieve(fdb, req, dr);
        CHECK(rc == FDB_SUCCESS, "retrieve step %d: %s", s, fdb_error_string(rc));
        long got = 0, total = 0;
        while (fdb_datareader_read(dr, buf + total, SIZE + 1 - total, &got) == FDB_SUCCESS && got > 0) {
            total += got;
            if (total == SIZE + 1) break;
        }
        char* want = payload(s);
        CHECK(total == SIZE && memcmp(buf, want, SIZE) == 0, "step %d: %ld bytes read back, %s", s, total,
              total == SIZE ? "different bytes" : "expected 100000");
        free(want);
        fdb_delete_datareader(dr);
        fdb_delete_request(req);
    }
    free(buf);
}

int main(int argc, char** argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: %s WORKDIR\n", argv[0]);
        return 2;
    }
    char root[4096], config[8192];
    snprintf(root, sizeof root, "%s/root", argv[1]);
    mkdir(root, 0755);
    snprintf(config, sizeof config, "{type: local, spaces: [{roots: [{path: '%s'}]}]}", root);
    if (fdb_initialise() != FDB_SUCCESS) return 3;
    fdb_handle_t* fdb = NULL;
    if (fdb_new_handle_from_yaml(&fdb, config, "") != FDB_SUCCESS) return 4;
    CHECK(archive(fdb, 0) == FDB_SUCCESS, "archive step 0");
    CHECK(fdb_flush(fdb) == FDB_SUCCESS, "flush");
    CHECK(archive(fdb, 1) == FDB_SUCCESS, "archive step 1 (pending at the fork)");
    fflush(stdout);
    fflush(stderr);
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid == 0) {
        child(fdb, parent);
        if (failures) fprintf(stderr, "inherited: the child failed %d of %d checks\n", failures, checks);
        _exit(failures == 0 ? 0 : 1);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the child failed (status %d)", status);
    CHECK(archive(fdb, 2) == FDB_SUCCESS, "archive step 2 (after the fork)");
    CHECK(fdb_flush(fdb) == FDB_SUCCESS, "flush after the fork: %s", fdb_error_string(1));
    verify(fdb);
    CHECK(fdb_delete_handle(fdb) == FDB_SUCCESS, "delete");
    /* A new handle sees the same. */
    CHECK(fdb_new_handle_from_yaml(&fdb, config, "") == FDB_SUCCESS, "reopen");
    verify(fdb);
    fdb_delete_handle(fdb);
    printf("inherited: %d checks, %d failed\n", checks, failures);
    return failures == 0 ? 0 : 1;
}
