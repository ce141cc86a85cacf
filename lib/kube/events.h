#ifndef NESTCP_KUBE_EVENTS_H
#define NESTCP_KUBE_EVENTS_H

/*
 * A recorder of core/v1 Events, like client-go's EventRecorder, that never blocks its caller:
 * kube_recorder_event() returns at once and the request runs on the loop; failures are counted
 * in the stats, not reported.
 *
 *   - The first occurrence of (involved object, type, reason, message) creates an Event named
 *     "<object name>.<hex wall-clock nanoseconds>" in the object's namespace ("default" for
 *     cluster-scoped objects). Repeats increment count and lastTimestamp with a merge PATCH; if
 *     the Event has meanwhile gone (Events expire on the server), it is created again. Repeats
 *     while a request for that Event is in flight are folded into one follow-up PATCH. The
 *     recorder remembers the last cache_size distinct events (least recently used first out).
 *   - A spam filter allows each involved object `burst` events at once, then one more every
 *     refill_seconds (client-go: 25, then one per 5 minutes); the rest are dropped and counted.
 *   - Messages are cut to KUBE_EVENT_MESSAGE_MAX bytes (at a UTF-8 character boundary).
 *
 * Messages are visible to anyone who can list Events: never put Secret data, keys or tokens in
 * one.
 */

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "lib/kube/client.h"
#include "lib/util/err.h"

struct ev_loop;
struct kube_recorder;

#define KUBE_EVENT_MESSAGE_MAX 1024

enum kube_event_type {
    KUBE_EVENT_NORMAL,
    KUBE_EVENT_WARNING,
};

/* The object an event is about. Strings are borrowed for the duration of the call. */
struct kube_event_ref {
    const struct kube_resource *resource; /* apiVersion and kind */
    const char *namespace_;               /* NULL or "" for cluster-scoped objects */
    const char *name;                     /* required */
    const char *uid;                      /* recommended: kubectl describe matches on it */
    const char *resource_version;         /* optional */
};

/* A reference to obj (strings borrowed from obj) of the given resource type. */
struct kube_event_ref kube_event_ref_of(const struct kube_resource *resource, const cJSON *obj);

/* Sends one request and calls done later on the loop, exactly once; returns 0, or a negative
 * code and done is not called. kube_request_send() with ctx being the client is the default. */
typedef int (*kube_send_fn)(void *ctx, const struct kube_request *req, kube_done_fn done,
                            void *userdata);

struct kube_recorder_opts {
    const char *component; /* source.component and reportingComponent, e.g. "nestcp" (required) */
    const char *instance;  /* source.host and reportingInstance; NULL: the host name */
    size_t cache_size;     /* distinct events and objects remembered; 0: 4096 */
    int burst;             /* spam filter: events per object at once; 0: 25 */
    double refill_seconds; /* spam filter: one more event per object this often; 0: 300 */
    kube_send_fn send;     /* NULL: kube_request_send on the client */
    void *send_ctx;
};

struct kube_recorder_stats {
    uint64_t recorded;  /* calls to kube_recorder_event */
    uint64_t created;   /* Events created */
    uint64_t patched;   /* Events whose count was raised */
    uint64_t dropped;   /* by the spam filter, or unusable arguments */
    uint64_t failed;    /* requests that failed */
    uint64_t in_flight; /* requests now */
};

/* Creates a recorder on loop that writes through client (which may be NULL when opts->send is
 * set). Strings in opts are copied. Returns 0, -EINVAL (detail in e), -ENOMEM. */
int kube_recorder_new(struct ev_loop *loop, struct kube_client *client,
                      const struct kube_recorder_opts *opts, struct kube_recorder **ret_recorder,
                      struct err *e);

/* Frees the recorder. Requests in flight complete first (their results are dropped), so the
 * client must stay alive or be freed afterwards. Accepts NULL. */
void kube_recorder_free(struct kube_recorder *r);

/* Records an event about ref; the message is a printf format. Never blocks, never fails
 * visibly: what cannot be sent is counted in the stats. */
void kube_recorder_event(struct kube_recorder *r, const struct kube_event_ref *ref,
                         enum kube_event_type type, const char *reason, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
void kube_recorder_eventv(struct kube_recorder *r, const struct kube_event_ref *ref,
                          enum kube_event_type type, const char *reason, const char *fmt,
                          va_list ap) __attribute__((format(printf, 5, 0)));

/* Calls done once on the loop when no request is in flight any more (at shutdown, before
 * freeing the client; in tests). A later call replaces an earlier pending one. */
void kube_recorder_flush(struct kube_recorder *r, void (*done)(void *userdata), void *userdata);

const struct kube_recorder_stats *kube_recorder_stats(const struct kube_recorder *r);

#endif
