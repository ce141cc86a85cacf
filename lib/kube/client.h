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
 *   -EINVAL        400 BadRequest, 422 Invalid (message carries the server's text)
 *   -EACCES        401 Unauthorized
 *   -EPERM         403 Forbidden
 *   -EAGAIN        429 TooManyRequests (retry_after holds Retry-After seconds)
 *   -EIO           5xx, or an unparseable response
 *   -ETIMEDOUT, -ECONNREFUSED, -ECONNRESET   transport failures
 *   -ECANCELED     the request was cancelled or the client freed before it completed
 *
 * Ownership: objects passed in are borrowed for the duration of the call (they are serialised
 * before it returns). The result handed to a callback, and everything it points to, is borrowed
 * for the duration of the callback; detach or duplicate what must outlive it.
 */

#include <stdbool.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "lib/util/err.h"

struct ev_loop;
struct kube_client;
struct kube_config;

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
extern const struct kube_resource KUBE_SERVICES;
extern const struct kube_resource KUBE_SECRETS;
extern const struct kube_resource KUBE_CONFIGMAPS;
extern const struct kube_resource KUBE_EVENTS;
extern const struct kube_resource KUBE_SERVICEACCOUNTS;
extern const struct kube_resource KUBE_NODES;
extern const struct kube_resource KUBE_STATEFULSETS;
extern const struct kube_resource KUBE_LEASES;
extern const struct kube_resource KUBE_CRDS;

struct kube_result {
    int code;           /* 0 or a negative code from the table above */
    long http_status;   /* 0 when the request never got a response */
    cJSON *body;        /* the decoded response body (an object, a list or a Status), or NULL */
    const char *message; /* the server's Status.message or a transport error; never NULL */
    double retry_after; /* seconds from Retry-After on 429/503, else 0 */
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
    const char *resource_version; /* LIST/GET: "0" for any cached version, or exact */
    /* DELETE */
    const char *propagation_policy;     /* "Foreground", "Background", "Orphan" */
    const char *precondition_uid;       /* delete only this incarnation */
    const char *precondition_rv;        /* delete only at this resourceVersion */
    long timeout_ms;                    /* 0: the client's default */
};

/* Creates a client for cfg (borrowed: the client copies what it needs) on loop.
 * Returns 0, -EINVAL (bad configuration, detail in e), -ENOMEM. */
int kube_client_new(struct ev_loop *loop, const struct kube_config *cfg,
                    struct kube_client **ret_client, struct err *e);

/* Cancels every pending request and watch (their callbacks run with -ECANCELED before this
 * returns) and frees the client. Accepts NULL. */
void kube_client_free(struct kube_client *c);

struct ev_loop *kube_client_loop(const struct kube_client *c);

/* Queues one request; done runs later on the loop, exactly once (also on failure).
 * Returns 0 when queued, or a negative code (and done is not called). */
int kube_request_send(struct kube_client *c, const struct kube_request *req, kube_done_fn done,
                      void *userdata);

/* Lists every page (limit per page, following continue tokens). If a continue token expires
 * mid-way (410), restarts with one full, unpaged list. The result body is a List object whose
 * `items` hold every item and whose metadata.resourceVersion is the list's. */
int kube_list_all(struct kube_client *c, const struct kube_request *req, kube_done_fn done,
                  void *userdata);

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
};

/* Called for each event; obj is borrowed for the duration of the call. */
typedef void (*kube_watch_event_fn)(void *userdata, enum kube_watch_event_type type, cJSON *obj);
/* Called once when the stream ends: code 0 (server closed it, e.g. timeoutSeconds), -ESTALE
 * (410, as HTTP status or ERROR event), or another error. The watch is finished; free it. */
typedef void (*kube_watch_end_fn)(void *userdata, int code, const char *message);

int kube_watch_start(struct kube_client *c, const struct kube_resource *res,
                     const struct kube_watch_opts *opts, kube_watch_event_fn on_event,
                     kube_watch_end_fn on_end, void *userdata, struct kube_watch **ret_watch);

/* Stops the watch if still running (on_end is not called) and frees it. Accepts NULL. */
void kube_watch_free(struct kube_watch *w);

/* ---- object helpers (pure) ---- */

/* Borrowed string fields of an object, or NULL. */
const char *kube_obj_name(const cJSON *obj);
const char *kube_obj_namespace(const cJSON *obj);
const char *kube_obj_uid(const cJSON *obj);
const char *kube_obj_resource_version(const cJSON *obj);
/* metadata.labels[key] or metadata.annotations[key], or NULL. */
const char *kube_obj_label(const cJSON *obj, const char *key);
const char *kube_obj_annotation(const cJSON *obj, const char *key);
/* The ownerReference with controller: true, or NULL. */
const cJSON *kube_obj_controller_ref(const cJSON *obj);

#endif
