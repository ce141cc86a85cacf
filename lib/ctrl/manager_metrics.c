#include "lib/ctrl/manager_int.h"

#include <errno.h>
#include <stdio.h>

/*
 * The manager's metric families: controller-runtime's names for reconciles, workqueues and
 * leader election, and the caller's prefix (manager_opts.metrics_prefix) for the API client,
 * the caches and Events. A collector copies the live counters in at every scrape.
 */

static void collect(void *userdata, struct metrics *r)
{
    struct manager *m = userdata;
    struct manager_metrics *x = &m->mx;

    for (size_t i = 0; i < m->n_controllers; i++) {
        const struct controller *c = m->controllers[i];
        const char *const l[] = {c->def.name};
        const struct workqueue_metrics *w = c->q ? workqueue_metrics(c->q) : NULL;
        const struct workqueue_metrics zero = {0};
        if (!w)
            w = &zero;
        /* The reconcile counters exist from the start, at 0, as controller-runtime's do: a
         * query of their increase then sees the first error too. */
        metric_add(x->reconcile_errors, l, 0);
        for (size_t o = 0; o < OUTCOME_COUNT; o++)
            metric_add(x->reconcile_total, (const char *[]){c->def.name, ctrl_outcome_labels[o]},
                       0);
        metric_set(x->active_workers, l, c->active);
        metric_set(x->max_concurrent, l, c->concurrency);
        metric_set(x->wq_depth, l, (double)w->depth);
        metric_set(x->wq_waiting, l, (double)w->waiting);
        metric_set(x->wq_in_flight, l, (double)w->in_flight);
        /* A queue is made afresh when processing starts, so these only grow. */
        metric_set(x->wq_adds, l, (double)w->adds);
        metric_set(x->wq_retries, l, (double)w->retries);
        metric_set_summary(x->wq_queue_duration, l, w->queue_duration_sum, w->queue_duration_count);
        metric_set_summary(x->wq_work_duration, l, w->work_duration_sum, w->work_duration_count);
    }
    for (size_t i = 0; i < m->n_caches; i++) {
        const struct cache *cache = &m->caches[i];
        const char *const l[] = {cache->spec->resource->resource};
        struct kube_informer_stats st = {0};
        if (cache->inf)
            kube_informer_get_stats(cache->inf, &st);
        metric_set(x->inf_lists, l, (double)st.lists);
        metric_set(x->inf_relists, l, st.lists > 0 ? (double)(st.lists - 1) : 0);
        metric_set(x->inf_list_failures, l, (double)st.list_failures);
        metric_set(x->inf_missed_deletes, l, (double)st.missed_deletes);
        metric_set(x->inf_restarts, (const char *[]){l[0], "timeout"}, (double)st.watch_timeouts);
        metric_set(x->inf_restarts, (const char *[]){l[0], "expired"}, (double)st.watch_expired);
        metric_set(x->inf_restarts, (const char *[]){l[0], "error"}, (double)st.watch_errors);
        metric_set(x->inf_objects, l, cache->inf ? (double)kube_informer_count(cache->inf) : 0);
        metric_set(x->inf_bytes, l, (double)kube_store_bytes(ctrl_cache_store(m, cache)));
        metric_set(x->inf_synced, l, cache->synced ? 1 : 0);
        for (size_t v = 0; v < cache->n_served; v++)
            metric_set(x->inf_version, (const char *[]){l[0], cache->served[v].version},
                       cache->inf && cache->version == v ? 1 : 0);
    }
    if (m->client) {
        struct kube_client_stats cs;
        kube_client_get_stats(m->client, &cs);
        metric_set(x->client_requests, NULL, (double)cs.requests);
        metric_set(x->client_retries, NULL, (double)cs.retries);
        metric_set(x->client_watches, NULL, (double)cs.watches);
        metric_set(x->client_in_flight, NULL, (double)cs.pending);
    }
    metric_set(x->leader_status, (const char *[]){m->opts.leader_election_id},
               manager_leading(m) ? 1 : 0);
    if (m->recorder) {
        const struct kube_recorder_stats *es = kube_recorder_stats(m->recorder);
        metric_set(x->events, (const char *[]){"created"}, (double)es->created);
        metric_set(x->events, (const char *[]){"patched"}, (double)es->patched);
        metric_set(x->events, (const char *[]){"dropped"}, (double)es->dropped);
        metric_set(x->events, (const char *[]){"failed"}, (double)es->failed);
    }
}

int ctrl_metrics_init(struct manager *m)
{
    static const char *const controller[] = {"controller", NULL};
    static const char *const controller_result[] = {"controller", "result", NULL};
    static const char *const queue[] = {"name", NULL};
    static const char *const resource[] = {"resource", NULL};
    static const char *const reason[] = {"resource", "reason", NULL};
    static const char *const version[] = {"resource", "version", NULL};
    const struct {
        struct metric **m;
        enum metric_type type;
        const char *name, *help; /* "_name": the name after metrics_prefix */
        const char *const *labels;
    } defs[] = {
        {&m->mx.reconcile_total, METRIC_COUNTER, "controller_runtime_reconcile_total",
         "Reconciles by controller and result (requeue: a conflict or AlreadyExists).",
         controller_result},
        {&m->mx.reconcile_errors, METRIC_COUNTER, "controller_runtime_reconcile_errors_total",
         "Reconciles that failed, in the reconcile function or in a plan action.", controller},
        {&m->mx.reconcile_time, METRIC_HISTOGRAM, "controller_runtime_reconcile_time_seconds",
         "Time from handing out a key to the end of its plan.", controller},
        {&m->mx.active_workers, METRIC_GAUGE, "controller_runtime_active_workers",
         "Keys being reconciled now.", controller},
        {&m->mx.max_concurrent, METRIC_GAUGE, "controller_runtime_max_concurrent_reconciles",
         "Keys a controller reconciles at once at most.", controller},
        {&m->mx.wq_depth, METRIC_GAUGE, "workqueue_depth", "Keys queued and ready.", queue},
        {&m->mx.wq_waiting, METRIC_GAUGE, "_workqueue_waiting",
         "Keys waiting for a delay (requeue after, or retry backoff).", queue},
        {&m->mx.wq_in_flight, METRIC_GAUGE, "_workqueue_in_flight", "Keys being processed.", queue},
        {&m->mx.wq_adds, METRIC_COUNTER, "workqueue_adds_total", "Keys queued.", queue},
        {&m->mx.wq_retries, METRIC_COUNTER, "workqueue_retries_total",
         "Keys re-queued after a failure, rate-limited.", queue},
        {&m->mx.wq_queue_duration, METRIC_SUMMARY, "workqueue_queue_duration_seconds",
         "Time keys spent queued before being handed out.", queue},
        {&m->mx.wq_work_duration, METRIC_SUMMARY, "workqueue_work_duration_seconds",
         "Time keys spent being processed.", queue},
        {&m->mx.api_requests, METRIC_COUNTER, "_api_requests_total",
         "Plan actions sent to the API server, by verb and HTTP status (none: no response).",
         (const char *const[]){"verb", "code", NULL}},
        {&m->mx.client_requests, METRIC_COUNTER, "_kube_client_requests_total",
         "HTTP requests the client sent (retries and list pages included).", NULL},
        {&m->mx.client_retries, METRIC_COUNTER, "_kube_client_retries_total",
         "Requests retried after 429 Too Many Requests.", NULL},
        {&m->mx.client_watches, METRIC_COUNTER, "_kube_client_watches_total",
         "Watch streams opened.", NULL},
        {&m->mx.client_in_flight, METRIC_GAUGE, "_kube_client_in_flight",
         "Requests and watches in flight.", NULL},
        {&m->mx.inf_lists, METRIC_COUNTER, "_informer_lists_total",
         "Complete lists applied to a cache (the first and every relist).", resource},
        {&m->mx.inf_relists, METRIC_COUNTER, "_informer_relists_total",
         "Lists after the first (a watch expired with 410 Gone).", resource},
        {&m->mx.inf_list_failures, METRIC_COUNTER, "_informer_list_failures_total",
         "Lists that failed.", resource},
        {&m->mx.inf_restarts, METRIC_COUNTER, "_informer_watch_restarts_total",
         "Watch streams that ended and were resumed, by reason (timeout, expired, error).", reason},
        {&m->mx.inf_missed_deletes, METRIC_COUNTER, "_informer_missed_deletes_total",
         "Deletions found by a relist.", resource},
        {&m->mx.inf_objects, METRIC_GAUGE, "_informer_objects", "Objects in a cache.", resource},
        {&m->mx.inf_bytes, METRIC_GAUGE, "_informer_bytes",
         "Heap bytes the objects of a cache take, as cached.", resource},
        {&m->mx.inf_synced, METRIC_GAUGE, "_informer_synced",
         "1 once a cache has synced (or its CRD is absent).", resource},
        {&m->mx.inf_version, METRIC_GAUGE, "_informer_version",
         "1 for the version a cache reads its resource at, 0 for the others it may read.", version},
        {&m->mx.leader_status, METRIC_GAUGE, "leader_election_master_status",
         "1 while this replica leads (always 1 without leader election).",
         (const char *const[]){"name", NULL}},
        {&m->mx.events, METRIC_COUNTER, "_events_total",
         "Kubernetes Events by what became of them (created, patched, dropped, failed).",
         (const char *const[]){"result", NULL}},
    };

    for (size_t i = 0; i < sizeof(defs) / sizeof(defs[0]); i++) {
        const char *name = defs[i].name;
        char prefixed[128];
        int r;
        if (name[0] == '_') {
            if ((size_t)snprintf(prefixed, sizeof(prefixed), "%s%s", m->opts.metrics_prefix,
                                 name) >= sizeof(prefixed))
                return -EINVAL;
            name = prefixed;
        }
        r = metrics_register(m->metrics, defs[i].type, name, defs[i].help, defs[i].labels, NULL, 0,
                             defs[i].m);
        if (r < 0)
            return r;
    }
    return metrics_add_collector(m->metrics, collect, m);
}
