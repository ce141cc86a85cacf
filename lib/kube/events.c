#include "lib/kube/events.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <ev.h>

#include "lib/util/buf.h"
#include "lib/util/list.h"
#include "lib/util/strmap.h"
#include "lib/util/strutil.h"

#define DEFAULT_CACHE_SIZE 4096
#define DEFAULT_BURST 25
#define DEFAULT_REFILL 300.0
#define NAME_MAX_LEN 253 /* a DNS subdomain */

/* ---- a bounded least-recently-used map; entries embed a node ---- */

struct lru_node {
    char *key; /* owned */
    struct list_node link;
};

struct lru {
    struct strmap map;
    struct list_node head; /* the most recently used first */
    size_t cap;
};

static void lru_init(struct lru *l, size_t cap)
{
    memset(l, 0, sizeof(*l));
    list_init(&l->head);
    l->cap = cap;
}

/* The node under key, made the most recently used; NULL when absent. */
static struct lru_node *lru_get(struct lru *l, const char *key)
{
    struct lru_node *n = strmap_get(&l->map, key);

    if (n) {
        list_remove(&n->link);
        list_add_head(&l->head, &n->link);
    }
    return n;
}

/* Removes n from the map and list; the caller frees it. */
static void lru_remove(struct lru *l, struct lru_node *n)
{
    strmap_remove(&l->map, n->key);
    list_remove(&n->link);
}

/* Adds n (its key set and owned) as the most recently used. When that passes the capacity, the
 * least recently used node is removed and handed to evict. Returns 0 or -ENOMEM. */
static int lru_add(struct lru *l, struct lru_node *n, void (*evict)(struct lru_node *n))
{
    if (strmap_put(&l->map, n->key, n) < 0)
        return -ENOMEM;
    list_add_head(&l->head, &n->link);
    if (strmap_size(&l->map) > l->cap) {
        struct lru_node *old = list_entry(l->head.prev, struct lru_node, link);

        lru_remove(l, old);
        evict(old);
    }
    return 0;
}

/* ---- the recorder ---- */

/* The fields of an event's key (see kube_recorder_eventv), in order; the message is last, so
 * it alone may hold the separator. */
enum key_field {
    KEY_NAMESPACE,
    KEY_KIND,
    KEY_API_VERSION,
    KEY_NAME,
    KEY_UID,
    KEY_TYPE,
    KEY_REASON,
    KEY_MESSAGE,
    KEY_FIELDS,
};

#define KEY_SEP '\x1f'

/* One distinct event the server has, or is being told about. What the Event says is its key
 * (node.key) and the fields below; its body is built again for each create, not kept: at 4096
 * cached events a kept cJSON tree was about 2.3 KB each, the key and these about 0.5. */
struct cached_event {
    struct lru_node node; /* first: the node's address is the entry's */
    struct kube_recorder *r;
    char *name;
    char *namespace_;
    char *object_rv; /* the involved object's resourceVersion, or NULL */
    char first[32];  /* firstTimestamp */
    char last[32];   /* lastTimestamp */
    long count;
    bool created;   /* the server has it */
    bool in_flight; /* a CREATE or PATCH is out */
    bool patching;  /* ...and it is a PATCH */
    bool dirty;     /* recorded again while in flight */
    bool evicted;   /* left the cache while in flight; freed when the request completes */
};

/* Spam filter state of one involved object. */
struct spam_bucket {
    struct lru_node node;
    double tokens;
    double at; /* time_mono() of the last refill */
};

struct kube_recorder {
    struct ev_loop *loop;
    kube_send_fn send;
    void *send_ctx;
    char *component;
    char *instance;
    int burst;
    double refill;
    struct lru events;
    struct lru spam;
    uint64_t last_name_ns;
    struct kube_recorder_stats stats;
    bool freed;
    void (*flush_done)(void *userdata);
    void *flush_userdata;
    ev_timer flush_timer;
};

static int send_with_client(void *ctx, const struct kube_request *req, kube_done_fn done,
                            void *userdata)
{
    return kube_request_send(ctx, req, done, userdata);
}

static void cached_event_free(struct cached_event *ce)
{
    free(ce->name);
    free(ce->namespace_);
    free(ce->object_rv);
    free(ce->node.key);
    free(ce);
}

static void evict_event(struct lru_node *n)
{
    struct cached_event *ce = (struct cached_event *)n;

    if (ce->in_flight)
        ce->evicted = true;
    else
        cached_event_free(ce);
}

static void evict_spam(struct lru_node *n)
{
    free(n->key);
    free(n);
}

static void on_flush_timer(struct ev_loop *loop, ev_timer *w, int revents);

int kube_recorder_new(struct ev_loop *loop, struct kube_client *client,
                      const struct kube_recorder_opts *opts, struct kube_recorder **ret_recorder,
                      struct err *e)
{
    struct kube_recorder *r;
    char host[256];

    if (!loop || !opts->component || !*opts->component)
        return err_set(e, -EINVAL, "event recorder: a loop and a component name are required");
    if (!opts->send && !client)
        return err_set(e, -EINVAL, "event recorder: a client or a send function is required");
    if (opts->burst < 0 || opts->refill_seconds < 0)
        return err_set(e, -EINVAL, "event recorder: negative spam filter settings");
    if (!opts->instance && (gethostname(host, sizeof(host)) < 0 || !host[0]))
        snprintf(host, sizeof(host), "localhost");
    host[sizeof(host) - 1] = '\0';

    r = calloc(1, sizeof(*r));
    if (!r)
        return -ENOMEM;
    r->loop = loop;
    r->send = opts->send ? opts->send : send_with_client;
    r->send_ctx = opts->send ? opts->send_ctx : client;
    r->component = strdup(opts->component);
    r->instance = strdup(opts->instance ? opts->instance : host);
    if (!r->component || !r->instance) {
        free(r->component);
        free(r->instance);
        free(r);
        return -ENOMEM;
    }
    r->burst = opts->burst ? opts->burst : DEFAULT_BURST;
    r->refill = opts->refill_seconds ? opts->refill_seconds : DEFAULT_REFILL;
    lru_init(&r->events, opts->cache_size ? opts->cache_size : DEFAULT_CACHE_SIZE);
    lru_init(&r->spam, opts->cache_size ? opts->cache_size : DEFAULT_CACHE_SIZE);
    ev_timer_init(&r->flush_timer, on_flush_timer, 0, 0);
    r->flush_timer.data = r;
    *ret_recorder = r;
    return 0;
}

static void destroy(struct kube_recorder *r)
{
    struct list_node *n, *next;

    ev_timer_stop(r->loop, &r->flush_timer);
    list_foreach_safe(n, next, &r->events.head) {
        cached_event_free((struct cached_event *)list_entry(n, struct lru_node, link));
    }
    list_foreach_safe(n, next, &r->spam.head) {
        evict_spam(list_entry(n, struct lru_node, link));
    }
    strmap_done(&r->events.map, NULL);
    strmap_done(&r->spam.map, NULL);
    free(r->component);
    free(r->instance);
    free(r);
}

void kube_recorder_free(struct kube_recorder *r)
{
    if (!r)
        return;
    if (r->stats.in_flight > 0) {
        r->freed = true;
        r->flush_done = NULL;
        ev_timer_stop(r->loop, &r->flush_timer);
        return;
    }
    destroy(r);
}

const struct kube_recorder_stats *kube_recorder_stats(const struct kube_recorder *r)
{
    return &r->stats;
}

struct kube_event_ref kube_event_ref_of(const struct kube_resource *resource, const cJSON *obj)
{
    return (struct kube_event_ref){
        .resource = resource,
        .namespace_ = kube_obj_namespace(obj),
        .name = kube_obj_name(obj),
        .uid = kube_obj_uid(obj),
        .resource_version = kube_obj_resource_version(obj),
    };
}

static void on_flush_timer(struct ev_loop *loop, ev_timer *w, int revents)
{
    struct kube_recorder *r = w->data;
    void (*done)(void *) = r->flush_done;

    if (!done || r->stats.in_flight > 0)
        return;
    r->flush_done = NULL;
    done(r->flush_userdata);
}

void kube_recorder_flush(struct kube_recorder *r, void (*done)(void *userdata), void *userdata)
{
    r->flush_done = done;
    r->flush_userdata = userdata;
    if (r->stats.in_flight == 0 && !ev_is_active(&r->flush_timer)) {
        ev_timer_set(&r->flush_timer, 0, 0);
        ev_timer_start(r->loop, &r->flush_timer);
    }
}

/* Takes a token from the involved object's bucket; false when it has none left. */
static bool spam_allow(struct kube_recorder *r, const char *key)
{
    struct spam_bucket *b = (struct spam_bucket *)lru_get(&r->spam, key);
    double now = time_mono();

    if (!b) {
        b = calloc(1, sizeof(*b));
        if (!b)
            return false;
        b->node.key = strdup(key);
        if (!b->node.key || lru_add(&r->spam, &b->node, evict_spam) < 0) {
            free(b->node.key);
            free(b);
            return false;
        }
        b->tokens = r->burst;
        b->at = now;
    }
    b->tokens += (now - b->at) / r->refill;
    if (b->tokens > r->burst)
        b->tokens = r->burst;
    b->at = now;
    if (b->tokens < 1)
        return false;
    b->tokens -= 1;
    return true;
}

static void on_sent(void *userdata, const struct kube_result *res);

/* The Event of ce as a whole, with its count and timestamps so far; NULL when out of memory. */
static cJSON *event_body(const struct cached_event *ce)
{
    const struct kube_recorder *r = ce->r;
    char *f[KEY_FIELDS], *key = strdup(ce->node.key), *p = key;
    cJSON *ev = cJSON_CreateObject();
    cJSON *meta, *obj, *src;
    int i;

    if (!key || !ev)
        goto fail;
    for (i = 0; i < KEY_FIELDS; i++) {
        f[i] = p;
        if (i == KEY_MESSAGE)
            break;
        if (!(p = strchr(p, KEY_SEP)))
            goto fail;
        *p++ = '\0';
    }
    if (!cJSON_AddStringToObject(ev, "apiVersion", "v1") ||
        !cJSON_AddStringToObject(ev, "kind", "Event") ||
        !(meta = cJSON_AddObjectToObject(ev, "metadata")) ||
        !cJSON_AddStringToObject(meta, "name", ce->name) ||
        !cJSON_AddStringToObject(meta, "namespace", ce->namespace_) ||
        !(obj = cJSON_AddObjectToObject(ev, "involvedObject")) ||
        !cJSON_AddStringToObject(obj, "apiVersion", f[KEY_API_VERSION]) ||
        !cJSON_AddStringToObject(obj, "kind", f[KEY_KIND]) ||
        (*f[KEY_NAMESPACE] && !cJSON_AddStringToObject(obj, "namespace", f[KEY_NAMESPACE])) ||
        !cJSON_AddStringToObject(obj, "name", f[KEY_NAME]) ||
        (*f[KEY_UID] && !cJSON_AddStringToObject(obj, "uid", f[KEY_UID])) ||
        (ce->object_rv && !cJSON_AddStringToObject(obj, "resourceVersion", ce->object_rv)) ||
        !cJSON_AddStringToObject(ev, "reason", f[KEY_REASON]) ||
        !cJSON_AddStringToObject(ev, "message", f[KEY_MESSAGE]) ||
        !cJSON_AddStringToObject(ev, "type", f[KEY_TYPE]) ||
        !(src = cJSON_AddObjectToObject(ev, "source")) ||
        !cJSON_AddStringToObject(src, "component", r->component) ||
        !cJSON_AddStringToObject(src, "host", r->instance) ||
        !cJSON_AddStringToObject(ev, "firstTimestamp", ce->first) ||
        !cJSON_AddStringToObject(ev, "lastTimestamp", ce->last) ||
        !cJSON_AddNumberToObject(ev, "count", (double)ce->count) ||
        !cJSON_AddStringToObject(ev, "reportingComponent", r->component) ||
        !cJSON_AddStringToObject(ev, "reportingInstance", r->instance))
        goto fail;
    free(key);
    return ev;
fail:
    free(key);
    cJSON_Delete(ev);
    return NULL;
}

/* Creates the Event; a re-creation carries the count so far. */
static int send_create(struct cached_event *ce)
{
    struct kube_recorder *r = ce->r;
    struct kube_request req = {
        .verb = KUBE_CREATE,
        .resource = &KUBE_EVENTS,
        .namespace_ = ce->namespace_,
    };
    cJSON *body = event_body(ce);
    int ret;

    if (!body)
        return -ENOMEM;
    req.body = body;
    ret = r->send(r->send_ctx, &req, on_sent, ce);
    cJSON_Delete(body);
    if (ret == 0) {
        ce->in_flight = true;
        ce->patching = false;
        r->stats.in_flight++;
    }
    return ret;
}

static int send_patch(struct cached_event *ce)
{
    struct kube_recorder *r = ce->r;
    cJSON *patch = cJSON_CreateObject();
    struct kube_request req = {
        .verb = KUBE_PATCH,
        .resource = &KUBE_EVENTS,
        .namespace_ = ce->namespace_,
        .name = ce->name,
        .patch_type = KUBE_PATCH_MERGE,
        .body = patch,
    };
    int ret = -ENOMEM;

    if (!patch || !cJSON_AddNumberToObject(patch, "count", (double)ce->count) ||
        !cJSON_AddStringToObject(patch, "lastTimestamp", ce->last))
        goto out;
    ret = r->send(r->send_ctx, &req, on_sent, ce);
    if (ret == 0) {
        ce->in_flight = true;
        ce->patching = true;
        r->stats.in_flight++;
    }
out:
    cJSON_Delete(patch);
    return ret;
}

static void on_sent(void *userdata, const struct kube_result *res)
{
    struct cached_event *ce = userdata;
    struct kube_recorder *r = ce->r;
    bool was_patch = ce->patching;
    int ret = 0;

    ce->in_flight = false;
    r->stats.in_flight--;
    if (r->freed || ce->evicted) {
        if (ce->evicted)
            cached_event_free(ce);
        if (r->freed && r->stats.in_flight == 0)
            destroy(r);
        return;
    }
    if (res->code == 0) {
        if (was_patch) {
            r->stats.patched++;
        } else {
            r->stats.created++;
            ce->created = true;
        }
    } else if (was_patch && res->code == -ENOENT) {
        /* The Event expired on the server; create it again with the count so far. */
        ce->created = false;
        ce->dirty = true;
    } else {
        r->stats.failed++;
    }
    if (ce->dirty) {
        ce->dirty = false;
        ret = ce->created ? send_patch(ce) : send_create(ce);
        if (ret < 0)
            r->stats.failed++;
    }
    if (r->stats.in_flight == 0 && r->flush_done && !ev_is_active(&r->flush_timer)) {
        ev_timer_set(&r->flush_timer, 0, 0);
        ev_timer_start(r->loop, &r->flush_timer);
    }
}

static int api_version(const struct kube_resource *res, char *out, size_t size)
{
    int n = res->group && *res->group ? snprintf(out, size, "%s/%s", res->group, res->version)
                                      : snprintf(out, size, "%s", res->version);

    return n < 0 || (size_t)n >= size ? -ENOBUFS : 0;
}

/* "<object name>.<hex>", unique per recorder and fitting a DNS subdomain. */
static char *event_name(struct kube_recorder *r, const char *object)
{
    struct timespec ts;
    uint64_t ns;
    size_t keep = strlen(object);
    char *name;

    clock_gettime(CLOCK_REALTIME, &ts);
    ns = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
    if (ns <= r->last_name_ns)
        ns = r->last_name_ns + 1;
    r->last_name_ns = ns;
    if (keep > NAME_MAX_LEN - 17)
        keep = NAME_MAX_LEN - 17;
    while (keep > 0 && (object[keep - 1] == '.' || object[keep - 1] == '-'))
        keep--;
    name = malloc(keep + 18);
    if (name)
        snprintf(name, keep + 18, "%.*s.%llx", (int)keep, object, (unsigned long long)ns);
    return name;
}

/* A new cache entry for a first occurrence; NULL when out of memory. */
static struct cached_event *cached_event_new(struct kube_recorder *r,
                                             const struct kube_event_ref *ref, const char *now)
{
    struct cached_event *ce = calloc(1, sizeof(*ce));
    const char *ns = ref->namespace_ && *ref->namespace_ ? ref->namespace_ : "default";

    if (!ce)
        goto fail;
    ce->r = r;
    ce->count = 1;
    ce->name = event_name(r, ref->name);
    ce->namespace_ = strdup(ns);
    if (!ce->name || !ce->namespace_)
        goto fail;
    if (ref->resource_version && *ref->resource_version &&
        !(ce->object_rv = strdup(ref->resource_version)))
        goto fail;
    snprintf(ce->first, sizeof(ce->first), "%s", now);
    snprintf(ce->last, sizeof(ce->last), "%s", now);
    list_init(&ce->node.link);
    return ce;
fail:
    if (ce)
        cached_event_free(ce);
    return NULL;
}

/* Cuts a message to KUBE_EVENT_MESSAGE_MAX bytes without splitting a UTF-8 sequence. */
static void truncate_message(char *msg)
{
    size_t cut = KUBE_EVENT_MESSAGE_MAX;

    if (strlen(msg) <= cut)
        return;
    while (cut > 0 && ((unsigned char)msg[cut] & 0xC0) == 0x80)
        cut--;
    msg[cut] = '\0';
}

void kube_recorder_eventv(struct kube_recorder *r, const struct kube_event_ref *ref,
                          enum kube_event_type type, const char *reason, const char *fmt,
                          va_list ap)
{
    const char *type_name = type == KUBE_EVENT_WARNING ? "Warning" : "Normal";
    char message[KUBE_EVENT_MESSAGE_MAX + 8];
    char api_ver[256], now[32];
    struct buf key = BUF_INIT;
    struct cached_event *ce;

    r->stats.recorded++;
    if (r->freed || !ref || !ref->resource || !ref->name || !*ref->name || !reason || !*reason ||
        api_version(ref->resource, api_ver, sizeof(api_ver)) < 0) {
        r->stats.dropped++;
        return;
    }
    vsnprintf(message, sizeof(message), fmt, ap);
    truncate_message(message);

    /* The object's key, then the event's: the object's plus type, reason and message, the
     * fields of enum key_field, from which event_body() builds the Event. Only the message,
     * last, may hold the separator; names, kinds and uids cannot, a reason must not. */
    if (strchr(reason, KEY_SEP))
        goto drop;
    buf_init(&key, 4 * KUBE_EVENT_MESSAGE_MAX);
    if (buf_printf(&key, "%s\x1f%s\x1f%s\x1f%s\x1f%s", ref->namespace_ ? ref->namespace_ : "",
                   ref->resource->kind, api_ver, ref->name, ref->uid ? ref->uid : "") < 0)
        goto drop;
    if (!spam_allow(r, key.data))
        goto drop;
    if (buf_printf(&key, "\x1f%s\x1f%s\x1f%s", type_name, reason, message) < 0)
        goto drop;

    time_format_rfc3339(time_wall(), now);
    ce = (struct cached_event *)lru_get(&r->events, key.data);
    if (ce) {
        ce->count++;
        snprintf(ce->last, sizeof(ce->last), "%s", now);
        if (ce->in_flight)
            ce->dirty = true;
        else if ((ce->created ? send_patch(ce) : send_create(ce)) < 0)
            r->stats.failed++;
        buf_done(&key);
        return;
    }
    ce = cached_event_new(r, ref, now);
    if (!ce)
        goto drop;
    ce->node.key = buf_steal(&key);
    if (!ce->node.key || lru_add(&r->events, &ce->node, evict_event) < 0) {
        cached_event_free(ce);
        goto drop;
    }
    if (send_create(ce) < 0)
        r->stats.failed++;
    return;
drop:
    r->stats.dropped++;
    buf_done(&key);
}

void kube_recorder_event(struct kube_recorder *r, const struct kube_event_ref *ref,
                         enum kube_event_type type, const char *reason, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    kube_recorder_eventv(r, ref, type, reason, fmt, ap);
    va_end(ap);
}
