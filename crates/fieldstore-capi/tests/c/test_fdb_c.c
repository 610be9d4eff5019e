/*
 * Every function of fdb_c.h, every error path and every iteration end,
 * through fieldstore's library. Run by tests/c_api.rs (under valgrind when
 * it is installed):
 *
 *   test_fdb_c WORKDIR GRIBDIR
 *
 * WORKDIR: an empty directory for roots; GRIBDIR: tests/fixtures/grib.
 * Exits 0 when every check passed; prints each failed check.
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fdb5/api/fdb_c.h"

static int failures = 0;
static int checks = 0;

#define CHECK(cond)                                                                  \
    do {                                                                             \
        checks++;                                                                    \
        if (!(cond)) {                                                               \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
            failures++;                                                              \
        }                                                                            \
    } while (0)

#define OK(call)                                                                            \
    do {                                                                                    \
        int rc_ = (call);                                                                   \
        checks++;                                                                           \
        if (rc_ != FDB_SUCCESS) {                                                           \
            fprintf(stderr, "%s:%d: %s -> %d: %s\n", __FILE__, __LINE__, #call, rc_,        \
                    fdb_error_string(rc_));                                                 \
            failures++;                                                                     \
        }                                                                                   \
    } while (0)

/* The call fails with FDB_ERROR_GENERAL_EXCEPTION, the message contains
 * `text` and the error kind is `kind`. */
#define FAILS(call, kind, text)                                                             \
    do {                                                                                    \
        int rc_ = (call);                                                                   \
        checks++;                                                                           \
        if (rc_ != FDB_ERROR_GENERAL_EXCEPTION) {                                           \
            fprintf(stderr, "%s:%d: %s -> %d, expected an error\n", __FILE__, __LINE__,     \
                    #call, rc_);                                                            \
            failures++;                                                                     \
        } else if (strstr(fdb_error_string(rc_), (text)) == NULL) {                         \
            fprintf(stderr, "%s:%d: %s: message '%s' lacks '%s'\n", __FILE__, __LINE__,     \
                    #call, fdb_error_string(rc_), (text));                                  \
            failures++;                                                                     \
        } else if (fieldstore_last_error_kind() != (kind)) {                                \
            fprintf(stderr, "%s:%d: %s: kind %d, expected %d (%s)\n", __FILE__, __LINE__,   \
                    #call, fieldstore_last_error_kind(), (kind), fdb_error_string(rc_));    \
            failures++;                                                                     \
        }                                                                                   \
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

static fdb_key_t* make_key(const char* step, const char* param, const char* levtype) {
    fdb_key_t* key = NULL;
    OK(fdb_new_key(&key));
    OK(fdb_key_add(key, "class", "od"));
    OK(fdb_key_add(key, "expver", "0001"));
    OK(fdb_key_add(key, "stream", "oper"));
    OK(fdb_key_add(key, "date", "20230101"));
    OK(fdb_key_add(key, "time", "1200"));
    OK(fdb_key_add(key, "domain", "g"));
    OK(fdb_key_add(key, "type", "fc"));
    OK(fdb_key_add(key, "levtype", levtype));
    OK(fdb_key_add(key, "step", step));
    OK(fdb_key_add(key, "param", param));
    return key;
}

static fdb_request_t* make_request(const char* const* pairs) {
    fdb_request_t* req = NULL;
    OK(fdb_new_request(&req));
    for (; pairs[0]; pairs += 2) {
        const char* values[] = {pairs[1]};
        OK(fdb_request_add(req, pairs[0], values, 1));
    }
    return req;
}

/* Lists req at depth and returns how many elements came; checks the
 * iteration end (twice). */
static int count_list(fdb_handle_t* fdb, fdb_request_t* req, bool dedup, int depth) {
    fdb_listiterator_t* it = NULL;
    OK(fdb_list(fdb, req, &it, dedup, depth));
    int n = 0, rc;
    while ((rc = fdb_listiterator_next(it)) == FDB_SUCCESS) n++;
    CHECK(rc == FDB_ITERATION_COMPLETE);
    CHECK(fdb_listiterator_next(it) == FDB_ITERATION_COMPLETE);
    OK(fdb_delete_listiterator(it));
    return n;
}

static int handler_calls = 0;
static int handler_code = -1;
static void* handler_context = NULL;
static void on_failure(void* context, int code) {
    handler_calls++;
    handler_code = code;
    handler_context = context;
}

static void test_library(void) {
    const char* v = NULL;
    OK(fdb_initialise());
    OK(fdb_initialise());
    OK(fdb_version(&v));
    CHECK(v && strcmp(v, "5.25.0") == 0);
    OK(fdb_vcs_version(&v));
    CHECK(v && strncmp(v, "fieldstore ", 11) == 0);
    FAILS(fdb_version(NULL), FIELDSTORE_INVALID_INPUT, "version is NULL");
    FAILS(fdb_vcs_version(NULL), FIELDSTORE_INVALID_INPUT, "sha1 is NULL");
    CHECK(strcmp(fdb_error_string(FDB_SUCCESS), "Success") == 0);
    CHECK(strcmp(fdb_error_string(FDB_ITERATION_COMPLETE), "Iteration complete") == 0);
    CHECK(strcmp(fdb_error_string(42), "<unknown>") == 0);
    CHECK(strcmp(fdb_error_string(-1), "<unknown>") == 0);

    /* The failure handler: called in the failing thread with its context. */
    int context = 7;
    OK(fdb_set_failure_handler(on_failure, &context));
    FAILS(fdb_new_key(NULL), FIELDSTORE_INVALID_INPUT, "fdb_new_key: invalid input: key (the out-pointer) is NULL");
    CHECK(handler_calls == 1 && handler_code == FDB_ERROR_GENERAL_EXCEPTION && handler_context == &context);
    OK(fdb_set_failure_handler(NULL, NULL));
    FAILS(fdb_new_key(NULL), FIELDSTORE_INVALID_INPUT, "is NULL");
    CHECK(handler_calls == 1);
    /* The message of the two error codes is the thread's last one. */
    CHECK(strstr(fdb_error_string(FDB_ERROR_UNKNOWN_EXCEPTION), "fdb_new_key") != NULL);
}

static void test_keys_and_requests(void) {
    fdb_key_t* key = NULL;
    OK(fdb_new_key(&key));
    OK(fdb_key_add(key, "CLASS", "od"));
    OK(fdb_key_add(key, "class", "rd")); /* replaces */
    FAILS(fdb_key_add(key, NULL, "x"), FIELDSTORE_INVALID_INPUT, "param is NULL");
    FAILS(fdb_key_add(key, "step", NULL), FIELDSTORE_INVALID_INPUT, "value is NULL");
    FAILS(fdb_key_add(key, "step", "1,2"), FIELDSTORE_INVALID_INPUT, "step");
    FAILS(fdb_key_add(key, "bad keyword", "1"), FIELDSTORE_INVALID_INPUT, "bad keyword");
    FAILS(fdb_key_add(NULL, "step", "1"), FIELDSTORE_INVALID_INPUT, "the fdb_key_t argument is NULL");
    FAILS(fdb_key_add((fdb_key_t*)(void*)0x1234, "step", "1"), FIELDSTORE_INVALID_INPUT,
          "is not an object this library created");
    /* A key is not a request, even a live one. */
    FAILS(fdb_expand_request((fdb_request_t*)(void*)key), FIELDSTORE_INVALID_INPUT, "is a fdb_key_t, not a fdb_request_t");
    OK(fdb_delete_key(key));
    FAILS(fdb_delete_key(key), FIELDSTORE_INVALID_INPUT, "was deleted");
    FAILS(fdb_key_add(key, "step", "1"), FIELDSTORE_INVALID_INPUT, "was deleted");
    FAILS(fdb_delete_key(NULL), FIELDSTORE_INVALID_INPUT, "is NULL");

    fdb_request_t* req = NULL;
    OK(fdb_new_request(&req));
    FAILS(fdb_new_request(NULL), FIELDSTORE_INVALID_INPUT, "is NULL");
    const char* steps[] = {"0/to/12/by/6", "24"};
    OK(fdb_request_add(req, "step", steps, 2));
    const char* params[] = {"167/", "/165"};
    OK(fdb_request_add(req, "PARAM", params, 2));
    const char* dates[] = {"20230101/to/20230103"};
    OK(fdb_request_add(req, "date", dates, 1));
    const char* times[] = {"12"};
    OK(fdb_request_add(req, "time", times, 1));
    FAILS(fdb_request_add(req, "step", NULL, 1), FIELDSTORE_INVALID_INPUT, "values is NULL");
    FAILS(fdb_request_add(req, "step", steps, -1), FIELDSTORE_INVALID_INPUT, "numValues is negative");
    FAILS(fdb_request_add(req, NULL, steps, 1), FIELDSTORE_INVALID_INPUT, "param is NULL");
    const char* with_null[] = {"1", NULL};
    FAILS(fdb_request_add(req, "step", with_null, 2), FIELDSTORE_INVALID_INPUT, "values[1] is NULL");

    char** values = NULL;
    size_t n = 0;
    /* Values are split on '/', empty pieces dropped; not expanded yet. */
    OK(fdb_request_get(req, "step", &values, &n));
    CHECK(n == 6);
    if (n == 6) {
        CHECK(strcmp(values[0], "0") == 0 && strcmp(values[1], "to") == 0 && strcmp(values[5], "24") == 0);
    }
    for (size_t i = 0; i < n; i++) free(values[i]);
    free(values);
    OK(fdb_request_get(req, "param", &values, &n));
    CHECK(n == 2);
    for (size_t i = 0; i < n; i++) free(values[i]);
    free(values);
    FAILS(fdb_request_get(req, "levelist", &values, &n), FIELDSTORE_INVALID_INPUT, "no keyword 'levelist'");
    FAILS(fdb_request_get(req, NULL, &values, &n), FIELDSTORE_INVALID_INPUT, "param is NULL");
    FAILS(fdb_request_get(req, "step", NULL, &n), FIELDSTORE_INVALID_INPUT, "values (the out-pointer) is NULL");
    FAILS(fdb_request_get(req, "step", &values, NULL), FIELDSTORE_INVALID_INPUT, "numValues is NULL");

    /* Expansion: canonical values, ranges enumerated. */
    OK(fdb_expand_request(req));
    OK(fdb_request_get(req, "step", &values, &n));
    CHECK(n == 4);
    if (n == 4) CHECK(strcmp(values[1], "6") == 0 && strcmp(values[3], "24") == 0);
    for (size_t i = 0; i < n; i++) free(values[i]);
    free(values);
    OK(fdb_request_get(req, "date", &values, &n));
    CHECK(n == 3);
    if (n == 3) CHECK(strcmp(values[2], "20230103") == 0);
    for (size_t i = 0; i < n; i++) free(values[i]);
    free(values);
    OK(fdb_request_get(req, "time", &values, &n));
    CHECK(n == 1);
    if (n == 1) CHECK(strcmp(values[0], "1200") == 0);
    for (size_t i = 0; i < n; i++) free(values[i]);
    free(values);
    OK(fdb_delete_request(req));
    FAILS(fdb_delete_request(req), FIELDSTORE_INVALID_INPUT, "was deleted");
    FAILS(fdb_expand_request(req), FIELDSTORE_INVALID_INPUT, "was deleted");
    FAILS(fdb_delete_request(NULL), FIELDSTORE_INVALID_INPUT, "is NULL");

    /* Parameter names become ids, as MARS's expansion makes them. */
    const char* names[] = {"param", "2t/T/167.128", NULL};
    req = make_request(names);
    OK(fdb_expand_request(req));
    OK(fdb_request_get(req, "param", &values, &n));
    CHECK(n == 3);
    if (n == 3) CHECK(strcmp(values[0], "167") == 0 && strcmp(values[1], "130") == 0 && strcmp(values[2], "167") == 0);
    for (size_t i = 0; i < n; i++) free(values[i]);
    free(values);
    OK(fdb_delete_request(req));
    const char* unknown_name[] = {"param", "2t/nosuchname", NULL};
    req = make_request(unknown_name);
    FAILS(fdb_expand_request(req), FIELDSTORE_INVALID_INPUT, "unknown parameter 'nosuchname'");
    OK(fdb_delete_request(req));
    const char* bad_step[] = {"step", "abc", NULL};
    req = make_request(bad_step);
    FAILS(fdb_expand_request(req), FIELDSTORE_INVALID_INPUT, "keyword 'step'");
    OK(fdb_delete_request(req));
    const char* bad_range[] = {"step", "1/to", NULL};
    req = make_request(bad_range);
    FAILS(fdb_expand_request(req), FIELDSTORE_INVALID_INPUT, "malformed request");
    OK(fdb_delete_request(req));
}

static void test_splitkey_errors(void) {
    fdb_split_key_t* sk = NULL;
    const char *k, *v;
    size_t level;
    OK(fdb_new_splitkey(&sk));
    FAILS(fdb_new_splitkey(NULL), FIELDSTORE_INVALID_INPUT, "is NULL");
    FAILS(fdb_splitkey_next_metadata(sk, &k, &v, &level), FIELDSTORE_INVALID_INPUT, "fill it with fdb_listiterator_splitkey first");
    FAILS(fdb_splitkey_next_metadata(sk, NULL, &v, &level), FIELDSTORE_INVALID_INPUT, "key is NULL");
    FAILS(fdb_splitkey_next_metadata(sk, &k, NULL, &level), FIELDSTORE_INVALID_INPUT, "value is NULL");
    OK(fdb_delete_splitkey(sk));
    FAILS(fdb_delete_splitkey(sk), FIELDSTORE_INVALID_INPUT, "was deleted");
    FAILS(fdb_splitkey_next_metadata(NULL, &k, &v, &level), FIELDSTORE_INVALID_INPUT, "is NULL");
}

static fdb_handle_t* open_root(const char* root) {
    char config[8192];
    mkdir(root, 0755);
    snprintf(config, sizeof config,
             "{\"type\": \"local\", \"engine\": \"toc\", \"spaces\": [{\"handler\": \"Default\", "
             "\"roots\": [{\"path\": \"%s\"}]}]}",
             root);
    fdb_handle_t* fdb = NULL;
    OK(fdb_new_handle_from_yaml(&fdb, config, "{useSubToc: true}"));
    return fdb;
}

static void test_handles(const char* work) {
    char root[4096], config[8192];
    fdb_handle_t* fdb = NULL;
    FAILS(fdb_new_handle_from_yaml(NULL, "", ""), FIELDSTORE_INVALID_INPUT, "is NULL");
    FAILS(fdb_new_handle_from_yaml(&fdb, "type: [", ""), FIELDSTORE_INVALID_CONFIG, "system_config");
    FAILS(fdb_new_handle_from_yaml(&fdb, "{type: random}", ""), FIELDSTORE_INVALID_CONFIG, "type 'random' is not supported");
    /* A server that is not there: an error at once, naming it. */
    FAILS(fdb_new_handle_from_yaml(&fdb, "{type: remote, host: 127.0.0.1, port: 1, timeout: 2}", ""),
          FIELDSTORE_UNAVAILABLE, "server 127.0.0.1:1");
    FAILS(fdb_new_handle_from_yaml(&fdb, "{spaces: [{catalogueRoots: []}]}", ""), FIELDSTORE_UNSUPPORTED, "catalogueRoots");
    FAILS(fdb_new_handle_from_yaml(&fdb, "{engine: toc, spaces: [{roots: [{path: /nonexistent/x}]}]}", ""),
          FIELDSTORE_NOT_FOUND, "/nonexistent/x");
    FAILS(fdb_new_handle_from_yaml(&fdb, "{type: local}", "user: ["), FIELDSTORE_INVALID_CONFIG, "user_config");

    /* A root holding FDB5's format is refused, and nothing is written. */
    snprintf(root, sizeof root, "%s/fdb5-root", work);
    mkdir(root, 0755);
    snprintf(config, sizeof config, "%s/od:0001:oper:20230101:1200:g", root);
    mkdir(config, 0755);
    strcat(config, "/toc");
    FILE* f = fopen(config, "wb");
    fwrite("t\0\0\0\3\0\0\0", 1, 8, f);
    fclose(f);
    snprintf(config, sizeof config, "{spaces: [{roots: [{path: '%s'}]}]}", root);
    FAILS(fdb_new_handle_from_yaml(&fdb, config, NULL), FIELDSTORE_INVALID_CONFIG, "holds FDB5's own on-disk format");

    /* fdb_new_handle and an empty system config: fieldstore's variables,
     * then FDB5's. */
    snprintf(root, sizeof root, "%s/env-root", work);
    setenv("FIELDSTORE_ROOT", root, 1);
    OK(fdb_new_handle(&fdb));
    /* Reading never creates the root $FIELDSTORE_ROOT names: a missing one
     * is NotFound naming it (a mistyped variable is not an empty store). */
    fdb_listiterator_t* none = NULL;
    FAILS(fdb_list(fdb, NULL, &none, true, 3), FIELDSTORE_NOT_FOUND, "env-root does not exist");
    struct stat st;
    CHECK(stat(root, &st) != 0);
    OK(fdb_delete_handle(fdb));
    OK(fdb_new_handle_from_yaml(&fdb, NULL, NULL));
    OK(fdb_delete_handle(fdb));
    OK(fdb_new_handle_from_yaml(&fdb, "", "{}"));
    OK(fdb_delete_handle(fdb));
    unsetenv("FIELDSTORE_ROOT");
    snprintf(root, sizeof root, "%s/fdb-config-root", work);
    mkdir(root, 0755);
    snprintf(config, sizeof config, "{type: local, spaces: [{roots: [{path: '%s'}]}]}", root);
    setenv("FDB5_CONFIG", config, 1);
    OK(fdb_new_handle(&fdb));
    OK(fdb_delete_handle(fdb));
    setenv("FDB5_CONFIG", "{type: [", 1);
    FAILS(fdb_new_handle(&fdb), FIELDSTORE_INVALID_CONFIG, "$FDB5_CONFIG");
    unsetenv("FDB5_CONFIG");
    setenv("FDB_HOME", work, 1);
    FAILS(fdb_new_handle(&fdb), FIELDSTORE_NOT_FOUND, "no etc/fdb/config.yaml");
    unsetenv("FDB_HOME");
    setenv("FDB_CONFIG_FILE", "/nonexistent/config.yaml", 1);
    FAILS(fdb_new_handle(&fdb), FIELDSTORE_NOT_FOUND, "/nonexistent/config.yaml");
    unsetenv("FDB_CONFIG_FILE");
    FAILS(fdb_new_handle(NULL), FIELDSTORE_INVALID_INPUT, "is NULL");
    FAILS(fdb_delete_handle(NULL), FIELDSTORE_INVALID_INPUT, "the fdb_handle_t argument is NULL");
    FAILS(fdb_flush(fdb), FIELDSTORE_INVALID_INPUT, "was deleted");
}

static void test_archive_list_retrieve(const char* work) {
    char root[4096];
    snprintf(root, sizeof root, "%s/root", work);
    fdb_handle_t* fdb = open_root(root);

    /* Archive: three fields, one of them twice (the second replaces). */
    static char data[3][4096];
    const char* params[] = {"167", "165", "166"};
    for (int i = 0; i < 3; i++) {
        memset(data[i], 'a' + i, sizeof data[i]);
        memcpy(data[i], "GRIB", 4);
        fdb_key_t* key = make_key("0", params[i], "sfc");
        OK(fdb_archive(fdb, key, data[i], sizeof data[i]));
        OK(fdb_delete_key(key));
    }
    fdb_key_t* key = make_key("0", "167", "sfc");
    OK(fdb_archive(fdb, key, "replaced", 8)); /* the first version of 167... */
    OK(fdb_flush(fdb));
    OK(fdb_archive(fdb, key, data[0], sizeof data[0])); /* ... replaced again */
    OK(fdb_flush(fdb));
    FAILS(fdb_archive(NULL, key, data[0], 1), FIELDSTORE_INVALID_INPUT, "is NULL");
    FAILS(fdb_archive(fdb, NULL, data[0], 1), FIELDSTORE_INVALID_INPUT, "the fdb_key_t argument is NULL");
    FAILS(fdb_archive(fdb, key, NULL, 1), FIELDSTORE_INVALID_INPUT, "data is NULL");
    /* A length no object can have (a negative length cast to size_t): an
     * error, never an abort nor a read past the buffer. */
    FAILS(fdb_archive(fdb, key, data[0], (size_t)PTRDIFF_MAX + 1), FIELDSTORE_INVALID_INPUT,
          "length 9223372036854775808");
    FAILS(fdb_archive(fdb, key, data[0], (size_t)-1), FIELDSTORE_INVALID_INPUT, "is larger than");
    OK(fdb_delete_key(key));
    fdb_key_t* partial = NULL;
    OK(fdb_new_key(&partial));
    OK(fdb_key_add(partial, "class", "od"));
    FAILS(fdb_archive(fdb, partial, "x", 1), FIELDSTORE_INVALID_INPUT, "missing keyword");
    OK(fdb_delete_key(partial));
    FAILS(fdb_flush(NULL), FIELDSTORE_INVALID_INPUT, "is NULL");

    /* List: every depth; depth outside 1..3 is 3; NULL request lists all;
     * duplicates == true leaves the replaced versions out. */
    CHECK(count_list(fdb, NULL, true, 1) == 1);
    CHECK(count_list(fdb, NULL, true, 2) == 1);
    CHECK(count_list(fdb, NULL, true, 3) == 3);
    CHECK(count_list(fdb, NULL, true, 0) == 3);
    CHECK(count_list(fdb, NULL, true, 7) == 3);
    CHECK(count_list(fdb, NULL, false, 3) == 5);
    const char* sel[] = {"class", "od", "param", "167/166", NULL};
    fdb_request_t* req = make_request(sel);
    CHECK(count_list(fdb, req, true, 3) == 2);
    OK(fdb_expand_request(req));
    CHECK(count_list(fdb, req, true, 3) == 2);
    OK(fdb_delete_request(req));
    /* Names are resolved by the handle too, expanded or not. */
    const char* named[] = {"class", "od", "param", "2t/10V", NULL};
    req = make_request(named);
    CHECK(count_list(fdb, req, true, 3) == 2);
    OK(fdb_delete_request(req));
    const char* unknown_param[] = {"class", "od", "param", "nosuchname", NULL};
    req = make_request(unknown_param);
    fdb_listiterator_t* nit = NULL;
    FAILS(fdb_list(fdb, req, &nit, true, 3), FIELDSTORE_INVALID_INPUT, "unknown parameter 'nosuchname'");
    OK(fdb_delete_request(req));
    const char* none[] = {"class", "rd", NULL};
    req = make_request(none);
    CHECK(count_list(fdb, req, true, 3) == 0);
    OK(fdb_delete_request(req));
    const char* unknown[] = {"nokeyword", "1", NULL};
    req = make_request(unknown);
    fdb_listiterator_t* it = NULL;
    FAILS(fdb_list(fdb, req, &it, true, 3), FIELDSTORE_INVALID_INPUT, "nokeyword");
    OK(fdb_delete_request(req));
    FAILS(fdb_list(fdb, NULL, NULL, true, 3), FIELDSTORE_INVALID_INPUT, "it (the out-pointer) is NULL");
    FAILS(fdb_list(NULL, NULL, &it, true, 3), FIELDSTORE_INVALID_INPUT, "is NULL");

    /* Attributes and split keys. */
    const char *uri, *k, *v;
    size_t off, len, level;
    OK(fdb_list(fdb, NULL, &it, true, 1));
    FAILS(fdb_listiterator_attrs(it, &uri, &off, &len), FIELDSTORE_INVALID_INPUT, "call fdb_listiterator_next first");
    OK(fdb_listiterator_next(it));
    FAILS(fdb_listiterator_attrs(it, &uri, &off, &len), FIELDSTORE_INVALID_INPUT, "only fields (depth 3) have one");
    fdb_split_key_t* sk = NULL;
    OK(fdb_new_splitkey(&sk));
    OK(fdb_listiterator_splitkey(it, sk));
    int n = 0;
    while (fdb_splitkey_next_metadata(sk, &k, &v, &level) == FDB_SUCCESS) {
        CHECK(level == 0);
        n++;
    }
    CHECK(n == 6);
    CHECK(fdb_listiterator_next(it) == FDB_ITERATION_COMPLETE);
    FAILS(fdb_listiterator_attrs(it, &uri, &off, &len), FIELDSTORE_INVALID_INPUT, "at its end");
    FAILS(fdb_listiterator_splitkey(it, sk), FIELDSTORE_INVALID_INPUT, "at its end");
    OK(fdb_delete_listiterator(it));
    FAILS(fdb_listiterator_next(it), FIELDSTORE_INVALID_INPUT, "was deleted");
    FAILS(fdb_delete_listiterator(it), FIELDSTORE_INVALID_INPUT, "was deleted");
    FAILS(fdb_listiterator_next(NULL), FIELDSTORE_INVALID_INPUT, "is NULL");

    const char* one[] = {"param", "165", NULL};
    req = make_request(one);
    OK(fdb_list(fdb, req, &it, true, 3));
    OK(fdb_delete_request(req));
    OK(fdb_listiterator_next(it));
    OK(fdb_listiterator_attrs(it, &uri, &off, &len));
    CHECK(len == sizeof data[1]);
    CHECK(uri[0] == '/' && strstr(uri, root) == uri);
    FAILS(fdb_listiterator_attrs(it, NULL, &off, &len), FIELDSTORE_INVALID_INPUT, "uri is NULL");
    FAILS(fdb_listiterator_attrs(it, &uri, NULL, &len), FIELDSTORE_INVALID_INPUT, "off is NULL");
    FAILS(fdb_listiterator_attrs(it, &uri, &off, NULL), FIELDSTORE_INVALID_INPUT, "len is NULL");
    FAILS(fdb_listiterator_splitkey(it, NULL), FIELDSTORE_INVALID_INPUT, "the fdb_split_key_t argument is NULL");
    OK(fdb_listiterator_splitkey(it, sk));
    /* Level 0 sorted, with the keys' values; levels 1 and 2 follow. */
    const char* expected[][3] = {
        {"class", "od", "0"}, {"date", "20230101", "0"}, {"domain", "g", "0"},   {"expver", "0001", "0"},
        {"stream", "oper", "0"}, {"time", "1200", "0"},  {"levtype", "sfc", "1"}, {"timespan", "", "1"},
        {"type", "fc", "1"},     {"param", "165", "2"},  {"step", "0", "2"},
    };
    size_t count = 0;
    int rc;
    while ((rc = fdb_splitkey_next_metadata(sk, &k, &v, NULL)) == FDB_SUCCESS) {
        if (count < sizeof expected / sizeof expected[0]) {
            CHECK(strcmp(k, expected[count][0]) == 0);
            CHECK(strcmp(v, expected[count][1]) == 0);
        }
        count++;
    }
    CHECK(rc == FDB_ITERATION_COMPLETE);
    CHECK(count == sizeof expected / sizeof expected[0]);
    CHECK(fdb_splitkey_next_metadata(sk, &k, &v, &level) == FDB_ITERATION_COMPLETE);
    /* The split key owns its copy: still there after the iterator moved. */
    OK(fdb_listiterator_splitkey(it, sk));
    CHECK(fdb_listiterator_next(it) == FDB_ITERATION_COMPLETE);
    OK(fdb_splitkey_next_metadata(sk, &k, &v, &level));
    CHECK(strcmp(k, "class") == 0 && level == 0);
    OK(fdb_delete_listiterator(it));
    OK(fdb_delete_splitkey(sk));

    /* Retrieve: request order, missing fields skipped; a seekable stream. */
    fdb_datareader_t* dr = NULL;
    long size = -1, pos = -1, got = -1;
    OK(fdb_new_datareader(&dr));
    FAILS(fdb_new_datareader(NULL), FIELDSTORE_INVALID_INPUT, "is NULL");
    FAILS(fdb_datareader_open(dr, &size), FIELDSTORE_INVALID_INPUT, "pass it to fdb_retrieve first");
    FAILS(fdb_datareader_size(dr, &size), FIELDSTORE_INVALID_INPUT, "pass it to fdb_retrieve first");
    const char* full[] = {"class", "od", "expver", "1", "stream", "oper", "date", "20230101",
                          "time", "12", "domain", "g", "type", "fc", "levtype", "sfc",
                          "step", "0", "param", "166/999/167", NULL};
    req = make_request(full);
    FAILS(fdb_retrieve(fdb, NULL, dr), FIELDSTORE_INVALID_INPUT, "req is NULL");
    FAILS(fdb_retrieve(fdb, req, NULL), FIELDSTORE_INVALID_INPUT, "the fdb_datareader_t argument is NULL");
    FAILS(fdb_retrieve(NULL, req, dr), FIELDSTORE_INVALID_INPUT, "is NULL");
    OK(fdb_retrieve(fdb, req, dr));
    OK(fdb_datareader_size(dr, &size));
    CHECK(size == 2 * 4096);
    FAILS(fdb_datareader_size(dr, NULL), FIELDSTORE_INVALID_INPUT, "size is NULL");
    OK(fdb_datareader_open(dr, NULL));
    OK(fdb_datareader_open(dr, &size));
    CHECK(size == 2 * 4096);
    static char buf[3 * 4096];
    OK(fdb_datareader_read(dr, buf, 10, &got));
    CHECK(got == 10 && memcmp(buf, data[2], 10) == 0); /* 166 first: request order */
    OK(fdb_datareader_tell(dr, &pos));
    CHECK(pos == 10);
    OK(fdb_datareader_skip(dr, 4086));
    OK(fdb_datareader_read(dr, buf, sizeof buf, &got));
    CHECK(got == 4096 && memcmp(buf, data[0], 4096) == 0);
    OK(fdb_datareader_read(dr, buf, sizeof buf, &got));
    CHECK(got == 0);
    OK(fdb_datareader_seek(dr, 4090));
    OK(fdb_datareader_read(dr, buf, 12, &got)); /* across the two fields */
    CHECK(got == 12 && memcmp(buf, data[2] + 4090, 6) == 0 && memcmp(buf + 6, data[0], 6) == 0);
    OK(fdb_datareader_skip(dr, -12));
    OK(fdb_datareader_tell(dr, &pos));
    CHECK(pos == 4090);
    FAILS(fdb_datareader_seek(dr, size + 1), FIELDSTORE_INVALID_INPUT, "outside the retrieved data");
    FAILS(fdb_datareader_seek(dr, -1), FIELDSTORE_INVALID_INPUT, "outside the retrieved data");
    FAILS(fdb_datareader_skip(dr, -5000), FIELDSTORE_INVALID_INPUT, "outside the retrieved data");
    OK(fdb_datareader_tell(dr, &pos));
    CHECK(pos == 4090); /* unchanged by the failed moves */
    OK(fdb_datareader_seek(dr, size));
    OK(fdb_datareader_read(dr, buf, 1, &got));
    CHECK(got == 0);
    FAILS(fdb_datareader_read(dr, buf, -1, &got), FIELDSTORE_INVALID_INPUT, "count is negative");
    FAILS(fdb_datareader_read(dr, NULL, 1, &got), FIELDSTORE_INVALID_INPUT, "buf is NULL");
    FAILS(fdb_datareader_read(dr, buf, 1, NULL), FIELDSTORE_INVALID_INPUT, "read is NULL");
    OK(fdb_datareader_read(dr, NULL, 0, &got));
    FAILS(fdb_datareader_tell(dr, NULL), FIELDSTORE_INVALID_INPUT, "pos is NULL");
    OK(fdb_datareader_close(dr));
    OK(fdb_datareader_tell(dr, &pos));
    CHECK(pos == 0);
    OK(fdb_datareader_read(dr, buf, sizeof buf, &got)); /* reading opens */
    CHECK(got == 2 * 4096);
    OK(fdb_delete_request(req));
    /* A partial request retrieves nothing (list it instead), as in FDB5. */
    const char* partial_req[] = {"class", "od", "param", "167", NULL};
    req = make_request(partial_req);
    OK(fdb_retrieve(fdb, req, dr));
    OK(fdb_datareader_size(dr, &size));
    CHECK(size == 0);
    OK(fdb_delete_request(req));
    /* A retrieve of nothing: an empty stream. */
    const char* missing[] = {"class", "od", "expver", "1", "stream", "oper", "date", "20230101",
                             "time", "12", "domain", "g", "type", "fc", "levtype", "sfc",
                             "step", "6", "param", "167", NULL};
    req = make_request(missing);
    OK(fdb_retrieve(fdb, req, dr));
    OK(fdb_datareader_open(dr, &size));
    CHECK(size == 0);
    OK(fdb_datareader_read(dr, buf, sizeof buf, &got));
    CHECK(got == 0);
    OK(fdb_delete_request(req));

    /* An unexpanded range: FDB5's fdb_retrieve fails on it ("Invalid date
     * to"; test_fdb_c.cc's "expand" case); fdb_expand_request enumerates
     * it, and then it retrieves. */
    const char* ranged[] = {"class", "od", "expver", "0001", "stream", "oper", "date",
                            "20230101/to/20230102", "time", "1200", "domain", "g", "type", "fc",
                            "levtype", "sfc", "step", "0", "param", "167", NULL};
    req = make_request(ranged);
    FAILS(fdb_retrieve(fdb, req, dr), FIELDSTORE_INVALID_INPUT,
          "date=20230101/to/20230102 is a range not expanded");
    OK(fdb_expand_request(req));
    OK(fdb_retrieve(fdb, req, dr));
    OK(fdb_datareader_open(dr, &size));
    CHECK(size == 4096);
    OK(fdb_delete_request(req));

    /* Deleting the handle flushes; readers and iterators made from it go on. */
    key = make_key("12", "167", "sfc");
    OK(fdb_archive(fdb, key, data[1], 100));
    OK(fdb_delete_key(key));
    OK(fdb_list(fdb, NULL, &it, true, 3));
    OK(fdb_delete_handle(fdb));
    FAILS(fdb_delete_handle(fdb), FIELDSTORE_INVALID_INPUT, "was deleted");
    n = 0;
    while (fdb_listiterator_next(it) == FDB_SUCCESS) n++;
    CHECK(n == 3);
    OK(fdb_delete_listiterator(it));
    OK(fdb_datareader_seek(dr, 0));
    OK(fdb_delete_datareader(dr));
    FAILS(fdb_delete_datareader(dr), FIELDSTORE_INVALID_INPUT, "was deleted");
    FAILS(fdb_datareader_read(dr, buf, 1, &got), FIELDSTORE_INVALID_INPUT, "was deleted");
    FAILS(fdb_datareader_open(NULL, &size), FIELDSTORE_INVALID_INPUT, "is NULL");
    FAILS(fdb_datareader_close(NULL), FIELDSTORE_INVALID_INPUT, "is NULL");
    FAILS(fdb_datareader_seek(NULL, 0), FIELDSTORE_INVALID_INPUT, "is NULL");
    FAILS(fdb_datareader_skip(NULL, 0), FIELDSTORE_INVALID_INPUT, "is NULL");
    FAILS(fdb_delete_datareader(NULL), FIELDSTORE_INVALID_INPUT, "is NULL");

    fdb = open_root(root);
    CHECK(count_list(fdb, NULL, true, 3) == 4); /* flushed by the delete */
    OK(fdb_delete_handle(fdb));
}

/* FDB5's list order (pyfdb 0.1.3's test_archival_read, test_fdb_c.cc's
 * "multiple archive & list"): one flush lists in its index's key order,
 * the values joined by ':' compared as text (1000 before 300), whatever the
 * archive order. */
static void test_list_order(const char* work) {
    char root[4096];
    snprintf(root, sizeof root, "%s/order-root", work);
    fdb_handle_t* fdb = open_root(root);
    const char* levels[] = {"300", "400", "1000"};
    for (int i = 0; i < 3; i++) {
        fdb_key_t* key = make_key("0", "138", "pl");
        OK(fdb_key_add(key, "levelist", levels[i]));
        OK(fdb_archive(fdb, key, levels[i], strlen(levels[i])));
        OK(fdb_delete_key(key));
    }
    OK(fdb_flush(fdb));
    const char* sel[] = {"class", "od", "levelist", "400/300/1000", NULL};
    fdb_request_t* req = make_request(sel);
    fdb_listiterator_t* it = NULL;
    OK(fdb_list(fdb, req, &it, true, 3));
    const char* want[] = {"1000", "300", "400"};
    for (int i = 0; i < 3; i++) {
        OK(fdb_listiterator_next(it));
        fdb_split_key_t* sk = NULL;
        OK(fdb_new_splitkey(&sk));
        OK(fdb_listiterator_splitkey(it, sk));
        const char *k = NULL, *v = NULL;
        size_t level = 0;
        const char* levelist = NULL;
        while (fdb_splitkey_next_metadata(sk, &k, &v, &level) == FDB_SUCCESS) {
            if (strcmp(k, "levelist") == 0) levelist = v;
        }
        CHECK(levelist != NULL && strcmp(levelist, want[i]) == 0);
        OK(fdb_delete_splitkey(sk));
    }
    CHECK(fdb_listiterator_next(it) == FDB_ITERATION_COMPLETE);
    OK(fdb_delete_listiterator(it));
    OK(fdb_delete_request(req));
    OK(fdb_delete_handle(fdb));
}

static void test_archive_multiple(const char* work, const char* gribdir) {
    char root[4096];
    snprintf(root, sizeof root, "%s/grib-root", work);
    fdb_handle_t* fdb = open_root(root);
    size_t len1, len2;
    char* levtypes = read_file(gribdir, "levtypes.grib", &len1);
    char* rd = read_file(gribdir, "rd-fc.grib", &len2);

    OK(fdb_archive_multiple(fdb, NULL, levtypes, len1));
    {
        const unsigned long long* ranges = NULL;
        size_t skipped = 9;
        OK(fieldstore_skipped_bytes(&ranges, &skipped));
        CHECK(skipped == 0);
    }
    FAILS(fdb_archive_multiple(fdb, NULL, NULL, 10), FIELDSTORE_INVALID_INPUT, "data is NULL");
    FAILS(fdb_archive_multiple(fdb, NULL, levtypes, (size_t)-1), FIELDSTORE_INVALID_INPUT, "is larger than");
    FAILS(fdb_archive_multiple(fdb, NULL, "not grib at all", 15), FIELDSTORE_INVALID_INPUT, "GRIB");
    FAILS(fdb_archive_multiple(fdb, NULL, rd, len2 - 10), FIELDSTORE_INVALID_INPUT, "GRIB");
    FAILS(fdb_archive_multiple(NULL, NULL, rd, len2), FIELDSTORE_INVALID_INPUT, "is NULL");

    /* With a request: every message must be named, every field named there. */
    const char* other[] = {"class", "rd", "param", "167", NULL};
    fdb_request_t* req = make_request(other);
    FAILS(fdb_archive_multiple(fdb, req, rd, len2), FIELDSTORE_INVALID_INPUT, "is not one the request names");
    OK(fdb_delete_request(req));
    const char* more[] = {"class", "rd", "param", "166/167", NULL};
    req = make_request(more);
    FAILS(fdb_archive_multiple(fdb, req, rd, len2), FIELDSTORE_INVALID_INPUT, "1 of which are not in the data");
    OK(fdb_delete_request(req));
    const char* exact[] = {"class", "rd", "param", "166", "step", "12", NULL};
    req = make_request(exact);
    OK(fdb_archive_multiple(fdb, req, rd, len2));
    OK(fdb_delete_request(req));
    OK(fdb_flush(fdb));
    CHECK(count_list(fdb, NULL, true, 3) == 3);
    CHECK(count_list(fdb, NULL, true, 1) == 2);

    /* The bytes come back as archived. */
    const char* sel[] = {"class", "rd", "expver", "xxxx", "stream", "oper", "date", "20201102",
                         "time", "0000", "domain", "g", "type", "fc", "levtype", "sfc",
                         "step", "12", "param", "166", NULL};
    req = make_request(sel);
    OK(fdb_expand_request(req));
    fdb_datareader_t* dr = NULL;
    OK(fdb_new_datareader(&dr));
    OK(fdb_retrieve(fdb, req, dr));
    long size = 0, got = 0;
    OK(fdb_datareader_open(dr, &size));
    CHECK((size_t)size == len2);
    char* back = malloc(len2);
    OK(fdb_datareader_read(dr, back, (long)len2, &got));
    CHECK((size_t)got == len2 && memcmp(back, rd, len2) == 0);
    free(back);
    OK(fdb_datareader_close(dr));
    OK(fdb_delete_datareader(dr));
    OK(fdb_delete_request(req));
    OK(fdb_delete_handle(fdb));
    free(levtypes);
    free(rd);
}

static int collect_wipe(fdb_wipe_iterator_t* it, const char* needle) {
    fdb_wipe_element_t* el = NULL;
    const char* s = NULL;
    int rc, found = 0;
    while ((rc = fdb_wipe_iterator_next(it, &el)) == FDB_SUCCESS) {
        OK(fdb_wipe_element_string(el, &s));
        if (strstr(s, needle)) found++;
        OK(fdb_delete_wipe_element(el));
    }
    CHECK(rc == FDB_ITERATION_COMPLETE);
    /* As in FDB5, the end comes with an (empty) element too. */
    CHECK(el != NULL);
    OK(fdb_wipe_element_string(el, &s));
    CHECK(s && s[0] == '\0');
    OK(fdb_delete_wipe_element(el));
    FAILS(fdb_wipe_element_string(el, &s), FIELDSTORE_INVALID_INPUT, "was deleted");
    FAILS(fdb_delete_wipe_element(el), FIELDSTORE_INVALID_INPUT, "was deleted");
    OK(fdb_delete_wipe_iterator(it));
    return found;
}

static int collect_purge(fdb_purge_iterator_t* it, const char* needle) {
    fdb_purge_element_t* el = NULL;
    const char* s = NULL;
    int rc, found = 0;
    while ((rc = fdb_purge_iterator_next(it, &el)) == FDB_SUCCESS) {
        OK(fdb_purge_element_string(el, &s));
        if (strstr(s, needle)) found++;
        OK(fdb_delete_purge_element(el));
    }
    CHECK(rc == FDB_ITERATION_COMPLETE);
    CHECK(el != NULL);
    OK(fdb_purge_element_string(el, &s));
    CHECK(s && s[0] == '\0');
    OK(fdb_delete_purge_element(el));
    FAILS(fdb_purge_element_string(el, &s), FIELDSTORE_INVALID_INPUT, "was deleted");
    FAILS(fdb_delete_purge_element(el), FIELDSTORE_INVALID_INPUT, "was deleted");
    OK(fdb_delete_purge_iterator(it));
    return found;
}

static void test_wipe_purge(const char* work) {
    char root[4096];
    snprintf(root, sizeof root, "%s/wipe-root", work);
    fdb_handle_t* fdb = open_root(root);
    for (int round = 0; round < 2; round++) {
        fdb_key_t* key = make_key("0", "167", "sfc");
        OK(fdb_archive(fdb, key, "0123456789", 10));
        OK(fdb_delete_key(key));
        OK(fdb_flush(fdb)); /* two flushes: the second replaces the first */
    }
    fdb_key_t* key = make_key("0", "167", "pl");
    OK(fdb_key_add(key, "levelist", "500"));
    OK(fdb_archive(fdb, key, "abc", 3));
    OK(fdb_delete_key(key));
    OK(fdb_flush(fdb));
    CHECK(count_list(fdb, NULL, false, 3) == 3);

    const char* ds[] = {"class", "od", "expver", "0001", "stream", "oper", "date", "20230101",
                        "time", "1200", "domain", "g", NULL};
    fdb_request_t* req = make_request(ds);
    fdb_purge_iterator_t* pit = NULL;
    OK(fdb_purge(fdb, req, false, false, &pit));
    CHECK(collect_purge(pit, "dry run") == 1);
    OK(fdb_purge(fdb, req, false, true, &pit));
    CHECK(collect_purge(pit, "dry run") == 0);
    OK(fdb_purge(fdb, req, true, false, &pit));
    CHECK(collect_purge(pit, "purged 1 dataset") == 1);
    FAILS(fdb_purge(fdb, NULL, false, false, &pit), FIELDSTORE_INVALID_INPUT, "req is NULL");
    FAILS(fdb_purge(fdb, req, false, false, NULL), FIELDSTORE_INVALID_INPUT, "is NULL");
    FAILS(fdb_purge(NULL, req, false, false, &pit), FIELDSTORE_INVALID_INPUT, "is NULL");
    FAILS(fdb_purge_iterator_next(NULL, NULL), FIELDSTORE_INVALID_INPUT, "is NULL");
    FAILS(fdb_delete_purge_iterator(NULL), FIELDSTORE_INVALID_INPUT, "is NULL");
    FAILS(fdb_delete_purge_element(NULL), FIELDSTORE_INVALID_INPUT, "is NULL");
    FAILS(fdb_purge_element_string(NULL, NULL), FIELDSTORE_INVALID_INPUT, "is NULL");

    /* Wipe: a field-level keyword is refused; dry runs change nothing;
     * porcelain gives names only; doit deletes. */
    const char* fields[] = {"class", "od", "param", "167", NULL};
    fdb_request_t* bad = make_request(fields);
    fdb_wipe_iterator_t* wit = NULL;
    FAILS(fdb_wipe(fdb, bad, false, false, false, &wit), FIELDSTORE_INVALID_INPUT, "param");
    OK(fdb_delete_request(bad));
    OK(fdb_wipe(fdb, req, false, false, false, &wit));
    CHECK(collect_wipe(wit, "whole dataset") == 1);
    OK(fdb_wipe(fdb, req, false, true, false, &wit));
    CHECK(collect_wipe(wit, root) >= 2);
    CHECK(count_list(fdb, NULL, true, 3) == 2);
    OK(fdb_wipe(fdb, req, true, false, true, &wit));
    CHECK(collect_wipe(wit, "wiped 1 dataset") == 1);
    CHECK(count_list(fdb, NULL, true, 3) == 0);
    OK(fdb_wipe(fdb, req, true, false, false, &wit));
    CHECK(collect_wipe(wit, "nothing to wipe") == 1);
    FAILS(fdb_wipe(fdb, NULL, false, false, false, &wit), FIELDSTORE_INVALID_INPUT, "req is NULL");
    FAILS(fdb_wipe(fdb, req, false, false, false, NULL), FIELDSTORE_INVALID_INPUT, "is NULL");
    FAILS(fdb_wipe(NULL, req, false, false, false, &wit), FIELDSTORE_INVALID_INPUT, "is NULL");
    FAILS(fdb_wipe_iterator_next(NULL, NULL), FIELDSTORE_INVALID_INPUT, "is NULL");
    FAILS(fdb_delete_wipe_iterator(NULL), FIELDSTORE_INVALID_INPUT, "is NULL");
    FAILS(fdb_delete_wipe_element(NULL), FIELDSTORE_INVALID_INPUT, "is NULL");
    FAILS(fdb_wipe_element_string(NULL, NULL), FIELDSTORE_INVALID_INPUT, "is NULL");
    OK(fdb_wipe(fdb, req, false, false, false, &wit));
    fdb_wipe_element_t* el = NULL;
    FAILS(fdb_wipe_iterator_next(wit, NULL), FIELDSTORE_INVALID_INPUT, "element (the out-pointer) is NULL");
    OK(fdb_wipe_iterator_next(wit, &el));
    FAILS(fdb_wipe_element_string(el, NULL), FIELDSTORE_INVALID_INPUT, "str is NULL");
    FAILS(fdb_delete_wipe_iterator((fdb_wipe_iterator_t*)(void*)el), FIELDSTORE_INVALID_INPUT,
          "is a fdb_wipe_element_t, not a fdb_wipe_iterator_t");
    OK(fdb_delete_wipe_element(el));
    OK(fdb_delete_wipe_iterator(wit)); /* before its end */
    OK(fdb_purge(fdb, req, false, false, &pit));
    fdb_purge_element_t* pel = NULL;
    FAILS(fdb_purge_iterator_next(pit, NULL), FIELDSTORE_INVALID_INPUT, "element (the out-pointer) is NULL");
    OK(fdb_purge_iterator_next(pit, &pel));
    FAILS(fdb_purge_element_string(pel, NULL), FIELDSTORE_INVALID_INPUT, "str is NULL");
    OK(fdb_delete_purge_element(pel));
    OK(fdb_delete_purge_iterator(pit));
    OK(fdb_delete_request(req));
    OK(fdb_delete_handle(fdb));
}

int main(int argc, char** argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: %s WORKDIR GRIBDIR\n", argv[0]);
        return 2;
    }
    unsetenv("FIELDSTORE_CONFIG");
    unsetenv("FIELDSTORE_ROOT");
    unsetenv("FDB_CONFIG");
    unsetenv("FDB5_CONFIG");
    unsetenv("FDB_CONFIG_FILE");
    unsetenv("FDB5_CONFIG_FILE");
    unsetenv("FDB_HOME");
    unsetenv("FDB5_HOME");
    CHECK(fieldstore_last_error_kind() == FIELDSTORE_NO_ERROR);
    test_library();
    test_keys_and_requests();
    test_splitkey_errors();
    test_handles(argv[1]);
    test_archive_list_retrieve(argv[1]);
    test_list_order(argv[1]);
    test_archive_multiple(argv[1], argv[2]);
    test_wipe_purge(argv[1]);
    /* Everything created was deleted. */
    CHECK(fieldstore_live_objects() == 0);
    printf("test_fdb_c: %d checks, %d failed\n", checks, failures);
    return failures == 0 ? 0 : 1;
}
