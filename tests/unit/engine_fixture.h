/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* engine_fixture.h - an engine on the LMDB backend with a fake clock and a
 * fake caller, as the engine's tests (test_engine*.c) drive it: requests
 * given as words, the response, version and change feed kept as text. */
#ifndef SS_TEST_ENGINE_FIXTURE_H
#define SS_TEST_ENGINE_FIXTURE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "../../core/backend_lmdb.h"
#include "../../core/engine.h"
#include "../test.h"

#define T0 1700000000000ull /* the fake wall clock starts here */

struct fx {
    ss_store_options so;
    ss_store *store;
    ss_backend *be;
    ss_engine *eng;
    uint64_t now;
    ss_buf resp;
    bool has_version;
    char version[SS_HLC_TEXT_MAX + 1];
    int status;
    /* events, as text lines "SET key=value @version" / "DELETE key @version" */
    char events[8192];
    /* KEYNOTIFY registrations of the fake caller */
    char watched[16][64];
    int nwatched;
};

/* The engine's KEYNOTIFY handler, ctx the struct fx: registers the key in
 * watched (16 at most, then the quota error); the caller must be ctx. */
int on_keynotify(void *ctx, void *caller, ss_bytes key, bool stop);
/* Open the store in the test's directory, its backend and an engine. */
void fx_attach(struct fx *f, const ss_engine_options *eo);
/* fx_attach with on_keynotify as the only option. */
void fx_open(struct fx *f);
/* Commit, then take the change feed into f->events. */
void fx_events(struct fx *f);
/* Commit, and forget the changes so far. */
void fx_drop_events(struct fx *f);
/* Default store options, the clock at T0, then fx_open. */
void fx_init(struct fx *f);
/* Commit, then close the engine, backend and store (f->so stays, so that
 * fx_open opens them again). */
void fx_close(struct fx *f);
/* fx_close, and free the response. */
void fx_free(struct fx *f);
/* Run one request given as words; ts/ft NULL when absent. The response is
 * in f->resp (as a C string too: payloads in these tests have no NUL
 * unless the test looks at resp.len). */
void run_argv(struct fx *f, const char *ts, const char *ft, size_t argc, const ss_bytes *argv);
/* run_argv with the words as arguments, the last one NULL. */
void run(struct fx *f, const char *ts, const char *ft, ...);
/* A client timestamp equal to the fake wall clock. */
const char *now_ts(struct fx *f);

#define RESP(f, lit) ASSERT_BUF((f)->resp, lit)
#define VERSION(f, lit) ASSERT_MEM((f)->version, strlen((f)->version), lit, strlen(lit))
#define NO_VERSION(f) ASSERT_TRUE(!(f)->has_version)
#define EVENTS(f, lit)                                                                  \
    do {                                                                                \
        fx_events(f);                                                                   \
        ASSERT_MEM((f)->events, strlen((f)->events), lit, strlen(lit));                 \
        (f)->events[0] = '\0';                                                          \
    } while (0)

#endif
