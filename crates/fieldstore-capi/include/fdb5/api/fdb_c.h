/*
 * fieldstore's implementation of FDB5's C interface (fdb_c.h, FDB5 5.25).
 *
 * Written for fieldstore; the names, types and numbers below are those of
 * FDB5's C interface, so that a program written for FDB5 compiles against
 * this header and runs on libfieldstore.so (installed also as libfdb5.so)
 * without a change. Where fieldstore behaves differently from FDB5, the
 * comment says so; docs/capi.md lists every difference and why.
 *
 * Conventions (every function):
 *  - Returns FDB_SUCCESS (0), or FDB_ITERATION_COMPLETE (3) at the end of an
 *    iteration, or an error code: FDB_ERROR_GENERAL_EXCEPTION (1) for an
 *    error fieldstore reports (bad input, missing file, full disk, ...),
 *    FDB_ERROR_UNKNOWN_EXCEPTION (2) for an internal failure (a bug).
 *  - After an error, fdb_error_string(code) is the message of the last error
 *    of the calling thread, and fieldstore_last_error_kind() what to do
 *    about it. Messages are kept per thread (FDB5 keeps one for the whole
 *    process).
 *  - Objects (fdb_handle_t, fdb_key_t, ...) are opaque tokens created by the
 *    fdb_new_* functions and released by the matching fdb_delete_* function.
 *    Passing NULL, an object of another type, or an object already deleted is
 *    an error (FDB_ERROR_GENERAL_EXCEPTION), never a crash.
 *  - Every function may be called from any thread. Objects may be used from
 *    several threads; calls on one object are serialised.
 *  - Strings returned through `const char**` stay valid until the object
 *    they came from is changed (next(), a new retrieve) or deleted.
 */

#ifndef FIELDSTORE_FDB5_API_FDB_C_H
#define FIELDSTORE_FDB5_API_FDB_C_H

#include <stdbool.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Defined by this header only: lets a program tell fieldstore's header from
 * FDB5's at compile time. */
#define FIELDSTORE_FDB_C 1

/* ---- Return codes ------------------------------------------------------ */

enum FdbErrorValues {
    FDB_SUCCESS = 0,                 /* done */
    FDB_ERROR_GENERAL_EXCEPTION = 1, /* failed: see fdb_error_string */
    FDB_ERROR_UNKNOWN_EXCEPTION = 2, /* internal failure: please report it */
    FDB_ITERATION_COMPLETE = 3       /* an iterator has no more elements */
};

/* ---- Library ----------------------------------------------------------- */

/* Prepares the library. Optional with fieldstore (every function works
 * without it); calling it again does nothing. */
int fdb_initialise(void);

/* The FDB5 version whose interface this library implements ("5.25.0"), so
 * that clients' version checks pass. The string is static. */
int fdb_version(const char** version);

/* Which implementation this is: "fieldstore <version>". Static. */
int fdb_vcs_version(const char** sha1);

/* ---- Errors ------------------------------------------------------------ */

/* "Success" for FDB_SUCCESS, "Iteration complete" for
 * FDB_ITERATION_COMPLETE, the calling thread's last error message for the
 * two error codes, "<unknown>" otherwise. The message stays valid until the
 * thread's next failing call. */
const char* fdb_error_string(int err);

/* Called, in the failing thread, after every failed call, with the error
 * code; one handler for the process. NULL removes it. */
typedef void (*fdb_failure_handler_t)(void* context, int error_code);
int fdb_set_failure_handler(fdb_failure_handler_t handler, void* context);

/* ---- Keys: the metadata of one field, for fdb_archive ------------------ */

struct fdb_key_t;
typedef struct fdb_key_t fdb_key_t;

int fdb_new_key(fdb_key_t** key);
/* Sets param=value (a second value for the same param replaces the first). */
int fdb_key_add(fdb_key_t* key, const char* param, const char* value);
int fdb_delete_key(fdb_key_t* key);

/* ---- Requests: what to list, retrieve, wipe or purge ------------------- */

struct fdb_request_t;
typedef struct fdb_request_t fdb_request_t;

int fdb_new_request(fdb_request_t** req);
/* Sets the values of param (replacing earlier ones). Each value is further
 * split on '/', so {"1/2", "3"} is three values; "0/to/12/by/6" is a range. */
int fdb_request_add(fdb_request_t* req, const char* param, const char* values[], int numValues);
/* The values of param, as new strings: *values is an array of *numValues
 * strings. With fieldstore, release each string and the array with free().
 * A param the request does not have is an error. */
int fdb_request_get(fdb_request_t* req, const char* param, char** values[], size_t* numValues);
/* Checks the request's values and puts them in canonical form, ranges
 * enumerated and short parameter names made ids ("2t" -> "167"), which
 * fdb_request_get then returns. Requests are matched by canonical value
 * whether expanded or not; only parameter names need the expansion. */
int fdb_expand_request(fdb_request_t* req);
int fdb_delete_request(fdb_request_t* req);

/* ---- Split keys: the keys of a listed element, level by level ---------- */

struct fdb_split_key_t;
typedef struct fdb_split_key_t fdb_split_key_t;

int fdb_new_splitkey(fdb_split_key_t** key);
/* The next keyword and value, and the level (0: dataset, 1: collocation,
 * 2: element) it belongs to; level may be NULL. FDB_ITERATION_COMPLETE after
 * the last. Keywords come sorted within each level; empty values (absent
 * optional keywords) are given at levels 0 and 1 and left out at level 2, as
 * FDB5 does. */
int fdb_splitkey_next_metadata(fdb_split_key_t* it, const char** key, const char** value, size_t* level);
int fdb_delete_splitkey(fdb_split_key_t* key);

/* ---- List iterators ---------------------------------------------------- */

struct fdb_listiterator_t;
typedef struct fdb_listiterator_t fdb_listiterator_t;

/* Moves to the next element; FDB_ITERATION_COMPLETE after the last. */
int fdb_listiterator_next(fdb_listiterator_t* it);
/* Where the current element's bytes are: a path (or a URI for object
 * stores), an offset and a length. Only for elements listed at depth 3. */
int fdb_listiterator_attrs(fdb_listiterator_t* it, const char** uri, size_t* off, size_t* len);
/* Fills key with the current element's keys; then iterate it with
 * fdb_splitkey_next_metadata. The key owns a copy: it stays valid after
 * fdb_listiterator_next. */
int fdb_listiterator_splitkey(fdb_listiterator_t* it, fdb_split_key_t* key);
int fdb_delete_listiterator(fdb_listiterator_t* it);

/* ---- Data readers: the bytes of retrieved fields, as one stream -------- */

struct fdb_datareader_t;
typedef struct fdb_datareader_t fdb_datareader_t;

int fdb_new_datareader(fdb_datareader_t** dr);
/* Rewinds to the start; *size (if size is not NULL) is the total length.
 * Optional with fieldstore: reading opens. */
int fdb_datareader_open(fdb_datareader_t* dr, long* size);
/* Releases the buffered field and rewinds. */
int fdb_datareader_close(fdb_datareader_t* dr);
int fdb_datareader_tell(fdb_datareader_t* dr, long* pos);
/* Moves to pos, 0 <= pos <= size. */
int fdb_datareader_seek(fdb_datareader_t* dr, long pos);
/* Moves by count bytes (negative: back), staying within 0..size. */
int fdb_datareader_skip(fdb_datareader_t* dr, long count);
/* Total length in bytes of what fdb_retrieve found. */
int fdb_datareader_size(fdb_datareader_t* dr, long* size);
/* Copies up to count bytes into buf; *read is how many (0 at the end).
 * Every field is checked against its checksum before any byte of it is
 * returned. A negative count is an error. */
int fdb_datareader_read(fdb_datareader_t* dr, void* buf, long count, long* read);
int fdb_delete_datareader(fdb_datareader_t* dr);

/* ---- Handles ----------------------------------------------------------- */

struct fdb_handle_t;
typedef struct fdb_handle_t fdb_handle_t;

/* A handle on the store the environment configures: FIELDSTORE_CONFIG or
 * FIELDSTORE_ROOT; else FDB5's FDB_CONFIG/FDB5_CONFIG (YAML text),
 * FDB_CONFIG_FILE/FDB5_CONFIG_FILE, FDB_HOME/FDB5_HOME (etc/fdb/config.yaml);
 * else ./fieldstore-data. A root holding FDB5's own on-disk format is
 * refused. */
int fdb_new_handle(fdb_handle_t** fdb);
/* A handle on the store system_config (YAML or JSON text in FDB5's shape)
 * describes; an empty or NULL system_config means fdb_new_handle's. The user
 * config is checked to be YAML and otherwise not used. */
int fdb_new_handle_from_yaml(fdb_handle_t** fdb, const char* system_config, const char* user_config);
/* Archives length bytes under key (its values are canonicalised, as in every
 * fieldstore key). Visible after fdb_flush. */
int fdb_archive(fdb_handle_t* fdb, fdb_key_t* key, const char* data, size_t length);
/* Archives every GRIB message of data under the MARS key ecCodes reads from
 * it; all or nothing. With a request (not NULL), every message must be one
 * the request names, and every field it names must be there. Bytes that are
 * not GRIB around or between the messages are skipped with a warning (see
 * fieldstore_skipped_bytes); a damaged message, or one on which ecCodes fails
 * an assertion, is an error (ecCodes would abort the process). */
int fdb_archive_multiple(fdb_handle_t* fdb, fdb_request_t* req, const char* data, size_t length);
/* Lists what req names (NULL: everything) down to depth 1 (datasets),
 * 2 (collocations) or 3 (fields; any other depth means 3). As in FDB5,
 * duplicates == true leaves replaced (masked) fields out, false includes
 * them. */
int fdb_list(fdb_handle_t* fdb, const fdb_request_t* req, fdb_listiterator_t** it, bool duplicates, int depth);
/* Finds the fields req names, in request order (missing ones are skipped),
 * and points dr at their bytes. */
int fdb_retrieve(fdb_handle_t* fdb, fdb_request_t* req, fdb_datareader_t* dr);
/* Makes everything archived through this handle durable and visible. */
int fdb_flush(fdb_handle_t* fdb);
/* Flushes (reporting a failure) and releases the handle. */
int fdb_delete_handle(fdb_handle_t* fdb);

/* ---- Wipe -------------------------------------------------------------- */

struct fdb_wipe_element_t;
typedef struct fdb_wipe_element_t fdb_wipe_element_t;

struct fdb_wipe_iterator_t;
typedef struct fdb_wipe_iterator_t fdb_wipe_iterator_t;

/* Wipes the datasets or collocations req names (a dry run unless doit),
 * when called; the iterator then gives the report line by line (porcelain:
 * only the names of what is, or would be, deleted). unsafeWipeAll also
 * deletes files fieldstore did not create. */
int fdb_wipe(fdb_handle_t* fdb, fdb_request_t* req, bool doit, bool porcelain, bool unsafeWipeAll,
             fdb_wipe_iterator_t** it);
/* The next line as a new element (delete it with fdb_delete_wipe_element).
 * At the end, FDB_ITERATION_COMPLETE and, as FDB5 does, an empty element
 * that must be deleted too. */
int fdb_wipe_iterator_next(fdb_wipe_iterator_t* it, fdb_wipe_element_t** element);
int fdb_delete_wipe_iterator(fdb_wipe_iterator_t* it);
int fdb_delete_wipe_element(fdb_wipe_element_t* element);
int fdb_wipe_element_string(fdb_wipe_element_t* element, const char** str);

/* ---- Purge ------------------------------------------------------------- */

struct fdb_purge_element_t;
typedef struct fdb_purge_element_t fdb_purge_element_t;

struct fdb_purge_iterator_t;
typedef struct fdb_purge_iterator_t fdb_purge_iterator_t;

/* Removes the bytes of replaced fields under req (a dry run unless doit),
 * when called; the iterator gives the report line by line. */
int fdb_purge(fdb_handle_t* fdb, fdb_request_t* req, bool doit, bool porcelain, fdb_purge_iterator_t** it);
/* As fdb_wipe_iterator_next. */
int fdb_purge_iterator_next(fdb_purge_iterator_t* it, fdb_purge_element_t** element);
int fdb_delete_purge_iterator(fdb_purge_iterator_t* it);
int fdb_delete_purge_element(fdb_purge_element_t* element);
int fdb_purge_element_string(fdb_purge_element_t* element, const char** str);

/* ---- fieldstore extensions (not in FDB5) ------------------------------- */

/* What the caller should do about the calling thread's last error. */
enum FieldstoreErrorKind {
    FIELDSTORE_NO_ERROR = 0,         /* no error recorded on this thread */
    FIELDSTORE_INVALID_INPUT = 1,    /* fix the arguments (key, request, NULL or deleted object) */
    FIELDSTORE_INVALID_CONFIG = 2,   /* fix the configuration or schema named */
    FIELDSTORE_NOT_FOUND = 3,        /* a file, root or dataset named does not exist */
    FIELDSTORE_PERMISSION_DENIED = 4,/* not permitted */
    FIELDSTORE_STORAGE_FULL = 5,     /* free space, then retry */
    FIELDSTORE_UNAVAILABLE = 6,      /* transient: retrying may succeed */
    FIELDSTORE_CORRUPT = 7,          /* stored data failed a check; it was not returned */
    FIELDSTORE_LOCKED = 8,           /* the dataset is locked against this operation */
    FIELDSTORE_UNSUPPORTED = 9,      /* not supported by this store or build */
    FIELDSTORE_IO = 10,              /* another I/O failure */
    FIELDSTORE_INTERNAL = 11         /* a bug in fieldstore: please report it */
};

/* The kind (enum FieldstoreErrorKind) of the calling thread's last error. */
int fieldstore_last_error_kind(void);

/* The byte ranges of its data that the calling thread's last
 * fdb_archive_multiple skipped as not GRIB (a record header before the first
 * message, padding after the last, junk between messages; skipped as ecCodes
 * skips them, with a warning on stderr): *count pairs (start, end), end
 * exclusive, at *ranges; *count is 0 when none were skipped. Valid until the
 * thread's next fdb_archive_multiple. A message that starts with GRIB but is
 * damaged is an error, not skipped. */
int fieldstore_skipped_bytes(const unsigned long long** ranges, size_t* count);

/* How many objects created through this library are not yet deleted (all
 * types together): lets a program check that it releases what it creates. */
size_t fieldstore_live_objects(void);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* FIELDSTORE_FDB5_API_FDB_C_H */
