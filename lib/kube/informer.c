#include "lib/kube/informer.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <ev.h>

#include "lib/kube/store.h"
#include "lib/util/strutil.h"

#define DEFAULT_PAGE_SIZE 500
#define DEFAULT_WATCH_TIMEOUT 300
#define BACKOFF_BASE 0.8
#define BACKOFF_CAP 30.0
#define SHORT_WATCH_SECONDS 1.0
/* With bookmarks, a watch that hears nothing for this long is ended by the client (the server
 * sends a bookmark about once a minute when anything moved; see kube_watch_opts). */
#define WATCH_IDLE_SECONDS 90L

enum next_step {
    NEXT_LIST,
    NEXT_WATCH,
    NEXT_CHECK, /* ask whether the server has reached our resourceVersion, then watch */
};

struct kube_informer {
    struct kube_client *c;
    struct ev_loop *loop;
    const struct kube_resource *resource;
    char *ns, *label_selector, *field_selector;
    long page_size, watch_timeout, watch_idle;
    size_t max_line;
    struct kube_informer_handlers h;
    void *userdata;
    bool (*transform)(void *ctx, cJSON *obj);
    void *transform_ctx;
    struct kube_store store;
    char *rv;
    bool synced;
    bool bookmarks;
    bool rv_unavailable;          /* the server lost rv or has not reached it: list without one */
    bool listing_at_rv;           /* the list in flight asks for rv (NotOlderThan) */
    bool relist_next;             /* events were skipped: relist instead of resuming the watch */
    unsigned long skipped_before; /* lines skipped by earlier watches */
    struct kube_watch *watch;
    struct kube_list *listing;  /* the list in flight */
    struct kube_call *checking; /* the resourceVersion check in flight */
    ev_timer retry;
    enum next_step next;
    int failures;
    double watch_started;
    unsigned long watch_events;
    uint64_t rng;
    struct kube_informer_stats stats;
};

double kube_informer_backoff(int failures, double jitter01)
{
    double d = BACKOFF_BASE;

    if (failures <= 0)
        return 0;
    for (int i = 1; i < failures && d < BACKOFF_CAP; i++)
        d *= 2;
    if (d > BACKOFF_CAP)
        d = BACKOFF_CAP;
    if (jitter01 < 0)
        jitter01 = 0;
    if (jitter01 > 1)
        jitter01 = 1;
    return d * (0.5 + 0.5 * jitter01);
}

static double random01(struct kube_informer *inf)
{
    /* xorshift64*: jitter only, nothing secret. */
    inf->rng ^= inf->rng >> 12;
    inf->rng ^= inf->rng << 25;
    inf->rng ^= inf->rng >> 27;
    return (double)((inf->rng * 2685821657736338717ull) >> 11) / 9007199254740992.0;
}

/* Makes obj what the cache holds; false: it is not to be cached. */
static bool transform(struct kube_informer *inf, cJSON *obj)
{
    cJSON *meta = cJSON_GetObjectItemCaseSensitive(obj, "metadata");

    cJSON_DeleteItemFromObjectCaseSensitive(meta, "managedFields");
    return !inf->transform || inf->transform(inf->transform_ctx, obj);
}

static void set_rv(struct kube_informer *inf, const char *rv)
{
    char *copy;

    if (!rv || !rv[0] || (inf->rv && strcmp(inf->rv, rv) == 0))
        return;
    copy = strdup(rv);
    if (!copy)
        return; /* keep the older one: a resume from it is still correct */
    free(inf->rv);
    inf->rv = copy;
}

static bool same_rv(const cJSON *a, const cJSON *b)
{
    const char *ra = kube_obj_resource_version(a), *rb = kube_obj_resource_version(b);

    return ra && rb && strcmp(ra, rb) == 0;
}

/* A resourceVersion as a number, or 0 when it is not one. */
static unsigned long long rv_number(const cJSON *obj)
{
    const char *rv = kube_obj_resource_version(obj);
    unsigned long long n = 0;

    if (!rv || !rv[0] || strlen(rv) > 19)
        return 0;
    for (; *rv; rv++) {
        if (*rv < '0' || *rv > '9')
            return 0;
        n = n * 10 + (unsigned long long)(*rv - '0');
    }
    return n;
}

int kube_informer_observe_write(struct kube_informer *inf, const cJSON *obj)
{
    const cJSON *cur = kube_store_get(&inf->store, kube_obj_namespace(obj), kube_obj_name(obj));
    unsigned long long have = cur ? rv_number(cur) : 0, got = rv_number(obj);
    cJSON *copy;
    int r;

    if (!cur || !have || got <= have)
        return 0;
    if (!(copy = cJSON_Duplicate(obj, true)))
        return -ENOMEM;
    if (!transform(inf, copy)) {
        cJSON_Delete(copy);
        return 0;
    }
    r = kube_store_put(&inf->store, copy, NULL);
    return r < 0 ? r : 1;
}

/* Stores obj (owned) and tells the handlers. */
static void upsert(struct kube_informer *inf, cJSON *obj, bool from_list)
{
    cJSON *old = NULL;

    if (!transform(inf, obj)) {
        /* Not ours (any more): what was cached of it goes, as if deleted. */
        inf->stats.left_out++;
        if (kube_store_remove(&inf->store, kube_obj_namespace(obj), kube_obj_name(obj) ?: "",
                              &old) == 0 &&
            old && inf->h.on_delete)
            inf->h.on_delete(inf->userdata, old, false);
        cJSON_Delete(old);
        cJSON_Delete(obj);
        return;
    }
    if (kube_store_put(&inf->store, obj, &old) < 0)
        return;
    if (!old) {
        if (inf->h.on_add)
            inf->h.on_add(inf->userdata, obj);
    } else if (!(from_list && same_rv(old, obj))) {
        if (inf->h.on_update)
            inf->h.on_update(inf->userdata, old, obj);
    }
    cJSON_Delete(old);
}

static void swept(void *userdata, const cJSON *obj)
{
    struct kube_informer *inf = userdata;

    inf->stats.missed_deletes++;
    if (inf->h.on_delete)
        inf->h.on_delete(inf->userdata, obj, true);
}

int kube_informer_apply_list(struct kube_informer *inf, cJSON *list)
{
    cJSON *items = cJSON_GetObjectItemCaseSensitive(list, "items"), *it;
    const char *rv = kube_obj_resource_version(list);

    if (!rv || (items && !cJSON_IsArray(items)))
        return -EINVAL;
    kube_store_mark_begin(&inf->store);
    while (items && (it = cJSON_DetachItemFromArray(items, 0))) {
        upsert(inf, it, true);
        kube_store_trim(&inf->store); /* the handlers are done with what they read */
    }
    kube_store_sweep(&inf->store, swept, inf);
    set_rv(inf, rv);
    inf->stats.lists++;
    if (!inf->synced) {
        inf->synced = true;
        if (inf->h.on_synced)
            inf->h.on_synced(inf->userdata);
    }
    return 0;
}

static void start_list(struct kube_informer *inf);
static void start_watch(struct kube_informer *inf);
static void start_check(struct kube_informer *inf);

static void schedule(struct kube_informer *inf, enum next_step next, double delay)
{
    inf->next = next;
    inf->stats.last_backoff = delay;
    ev_timer_stop(inf->loop, &inf->retry);
    ev_timer_set(&inf->retry, delay, 0.);
    ev_timer_start(inf->loop, &inf->retry);
}

/* Schedules next after one more failure. */
static void back_off(struct kube_informer *inf, enum next_step next)
{
    inf->failures++;
    schedule(inf, next, kube_informer_backoff(inf->failures, random01(inf)));
}

static void retry_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
    struct kube_informer *inf = w->data;

    if (inf->next == NEXT_LIST)
        start_list(inf);
    else if (inf->next == NEXT_CHECK)
        start_check(inf);
    else
        start_watch(inf);
}

/* A 404 (the resource is not served) with an on_gone handler: the informer stops and tells
 * its owner. The caller returns at once, since the handler may have freed the informer. */
static bool gone(struct kube_informer *inf, int code)
{
    if (code != -ENOENT || !inf->h.on_gone)
        return false;
    inf->h.on_gone(inf->userdata);
    return true;
}

static void list_done(void *userdata, const struct kube_result *res)
{
    struct kube_informer *inf = userdata;

    inf->listing = NULL;
    if (res->code == -ECANCELED)
        return;
    if (res->code == -ENOENT && inf->h.on_gone) {
        inf->stats.list_failures++;
        gone(inf, res->code);
        return;
    }
    if ((res->code == -ESTALE || res->code == -ERANGE) && inf->listing_at_rv) {
        /* The server no longer has our resourceVersion (410) or has not reached it (504
         * ResourceVersionTooLarge, e.g. after its etcd was restored): list what it has now. */
        inf->stats.list_failures++;
        if (res->code == -ERANGE)
            inf->stats.rv_too_large++;
        inf->rv_unavailable = true;
        schedule(inf, NEXT_LIST, 0);
        return;
    }
    if (res->code < 0 || kube_informer_apply_list(inf, res->body) < 0) {
        inf->stats.list_failures++;
        back_off(inf, NEXT_LIST);
        return;
    }
    inf->rv_unavailable = false;
    inf->relist_next = false;
    start_watch(inf);
}

/* The first list reads the latest state (a quorum read); a relist asks for data not older
 * than the last resourceVersion seen (served from the API server's watch cache), unless the
 * server lost or never reached that version. */
static void start_list(struct kube_informer *inf)
{
    struct kube_request req = {
        .verb = KUBE_LIST,
        .resource = inf->resource,
        .namespace_ = inf->ns,
        .label_selector = inf->label_selector,
        .field_selector = inf->field_selector,
        .limit = inf->page_size,
    };

    inf->listing_at_rv = inf->synced && inf->rv && !inf->rv_unavailable;
    if (inf->listing_at_rv) {
        req.resource_version = inf->rv;
        req.resource_version_match = "NotOlderThan";
        inf->stats.lists_at_rv++;
    }

    if (kube_list_start(inf->c, &req, list_done, inf, &inf->listing) < 0) {
        inf->stats.list_failures++;
        back_off(inf, NEXT_LIST);
    }
}

static void check_done(void *userdata, const struct kube_result *res)
{
    struct kube_informer *inf = userdata;

    inf->checking = NULL;
    if (res->code == -ECANCELED || gone(inf, res->code))
        return;
    if (res->code == -ERANGE || res->code == -ESTALE) {
        /* The server is behind our resourceVersion: it lost history, or its etcd went back
         * in time. Everything cached may be wrong: list what it has now. */
        inf->stats.rv_too_large += res->code == -ERANGE;
        inf->rv_unavailable = true;
        start_list(inf);
        return;
    }
    if (res->code < 0) {
        back_off(inf, NEXT_WATCH);
        return;
    }
    start_watch(inf);
}

/* One item at our resourceVersion (NotOlderThan, from the API server's cache): an answer
 * means the server has reached it, a 504 ResourceVersionTooLarge that it has not. */
static void start_check(struct kube_informer *inf)
{
    struct kube_request req = {
        .verb = KUBE_LIST,
        .resource = inf->resource,
        .namespace_ = inf->ns,
        .label_selector = inf->label_selector,
        .field_selector = inf->field_selector,
        .limit = 1,
        .resource_version = inf->rv,
        .resource_version_match = "NotOlderThan",
    };

    if (!inf->rv) {
        start_list(inf);
        return;
    }
    inf->stats.rv_checks++;
    if (kube_request_start(inf->c, &req, check_done, inf, &inf->checking) < 0)
        back_off(inf, NEXT_CHECK);
}

/* Whether the cache already holds a later version of obj: one this program wrote and cached
 * (kube_informer_observe_write) before the watch brought the versions between. Compared as
 * observe_write compares them, when both resourceVersions are numbers. */
static bool superseded(struct kube_informer *inf, const cJSON *obj)
{
    const cJSON *cur = kube_store_get(&inf->store, kube_obj_namespace(obj), kube_obj_name(obj));
    unsigned long long have = cur ? rv_number(cur) : 0, got = rv_number(obj);

    return have && got && got < have;
}

static void watch_event(void *userdata, enum kube_watch_event_type type, cJSON *obj)
{
    struct kube_informer *inf = userdata;
    cJSON *own;

    inf->stats.events++;
    inf->watch_events++;
    set_rv(inf, kube_obj_resource_version(obj));
    switch (type) {
    case KUBE_WATCH_ADDED:
    case KUBE_WATCH_MODIFIED:
        own = kube_watch_steal_object(inf->watch);
        if (own && superseded(inf, own)) {
            /* Storing it would put an older version back, and the next write would carry a
             * resourceVersion that is no longer current (a 409); the event of the version
             * cached comes later and tells the handlers. */
            inf->stats.superseded++;
            cJSON_Delete(own);
        } else if (own) {
            upsert(inf, own, false);
        }
        break;
    case KUBE_WATCH_DELETED:
        if (kube_store_remove(&inf->store, kube_obj_namespace(obj), kube_obj_name(obj) ?: "",
                              NULL) == 0) {
            transform(inf, obj);
            if (inf->h.on_delete)
                inf->h.on_delete(inf->userdata, obj, false);
        }
        break;
    case KUBE_WATCH_BOOKMARK:
    default:
        break;
    }
}

static void watch_end(void *userdata, int code, const char *message)
{
    struct kube_informer *inf = userdata;
    double ran = time_mono() - inf->watch_started;
    bool short_lived = ran < SHORT_WATCH_SECONDS;
    /* The idle timeout of a stream on a healthy connection (the client's health check ends a
     * dead one well before it) is a quiet end, like the server's timeoutSeconds; a connect
     * timeout comes much sooner and is an error. */
    bool quiet_end = code == 0 || (code == -ETIMEDOUT && ran >= inf->watch_idle);
    unsigned long skipped = kube_watch_skipped(inf->watch);
    enum next_step next;

    inf->skipped_before += skipped;
    kube_watch_free(inf->watch);
    inf->watch = NULL;
    if (code == -ECANCELED)
        return;
    if (code == -ENOENT && inf->h.on_gone) {
        inf->stats.watch_errors++;
        gone(inf, code);
        return;
    }
    if (skipped) {
        /* Lines that were not events may have been changes: the cache may miss them, so
         * the next step is a relist (at the last resourceVersion), not a resume. */
        inf->relist_next = true;
    }
    if (code == -ESTALE || code == -ERANGE) {
        /* Our resourceVersion is gone from the server's history (410), or ahead of it (504
         * ResourceVersionTooLarge): relist, the first time at once, repeated ones with a
         * backoff. After a 410 the relist asks for the last resourceVersion (NotOlderThan);
         * after a 504 it lists whatever the server has. */
        if (code == -ESTALE) {
            inf->stats.watch_expired++;
        } else {
            inf->stats.rv_too_large++;
            inf->rv_unavailable = true;
        }
        schedule(inf, NEXT_LIST, kube_informer_backoff(inf->failures, random01(inf)));
        inf->failures++;
        return;
    }
    next = inf->relist_next ? NEXT_LIST : NEXT_WATCH;
    if (next == NEXT_WATCH && inf->bookmarks && inf->watch_events == 0 && quiet_end &&
        !short_lived) {
        /* A whole watch without a single event or bookmark: either nothing changed, or the
         * server filters out every event as older than our resourceVersion because it went
         * back in time (its etcd was restored from a backup). One item read at our version
         * tells the two apart (504 ResourceVersionTooLarge) before the next watch. */
        inf->stats.silent_watches++;
        next = NEXT_CHECK;
    }
    if (inf->watch_events > 0)
        inf->failures = 0;
    if (quiet_end && !(short_lived && inf->watch_events == 0)) {
        inf->stats.watch_timeouts++;
        inf->failures = 0;
        if (next == NEXT_LIST)
            start_list(inf);
        else if (next == NEXT_CHECK)
            start_check(inf);
        else
            start_watch(inf);
        return;
    }
    inf->stats.watch_errors++;
    back_off(inf, next);
}

static void start_watch(struct kube_informer *inf)
{
    struct kube_watch_opts o = {
        .namespace_ = inf->ns,
        .label_selector = inf->label_selector,
        .field_selector = inf->field_selector,
        .resource_version = inf->rv,
        .allow_bookmarks = inf->bookmarks,
        .idle_timeout_seconds = inf->bookmarks ? inf->watch_idle : 0,
        .max_line = inf->max_line,
    };
    int r;

    o.timeout_seconds =
        inf->watch_timeout + (long)(random01(inf) * (double)(inf->watch_timeout + 1));
    if (o.timeout_seconds > 2 * inf->watch_timeout)
        o.timeout_seconds = 2 * inf->watch_timeout;
    inf->watch_started = time_mono();
    inf->watch_events = 0;
    r = kube_watch_start(inf->c, inf->resource, &o, watch_event, watch_end, inf, &inf->watch);
    if (r < 0) {
        inf->watch = NULL;
        inf->stats.watch_errors++;
        back_off(inf, NEXT_WATCH);
        return;
    }
    inf->stats.watches++;
}

static int dup_opt(const char *s, char **ret)
{
    *ret = NULL;
    if (!s)
        return 0;
    *ret = strdup(s);
    return *ret ? 0 : -ENOMEM;
}

int kube_informer_new(struct kube_client *c, const struct kube_informer_opts *opts,
                      const struct kube_informer_handlers *handlers, void *userdata,
                      struct kube_informer **ret_informer)
{
    struct kube_informer *inf;

    if (!c || !opts || !opts->resource)
        return -EINVAL;
    inf = calloc(1, sizeof(*inf));
    if (!inf)
        return -ENOMEM;
    inf->c = c;
    inf->loop = kube_client_loop(c);
    inf->resource = opts->resource;
    inf->page_size = opts->page_size > 0 ? opts->page_size : DEFAULT_PAGE_SIZE;
    inf->watch_timeout =
        opts->watch_timeout_seconds > 0 ? opts->watch_timeout_seconds : DEFAULT_WATCH_TIMEOUT;
    inf->max_line = opts->max_line;
    inf->bookmarks = !opts->disable_bookmarks;
    inf->watch_idle = opts->watch_idle_seconds > 0 ? opts->watch_idle_seconds : WATCH_IDLE_SECONDS;
    if (handlers)
        inf->h = *handlers;
    inf->userdata = userdata;
    inf->transform = opts->transform;
    inf->transform_ctx = opts->transform_ctx;
    inf->rng = (uint64_t)(time_wall() * 1e6) ^ (uint64_t)(uintptr_t)inf;
    if (!inf->rng)
        inf->rng = 88172645463325252ull;
    kube_store_init(&inf->store);
    kube_store_set_index(&inf->store, opts->index);
    ev_timer_init(&inf->retry, retry_cb, 0., 0.);
    inf->retry.data = inf;
    if (dup_opt(opts->resource->namespaced ? opts->namespace_ : NULL, &inf->ns) < 0 ||
        dup_opt(opts->label_selector, &inf->label_selector) < 0 ||
        dup_opt(opts->field_selector, &inf->field_selector) < 0) {
        kube_informer_free(inf);
        return -ENOMEM;
    }
    *ret_informer = inf;
    return 0;
}

int kube_informer_start(struct kube_informer *inf)
{
    if (inf->listing || inf->checking || inf->watch || ev_is_active(&inf->retry))
        return -EBUSY;
    start_list(inf);
    return 0;
}

void kube_informer_free(struct kube_informer *inf)
{
    if (!inf)
        return;
    ev_timer_stop(inf->loop, &inf->retry);
    /* Their callbacks run now, with -ECANCELED, and only clear these fields. */
    if (inf->listing)
        kube_list_cancel(inf->listing);
    if (inf->checking)
        kube_call_cancel(inf->checking);
    kube_watch_free(inf->watch);
    kube_store_done(&inf->store);
    free(inf->rv);
    free(inf->ns);
    free(inf->label_selector);
    free(inf->field_selector);
    free(inf);
}

bool kube_informer_synced(const struct kube_informer *inf)
{
    return inf->synced;
}

const char *kube_informer_resource_version(const struct kube_informer *inf)
{
    return inf->rv ? inf->rv : "";
}

void kube_informer_get_stats(const struct kube_informer *inf, struct kube_informer_stats *ret)
{
    *ret = inf->stats;
    ret->bad_events = inf->skipped_before + (inf->watch ? kube_watch_skipped(inf->watch) : 0);
}

const cJSON *kube_informer_get(const struct kube_informer *inf, const char *ns, const char *name)
{
    return kube_store_get(&inf->store, ns, name);
}

size_t kube_informer_count(const struct kube_informer *inf)
{
    return kube_store_count(&inf->store);
}

const struct kube_store *kube_informer_store(const struct kube_informer *inf)
{
    return &inf->store;
}

void kube_informer_trim(struct kube_informer *inf)
{
    if (inf)
        kube_store_trim(&inf->store);
}

void kube_informer_foreach(const struct kube_informer *inf, kube_informer_each_fn fn,
                           void *userdata)
{
    kube_store_foreach(&inf->store, fn, userdata);
}

void kube_informer_foreach_in_namespace(const struct kube_informer *inf, const char *ns,
                                        kube_informer_each_fn fn, void *userdata)
{
    kube_store_foreach_in_namespace(&inf->store, ns, fn, userdata);
}

void kube_informer_foreach_owned(const struct kube_informer *inf, const char *owner_uid,
                                 kube_informer_each_fn fn, void *userdata)
{
    kube_store_foreach_owned(&inf->store, owner_uid, fn, userdata);
}

size_t kube_informer_count_owned(const struct kube_informer *inf, const char *owner_uid)
{
    return kube_store_count_owned(&inf->store, owner_uid);
}

size_t kube_informer_count_in_namespace(const struct kube_informer *inf, const char *ns)
{
    return kube_store_count_in_namespace(&inf->store, ns);
}
