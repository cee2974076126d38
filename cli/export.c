/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* export.c - export [PATTERN]: the live store's records as JSON lines
 * (administrative EXPORT, page by page); import FILE DIR: such lines into
 * a new data directory, offline, with their versions, fencing tokens and
 * deadlines (or, with --etcd, into a store on an etcd cluster:
 * import_etcd.c). A portable format, so that data can move between stores and
 * backends.
 *
 * One JSON object per line:
 *   {"key":"...","key_base64":"...","value_base64":"...","version":"HLC",
 *    "fencing_token":"HLC"|null,"expires_at_ms":N|null}
 * "key" is for reading (bytes that are not UTF-8 show as U+00XX); import
 * takes key_base64, which is exact.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include <mosquitto.h>

#include "../core/command.h"
#include "../core/errors.h"
#include "../core/hex.h"
#include "../core/json.h"
#include "../core/pattern.h"
#include "../core/store.h"
#include "cli.h"

/* Records asked for per page (the server also bounds a page's bytes). */
#define SS_EXPORT_PAGE "1000"
/* Records written per batch on import, and their key and value bytes at
 * most (a single larger record goes alone): a batch is one journal frame,
 * which the store holds in memory whole and bounds (store.h,
 * batch_max_bytes). */
#define SS_IMPORT_BATCH 1000
#define SS_IMPORT_BATCH_BYTES ((uint64_t)64 << 20)
/* The LMDB map of a store that import builds from an input whose size is
 * unknown (a pipe): address space only, the file grows as it is used.
 * Where the address space cannot take a map (this one, or one sized for
 * a file: a 32-bit system, a limit such as ulimit -v, a sanitizer's
 * reserved ranges), it is halved until it fits, down to
 * SS_IMPORT_MAP_LEAST; a store larger than the map fails as full. */
#define SS_IMPORT_MAP_UNKNOWN ((uint64_t)1 << 40)
#define SS_IMPORT_MAP_LEAST ((uint64_t)1 << 28)

/* One record line's fields: "rec HEXKEY SIZE VERSION EXP FT". */
struct rec_head {
    const char *hexkey, *version, *exp, *ft;
    size_t hexkey_len, version_len, exp_len, ft_len;
    uint64_t len;
};

static bool parse_head(const char *p, size_t n, struct rec_head *h)
{
    const char *f[5];
    size_t fl[5];
    int nf = 0;
    size_t i = 4; /* after "rec " */
    while (nf < 5 && i <= n) {
        size_t start = i;
        while (i < n && p[i] != ' ')
            i++;
        f[nf] = p + start;
        fl[nf++] = i - start;
        i++;
    }
    if (nf != 5 || i <= n)
        return false;
    h->hexkey = f[0];
    h->hexkey_len = fl[0];
    h->version = f[2];
    h->version_len = fl[2];
    h->exp = f[3];
    h->exp_len = fl[3];
    h->ft = f[4];
    h->ft_len = fl[4];
    if (fl[1] == 0 || fl[1] > 12)
        return false;
    h->len = 0;
    for (size_t k = 0; k < fl[1]; k++) {
        if (f[1][k] < '0' || f[1][k] > '9')
            return false;
        h->len = h->len * 10 + (uint64_t)(f[1][k] - '0');
    }
    return true;
}

/* One record as a JSON line; false when its version or token does not
 * unescape (docs/OPERATIONS.md). */
static bool print_record(const struct rec_head *h, const ss_buf *key, const uint8_t *value)
{
    bool ft = !(h->ft_len == 1 && h->ft[0] == '-'), exp = !(h->exp_len == 1 && h->exp[0] == '-');
    ss_buf line = SS_BUF_INIT, version = SS_BUF_INIT, token = SS_BUF_INIT;
    if (ss_hex_field_decode(&version, h->version, h->version_len) != SS_OK ||
        (ft && ss_hex_field_decode(&token, h->ft, h->ft_len) != SS_OK)) {
        ss_buf_free(&version);
        ss_buf_free(&token);
        return false;
    }
    int rc = ss_buf_append_str(&line, "{\"key\":");
    if (rc == SS_OK)
        rc = ss_json_string(&line, key->data, key->len);
    if (rc == SS_OK)
        rc = ss_buf_append_str(&line, ",\"key_base64\":\"");
    if (rc == SS_OK)
        rc = ss_json_base64(&line, key->data, key->len);
    if (rc == SS_OK)
        rc = ss_buf_append_str(&line, "\",\"value_base64\":\"");
    if (rc == SS_OK)
        rc = ss_json_base64(&line, value, (size_t)h->len);
    if (rc == SS_OK)
        rc = ss_buf_append_str(&line, "\",\"version\":");
    if (rc == SS_OK)
        rc = ss_json_string(&line, version.data, version.len);
    if (rc == SS_OK)
        rc = ss_buf_append_str(&line, ",\"fencing_token\":");
    if (rc == SS_OK)
        rc = ft ? ss_json_string(&line, token.data, token.len) : ss_buf_append_str(&line, "null");
    if (rc == SS_OK)
        rc = ss_buf_append_str(&line, ",\"expires_at_ms\":");
    if (rc == SS_OK)
        rc = exp ? ss_buf_append(&line, h->exp, h->exp_len) : ss_buf_append_str(&line, "null");
    if (rc == SS_OK)
        rc = ss_buf_append_str(&line, "}\n");
    if (rc == SS_OK)
        fwrite(line.data, 1, line.len, stdout);
    ss_buf_free(&line);
    ss_buf_free(&version);
    ss_buf_free(&token);
    return true;
}

/* Print the records of one EXPORT answer; *cursor gets the next cursor
 * (malloc'ed) or NULL at the end. false if it does not parse. */
static bool print_page(const uint8_t *p, size_t n, char **cursor, long *count)
{
    *cursor = NULL;
    const uint8_t *nl = memchr(p, '\n', n);
    if (nl == NULL || nl - p < 8 || memcmp(p, "cursor ", 7) != 0)
        return false;
    size_t cl = (size_t)(nl - p) - 7;
    if (!(cl == 1 && p[7] == '-'))
        *cursor = strndup((const char *)p + 7, cl);
    size_t i = (size_t)(nl - p) + 1;
    ss_buf key = SS_BUF_INIT;
    bool ok = true;
    while (ok && i < n) {
        nl = memchr(p + i, '\n', n - i);
        struct rec_head h;
        ok = nl && (size_t)(nl - (p + i)) > 4 && memcmp(p + i, "rec ", 4) == 0 &&
             parse_head((const char *)p + i, (size_t)(nl - (p + i)), &h) &&
             ss_hex_decode(&key, h.hexkey, h.hexkey_len) == SS_OK;
        if (!ok)
            break;
        size_t vstart = (size_t)(nl - p) + 1;
        ok = h.len <= n - vstart && vstart + h.len < n && p[vstart + h.len] == '\n';
        if (ok)
            ok = print_record(&h, &key, p + vstart);
        if (ok) {
            (*count)++;
            i = vstart + (size_t)h.len + 1;
        }
    }
    ss_buf_free(&key);
    return ok;
}

int cmd_export(struct cli *cl, ss_client *c)
{
    const char *pattern = cl->nargs ? cl->args[0] : "*";
    char *cursor = NULL;
    long count = 0;
    for (;;) {
        const char *words[] = {"EXPORT", pattern, cursor ? cursor : "", SS_EXPORT_PAGE};
        ss_client_result r;
        int rc = cli_admin_call(cl, c, "export", 4, words, &r);
        free(cursor);
        cursor = NULL;
        if (rc != SS_EXIT_OK) {
            ss_client_result_free(&r);
            return rc;
        }
        bool ok = print_page(r.value, r.value_len, &cursor, &count);
        ss_client_result_free(&r);
        if (!ok) {
            free(cursor);
            cli_fail(cl, SS_E_PROTOCOL, "export: an answer this tool cannot read");
            return SS_EXIT_PROTOCOL;
        }
        if (cursor == NULL)
            break;
    }
    /* A closed pipe or a full disk: no count of records not written
     * (main says why, and exits 4). */
    if (fflush(stdout) != 0 || ferror(stdout))
        return SS_EXIT_CONNECTION;
    fprintf(stderr, "%ld records exported\n", count);
    return SS_EXIT_OK;
}

/* ---- import ------------------------------------------------------------- */

/* The fields import needs from one line; strings borrow the line. */
struct import_line {
    ss_bytes key_b64, value_b64, version, ft;
    bool has_ft, has_exp;
    uint64_t exp;
};

static const char *skip_ws(const char *p)
{
    while (*p == ' ' || *p == '\t' || *p == '\r')
        p++;
    return p;
}

/* Text an MQTT string may carry, as the broker's own library checks it
 * (UTF-8 without control characters or non-characters): a version or a
 * token goes out as a user property, which a client would refuse. */
static bool mqtt_text(const ss_buf *t)
{
    return t->len <= 65535 && mosquitto_validate_utf8((const char *)t->data, (int)t->len) == MOSQ_ERR_SUCCESS;
}

/* A JSON string at p ('"' first): its raw content (escapes left as they
 * are, which the fields import reads never have) and the end. */
static const char *json_string(const char *p, ss_bytes *out)
{
    if (*p != '"')
        return NULL;
    const char *s = ++p;
    while (*p && *p != '"') {
        if (*p == '\\' && p[1])
            p++;
        p++;
    }
    if (*p != '"')
        return NULL;
    out->data = (const uint8_t *)s;
    out->len = (size_t)(p - s);
    return p + 1;
}

/* Parse one line (a flat JSON object) into *l. NULL on success, else why. */
static const char *parse_line(const char *p, struct import_line *l)
{
    memset(l, 0, sizeof *l);
    bool have_key = false, have_value = false, have_version = false;
    p = skip_ws(p);
    if (*p++ != '{')
        return "not a JSON object";
    for (;;) {
        p = skip_ws(p);
        ss_bytes name;
        if ((p = json_string(p, &name)) == NULL)
            return "a field name is expected";
        p = skip_ws(p);
        if (*p++ != ':')
            return "':' is expected";
        p = skip_ws(p);
        ss_bytes sv = {NULL, 0};
        bool is_null = false, is_num = false;
        uint64_t num = 0;
        if (*p == '"') {
            if ((p = json_string(p, &sv)) == NULL)
                return "an unterminated string";
        } else if (strncmp(p, "null", 4) == 0) {
            is_null = true;
            p += 4;
        } else if (*p >= '0' && *p <= '9') {
            is_num = true;
            while (*p >= '0' && *p <= '9') {
                if (num > (UINT64_MAX - 9) / 10)
                    return "a number too large";
                num = num * 10 + (uint64_t)(*p++ - '0');
            }
        } else {
            return "a string, a number or null is expected";
        }
#define IS(lit) (name.len == sizeof(lit) - 1 && memcmp(name.data, lit, name.len) == 0)
        if (IS("key_base64") && sv.data) {
            l->key_b64 = sv;
            have_key = true;
        } else if (IS("value_base64") && sv.data) {
            l->value_b64 = sv;
            have_value = true;
        } else if (IS("version") && sv.data) {
            l->version = sv;
            have_version = true;
        } else if (IS("fencing_token")) {
            l->has_ft = sv.data != NULL;
            l->ft = sv;
            if (!l->has_ft && !is_null)
                return "fencing_token must be a string or null";
        } else if (IS("expires_at_ms")) {
            l->has_exp = is_num;
            l->exp = num;
            if (!is_num && !is_null)
                return "expires_at_ms must be a number or null";
        }
#undef IS
        p = skip_ws(p);
        if (*p == ',') {
            p++;
            continue;
        }
        if (*p == '}')
            break;
        return "',' or '}' is expected";
    }
    if (*skip_ws(p + 1) != '\0')
        return "text after the object's '}'";
    if (!have_key || !have_value || !have_version)
        return "key_base64, value_base64 and version are required";
    return NULL;
}

/* Where imported records go: a new LMDB data directory (built in
 * import.partial inside it, import_dir.c), or a store on an etcd
 * cluster. */
struct import_sink {
    ss_store *s;
    struct import_etcd *e;
    uint64_t now;
    long batch_records;    /* in the open batch */
    uint64_t batch_bytes;  /* their keys and values */
    char why[256];
    struct import_dir dir; /* dir.dir NULL: etcd, or not begun */
};

/* Commit the open batch into DIR's store. */
static int sink_commit(struct import_sink *k)
{
    k->batch_records = 0;
    k->batch_bytes = 0;
    int rc = ss_store_commit(k->s, k->now);
    if (rc != SS_OK)
        snprintf(k->why, sizeof k->why, "%s", ss_store_cause(k->s));
    return rc;
}

/* One record. SS_E_INVAL (and on etcd SS_E_QUOTA) when the record itself
 * cannot be stored; any other failure is the store's (into DIR: the disk,
 * the map). */
static int sink_put(struct import_sink *k, ss_bytes key, const ss_record *rec)
{
    if (k->e)
        return import_etcd_put(k->e, key, rec, k->why, sizeof k->why);
    int rc = SS_OK;
    uint64_t size = (uint64_t)key.len + rec->value.len;
    if (k->batch_records > 0 && k->batch_bytes + size > SS_IMPORT_BATCH_BYTES && (rc = sink_commit(k)) != SS_OK)
        return rc;
    if (!ss_store_in_batch(k->s) && (rc = ss_store_begin(k->s)) != SS_OK) {
        snprintf(k->why, sizeof k->why, "%s", ss_store_cause(k->s));
        return rc;
    }
    if ((rc = ss_store_put(k->s, key, rec)) != SS_OK) {
        if (rc == SS_E_INVAL)
            snprintf(k->why, sizeof k->why, "a key of %zu bytes: the store takes keys of 1 to %zu bytes", key.len,
                     SS_STORE_KEY_MAX);
        else
            snprintf(k->why, sizeof k->why, "%s", ss_store_cause(k->s));
        return rc;
    }
    k->batch_bytes += size;
    if (++k->batch_records == SS_IMPORT_BATCH)
        rc = sink_commit(k);
    return rc;
}

/* Everything written; versions go on above newest (on etcd, brokers
 * merge the versions they read instead). */
static int sink_finish(struct import_sink *k, bool any, const ss_hlc *newest)
{
    if (k->e)
        return import_etcd_finish(k->e, k->why, sizeof k->why);
    int rc = SS_OK;
    if (any && !ss_store_in_batch(k->s))
        rc = ss_store_begin(k->s);
    if (any && rc == SS_OK)
        rc = ss_store_set_clock(k->s, newest->wall, newest->counter);
    if (rc == SS_OK && ss_store_in_batch(k->s))
        rc = ss_store_commit(k->s, k->now);
    if (rc != SS_OK)
        snprintf(k->why, sizeof k->why, "%s", ss_store_cause(k->s));
    return rc;
}

/* Close the store; after a success (ok), put it into DIR. false when
 * that failed (why says how). After a failure on etcd, what the import
 * wrote goes first, record by record while each is still as it wrote it
 * (import_etcd_undo says how that went). */
static bool sink_close(struct import_sink *k, bool ok)
{
    if (!ok && k->e)
        import_etcd_undo(k->e);
    bool whole = true;
    if (k->s) {
        if (ss_store_in_batch(k->s))
            ss_store_abort(k->s);
        /* Every batch into the data file before the close, which would do
         * it too but say nothing of a failure (typically a full disk):
         * the user must hear why. */
        if (ok && ss_store_checkpoint_now(k->s) != SS_OK) {
            snprintf(k->why, sizeof k->why, "%s", ss_store_cause(k->s));
            whole = false;
        }
        ss_store_close(k->s);
        k->s = NULL;
    }
    import_etcd_close(k->e);
    k->e = NULL;
    if (!ok)
        return true;
    return whole && (k->dir.dir == NULL || import_dir_commit(&k->dir, k->why, sizeof k->why) == SS_OK);
}

/* After sink_close: a failed import into DIR leaves it as it found it
 * (empty or absent); then DIR's lock goes. */
static void sink_release(struct import_sink *k, bool failed)
{
    if (failed)
        import_dir_undo(&k->dir);
    import_dir_end(&k->dir);
}

/* Open the destination: DIR, or the cluster of --etcd. in: the input,
 * whose size tells the map DIR's store needs. */
static int sink_open(struct cli *cl, struct import_sink *k, FILE *in)
{
    memset(k, 0, sizeof *k);
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    k->now = (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
    if (cl->etcd_endpoints) {
        if (cl->nargs != 1) {
            usage_error(cl, "import: with --etcd, give FILE alone (no DIR)");
            return SS_EXIT_USAGE;
        }
        int rc = import_etcd_open(cl, &k->e, k->why, sizeof k->why);
        if (rc != SS_OK) {
            cli_fail(cl, rc == SS_E_INVAL ? SS_E_INVAL : SS_E_CONNECTION, "import: etcd at %s: %s",
                     cl->etcd_endpoints, k->why);
            return rc == SS_E_INVAL ? SS_EXIT_USAGE : SS_EXIT_CONNECTION;
        }
        return SS_EXIT_OK;
    }
    if (cl->nargs != 2) {
        usage_error(cl, "import: give FILE and DIR (or FILE and --etcd ENDPOINTS)");
        return SS_EXIT_USAGE;
    }
    const char *dir = cl->args[1];
    int exit_code = import_dir_begin(cl, &k->dir, dir);
    if (exit_code != SS_EXIT_OK)
        return exit_code;
    /* No store-size limit of the import's own: the records came from a
     * store, and the broker that opens DIR applies its max_store_bytes
     * (to the writes after). The map takes them with room to spare: as a
     * broker sizes it for a max_store_bytes of the input's size, which
     * is more than the records (base64, JSON); for a pipe, a large one. */
    ss_store_options so = ss_store_options_default();
    so.path = k->dir.partial;
    so.max_bytes = UINT64_MAX;
    struct stat st;
    so.map_size = fstat(fileno(in), &st) == 0 && S_ISREG(st.st_mode)
                      ? ss_store_map_size(0, st.st_size > 0 ? (uint64_t)st.st_size : 1)
                      : SS_IMPORT_MAP_UNKNOWN;
    int rc = ss_store_open(&so, &k->s);
    while (rc == SS_E_NOMEM && so.map_size / 2 >= SS_IMPORT_MAP_LEAST) {
        so.map_size /= 2; /* the map did not fit: a smaller one (a store too large for it fails as full) */
        rc = ss_store_open(&so, &k->s);
    }
    if (rc != SS_OK) {
        cli_fail(cl, rc, "import: cannot open a store in %s: %s", so.path, ss_strerror(rc));
        k->s = NULL;
        return SS_EXIT_CONNECTION;
    }
    return SS_EXIT_OK;
}

int cmd_import(struct cli *cl, ss_client *c)
{
    (void)c;
    const char *file = cl->args[0];
    const char *dest = cl->etcd_endpoints ? cl->etcd_endpoints : cl->nargs > 1 ? cl->args[1] : "";
    /* The input first: a wrong path must not leave a data directory
     * behind, which every retry would then refuse as not empty. */
    FILE *in = strcmp(file, "-") == 0 ? stdin : fopen(file, "r");
    if (in == NULL) {
        cli_fail(cl, SS_E_INVAL, "import: %s: %s", file, strerror(errno));
        return SS_EXIT_USAGE;
    }
    struct import_sink sink;
    int exit_code = sink_open(cl, &sink, in);
    if (exit_code != SS_EXIT_OK) {
        sink_close(&sink, false);
        sink_release(&sink, true);
        if (in != stdin)
            fclose(in);
        return exit_code;
    }
    uint64_t now = sink.now;
    ss_hlc newest = {0};
    bool any = false;
    char *line = NULL;
    size_t cap = 0;
    ssize_t got;
    long lineno = 0, imported = 0, expired = 0;
    int rc = SS_OK;
    ss_buf key = SS_BUF_INIT, value = SS_BUF_INIT, text = SS_BUF_INIT;
    struct keyset seen;
    if (keyset_init(&seen) != SS_OK) {
        cli_fail(cl, SS_E_NOMEM, "import: %s", ss_strerror(SS_E_NOMEM));
        exit_code = SS_EXIT_CONNECTION;
    }
    while (exit_code == SS_EXIT_OK && (got = getline(&line, &cap, in)) > 0) {
        lineno++;
        if (line[got - 1] == '\n')
            line[--got] = '\0';
        bool nul = strlen(line) < (size_t)got;
        if (!nul && skip_ws(line)[0] == '\0')
            continue;
        struct import_line l;
        const char *why = nul ? "a NUL byte in the line" : parse_line(line, &l);
        ss_record rec;
        memset(&rec, 0, sizeof rec);
        /* The strings as JSON writes them: any character may be escaped
         * (a node id's quote, base64's '/' as "\/"). */
        if (why == NULL && (ss_json_unescape(&text, l.key_b64.data, l.key_b64.len) != SS_OK ||
                            ss_json_base64_decode(&key, text.data, text.len) != SS_OK || key.len == 0))
            why = "key_base64 is not base64 of a non-empty key";
        if (why == NULL && (ss_json_unescape(&text, l.value_b64.data, l.value_b64.len) != SS_OK ||
                            ss_json_base64_decode(&value, text.data, text.len) != SS_OK))
            why = "value_base64 is not base64";
        /* Both go out as MQTT strings (__ts; __ft from clients): UTF-8
         * without control characters or non-characters, or a client must
         * refuse them. */
        if (why == NULL && (ss_json_unescape(&text, l.version.data, l.version.len) != SS_OK ||
                            ss_hlc_parse(text.data, text.len, &rec.version) != SS_OK || !mqtt_text(&text)))
            why = "version is not a timestamp (ms:counter:node, UTF-8 an MQTT string may hold)";
        if (why == NULL && l.has_ft &&
            (ss_json_unescape(&text, l.ft.data, l.ft.len) != SS_OK || ss_hlc_parse(text.data, text.len, &rec.ft) != SS_OK ||
             !mqtt_text(&text)))
            why = "fencing_token is not a timestamp (ms:counter:node, UTF-8 an MQTT string may hold)";
        /* The store's clock starts above the newest version: one far ahead
         * would put every later version as far ahead, and every fencing
         * token made from them would be refused as too far in the future. */
        if (why == NULL &&
            (ss_hlc_too_far_ahead(&rec.version, now) || (l.has_ft && ss_hlc_too_far_ahead(&rec.ft, now))))
            why = "a version or fencing token more than 60 s ahead of this machine's clock (is its clock or "
                  "the exporting broker's wrong?)";
        /* An export holds each key once: a key again is a file put
         * together by hand, and which line should win cannot be told. */
        int dup = why == NULL ? keyset_add(&seen, (ss_bytes){key.data, key.len}) : 0;
        if (dup == SS_E_NOMEM) {
            cli_fail(cl, SS_E_NOMEM, "import: %s line %ld: %s", file, lineno, ss_strerror(SS_E_NOMEM));
            exit_code = SS_EXIT_CONNECTION;
            break;
        }
        /* Versions go out in every __ts of the key's answers: as the
         * server issues them (PROTOCOL.md §4), or the SDKs may refuse them. */
        if (why == NULL && (rec.version.counter > SS_HLC_COUNTER_MAX || rec.version.node_len == 0))
            why = "version has a counter above 2147483647 or an empty node id (the server issues none such)";
        if (dup == 1)
            why = "this key was given on an earlier line already";
        /* No PX makes a deadline further away (and one near 2^64 would
         * wrap where a broker adds to it). */
        if (why == NULL && l.has_exp && l.exp > now && l.exp - now > SS_PX_MAX)
            why = "expires_at_ms is further away than any PX can set (2^53 ms)";
        if (why) {
            cli_fail(cl, SS_E_INVAL, "import: %s line %ld: %s", file, lineno, why);
            exit_code = SS_EXIT_USAGE;
            break;
        }
        if (l.has_exp && l.exp <= now) {
            expired++; /* its deadline passed: it is absent */
            continue;
        }
        rec.value.data = value.data;
        rec.value.len = value.len;
        rec.has_ft = l.has_ft;
        rec.expiry_ms = l.has_exp ? l.exp : 0;
        ss_bytes k = {key.data, key.len};
        if ((rc = sink_put(&sink, k, &rec)) != SS_OK) {
            /* The record's own fault, or the store's (a full disk): the
             * latter is a store that could not be written. */
            bool refused = rc == SS_E_INVAL || (sink.e && rc == SS_E_QUOTA);
            if (refused || sink.e)
                cli_fail(cl, rc, "import: %s line %ld: %s (%s)", file, lineno, ss_strerror(rc), sink.why);
            else
                cli_fail(cl, SS_E_IO, "import: writing %s, at %s line %ld: %s", dest, file, lineno, sink.why);
            exit_code = refused ? SS_EXIT_USAGE : SS_EXIT_CONNECTION;
            break;
        }
        if (!any || ss_hlc_compare(&rec.version, &newest) > 0)
            newest = rec.version;
        any = true;
        imported++;
    }
    if (exit_code == SS_EXIT_OK && ferror(in)) {
        /* getline ends the same way at the end and on a read error. */
        cli_fail(cl, SS_E_INVAL, "import: %s: %s", file, strerror(errno));
        exit_code = SS_EXIT_USAGE;
    }
    if (exit_code == SS_EXIT_OK && (rc = sink_finish(&sink, any, &newest)) != SS_OK) {
        if (sink.e)
            cli_fail(cl, rc, "import: writing %s: %s (%s)", dest, ss_strerror(rc), sink.why);
        else
            cli_fail(cl, SS_E_IO, "import: writing %s: %s", dest, sink.why);
        exit_code = rc == SS_E_INVAL ? SS_EXIT_USAGE : SS_EXIT_CONNECTION;
    }
    if (!sink_close(&sink, exit_code == SS_EXIT_OK)) {
        cli_fail(cl, SS_E_IO, "import: writing %s: %s", dest, sink.why);
        exit_code = SS_EXIT_CONNECTION;
    }
    sink_release(&sink, exit_code != SS_EXIT_OK);
    free(line);
    ss_buf_free(&key);
    ss_buf_free(&value);
    ss_buf_free(&text);
    keyset_free(&seen);
    if (in != stdin)
        fclose(in);
    if (exit_code == SS_EXIT_OK)
        fprintf(stderr, "%ld records imported into %s%s%s (%ld past their deadline left out)\n", imported, dest,
                cl->etcd_endpoints ? ", prefix " : "", cl->etcd_endpoints ? (cl->etcd_prefix ? cl->etcd_prefix : "statestore/") : "",
                expired);
    return exit_code;
}
