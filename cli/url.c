/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* url.c - -L URL: mqtt[s]://[USER[:PASSWORD]@]HOST[:PORT][/], as
 * mosquitto_pub takes it (with no topic: nothing but "/" may follow).
 * USER and PASSWORD are percent-decoded; an IPv6 address goes in
 * brackets. A URL that does not parse is a usage error that says which
 * part is wrong, without repeating the URL (it may hold a password). */
#include <stdlib.h>
#include <string.h>

#include "../core/command.h"
#include "../core/errors.h"
#include "../core/hex.h"
#include "cli.h"

/* Percent-decode n bytes of p into out (room for n + 1), NUL-terminated.
 * Returns 0, or -1 with the bad escape (or %00, which a C string cannot
 * hold) copied into bad (4 bytes). */
static int decode(const char *p, size_t n, char *out, char bad[4])
{
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        if (p[i] != '%') {
            out[k++] = p[i];
            continue;
        }
        int hi = i + 1 < n ? ss_hex_digit(p[i + 1]) : -1;
        int lo = i + 2 < n ? ss_hex_digit(p[i + 2]) : -1;
        if (hi < 0 || lo < 0 || (hi == 0 && lo == 0)) {
            size_t m = n - i < 3 ? n - i : 3;
            memcpy(bad, p + i, m);
            bad[m] = '\0';
            return -1;
        }
        out[k++] = (char)(hi * 16 + lo);
        i += 2;
    }
    out[k] = '\0';
    return 0;
}

int cli_url_apply(struct cli *cl, const char *spelled, const char *url)
{
    static const char form[] = "mqtt[s]://[USER[:PASSWORD]@]HOST[:PORT][/]";
    bool tls;
    const char *p;
    if (strncmp(url, "mqtt://", 7) == 0) {
        tls = false;
        p = url + 7;
    } else if (strncmp(url, "mqtts://", 8) == 0) {
        tls = true;
        p = url + 8;
    } else {
        size_t scheme = strstr(url, "://") ? (size_t)(strstr(url, "://") - url) : 0;
        if (scheme)
            usage_error(cl, "%s: the scheme is mqtt:// or mqtts://, not %.*s:// (%s)", spelled,
                        (int)scheme, url, form);
        else
            usage_error(cl, "%s: a URL starts with mqtt:// or mqtts:// (%s)", spelled, form);
        return -1;
    }
    /* The authority runs to the first '/'; its user part to the last '@'
     * (a '@' of a password is written %40, but be lenient). */
    size_t alen = strcspn(p, "/");
    const char *path = p + alen;
    if (path[0] == '/' && path[1] != '\0' && strchr(path, '@') != NULL) {
        /* A '/' in the user name or password: what follows it is theirs,
         * and is never repeated. */
        usage_error(cl, "%s: a \"/\" in the user name or password is written %%2F", spelled);
        return -1;
    }
    if (path[0] == '/' && path[1] != '\0') {
        usage_error(cl, "%s: nothing may follow HOST:PORT but \"/\" (no topic), not \"%s\"", spelled, path);
        return -1;
    }
    const char *at = NULL;
    for (size_t i = 0; i < alen; i++)
        if (p[i] == '@')
            at = p + i;
    /* One buffer holds the decoded user, password and host. */
    char *buf = malloc(3 * alen + 3);
    if (buf == NULL) {
        usage_error(cl, "%s: out of memory", spelled);
        return -1;
    }
    char *user = NULL, *pass = NULL, *host = buf, bad[4];
    const char *h = p;
    if (at) {
        size_t ulen = (size_t)(at - p);
        const char *colon = memchr(p, ':', ulen);
        size_t nlen = colon ? (size_t)(colon - p) : ulen;
        user = buf;
        if (nlen == 0) {
            usage_error(cl, "%s: the user name before \"@\" is empty", spelled);
            goto fail;
        }
        if (decode(p, nlen, user, bad) != 0) {
            usage_error(cl, "%s: the user name holds a bad %%-escape \"%s\" (%%HH, not %%00)", spelled, bad);
            goto fail;
        }
        if (colon) {
            pass = user + nlen + 1;
            if (decode(colon + 1, ulen - nlen - 1, pass, bad) != 0) {
                usage_error(cl, "%s: the password holds a bad %%-escape \"%s\" (%%HH, not %%00)", spelled,
                            bad);
                goto fail;
            }
            host = pass + (ulen - nlen) + 1;
        } else {
            host = user + nlen + 1;
        }
        h = at + 1;
    }
    size_t hlen = (size_t)(p + alen - h);
    const char *port = NULL;
    size_t plen = 0;
    if (hlen > 0 && h[0] == '[') {
        const char *close = memchr(h, ']', hlen);
        if (close == NULL) {
            usage_error(cl, "%s: an IPv6 address opened with \"[\" needs its \"]\"", spelled);
            goto fail;
        }
        memcpy(host, h + 1, (size_t)(close - h - 1));
        host[close - h - 1] = '\0';
        const char *after = close + 1;
        if (after < p + alen && *after != ':') {
            usage_error(cl, "%s: after \"]\" come \":PORT\", \"/\" or nothing, not \"%.*s\"", spelled,
                        (int)(p + alen - after), after);
            goto fail;
        }
        if (after < p + alen) {
            port = after + 1;
            plen = (size_t)(p + alen - port);
        }
    } else {
        const char *colon = memchr(h, ':', hlen);
        size_t n = colon ? (size_t)(colon - h) : hlen;
        memcpy(host, h, n);
        host[n] = '\0';
        if (colon) {
            port = colon + 1;
            plen = (size_t)(p + alen - port);
        }
    }
    if (host[0] == '\0') {
        usage_error(cl, "%s: the URL names no host (%s)", spelled, form);
        goto fail;
    }
    uint64_t number = 0;
    if (port && (ss_parse_u64((const uint8_t *)port, plen, 65535, &number) != SS_OK || number == 0)) {
        usage_error(cl, "%s: the port is a number from 1 to 65535, not \"%.*s\"", spelled, (int)plen, port);
        goto fail;
    }
    /* A URL without a user keeps -u and -P, but not the user and password
     * of an earlier -L, whose text goes now. */
    if (cl->user_in_url && !user)
        cl->conn.username = NULL;
    if (cl->pass_in_url && !user)
        cl->conn.password = NULL;
    free(cl->url_text);
    cl->url_text = buf;
    cl->conn.host = host;
    cl->conn.port = port ? (int)number : tls ? 8883 : 1883;
    cl->conn.tls = tls;
    if (user) {
        cl->conn.username = user;
        cl->conn.password = pass;
        cl->user_in_url = cl->pass_in_url = true;
    }
    return 0;
fail:
    free(buf);
    return -1;
}

int cli_port(const ss_client_options *conn)
{
    if (conn->port)
        return conn->port;
    /* As the client library picks it (client/connect.c): a client
     * certificate turns TLS on as a CA does. */
    return conn->cafile || conn->capath || conn->certfile || conn->tls ? 8883 : 1883;
}
