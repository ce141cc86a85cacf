#ifndef NESTCP_KUBE_CLIENT_H
#define NESTCP_KUBE_CLIENT_H

/*
 * The asynchronous Kubernetes REST client: every call is queued on one libcurl multi handle
 * driven by the caller's libev loop, and completes through a callback on that loop. Objects are
 * cJSON trees; there are no generated types. This module knows nothing of nestcp's kinds.
 *
 * Error codes (struct kube_result.code), mapped once from HTTP status and Status.reason:
 *   0              2xx
 *   -ENOENT        404 NotFound
 *   -EEXIST        409 AlreadyExists
 *   -EBUSY         409 Conflict (optimistic concurrency)
 *   -ESTALE        410 Gone / Expired ("too old resource version", expired continue token)
 *   -ERANGE        504 with cause ResourceVersionTooLarge: the server has not reached the
 *                  resourceVersion asked for (it lags, or its etcd was restored from a backup)
 *   -EINVAL        400 BadRequest, 422 Invalid (message carries the server's text)
 *   -EACCES        401 Unauthorized
 *   -EPERM         403 Forbidden
 *   -EAGAIN        429 TooManyRequests (retry_after holds Retry-After seconds)
 *   -EIO           5xx, or an unparseable response
 *   -ETIMEDOUT, -ECONNREFUSED, -ECONNRESET   transport failures
 *   -EFBIG         the response body passed the client's cap (KUBE_BODY_MAX)
 *   -ECANCELED     the request was cancelled or the client freed before it completed
 *
 * The process must ignore SIGPIPE (as `nestcp manager` does): libcurl is used with
 * CURLOPT_NOSIGNAL, and its TLS writes on a connection closed by the peer, or shut down by the
 * health check, would otherwise raise it.
 *
 * Ownership: objects passed in are borrowed for the duration of the call (they are serialised
 * before it returns). The result handed to a callback, and everything it points to, is borrowed
 * for the duration of the callback; detach or duplicate what must outlive it.
 */

#include <stdbool.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "lib/kube/object.h"
#include "lib/util/err.h"

struct ev_loop;
struct kube_call;
struct kube_client;
struct kube_config;
struct kube_list;

/* Bound on one response body; a larger one fails the request with -EFBIG. */
#define KUBE_BODY_MAX ((size_t)64 << 20)
/* Default bound on one watch event line (see struct kube_watch_opts.max_line). */
#define KUBE_WATCH_LINE_MAX ((size_t)16 << 20)

/* A resource type. Strings are borrowed and must outlive every request that uses it
 * (static tables are the usual home). */
struct kube_resource {
    const char *group;    /* "" for the core group */
    const char *version;  /* "v1" */
    const char *resource; /* plural, lower case: "statefulsets" */
    const char *kind;     /* "StatefulSet" */
    bool namespaced;
};

/* Well-known resources. */
extern const struct kube_resource KUBE_NAMESPACES;
extern const struct kube_resource KUBE_PODS;
extern const struct kube_resource KUBE_PVCS;
extern const struct kube_resource KUBE_SERVICES;
extern const struct kube_resource KUBE_SECRETS;
extern const struct kube_resource KUBE_CONFIGMAPS;
extern const struct kube_resource KUBE_EVENTS;
extern const struct kube_resource KUBE_SERVICEACCOUNTS;
extern const struct kube_resource KUBE_NODES;
extern const struct kube_resource KUBE_STATEFULSETS;
extern const struct kube_resource KUBE_LEASES;
extern const struct kube_resource KUBE_CRDS;
extern const struct kube_resource KUBE_JOBS;
extern const struct kube_resource KUBE_NETWORKPOLICIES;
extern const struct kube_resource KUBE_TOKENREVIEWS;
extern const struct kube_resource KUBE_SUBJECTACCESSREVIEWS;

struct kube_result {
    int code;            /* 0 or a negative code from the table above */
    long http_status;    /* 0 when the request never got a response */
    cJSON *body;         /* the decoded response body (an object, a list or a Status), or NULL */
    const char *message; /* the server's Status.message or a transport error; never NULL */
    double retry_after;  /* seconds from Retry-After on 429/503, else 0 */
};

typedef void (*kube_done_fn)(void *userdata, const struct kube_result *result);

enum kube_verb {
    KUBE_GET,
    KUBE_LIST, /* one page; see kube_list_all for every page */
    KUBE_CREATE,
    KUBE_UPDATE, /* PUT */
    KUBE_PATCH,
    KUBE_DELETE,
};

enum kube_patch_type {
    KUBE_PATCH_MERGE, /* application/merge-patch+json (RFC 7386) */
    KUBE_PATCH_JSON,  /* application/json-patch+json (RFC 6902) */
    KUBE_PATCH_APPLY, /* application/apply-patch+yaml (server-side apply) */
};

/* One request. Unset fields are zero/NULL. */
struct kube_request {
    enum kube_verb verb;
    const struct kube_resource *resource;
    const char *namespace_;  /* NULL for cluster-scoped resources or all namespaces */
    const char *name;        /* GET, UPDATE, PATCH, DELETE; CREATE takes it from the body */
    const char *subresource; /* "status", or NULL */
    const cJSON *body;       /* CREATE, UPDATE, PATCH (the patch document), DELETE (options) */
    enum kube_patch_type patch_type;
    const char *field_manager; /* PATCH apply (required there), CREATE, UPDATE */
    bool force;                /* PATCH apply: take ownership of conflicting fields */
    bool dry_run;              /* dryRun=All */
    /* LIST */
    const char *label_selector;
    const char *field_selector;
    long limit;
    const char *continue_token;
    const char *resource_version;       /* LIST/GET: "0" for any cached version, or exact */
    const char *resource_version_match; /* LIST: "NotOlderThan" or "Exact", with the above */
    /* DELETE */
    const char *propagation_policy; /* "Foreground", "Background", "Orphan" */
    const char *precondition_uid;   /* delete only this incarnation */
    const char *precondition_rv;    /* delete only at this resourceVersion */
    long timeout_ms;                /* 0: the client's default */
    /* Sent without waiting for one of the max_sending slots (the leader's lease: its renewal
     * must not wait behind a burst of writes). */
    bool urgent;
};

/* Creates a client for cfg (borrowed: the client copies what it needs) on loop.
 * Returns 0, -EINVAL (bad configuration, detail in e), -ENOMEM. */
int kube_client_new(struct ev_loop *loop, const struct kube_config *cfg,
                    struct kube_client **ret_client, struct err *e);

/* Cancels every pending request and watch (their callbacks run with -ECANCELED before this
 * returns) and frees the client. Must not be called from inside one of this client's
 * callbacks. Accepts NULL. */
void kube_client_free(struct kube_client *c);

struct ev_loop *kube_client_loop(const struct kube_client *c);

/* The namespace of the configuration's context (or the pod's, in a cluster); never NULL. */
const char *kube_client_namespace(const struct kube_client *c);

/* Automatic retry of a request answered 429 with a Retry-After: up to max_retries more
 * attempts, each after the server's delay capped at max_wait seconds. Defaults: 3 and 30 s.
 * max_retries 0 hands every 429 to the caller (code -EAGAIN, retry_after set). */
void kube_client_set_retry(struct kube_client *c, int max_retries, double max_wait);

/* Default per-request timeout in milliseconds (60000 unless changed). */
void kube_client_set_timeout(struct kube_client *c, long timeout_ms);

/* One rate limit for everything the client sends (requests, their retries, list pages, watch
 * starts; not the health check): a token bucket of `burst` requests refilled at `qps` per
 * second. A request without a token waits, in order, without blocking the loop; its timeout
 * starts when it is sent. qps <= 0 (the default) sends everything at once. */
void kube_client_set_rate_limit(struct kube_client *c, double qps, int burst);

/* The most requests on the wire at once (watches and the health check not counted); the others
 * wait, in order, without blocking the loop, and their timeouts start when they are sent.
 * libcurl holds about 25 KiB for each write on the wire (its receive and upload buffers), so
 * a burst of writes that the API server can only take in turn anyway costs memory and no time.
 * 0 lifts the limit. KUBE_CLIENT_MAX_SENDING by default. */
#define KUBE_CLIENT_MAX_SENDING 24
void kube_client_set_max_sending(struct kube_client *c, size_t n);

/*
 * The connection health check. A connection can go silent without closing (a peer that hangs,
 * a NAT or load balancer that forgot it); TCP keepalive takes minutes to notice, if ever, and
 * libcurl 7.88 sends no HTTP/2 PING on a multi handle's connections. So, while requests or
 * watches are in flight and no byte has come from the server for idle_seconds (default 15), the
 * client sends one GET /version with a timeout of timeout_seconds (default 10). When that gets
 * no answer, every connection that stayed silent since it was sent is shut down: its watches
 * end with a connection error (informers resume them from their last resourceVersion), and
 * its requests, other than creates, are sent once more on a new connection. A create ends
 * with the connection error, since it may have been applied. A dead connection is so found
 * within idle + timeout seconds of its last byte (25 s by default).
 * Values <= 0 restore the defaults.
 */
void kube_client_set_health_check(struct kube_client *c, double idle_seconds,
                                  double timeout_seconds);

/* Counters since the client was created. */
struct kube_client_stats {
    unsigned long requests;          /* HTTP requests sent, including retries and list pages */
    unsigned long retries;           /* automatic retries after 429 */
    unsigned long lists;             /* LIST requests (each page counts) */
    unsigned long watches;           /* watch streams opened */
    unsigned long pending;           /* requests and watches in flight now */
    unsigned long health_checks;     /* health check GETs sent (not counted in requests) */
    unsigned long dead_connections;  /* connections shut down by the health check */
    unsigned long reconnect_retries; /* requests sent again after their connection died */
    unsigned long throttled;         /* requests and watches that waited for the rate limit */
    unsigned long sending;           /* requests on the wire now (watches not counted) */
    unsigned long slot_waits;        /* requests that waited for one of the max_sending slots */
    unsigned long ca_reloads;        /* times the CA file changed and was loaded */
    unsigned long ca_errors;         /* times it changed and could not be used (old CA kept) */
};
void kube_client_get_stats(const struct kube_client *c, struct kube_client_stats *ret_stats);

/* Queues one request; done runs later on the loop, exactly once (also on failure).
 * Returns 0 when queued, or a negative code (and done is not called). */
int kube_request_send(struct kube_client *c, const struct kube_request *req, kube_done_fn done,
                      void *userdata);

/* Like kube_request_send, and hands back a handle for kube_call_cancel (ret_call may be NULL).
 * The handle is valid until done has run. */
int kube_request_start(struct kube_client *c, const struct kube_request *req, kube_done_fn done,
                       void *userdata, struct kube_call **ret_call);

/* Cancels a request still in flight: done runs now, with -ECANCELED. Must not be called from
 * inside that request's own done callback. */
void kube_call_cancel(struct kube_call *call);

/* Lists every page (limit per page, following continue tokens). If a continue token expires
 * mid-way (410), restarts with one full, unpaged list. The result body is a List object whose
 * `items` hold every item and whose metadata.resourceVersion is the list's. */
int kube_list_all(struct kube_client *c, const struct kube_request *req, kube_done_fn done,
                  void *userdata);

/* Like kube_list_all, and hands back a handle for kube_list_cancel (ret_list may be NULL).
 * The handle is valid until done has run. */
int kube_list_start(struct kube_client *c, const struct kube_request *req, kube_done_fn done,
                    void *userdata, struct kube_list **ret_list);

/* Cancels a list still in flight: done runs now, with -ECANCELED. Must not be called from
 * inside that list's own done callback. */
void kube_list_cancel(struct kube_list *list);

/* Runs the loop until the request completes and returns its code; the body, if ret_body is
 * not NULL, is handed to the caller (free with cJSON_Delete). For tests and one-shot tools
 * only, never inside the manager's loop. */
int kube_request_sync(struct kube_client *c, const struct kube_request *req, cJSON **ret_body,
                      struct err *e);

/* ---- watches ---- */

enum kube_watch_event_type {
    KUBE_WATCH_ADDED,
    KUBE_WATCH_MODIFIED,
    KUBE_WATCH_DELETED,
    KUBE_WATCH_BOOKMARK,
};

struct kube_watch;

struct kube_watch_opts {
    const char *namespace_;
    const char *label_selector;
    const char *field_selector;
    const char *resource_version; /* start after this version */
    long timeout_seconds;         /* server-side timeoutSeconds; 0: server default */
    bool allow_bookmarks;
    /* A stream that delivers no byte for this long is treated as dead and ended with
     * -ETIMEDOUT; 0: 90 s with bookmarks (the server sends one about every minute), else
     * timeout_seconds (or 1800 s) plus 60 s. This is the second line behind the client's
     * connection health check (kube_client_set_health_check); TCP keepalive is always on. */
    long idle_timeout_seconds;
    size_t max_line; /* bound on one event line; 0: KUBE_WATCH_LINE_MAX */
};

/* Called for each event; obj is borrowed for the duration of the call (see
 * kube_watch_steal_object to keep it). kube_watch_free may be called from here. */
typedef void (*kube_watch_event_fn)(void *userdata, enum kube_watch_event_type type, cJSON *obj);
/* Called once when the stream ends: code 0 (server closed it, e.g. timeoutSeconds), -ESTALE
 * (410, as HTTP status or ERROR event), or another error. The watch is finished; free it. */
typedef void (*kube_watch_end_fn)(void *userdata, int code, const char *message);

int kube_watch_start(struct kube_client *c, const struct kube_resource *res,
                     const struct kube_watch_opts *opts, kube_watch_event_fn on_event,
                     kube_watch_end_fn on_end, void *userdata, struct kube_watch **ret_watch);

/* Stops the watch if still running (on_end is not called) and frees it. May be called from
 * on_event and on_end. Accepts NULL. */
void kube_watch_free(struct kube_watch *w);

/* Only inside on_event: takes ownership of the event's object (the caller cJSON_Deletes it),
 * so a cache can keep it without a copy. Returns NULL outside on_event. */
cJSON *kube_watch_steal_object(struct kube_watch *w);

/* Events delivered so far. */
unsigned long kube_watch_events(const struct kube_watch *w);

/* Lines skipped so far: not an event (not JSON, no "type" or "object"), or of an unknown type.
 * The stream goes on after them. */
unsigned long kube_watch_skipped(const struct kube_watch *w);

#endif
