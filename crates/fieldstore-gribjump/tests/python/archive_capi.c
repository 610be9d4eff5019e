/* Archive a GRIB file through FDB5's C API (fdb_c.h): built against
 * fieldstore's libfdb5.so (scripts/install-capi.sh) by test_polytope.py, so
 * that the fields the drop-in extracts were written by the C interface.
 *
 *   archive_capi FILE     (the store: FIELDSTORE_ROOT, FDB5_CONFIG_FILE, ...)
 */
#include <stdio.h>
#include <stdlib.h>

#include "fdb5/api/fdb_c.h"

static int check(int rc, const char* what) {
    if (rc != FDB_SUCCESS) {
        fprintf(stderr, "archive_capi: %s: %s\n", what, fdb_error_string(rc));
        exit(1);
    }
    return rc;
}

int main(int argc, char** argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: archive_capi FILE\n");
        return 2;
    }
    FILE* f = fopen(argv[1], "rb");
    if (!f) {
        perror(argv[1]);
        return 1;
    }
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char* data = malloc(n > 0 ? (size_t)n : 1);
    if (!data || fread(data, 1, (size_t)n, f) != (size_t)n) {
        fprintf(stderr, "archive_capi: cannot read %s\n", argv[1]);
        return 1;
    }
    fclose(f);
    fdb_handle_t* fdb = NULL;
    check(fdb_initialise(), "fdb_initialise");
    check(fdb_new_handle(&fdb), "fdb_new_handle");
    check(fdb_archive_multiple(fdb, NULL, data, (size_t)n), "fdb_archive_multiple");
    check(fdb_flush(fdb), "fdb_flush");
    check(fdb_delete_handle(fdb), "fdb_delete_handle");
    free(data);
    printf("archived %ld bytes\n", n);
    return 0;
}
