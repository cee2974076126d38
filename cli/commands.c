/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* commands.c - set, get, del, vdel and watch. */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../core/errors.h"
#include "cli.h"

static uint8_t *read_stream(FILE *f, size_t *len)
{
    size_t cap = 4096, n = 0;
    uint8_t *buf = malloc(cap);
    size_t got;
    while (buf && (got = fread(buf + n, 1, cap - n, f)) > 0) {
        n += got;
        if (n == cap) {
            uint8_t *p = realloc(buf, cap * 2);
            if (p == NULL) {
                free(buf);
                return NULL;
            }
            buf = p;
            cap *= 2;
        }
    }
    if (buf && ferror(f)) {
        free(buf);
        return NULL;
    }
    *len = n;
    return buf;
}

uint8_t *read_value(struct cli *cl, int i, size_t *len, int *rc)
{
    *rc = SS_EXIT_USAGE;
    if (cl->file) {
        FILE *f = fopen(cl->file, "rb");
        if (f == NULL) {
            cli_fail(cl, SS_E_INVAL, "cannot open %s: %s", cl->file, strerror(errno));
            return NULL;
        }
        errno = 0;
        uint8_t *v = read_stream(f, len);
        int err = errno;
        fclose(f);
        if (v == NULL)
            cli_fail(cl, SS_E_INVAL, "cannot read %s: %s", cl->file, strerror(err ? err : EIO));
        return v;
    }
    if (strcmp(cl->args[i], "-") == 0) {
        errno = 0;
        uint8_t *v = read_stream(stdin, len);
        if (v == NULL)
            cli_fail(cl, SS_E_INVAL, "cannot read standard input: %s", strerror(errno ? errno : EIO));
        return v;
    }
    *len = strlen(cl->args[i]);
    uint8_t *v = malloc(*len + 1);
    if (v)
        memcpy(v, cl->args[i], *len + 1);
    return v;
}

/* The value after KEY (argument, -f FILE or -): the value, or NULL and
 * *rc. The number of arguments was checked before connecting. */
static uint8_t *key_and_value(struct cli *cl, size_t *vlen, int *rc)
{
    return read_value(cl, 1, vlen, rc);
}

static void json_version(const ss_client_result *r)
{
    printf(",\"version\":");
    if (r->version[0])
        out_json_string((const uint8_t *)r->version, strlen(r->version));
    else
        printf("null");
}

int cmd_set(struct cli *cl, ss_client *c)
{
    size_t vlen;
    int rc;
    uint8_t *value = key_and_value(cl, &vlen, &rc);
    if (value == NULL)
        return rc;
    ss_set_options o = {.condition = cl->nx ? SS_SET_NX : cl->nex ? SS_SET_NEX : SS_SET_ALWAYS,
                        .px_ms = cl->px_ms,
                        .fencing_token = cl->fencing_token};
    ss_client_result r;
    int st = ss_client_set(c, cl->args[0], strlen(cl->args[0]), value, vlen, &o, &r);
    free(value);
    if (st != SS_OK) {
        report_failure(cl, "set", st, &r);
        ss_client_result_free(&r);
        return exit_for(st);
    }
    if (cl->json) {
        printf("{\"applied\":%s", r.applied ? "true" : "false");
        json_version(&r);
        printf("}\n");
    } else if (r.applied) {
        printf("OK\n");
    } else if (cl->repl) {
        printf("(nil)\n"); /* as redis-cli answers a SET NX not applied */
    } else {
        out_error("not set: the condition (%s) did not hold", cl->nx ? "NX" : "NEX");
    }
    rc = r.applied ? SS_EXIT_OK : SS_EXIT_CONDITION;
    ss_client_result_free(&r);
    return rc;
}

int cmd_get(struct cli *cl, ss_client *c)
{
    int rc;
    ss_client_result r;
    int st = ss_client_get(c, cl->args[0], strlen(cl->args[0]), &r);
    if (st != SS_OK) {
        report_failure(cl, "get", st, &r);
        ss_client_result_free(&r);
        return exit_for(st);
    }
    if (cl->json) {
        printf("{\"found\":%s", r.found ? "true" : "false");
        if (r.found) {
            printf(",\"value\":");
            out_json_string(r.value, r.value_len);
            printf(",\"value_base64\":\"");
            out_base64(r.value, r.value_len);
            printf("\"");
        }
        json_version(&r);
        printf("}\n");
    } else if (cl->repl) {
        if (r.found)
            out_quoted(r.value, r.value_len);
        else
            printf("(nil)");
        putchar('\n');
    } else if (r.found) {
        /* Raw bytes, no newline added, so that files and pipes get the
         * value exactly; on a terminal a newline keeps the prompt apart. */
        fwrite(r.value, 1, r.value_len, stdout);
        if (isatty(STDOUT_FILENO) && (r.value_len == 0 || r.value[r.value_len - 1] != '\n'))
            putchar('\n');
    }
    if (!r.found && !cl->json && !cl->repl)
        out_note_terminal("(not found)");
    rc = r.found ? SS_EXIT_OK : SS_EXIT_NOT_FOUND;
    ss_client_result_free(&r);
    return rc;
}

static int finish_delete(struct cli *cl, int st, ss_client_result *r)
{
    if (st != SS_OK) {
        report_failure(cl, cl->command, st, r);
        ss_client_result_free(r);
        return exit_for(st);
    }
    if (cl->json) {
        printf("{\"deleted\":%lld", (long long)r->count);
        json_version(r);
        printf("}\n");
    } else {
        printf("%s%lld\n", cl->repl ? "(integer) " : "", (long long)r->count);
    }
    int rc = r->count == 1 ? SS_EXIT_OK : r->count == 0 ? SS_EXIT_NOT_FOUND : SS_EXIT_CONDITION;
    ss_client_result_free(r);
    return rc;
}

int cmd_del(struct cli *cl, ss_client *c)
{
    ss_client_result r;
    int st = ss_client_del(c, cl->args[0], strlen(cl->args[0]), cl->fencing_token, &r);
    return finish_delete(cl, st, &r);
}

int cmd_vdel(struct cli *cl, ss_client *c)
{
    size_t vlen;
    int rc;
    uint8_t *value = key_and_value(cl, &vlen, &rc);
    if (value == NULL)
        return rc;
    ss_client_result r;
    int st = ss_client_vdel(c, cl->args[0], strlen(cl->args[0]), value, vlen, cl->fencing_token, &r);
    free(value);
    return finish_delete(cl, st, &r);
}

/* ---- watch ------------------------------------------------------------ */

/* What the network thread tells the main thread of `watch`, under mu: it
 * prints notifications and connection events, and records a reconnect
 * (the patterns are registered again from the main thread, since a
 * blocking call may not run on the network thread) and the status of a
 * key's re-registration that the broker refused. */
struct watch_state {
    const struct cli *cl;
    pthread_mutex_t mu;
    bool reconnected;
    bool out_failed; /* standard output cannot be written (a closed pipe) */
    int refused; /* SS_OK, or the status of a refused re-registration */
};

static void on_notify(void *ud, const ss_notification *n)
{
    struct watch_state *ws = ud;
    pthread_mutex_lock(&ws->mu);
    if (ws->cl->json) {
        printf("{\"key\":");
        out_json_string(n->key, n->key_len);
        printf(",\"key_base64\":\"");
        out_base64(n->key, n->key_len);
        printf("\",\"operation\":\"%s\"", n->deleted ? "DELETE" : "SET");
        if (!n->deleted) {
            printf(",\"value\":");
            out_json_string(n->value, n->value_len);
            printf(",\"value_base64\":\"");
            out_base64(n->value, n->value_len);
            printf("\"");
        }
        printf(",\"version\":");
        out_json_string((const uint8_t *)n->version, strlen(n->version));
        printf("}\n");
    } else {
        /* A field as the key's: a node id may hold a space. */
        out_escaped((const uint8_t *)n->version, strlen(n->version));
        printf(" %s ", n->deleted ? "DELETE" : "SET");
        out_escaped(n->key, n->key_len);
        if (!n->deleted) {
            putchar(' ');
            out_escaped(n->value, n->value_len);
        }
        putchar('\n');
    }
    if (fflush(stdout) != 0 || ferror(stdout))
        ws->out_failed = true;
    pthread_mutex_unlock(&ws->mu);
}

static void on_connection(void *ud, bool connected, bool gap)
{
    struct watch_state *ws = ud;
    pthread_mutex_lock(&ws->mu);
    ws->reconnected = ws->reconnected || connected;
    if (!connected) {
        out_error("connection lost; reconnecting");
    } else if (gap) {
        out_error("reconnected; notifications may have been missed while away");
        if (ws->cl->json) {
            printf("{\"event\":\"gap\"}\n");
            fflush(stdout);
        }
    }
    pthread_mutex_unlock(&ws->mu);
}

/* A key's KEYNOTIFY failed again after a reconnect. Refused by the broker
 * (a limit reached meanwhile): `watch` ends, as for a pattern, rather than
 * go on watching less. Lost again: the next reconnect tries it again. */
static void on_rewatch(void *ud, const void *key, size_t key_len, const ss_client_result *r)
{
    struct watch_state *ws = ud;
    if (r->status == SS_E_CONNECTION || r->status == SS_E_TIMEOUT)
        return;
    pthread_mutex_lock(&ws->mu);
    if (ws->refused == SS_OK) {
        ws->refused = r->status;
        fputs("statestore: watch: the broker refused to register ", stderr);
        out_escaped_to(stderr, key, key_len);
        fputs(" again after the reconnect\n", stderr);
        report_failure(ws->cl, "watch", r->status, r);
        fflush(stdout);
    }
    pthread_mutex_unlock(&ws->mu);
}

/* WATCH (or WATCH ... STOP) every --pattern on the administrative topic. */
static int watch_patterns(struct cli *cl, ss_client *c, bool stop)
{
    for (int i = 0; i < cl->npatterns; i++) {
        const char *words[] = {"WATCH", cl->patterns[i], "STOP"};
        ss_client_result r;
        int rc = cli_admin_call(cl, c, "watch", stop ? 3 : 2, words, &r);
        ss_client_result_free(&r);
        if (rc != SS_EXIT_OK)
            return rc;
    }
    return SS_EXIT_OK;
}

/* Until SIGINT or SIGTERM, or a registration refused after a reconnect:
 * the patterns are registered again after each reconnect (the client
 * library registers the keys again itself). */
static int watch_until_stopped(struct cli *cl, ss_client *c, struct watch_state *ws, sigset_t *stop)
{
    const struct timespec tick = {0, 200 * 1000 * 1000};
    int sig;
    while ((sig = sigtimedwait(stop, NULL, &tick)) < 0) {
        pthread_mutex_lock(&ws->mu);
        bool again = ws->reconnected;
        ws->reconnected = false;
        int refused = ws->refused;
        bool out_failed = ws->out_failed;
        pthread_mutex_unlock(&ws->mu);
        if (refused != SS_OK)
            return exit_for(refused);
        if (out_failed)
            return SS_EXIT_CONNECTION; /* main says why */
        int rc;
        if (again && cl->npatterns && (rc = watch_patterns(cl, c, false)) != SS_EXIT_OK) {
            /* Lost again meanwhile: at the next tick. Refused (a limit
             * reached meanwhile, the rules changed): a watch that no
             * longer watches must not go on as if it did. */
            if (rc != SS_EXIT_CONNECTION)
                return rc;
            pthread_mutex_lock(&ws->mu);
            ws->reconnected = true;
            pthread_mutex_unlock(&ws->mu);
        }
    }
    /* SIGTERM ends the program, not only the watch: raised again, it
     * stays pending (blocked) and ends it where it is let through, before
     * the next line of commands from a pipe or at the prompt. */
    if (sig == SIGTERM)
        raise(SIGTERM);
    return SS_EXIT_OK;
}

int cmd_watch(struct cli *cl, ss_client *c)
{
    /* SIGINT/SIGTERM are taken synchronously below, in this thread. */
    sigset_t stop;
    sigemptyset(&stop);
    sigaddset(&stop, SIGINT);
    sigaddset(&stop, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &stop, NULL);
    struct watch_state ws = {.cl = cl, .refused = SS_OK};
    pthread_mutex_init(&ws.mu, NULL);
    ss_client_set_notify_cb(c, on_notify, &ws);
    ss_client_set_connection_cb(c, on_connection, &ws);
    ss_client_set_rewatch_cb(c, on_rewatch, &ws);
    int rc = SS_EXIT_OK;
    for (int i = 0; i < cl->nargs && rc == SS_EXIT_OK; i++) {
        ss_client_result r;
        int st = ss_client_keynotify(c, cl->args[i], strlen(cl->args[i]), false, &r);
        if (st != SS_OK) {
            report_failure(cl, "watch", st, &r);
            rc = exit_for(st);
        }
        ss_client_result_free(&r);
    }
    if (rc == SS_EXIT_OK)
        rc = watch_patterns(cl, c, false);
    if (rc == SS_EXIT_OK) {
        rc = watch_until_stopped(cl, c, &ws, &stop);
        for (int i = 0; i < cl->nargs; i++)
            ss_client_keynotify(c, cl->args[i], strlen(cl->args[i]), true, NULL);
        watch_patterns(cl, c, true);
    }
    /* No callback may use ws once this returns. */
    ss_client_set_notify_cb(c, NULL, NULL);
    ss_client_set_connection_cb(c, NULL, NULL);
    ss_client_set_rewatch_cb(c, NULL, NULL);
    pthread_mutex_destroy(&ws.mu);
    return rc;
}
