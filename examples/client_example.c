/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* client_example.c - the statestore C client in one page.
 *
 * Build:  cc client_example.c $(pkg-config --cflags --libs statestore) -o client_example
 * Run:    ./client_example [HOST] [PORT]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <statestore/client.h>
#include <statestore/errors.h>
#include <statestore/lease.h>

static void on_change(void *ud, const ss_notification *n)
{
    (void)ud;
    printf("notified: %.*s %s\n", (int)n->key_len, (const char *)n->key,
           n->deleted ? "deleted" : "set");
}

/* Add one to a decimal counter (absent counts as 0). */
static int increment(void *ud, const uint8_t *value, size_t len, bool found, uint8_t **new_value,
                     size_t *new_len, bool *delete_key)
{
    (void)ud;
    (void)delete_key;
    char text[32] = "0";
    if (found)
        snprintf(text, sizeof text, "%.*s", (int)len, (const char *)value);
    *new_value = malloc(32);
    if (*new_value == NULL)
        return SS_E_NOMEM;
    *new_len = (size_t)snprintf((char *)*new_value, 32, "%ld", strtol(text, NULL, 10) + 1);
    return 0;
}

int main(int argc, char **argv)
{
    ss_client_options opts = {
        .host = argc > 1 ? argv[1] : "localhost",
        .port = argc > 2 ? atoi(argv[2]) : 1883,
        .timeout_ms = 5000, /* no client_id: a unique one is generated */
    };
    ss_client *c;
    int rc = ss_client_connect(&opts, &c);
    if (rc != 0) {
        fprintf(stderr, "connect: %s\n", ss_strerror(rc));
        return 1;
    }
    ss_client_set_notify_cb(c, on_change, NULL);
    ss_client_keynotify(c, "greeting", 8, false, NULL);

    /* SET with an expiry; the answer carries the key's new version. */
    ss_client_result r;
    ss_set_options px = {.px_ms = 60000};
    rc = ss_client_set(c, "greeting", 8, "hello", 5, &px, &r);
    printf("set: %s\n", rc == 0 && r.applied ? "applied" : ss_strerror(rc));
    ss_client_result_free(&r);

    /* GET: the value, byte for byte. */
    rc = ss_client_get(c, "greeting", 8, &r);
    if (rc == 0 && r.found)
        printf("get: %.*s\n", (int)r.value_len, (const char *)r.value);
    ss_client_result_free(&r);

    /* Read-modify-write under a lock, with a fencing token. The holder
     * must be unique to this process (the client's generated id is), or
     * two copies of this program could both hold the lock. */
    rc = ss_lease_edit(c, "counter-lock", ss_client_id(c), 5000, 5000, "counter", 7, increment, NULL);
    printf("increment: %s\n", ss_strerror(rc));

    rc = ss_client_del(c, "greeting", 8, NULL, &r);
    printf("del: %lld\n", (long long)r.count);
    ss_client_result_free(&r);

    /* Wait (briefly) for the DELETE notification before leaving. */
    ss_client_wait_notification(c, 1, 2000);
    ss_client_close(c);
    return 0;
}
