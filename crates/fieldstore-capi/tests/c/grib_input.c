/*
 * GRIB input that is not only GRIB messages, through fdb_archive_multiple:
 * - a 12,000-byte record header before the first message (as Météo-France's
 *   ecoclimap files have), junk between messages and padding after the last
 *   are skipped as ecCodes skips them: the call succeeds, every message is
 *   archived, and fieldstore_skipped_bytes gives the ranges skipped;
 * - a message that starts with GRIB but has no 7777 is an error;
 * - a message on which ecCodes fails an assertion (by default ecCodes then
 *   aborts the process) is an error of that call, FIELDSTORE_INVALID_INPUT,
 *   and the program goes on archiving.
 * Run by tests/c_api.rs:
 *
 *   grib_input WORKDIR FIXTURES    (FIXTURES: the repository's tests/fixtures)
 *
 * Prints "grib_input: N checks, F failed"; exits 0 when F is 0.
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fdb5/api/fdb_c.h"

static int checks = 0;
static int failures = 0;

#define CHECK(cond, ...)                                               \
    do {                                                               \
        checks++;                                                      \
        if (!(cond)) {                                                 \
            fprintf(stderr, "%s:%d: %s: ", __FILE__, __LINE__, #cond); \
            fprintf(stderr, __VA_ARGS__);                              \
            fprintf(stderr, "\n");                                     \
            failures++;                                                \
        }                                                              \
    } while (0)

static char* read_file(const char* dir, const char* name, size_t* len) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE* f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "cannot open %s: %s\n", path, strerror(errno));
        exit(2);
    }
    fseek(f, 0, SEEK_END);
    *len = (size_t)ftell(f);
    rewind(f);
    char* buf = malloc(*len ? *len : 1);
    if (fread(buf, 1, *len, f) != *len) {
        fprintf(stderr, "cannot read %s\n", path);
        exit(2);
    }
    fclose(f);
    return buf;
}

/* Elements listed under class=od/rd, at depth 3. */
static int count(fdb_handle_t* fdb) {
    fdb_request_t* req = NULL;
    fdb_new_request(&req);
    const char* classes[] = {"od", "rd"};
    fdb_request_add(req, "class", classes, 2);
    fdb_listiterator_t* it = NULL;
    int n = 0;
    if (fdb_list(fdb, req, &it, true, 3) == FDB_SUCCESS) {
        while (fdb_listiterator_next(it) == FDB_SUCCESS) n++;
        fdb_delete_listiterator(it);
    }
    fdb_delete_request(req);
    return n;
}

int main(int argc, char** argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: grib_input WORKDIR FIXTURES\n");
        return 2;
    }
    char dir[4096], root[4096], config[8192];
    snprintf(dir, sizeof dir, "%s/grib", argv[2]);
    snprintf(root, sizeof root, "%s/root", argv[1]);
    mkdir(root, 0755);
    snprintf(config, sizeof config,
             "{\"type\": \"local\", \"engine\": \"toc\", \"spaces\": [{\"handler\": \"Default\", "
             "\"roots\": [{\"path\": \"%s\"}]}]}",
             root);
    fdb_handle_t* fdb = NULL;
    CHECK(fdb_new_handle_from_yaml(&fdb, config, "{}") == FDB_SUCCESS, "%s", fdb_error_string(1));

    size_t n1 = 0, n2 = 0, nb = 0;
    char* levtypes = read_file(dir, "levtypes.grib", &n1); /* 2 messages, each padded to 1560 */
    char* rd = read_file(dir, "rd-fc.grib", &n2);           /* 1 message of 1476 bytes */
    snprintf(dir, sizeof dir, "%s/grib-assert", argv[2]);
    char* bad = read_file(dir, "msmm-bad-fcmonth.grib", &nb);

    /* header (12000) | levtypes | "junk between" (12) | rd | 4000 NULs */
    const size_t header = 12000, junk = 12, tail = 4000;
    size_t len = header + n1 + junk + n2 + tail;
    char* data = malloc(len);
    for (size_t i = 0; i < header; i++) data[i] = "record header "[i % 14];
    memcpy(data + header, levtypes, n1);
    memcpy(data + header + n1, "junk between", junk);
    memcpy(data + header + n1 + junk, rd, n2);
    memset(data + header + n1 + junk + n2, 0, tail);

    int rc = fdb_archive_multiple(fdb, NULL, data, len);
    CHECK(rc == FDB_SUCCESS, "%s", fdb_error_string(rc));
    const unsigned long long* ranges = NULL;
    size_t n = 99;
    CHECK(fieldstore_skipped_bytes(&ranges, &n) == FDB_SUCCESS, "%s", fdb_error_string(1));
    /* The second levtypes message ends 84 bytes of padding before the junk:
     * padding and junk are one stretch. */
    size_t second_end = header + 1560 + 1476;
    unsigned long long want[] = {0, header, second_end, header + n1 + junk,
                                 header + n1 + junk + n2, len};
    CHECK(n == 3, "%zu ranges", n);
    for (size_t i = 0; i < 6 && n == 3; i++) {
        CHECK(ranges[i] == want[i], "range bound %zu: %llu, expected %llu", i, ranges[i], want[i]);
    }
    CHECK(fdb_flush(fdb) == FDB_SUCCESS, "flush");
    CHECK(count(fdb) == 3, "%d listed", count(fdb));

    /* Nothing skipped: no ranges. */
    CHECK(fdb_archive_multiple(fdb, NULL, rd, n2) == FDB_SUCCESS, "%s", fdb_error_string(1));
    CHECK(fieldstore_skipped_bytes(&ranges, &n) == FDB_SUCCESS && n == 0, "%zu ranges", n);
    CHECK(fieldstore_skipped_bytes(NULL, &n) == FDB_ERROR_GENERAL_EXCEPTION, "NULL ranges");

    /* A damaged message (no 7777) is an error. */
    data[header + n1 + junk + n2 - 1] = 'X';
    rc = fdb_archive_multiple(fdb, NULL, data, len);
    CHECK(rc == FDB_ERROR_GENERAL_EXCEPTION && strstr(fdb_error_string(rc), "no '7777' end marker"),
          "%d: %s", rc, fdb_error_string(rc));

    /* ecCodes' assertion: an error of this call, twice, then work goes on. */
    for (int i = 0; i < 2; i++) {
        rc = fdb_archive_multiple(fdb, NULL, bad, nb);
        CHECK(rc == FDB_ERROR_GENERAL_EXCEPTION &&
                  strstr(fdb_error_string(rc), "ecCodes assertion failed: `gribForecastMonth == fcmonth'") &&
                  fieldstore_last_error_kind() == FIELDSTORE_INVALID_INPUT,
              "%d: %s", rc, fdb_error_string(rc));
    }
    CHECK(fdb_archive_multiple(fdb, NULL, levtypes, n1) == FDB_SUCCESS, "%s", fdb_error_string(1));
    CHECK(fdb_flush(fdb) == FDB_SUCCESS, "flush");
    CHECK(count(fdb) == 3, "%d listed", count(fdb));

    fdb_delete_handle(fdb);
    free(data);
    free(levtypes);
    free(rd);
    free(bad);
    printf("grib_input: %d checks, %d failed\n", checks, failures);
    return failures == 0 ? 0 : 1;
}
