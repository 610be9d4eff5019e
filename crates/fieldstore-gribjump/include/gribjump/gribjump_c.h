/*
 * fieldstore's implementation of GribJump's C interface (gribjump_c.h,
 * GribJump 0.13).
 *
 * Written for fieldstore; the names, types and numbers below are those of
 * GribJump 0.13's C interface, so that a program written for GribJump (and
 * pygribjump, which loads libgribjump.so through findlibs) runs on
 * fieldstore's libgribjump.so without a change. docs/extract.md ("Polytope
 * and pygribjump") says where it differs from GribJump and why.
 *
 * Conventions (every function):
 *  - Returns GRIBJUMP_SUCCESS (0) or GRIBJUMP_ERROR (1); the iterator's next
 *    returns GRIBJUMP_ITERATOR_SUCCESS, _COMPLETE at the end, or _ERROR.
 *  - After an error, gribjump_error_string() is the message of the calling
 *    thread's last error (kept per thread).
 *  - Objects are opaque tokens made by the gribjump_new_* functions (and the
 *    iterator's next, for results) and released by the matching delete.
 *    NULL, an object of another type, or one already deleted is an error,
 *    never a crash. A handle used in a process forked from the one that made
 *    it is an error.
 *  - Strings returned through `const char**` (axes) stay valid until the
 *    object they came from is deleted.
 */

#ifndef FIELDSTORE_GRIBJUMP_C_H
#define FIELDSTORE_GRIBJUMP_C_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum gribjump_error_values_t {
    GRIBJUMP_SUCCESS = 0,
    GRIBJUMP_ERROR = 1,
} gribjump_error_t;

typedef enum gribjump_iterator_status_t {
    GRIBJUMP_ITERATOR_SUCCESS = 0,
    GRIBJUMP_ITERATOR_COMPLETE = 1,
    GRIBJUMP_ITERATOR_ERROR = 2
} gribjump_iterator_status_t;

typedef struct gribjump_handle_t gribjump_handle_t;
typedef struct gribjump_extraction_result_t gribjump_extraction_result_t;
typedef struct gribjump_extraction_request_t gribjump_extraction_request_t;
typedef struct gribjump_path_extraction_request_t gribjump_path_extraction_request_t;
typedef struct gribjump_extractioniterator_t gribjump_extractioniterator_t;
typedef struct gribjump_axes_t gribjump_axes_t;

/* A handle on the store FIELDSTORE_CONFIG, FIELDSTORE_ROOT, FDB_HOME or
 * FDB5_CONFIG_FILE names (as fieldstore's other interfaces). */
gribjump_error_t gribjump_new_handle(gribjump_handle_t** gj);
gribjump_error_t gribjump_delete_handle(gribjump_handle_t* gj);

/* One result per request (each names one field), in the requests' order. */
gribjump_error_t gribjump_extract(gribjump_handle_t* handle, gribjump_extraction_request_t** requests,
                                  unsigned long nrequests, const char* ctx, gribjump_extractioniterator_t** iterator);

/* Local files only (scheme "file"; host and port are not used). */
gribjump_error_t gribjump_extract_from_paths(gribjump_handle_t* handle, gribjump_path_extraction_request_t** requests,
                                             unsigned long nrequests, const char* ctx,
                                             gribjump_extractioniterator_t** iterator);

/* One request naming any number of fields: one result per field, in the
 * request's order. range_arr holds range_arr_size/2 pairs [start, end). */
gribjump_error_t gribjump_extract_single(gribjump_handle_t* handle, const char* request, const size_t* range_arr,
                                         size_t range_arr_size, const char* gridhash, const char* ctx,
                                         gribjump_extractioniterator_t** iterator);

gribjump_error_t gribjump_new_request(gribjump_extraction_request_t** request, const char* reqstr, const size_t* ranges,
                                      size_t n_ranges, const char* gridhash);
gribjump_error_t gribjump_new_request_from_path(gribjump_path_extraction_request_t** request, const char* filename,
                                                const char* scheme, size_t offset, const char* host, int port,
                                                const size_t* range_arr, size_t range_arr_size, const char* gridhash);
gribjump_error_t gribjump_delete_request(gribjump_extraction_request_t* request);
gribjump_error_t gribjump_delete_path_request(gribjump_path_extraction_request_t* request);

gribjump_error_t gribjump_new_result(gribjump_extraction_result_t** result);
/* Copies the result's values (NaN where missing) into values[0], which holds
 * nvalues doubles: the total length of the ranges. */
gribjump_error_t gribjump_result_values(gribjump_extraction_result_t* result, double** values, size_t nvalues);
/* Copies the masks into masks[0]: per range, ceil(n/64) words, bit k of word
 * j set if value 64*j+k of the range is present. */
gribjump_error_t gribjump_result_mask(gribjump_extraction_result_t* result, unsigned long long** masks, size_t nmasks);
gribjump_error_t gribjump_delete_result(gribjump_extraction_result_t* result);

gribjump_error_t gribjump_new_axes(gribjump_handle_t* gj, const char* reqstr, int level, const char* ctx,
                                   gribjump_axes_t** axes);
gribjump_error_t gribjump_axes_keys(gribjump_axes_t* axes, const char** keys, size_t size);
gribjump_error_t gribjump_axes_keys_size(gribjump_axes_t* axes, size_t* size);
gribjump_error_t gribjump_axes_values_size(gribjump_axes_t* axes, const char* key, size_t* size);
gribjump_error_t gribjump_axes_values(gribjump_axes_t* axes, const char* key, const char** values, size_t size);
gribjump_error_t gribjump_delete_axes(gribjump_axes_t* axes);

gribjump_error_t gribjump_initialise();
/* "0.13.1": the GribJump version whose interface this is. */
const char* gribjump_version();
/* "fieldstore <version>". */
const char* gribjump_git_sha1();

gribjump_error_t gribjump_extractioniterator_delete(const gribjump_extractioniterator_t* it);
gribjump_iterator_status_t gribjump_extractioniterator_next(gribjump_extractioniterator_t* it,
                                                            gribjump_extraction_result_t** result);

const char* gribjump_error_string();

#ifdef __cplusplus
}
#endif

#endif
