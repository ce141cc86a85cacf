#ifndef NESTCP_KUBE_INFORMER_H
#define NESTCP_KUBE_INFORMER_H

/*
 * A cache of one resource type kept current by list-then-watch, optionally scoped to a
 * namespace, a label selector and a field selector.
 *
 * - The first list is paged and reads the latest state; then a watch resumes from the list's
 *   resourceVersion, with bookmarks (unless disabled), and each watch asks the server to end it
 *   after a random 5-10 minutes (configurable), after which it resumes from the last
 *   resourceVersion (bookmarks included) without a relist. A watch that ends on a connection
 *   error resumes the same way, after a backoff.
 * - A 410 (HTTP status or ERROR event in the stream) relists at the last resourceVersion
 *   (resourceVersionMatch=NotOlderThan, served from the API server's cache). If that list is
 *   itself 410, or either answers 504 ResourceVersionTooLarge (the server lags, or its etcd
 *   was restored to an earlier revision), the informer lists without a resourceVersion.
 *   Deletions missed while disconnected are delivered after a relist (on_delete with
 *   final_state_unknown).
 * - With bookmarks, a watch that ends (server timeout or the stream's idle timeout) without a
 *   single event or bookmark is followed by a one-item list at the last resourceVersion
 *   (NotOlderThan) before the next watch: silence may mean the server went back in time (its
 *   etcd was restored) and filters out every event as older than ours, and that read then
 *   answers 504 ResourceVersionTooLarge, after which the informer lists what the server has.
 *   On a quiet resource it costs one cached read per watch period.
 * - Watch lines that are not events are skipped and counted (stats.bad_events); the stream
 *   goes on, and its end is followed by a relist instead of a resume, since a skipped line may
 *   have been a change.
 * - Failures back off exponentially with jitter, from about 0.8 s up to 30 s; so do watches
 *   that end in under a second without an event. A 404 (the resource is not served, e.g. its
 *   CRD was deleted) is such a failure, unless the handlers have on_gone: then the informer
 *   stops and tells its owner.
 * - metadata.managedFields is dropped from cached objects, and each object goes through the
 *   transform of the options, if any, before it is cached or handed to a handler. The cache
 *   keeps it as compact JSON text and parses it again when it is read (lib/kube/store.h):
 *   cached objects, and those handed to handlers, are only read, never changed or taken apart.
 *
 * Handlers run on the loop; objects passed to them are borrowed for the duration of the call.
 * Lookups return borrowed pointers that stay valid until control returns to the loop (the next
 * event may replace the object, and the informer and its owner trim the parsed trees then:
 * kube_informer_trim).
 */

#include <stdbool.h>
#include <stddef.h>

#include <cjson/cJSON.h>

#include "lib/kube/client.h"
#include "lib/kube/store.h"

struct kube_informer;

struct kube_informer_opts {
    const struct kube_resource *resource;
    const char *namespace_;     /* NULL: all namespaces */
    const char *label_selector; /* NULL: everything */
    const char *field_selector;
    long page_size;             /* list page size; 0: 500 */
    long watch_timeout_seconds; /* each watch asks for a random timeout in [t, 2t]; 0: 300 */
    size_t max_line;            /* bound on one watch event; 0: KUBE_WATCH_LINE_MAX */
    bool disable_bookmarks;     /* do not ask for BOOKMARK events */
    long watch_idle_seconds;    /* with bookmarks: end a watch silent this long; 0: 90 */
    /* As client-go's TransformFunc: called with every object the server sends (listed,
     * added, modified, deleted) before it is cached or handed to a handler; it may remove in
     * place what the program never reads (lib/kube/transform.h). Returns false for an object
     * that is not to be cached at all: one cached under its name before is then removed and
     * handed to on_delete (final_state_unknown false), and no handler sees the object itself.
     * NULL: everything is cached as it came, but metadata.managedFields. */
    bool (*transform)(void *ctx, cJSON *obj);
    void *transform_ctx;
    /* The cache's index (kube_store_set_index; kube_store_foreach_indexed); NULL: none. */
    kube_store_index_fn index;
};

struct kube_informer_handlers {
    void (*on_add)(void *userdata, const cJSON *obj);
    void (*on_update)(void *userdata, const cJSON *old_obj, const cJSON *new_obj);
    /* final_state_unknown: the deletion was found by a relist, obj is the last cached state. */
    void (*on_delete)(void *userdata, const cJSON *obj, bool final_state_unknown);
    /* After the first complete list has been applied. */
    void (*on_synced)(void *userdata);
    /* Optional. The server does not serve the resource (404 on a list, a watch or a
     * resourceVersion check: e.g. its CRD was deleted). Without this handler the informer
     * retries after a backoff, as after other failures; with it, the informer stops (no
     * retry, its cache as it was) and calls it last, so the handler may free the informer. */
    void (*on_gone)(void *userdata);
};

struct kube_informer_stats {
    unsigned long lists; /* complete lists applied (1 + relists) */
    unsigned long list_failures;
    unsigned long watches;        /* watch streams opened */
    unsigned long watch_timeouts; /* streams that ended quietly (server timeout, or silent for
                                   * watch_idle_seconds with bookmarks), then resumed */
    unsigned long watch_expired;  /* streams ended by 410 (then relisted) */
    unsigned long watch_errors;   /* other stream failures (then resumed after a backoff) */
    unsigned long events;         /* watch events applied, bookmarks included */
    unsigned long missed_deletes; /* deletions found by a relist */
    unsigned long lists_at_rv;    /* lists that asked for the last resourceVersion */
    unsigned long rv_too_large;   /* 504 ResourceVersionTooLarge answers (list or watch) */
    unsigned long silent_watches; /* watches with bookmarks that ended without an event */
    unsigned long rv_checks;      /* one-item reads after a silent watch */
    unsigned long bad_events;     /* watch lines skipped: not events, or of unknown types */
    unsigned long left_out;       /* objects the transform left out of the cache */
    unsigned long superseded;     /* watch events older than the version a write cached */
    double last_backoff;          /* seconds of the last wait before a retry */
};

/* Creates an informer (not started). Strings in opts are copied. handlers may be NULL.
 * Returns 0, -EINVAL, -ENOMEM. */
int kube_informer_new(struct kube_client *c, const struct kube_informer_opts *opts,
                      const struct kube_informer_handlers *handlers, void *userdata,
                      struct kube_informer **ret_informer);

/* Starts the first list. Returns 0 or a negative code. */
int kube_informer_start(struct kube_informer *inf);

/* Stops everything (no handler runs after this) and frees the cache. Must not be called from
 * inside one of its handlers. Accepts NULL. */
void kube_informer_free(struct kube_informer *inf);

bool kube_informer_synced(const struct kube_informer *inf);
/* The resourceVersion the next watch resumes from ("" before the first list). */
const char *kube_informer_resource_version(const struct kube_informer *inf);
void kube_informer_get_stats(const struct kube_informer *inf, struct kube_informer_stats *ret);

/* An object this program has just written, as the server answered the write: it replaces the
 * cached one at once when both resourceVersions are numbers and its is greater, as client-go's
 * MutationCache does, so that a reconcile before the watch event reads what was written (and
 * its next write carries the current resourceVersion). Watch events of the versions before it
 * that arrive after it are then dropped (stats.superseded), not stored over it. It goes through the
 * transform; no handler runs (the watch event that follows tells them). An object not cached is
 * left out (it may not match the selector). Returns 1 when stored, 0 when not, -ENOMEM. */
int kube_informer_observe_write(struct kube_informer *inf, const cJSON *obj);

/* Cached object at ns/name (ns NULL for cluster-scoped), or NULL. */
const cJSON *kube_informer_get(const struct kube_informer *inf, const char *ns, const char *name);
size_t kube_informer_count(const struct kube_informer *inf);

/* The cache itself, read-only (for views that hand several caches to pure functions).
 * Borrowed for the informer's lifetime; the same validity rule as lookups applies to objects. */
const struct kube_store *kube_informer_store(const struct kube_informer *inf);
/* Frees the cache's parsed trees beyond its budget (kube_store_trim): only where no object read
 * from it is still in use. Accepts NULL. */
void kube_informer_trim(struct kube_informer *inf);

/* Iteration; fn returns false to stop. Do not start or stop informers from fn. */
typedef bool (*kube_informer_each_fn)(void *userdata, const cJSON *obj);
void kube_informer_foreach(const struct kube_informer *inf, kube_informer_each_fn fn,
                           void *userdata);
void kube_informer_foreach_in_namespace(const struct kube_informer *inf, const char *ns,
                                        kube_informer_each_fn fn, void *userdata);
/* Objects whose controller ownerReference (controller: true) has owner_uid. */
void kube_informer_foreach_owned(const struct kube_informer *inf, const char *owner_uid,
                                 kube_informer_each_fn fn, void *userdata);
size_t kube_informer_count_owned(const struct kube_informer *inf, const char *owner_uid);
size_t kube_informer_count_in_namespace(const struct kube_informer *inf, const char *ns);

/* The delay before retry number `failures` (1, 2, ...): min(30, 0.8 * 2^(failures-1)) s,
 * scaled by a jitter factor in [0.5, 1.0]. 0 for failures <= 0. */
double kube_informer_backoff(int failures, double jitter01);

/* For tests and tools: applies a complete list (the body of a List) to the cache exactly as
 * the informer does after a relist, calling the handlers. Returns 0 or a negative code. */
int kube_informer_apply_list(struct kube_informer *inf, cJSON *list);

#endif
