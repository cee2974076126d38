/* plugin.h - the state store inside Mosquitto 2.0: shared state of the
 * plugin's files. Everything lives in one struct ss_plugin passed to every
 * callback as userdata; there are no globals (the same .so may be loaded
 * twice and would share them).
 *
 * Flow: MESSAGE (request.c) checks a request and runs it through the engine
 * inside the open batch; its answer and the notifications it causes wait in
 * the outbox (outbox.c). TICK (tick.c), once per broker loop iteration,
 * sweeps expired keys, commits the batch, and only then publishes the
 * outbox: nothing is acknowledged before it is durable. A commit that
 * waits for the disk (fsync=always, or a checkpoint) runs on the
 * committer's thread (committer.c); requests that arrive meanwhile wait in
 * a queue and form the next batch.
 */
#ifndef SS_PLUGIN_H
#define SS_PLUGIN_H

#include <stdbool.h>
#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>

#include <mosquitto_broker.h>
#include <mosquitto_plugin.h>
#include <mosquitto.h>
#include <mqtt_protocol.h>

#include "../core/acl.h"
#include "../core/dedup.h"
#include "../core/engine.h"
#include "../core/store.h"
#include "../core/watch.h"

#define SS_GUID "FA9AE35F-2F64-47CD-9BFF-08E2B32A0FE8"
#define SS_REQUEST_TOPIC "statestore/v1/" SS_GUID "/command/invoke"
#define SS_NOTIFY_PREFIX "clients/statestore/v1/" SS_GUID
#define SS_TOPIC_MAX 65535u
#define SS_TOPIC_LEVELS_MAX 200u /* the broker's TOPIC_HIERARCHY_LIMIT */
#define SS_SWEEP_PER_TICK 1000u

struct ss_plugin_options {
    char *data_dir;
    char *node_id;
    enum ss_sync_policy sync;
    uint64_t sync_interval_ms;
    uint64_t checkpoint_interval_ms; /* journal into the data file at most this often */
    uint64_t journal_max_bytes;      /* ...or when the journal reaches this size */
    uint64_t max_keys;
    uint64_t max_store_bytes;
    uint64_t map_size;
    uint64_t max_key_length;
    uint64_t max_registrations_per_client;
    uint64_t max_registrations;
    uint64_t dedup_window_ms;
    uint64_t dedup_max_entries;
    uint64_t dedup_max_bytes;
    uint64_t max_queued_bytes; /* requests waiting for a commit on the thread */
    uint64_t max_value_bytes; /* derived from the broker's message_size_limit */
    char *acl_file;           /* key ACL; NULL: everything allowed */
    bool topic_protection;
    int other_topics;         /* SS_OTHER_TOPICS_* */
    int log_level; /* MOSQ_LOG_* bits that are printed */
};

/* What the ACL check answers for topics that are not the state store's:
 * allow them (nothing else decides access), or defer to the acl_file or
 * the other plugins. */
enum { SS_OTHER_TOPICS_AUTO = 0, SS_OTHER_TOPICS_ALLOW, SS_OTHER_TOPICS_DEFER };

/* The client a request comes from, for KEYNOTIFY and authorization. */
struct ss_caller {
    const char *id;
    const char *username; /* NULL when none */
    bool gone;            /* disconnected while its request waited in the queue */
};

/* A message waiting for the batch's commit. */
struct ss_outmsg {
    char *clientid; /* NULL: a response, routed to subscribers; else a notification for this client */
    char *topic;
    uint8_t *payload;
    size_t payload_len;
    mosquitto_property *props;
    uint8_t *corr; /* responses: correlation data, kept to rebuild the answer on failure */
    uint16_t corr_len;
    bool engine_answer; /* the answer depends on the commit */
};

struct ss_outbox {
    struct ss_outmsg *msgs;
    size_t len, cap;
};

/* The thread that runs the commits that wait for the disk and the periodic
 * fsync (committer.c). */
struct ss_committer {
    ss_store *store;
    pthread_t thread;
    pthread_t broker; /* woken when a commit is done */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int state;  /* under mu */
    int job;    /* under mu: SS_JOB_* */
    int result; /* under mu */
    bool stop;  /* under mu */
    bool resident; /* one thread for the plugin's life; else one per job */
    bool live;     /* a thread was started and not yet joined */
    bool started;
    bool pending; /* broker thread only: a commit submitted and not yet collected */
    bool syncing; /* broker thread only: a periodic sync submitted and not yet collected */
    struct sigaction old_action;
};

enum { SS_JOB_COMMIT, SS_JOB_SYNC };

struct ss_reqqueue; /* requests waiting for the commit under way (request.c) */

struct ss_plugin {
    mosquitto_plugin_id_t *id;
    struct ss_plugin_options opt;
    ss_store *store;
    ss_engine *engine;
    ss_watch *watch;
    ss_dedup *dedup;
    uint64_t dedup_mark;
    struct ss_outbox outbox;
    ss_buf scratch;
    ss_buf topic;
    uint64_t refused; /* requests refused since start, for logs */
    ss_acl *acl;      /* NULL: everything allowed */
    bool defer_other_topics;
    struct ss_committer committer; /* started with fsync=always */
    struct ss_reqqueue *queue;
};

/* options.c: defaults, then plugin_opt_* lines. Logs and returns
 * MOSQ_ERR_INVAL naming the option on an unknown option or a bad value. */
int ss_options_parse(struct ss_plugin_options *o, struct mosquitto_opt *opts, int n);
void ss_options_free(struct ss_plugin_options *o);
void ss_options_log(const struct ss_plugin_options *o, uint64_t keys);

/* broker_conf.c: settings of the broker's config file that matter here. */
struct ss_broker_conf {
    uint64_t message_size_limit; /* MQTT's maximum when unset or unknown */
    bool has_acl_file;
    int other_plugins; /* plugin / auth_plugin lines naming another library */
};
void ss_read_broker_conf(struct ss_broker_conf *bc);
/* Bytes a SET value may have so that its notification (the largest
 * message it causes) fits within the message size limit. */
#define SS_NOTIFY_OVERHEAD 50u /* 36 bytes of header, "$" + 9 digits + CR LF, CR LF */

/* log.c-style helper: print when level is enabled. */
void ss_log(const struct ss_plugin *p, int level, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* request.c */
int ss_on_message(int event, void *event_data, void *userdata);
/* The queue of requests that wait for a commit under way. */
int ss_queue_new(struct ss_plugin *p);
/* Run the requests that waited for the last commit, in arrival order. */
void ss_queue_run(struct ss_plugin *p);
/* A client disconnected: its waiting requests still run, but a KEYNOTIFY
 * among them registers nothing (its registrations were just dropped). */
void ss_queue_client_gone(struct ss_plugin *p, const char *client_id);
void ss_queue_free(struct ss_plugin *p);

/* committer.c: the committing thread. start installs the wake-up signal's
 * handler and, when resident, starts the thread (else each submit starts
 * one, and collect joins it); submit hands over a prepared batch (SS_JOB_COMMIT, after
 * ss_store_commit_prepare) or a periodic sync (SS_JOB_SYNC, after
 * ss_store_sync_start); collect returns true with the job's result once
 * it is done; stop completes a job under way (collect it afterwards) and
 * ends the thread; destroy frees everything (stopping first if needed). */
int ss_committer_start(struct ss_committer *c, ss_store *store, bool resident);
void ss_committer_submit(struct ss_committer *c, int job);
bool ss_committer_collect(struct ss_committer *c, int *rc);
/* Block until the submitted commit is done, then collect it. */
void ss_committer_wait(struct ss_committer *c, int *rc);
void ss_committer_stop(struct ss_committer *c);
void ss_committer_destroy(struct ss_committer *c);

/* notify.c */
void ss_on_engine_event(void *ctx, const ss_event *ev);
int ss_on_keynotify(void *ctx, void *caller, ss_bytes key, bool stop);
int ss_on_disconnect(int event, void *event_data, void *userdata);

/* protect.c: topic protection (MOSQ_EVT_ACL_CHECK), key authorization,
 * and the ACL file reload (MOSQ_EVT_RELOAD). */
int ss_on_acl_check(int event, void *event_data, void *userdata);
int ss_on_reload(int event, void *event_data, void *userdata);
bool ss_authorize(void *ctx, void *caller, enum ss_access access, ss_bytes key);
/* Load opt.acl_file into p->acl (replacing it only on success). */
int ss_acl_reload(struct ss_plugin *p);

/* tick.c */
int ss_on_tick(int event, void *event_data, void *userdata);
/* fsync=always: wait for the commit under way, publish its answers and
 * run the queued requests as the next batch (not handed over yet). */
void ss_commit_wait(struct ss_plugin *p);
uint64_t ss_wall_ms(void);

/* outbox.c: queue a message; takes ownership of clientid, topic, payload,
 * props and corr, all heap memory (freed on failure too; a NULL topic is a
 * failure). 0 or MOSQ_ERR_NOMEM. */
int ss_outbox_push(struct ss_outbox *ob, char *clientid, char *topic, uint8_t *payload, size_t len,
                   mosquitto_property *props, uint8_t *corr, uint16_t corr_len, bool engine_answer);
/* Move the last message to position pos (an answer goes out before the
 * notifications its request caused). */
void ss_outbox_move_last_to(struct ss_outbox *ob, size_t pos);
/* Replace every engine answer with "-ERR <text of err>" and drop the
 * notifications: the batch they came from did not commit. */
void ss_outbox_fail(struct ss_outbox *ob, int err);
/* Publish everything and empty the outbox. */
void ss_outbox_flush(struct ss_plugin *p);
void ss_outbox_free(struct ss_outbox *ob);
/* Response properties: correlation data, __stat, content type, __protVer,
 * and __ts when version is non-NULL. NULL on allocation failure. */
mosquitto_property *ss_response_props(const uint8_t *corr, uint16_t corr_len, const char *stat,
                                      const char *version);

#endif
