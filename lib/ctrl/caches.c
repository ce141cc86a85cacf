#include "lib/ctrl/manager_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "lib/kube/status.h"
#include "lib/util/buf.h"
#include "lib/util/log.h"
#include "lib/util/strutil.h"

/*
 * The shared caches, one informer each, as the table the caller passes in names them; the
 * probes of optional resources (a CRD that may not be installed); and the mapping of their
 * changes to the keys of the controllers.
 */

#define SYNC_WARN_INTERVAL 30.0

bool ctrl_same_resource(const struct kube_resource *a, const struct kube_resource *b)
{
    return a == b || (strcmp(a->group, b->group) == 0 && strcmp(a->resource, b->resource) == 0);
}

struct cache *ctrl_cache_of(const struct manager *m, const struct kube_resource *res)
{
    for (size_t i = 0; i < m->n_caches; i++)
        if (ctrl_same_resource(m->caches[i].spec->resource, res))
            return &m->caches[i];
    return NULL;
}

const struct kube_store *ctrl_cache_store(const struct manager *m, const struct cache *c)
{
    return m->stores[c - m->caches];
}

void manager_view(const struct manager *m, struct ctrl_view *ret_view)
{
    *ret_view = (struct ctrl_view){
        .stores = m->stores,
        .n_stores = m->n_caches,
        .now = time_wall(),
        .conflicts = &m->conflicts,
        .found = &m->found,
        .rejected = &m->rejected,
    };
}

/* ---- mapping cache events to keys ---- */

void ctrl_enqueue(void *q, const char *ns, const char *name)
{
    struct controller *c = q;
    struct buf key = BUF_INIT;

    if (!c->q || c->q_shut || !name)
        return;
    if ((ns && ns[0] ? buf_printf(&key, "%s/%s", ns, name) : buf_puts(&key, name)) < 0 ||
        workqueue_add(c->q, key.data) == -ENOMEM)
        log_error("out of memory: key dropped", "controller=%s name=%s", c->def.name, name);
    buf_done(&key);
}

/* Whether apiVersion ("group/version", or "version" for the core group) is in group. */
static bool api_version_in_group(const char *api_version, const char *group)
{
    const char *slash = api_version ? strchr(api_version, '/') : NULL;
    size_t n = strlen(group);

    if (!api_version)
        return false;
    if (!slash)
        return n == 0;
    return (size_t)(slash - api_version) == n && strncmp(api_version, group, n) == 0;
}

/* Without a map: the primary's own changes enqueue it; other objects enqueue their
 * controller owner when it is of the primary kind. */
static void default_map(struct controller *c, const struct kube_resource *res, const cJSON *obj)
{
    const struct kube_resource *p = c->def.primary;
    const cJSON *ref, *kind, *api_version, *name;

    if (ctrl_same_resource(res, p)) {
        ctrl_enqueue(c, kube_obj_namespace(obj), kube_obj_name(obj));
        return;
    }
    ref = kube_obj_controller_ref(obj);
    kind = cJSON_GetObjectItemCaseSensitive(ref, "kind");
    api_version = cJSON_GetObjectItemCaseSensitive(ref, "apiVersion");
    name = cJSON_GetObjectItemCaseSensitive(ref, "name");
    if (cJSON_IsString(kind) && cJSON_IsString(api_version) && cJSON_IsString(name) &&
        strcmp(kind->valuestring, p->kind) == 0 &&
        api_version_in_group(api_version->valuestring, p->group))
        ctrl_enqueue(c, kube_obj_namespace(obj), name->valuestring);
}

static void dispatch(struct cache *cache, const cJSON *obj)
{
    struct manager *m = cache->m;
    struct ctrl_view view;

    if (!m->processing || !obj)
        return;
    manager_view(m, &view);
    for (size_t i = 0; i < m->n_controllers; i++) {
        struct controller *c = m->controllers[i];
        if (c->def.map)
            c->def.map(c->def.ctx, &view, cache->spec->resource, obj, ctrl_enqueue, c);
        else
            default_map(c, cache->spec->resource, obj);
    }
}

static void on_add(void *userdata, const cJSON *obj)
{
    dispatch(userdata, obj);
}

static void on_update(void *userdata, const cJSON *old_obj, const cJSON *new_obj)
{
    dispatch(userdata, old_obj);
    dispatch(userdata, new_obj);
}

static void on_delete(void *userdata, const cJSON *obj, bool final_state_unknown)
{
    dispatch(userdata, obj);
}

/* ---- caches ---- */

static void check_synced(struct manager *m)
{
    if (m->synced)
        return;
    for (size_t i = 0; i < m->n_caches; i++)
        if (!m->caches[i].synced)
            return;
    m->synced = true;
    ev_timer_stop(m->loop, &m->sync_timer);
    log_info("caches synced", "caches=%zu", m->n_caches);
    ctrl_processing_start(m);
}

static void on_synced(void *userdata)
{
    struct cache *cache = userdata;

    cache->synced = true;
    check_synced(cache->m);
}

static void on_next_synced(void *userdata);
static void on_gone(void *userdata);
static void on_next_gone(void *userdata);

static const struct kube_informer_handlers cache_handlers = {
    .on_add = on_add, .on_update = on_update, .on_delete = on_delete, .on_synced = on_synced};
/* An optional resource may stop being served (its CRD deleted): the cache is then absent. */
static const struct kube_informer_handlers optional_handlers = {.on_add = on_add,
                                                                .on_update = on_update,
                                                                .on_delete = on_delete,
                                                                .on_synced = on_synced,
                                                                .on_gone = on_gone};
static const struct kube_informer_handlers next_handlers = {.on_add = on_add,
                                                            .on_update = on_update,
                                                            .on_delete = on_delete,
                                                            .on_synced = on_next_synced,
                                                            .on_gone = on_next_gone};

/* A started informer of cache's resource at served[version]. */
static int informer_at(struct cache *cache, size_t version,
                       const struct kube_informer_handlers *handlers,
                       struct kube_informer **ret_inf)
{
    struct manager *m = cache->m;
    struct kube_informer_opts o = {
        .resource = &cache->served[version],
        .namespace_ = m->namespace_,
        .label_selector = cache->spec->selector,
        .transform = cache->spec->transform,
        .index = cache->spec->index,
    };
    struct kube_informer *inf;
    int r = kube_informer_new(m->client, &o, handlers, cache, &inf);

    if (r < 0)
        return r;
    r = kube_informer_start(inf);
    if (r < 0) {
        kube_informer_free(inf);
        return r;
    }
    *ret_inf = inf;
    return 0;
}

static int cache_start_informer(struct cache *cache, size_t version)
{
    struct manager *m = cache->m;
    const struct kube_informer_handlers *h =
        cache->spec->optional ? &optional_handlers : &cache_handlers;
    int r = informer_at(cache, version, h, &cache->inf);

    if (r == 0) {
        cache->version = version;
        m->stores[cache - m->caches] = kube_informer_store(cache->inf);
    }
    return r;
}

/* Frees the informers of cache, if any: its view is empty again. */
static void cache_stop_informer(struct cache *cache)
{
    struct manager *m = cache->m;

    kube_informer_free(cache->next);
    cache->next = NULL;
    kube_informer_free(cache->inf);
    cache->inf = NULL;
    m->stores[cache - m->caches] = &m->empty;
}

static void probe_start(struct cache *cache);

/* The next probe, after delay seconds, starts again from the newest version. */
static void probe_later(struct cache *cache, double delay)
{
    cache->probe_version = 0;
    ev_timer_stop(cache->m->loop, &cache->probe_timer);
    ev_timer_set(&cache->probe_timer, delay, 0);
    ev_timer_start(cache->m->loop, &cache->probe_timer);
}

/* A cache that reads an older version than the newest looks for a newer one now and then. */
static void probe_newer_later(struct cache *cache)
{
    if (cache->inf && cache->version > 0)
        probe_later(cache, cache->m->opts.absent_retry);
}

/* The informer at the newer version has synced: it replaces the older one, whose objects the
 * controllers read until now. */
static void on_next_synced(void *userdata)
{
    struct cache *cache = userdata;
    struct manager *m = cache->m;
    const struct kube_resource *rs = &cache->served[cache->next_version];

    kube_informer_free(cache->inf);
    cache->inf = cache->next;
    cache->next = NULL;
    cache->version = cache->next_version;
    m->stores[cache - m->caches] = kube_informer_store(cache->inf);
    log_info("cache now reads a newer version", "resource=%s.%s version=%s", rs->resource,
             rs->group, rs->version);
    probe_newer_later(cache);
}

static bool dispatch_each(void *userdata, const cJSON *obj)
{
    dispatch(userdata, obj);
    return true;
}

/* The informer of an optional cache found its resource no longer served (404: its CRD was
 * deleted): the cache is absent again, as if the probe had not found it. Its objects leave the
 * view, each mapped to the keys that depend on it as a deletion is; the probes go on. */
static void on_gone(void *userdata)
{
    struct cache *cache = userdata;
    struct manager *m = cache->m;
    const struct kube_resource *rs = &cache->served[cache->version];
    struct kube_informer *inf = cache->inf;

    log_info("resource no longer served, its cache is emptied",
             "resource=%s.%s version=%s objects=%zu retry_s=%g", rs->resource, rs->group,
             rs->version, kube_informer_count(inf), m->opts.absent_retry);
    m->stores[cache - m->caches] = &m->empty;
    kube_informer_foreach(inf, dispatch_each, cache);
    if (cache->probe)
        kube_call_cancel(cache->probe);
    cache_stop_informer(cache);
    cache->absent = true;
    cache->synced = true;
    probe_later(cache, m->opts.absent_retry);
    check_synced(m);
}

/* The newer version is not served after all (or no longer): the cache goes on reading its
 * own, and looks again later. */
static void on_next_gone(void *userdata)
{
    struct cache *cache = userdata;

    kube_informer_free(cache->next);
    cache->next = NULL;
    if (!cache->probe)
        probe_newer_later(cache);
}

static void probe_done(void *userdata, const struct kube_result *res)
{
    struct cache *cache = userdata;
    struct manager *m = cache->m;
    const struct kube_resource *rs = &cache->served[cache->probe_version];
    /* Versions worth listing: every one, or those newer than the one the cache reads. */
    size_t limit = cache->inf ? cache->version : cache->n_served;
    double delay;

    cache->probe = NULL;
    if (res->code == -ECANCELED)
        return;
    if (res->code == -ENOENT && cache->probe_version + 1 < limit) {
        cache->probe_version++;
        probe_start(cache);
        return;
    }
    if (res->code < 0 && cache->inf) {
        /* No newer version served (or no answer): the cache goes on reading its own. */
        probe_later(cache, m->opts.absent_retry);
        return;
    }
    if (res->code == -ENOENT) {
        if (!cache->absent)
            log_info("resource not served, its cache stays empty", "resource=%s.%s retry_s=%g",
                     rs->resource, rs->group, m->opts.absent_retry);
        cache->absent = true;
        cache->synced = true;
        probe_later(cache, m->opts.absent_retry);
        check_synced(m);
        return;
    }
    if (res->code < 0) {
        cache->probe_failures++;
        delay = kube_informer_backoff(cache->probe_failures, 1.0);
        log_warn("cannot list resource",
                 "resource=%s.%s version=%s error=%s message=%s retry_s=%.1f", rs->resource,
                 rs->group, rs->version, kube_code_name(res->code), res->message, delay);
        probe_later(cache, delay);
        return;
    }
    cache->probe_failures = 0;
    if (cache->inf) {
        log_info("resource served at a newer version, filling its cache at it",
                 "resource=%s.%s version=%s", rs->resource, rs->group, rs->version);
        cache->next_version = cache->probe_version;
        if (informer_at(cache, cache->next_version, &next_handlers, &cache->next) < 0) {
            cache->next = NULL;
            probe_later(cache, m->opts.absent_retry);
        }
        return;
    }
    if (cache->absent)
        log_info("resource now served, starting its cache", "resource=%s.%s", rs->resource,
                 rs->group);
    cache->absent = false;
    if (cache_start_informer(cache, cache->probe_version) < 0) {
        log_error("cannot start cache", "resource=%s.%s", rs->resource, rs->group);
        cache_stop_informer(cache);
        probe_later(cache, m->opts.absent_retry);
        return;
    }
    log_info("cache reads resource", "resource=%s.%s version=%s", rs->resource, rs->group,
             rs->version);
    probe_newer_later(cache);
}

static void probe_timer_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
    probe_start(w->data);
}

/* An optional resource (its CRD may not be installed): list one object at a version to see
 * whether the server serves it there before starting an informer. */
static void probe_start(struct cache *cache)
{
    struct manager *m = cache->m;
    struct kube_request req = {.verb = KUBE_LIST,
                               .resource = &cache->served[cache->probe_version],
                               .namespace_ = m->namespace_,
                               .limit = 1};

    if (m->phase != PHASE_RUNNING)
        return;
    if (kube_request_start(m->client, &req, probe_done, cache, &cache->probe) < 0) {
        cache->probe = NULL;
        probe_later(cache, m->opts.absent_retry);
    }
}

static void sync_timer_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
    struct manager *m = w->data;

    for (size_t i = 0; i < m->n_caches; i++) {
        const struct cache *cache = &m->caches[i];
        struct kube_informer_stats st = {0};
        if (cache->synced)
            continue;
        if (cache->inf)
            kube_informer_get_stats(cache->inf, &st);
        log_warn("cache not synced yet", "resource=%s.%s list_failures=%lu",
                 cache->spec->resource->resource, cache->spec->resource->group, st.list_failures);
    }
}

static bool enqueue_each(void *userdata, const char *ns, const char *name)
{
    ctrl_enqueue(userdata, ns, name);
    return true;
}

void ctrl_enqueue_all(struct manager *m)
{
    for (size_t i = 0; i < m->n_controllers; i++) {
        struct controller *c = m->controllers[i];
        struct cache *cache = ctrl_cache_of(m, c->def.primary);
        if (c->q && c->def.seed)
            c->def.seed(c->def.ctx, ctrl_enqueue, c);
        else if (c->q && cache)
            kube_store_foreach_key(ctrl_cache_store(m, cache), enqueue_each, c);
    }
}

/* ---- the lifecycle of the caches ---- */

/* The resource at each version the spec names. */
static int cache_served_init(struct cache *cache)
{
    const struct ctrl_cache_spec *spec = cache->spec;
    size_t n = 0;

    while (spec->versions && spec->versions[n])
        n++;
    cache->served = calloc(n ? n : 1, sizeof(*cache->served));
    if (!cache->served)
        return -ENOMEM;
    cache->n_served = n ? n : 1;
    for (size_t i = 0; i < cache->n_served; i++) {
        cache->served[i] = *spec->resource;
        if (n)
            cache->served[i].version = spec->versions[i];
    }
    return 0;
}

void manager_trim_caches(struct manager *m)
{
    for (size_t i = 0; i < m->n_caches; i++) {
        kube_informer_trim(m->caches[i].inf);
        kube_informer_trim(m->caches[i].next);
    }
}

/* Before the loop waits: every callback of this turn is done with what it read. */
static void trim_cb(struct ev_loop *loop, ev_prepare *w, int revents)
{
    (void)loop;
    (void)revents;
    manager_trim_caches(w->data);
}

int ctrl_caches_init(struct manager *m)
{
    size_t n = m->opts.n_caches;

    kube_store_init(&m->empty);
    ev_timer_init(&m->sync_timer, sync_timer_cb, SYNC_WARN_INTERVAL, SYNC_WARN_INTERVAL);
    m->sync_timer.data = m;
    ev_prepare_init(&m->trim, trim_cb);
    m->trim.data = m;
    if (n == 0)
        return 0;
    m->caches = calloc(n, sizeof(*m->caches));
    m->stores = calloc(n, sizeof(*m->stores));
    if (!m->caches || !m->stores)
        return -ENOMEM;
    m->n_caches = n;
    for (size_t i = 0; i < n; i++) {
        m->caches[i].m = m;
        m->caches[i].spec = &m->opts.caches[i];
        m->stores[i] = &m->empty;
        ev_init(&m->caches[i].probe_timer, probe_timer_cb);
        m->caches[i].probe_timer.data = &m->caches[i];
        if (cache_served_init(&m->caches[i]) < 0)
            return -ENOMEM;
    }
    return 0;
}

int ctrl_caches_start(struct manager *m, struct err *e)
{
    int r;

    if (!m->client) {
        /* Tests with a send hook: no server, every cache is empty and synced. */
        for (size_t i = 0; i < m->n_caches; i++)
            m->caches[i].synced = true;
        return 0;
    }
    for (size_t i = 0; i < m->n_caches; i++) {
        struct cache *cache = &m->caches[i];
        if (cache->spec->optional) {
            probe_start(cache);
            continue;
        }
        r = cache_start_informer(cache, 0);
        if (r < 0)
            return err_set(e, r, "cache of %s.%s: cannot start", cache->spec->resource->resource,
                           cache->spec->resource->group);
    }
    ev_timer_start(m->loop, &m->sync_timer);
    /* It runs while the loop does, and does not keep the loop running by itself. */
    ev_prepare_start(m->loop, &m->trim);
    ev_unref(m->loop);
    return 0;
}

void ctrl_caches_check_synced(struct manager *m)
{
    check_synced(m);
}

void ctrl_caches_stop_probes(struct manager *m)
{
    ev_timer_stop(m->loop, &m->sync_timer);
    for (size_t i = 0; i < m->n_caches; i++) {
        ev_timer_stop(m->loop, &m->caches[i].probe_timer);
        if (m->caches[i].probe)
            kube_call_cancel(m->caches[i].probe);
    }
}

void ctrl_caches_done(struct manager *m)
{
    if (ev_is_active(&m->trim)) {
        ev_ref(m->loop);
        ev_prepare_stop(m->loop, &m->trim);
    }
    ctrl_caches_stop_probes(m);
    for (size_t i = 0; i < m->n_caches; i++) {
        cache_stop_informer(&m->caches[i]);
        free(m->caches[i].served);
    }
    free(m->caches);
    free(m->stores);
    kube_store_done(&m->empty);
}
