#include "lib/ctrl/manager_int.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib/kube/status.h"
#include "lib/util/buf.h"
#include "lib/util/log.h"

/*
 * The manager: its lifecycle, the workqueues (one per controller, while processing), leader
 * election, and the graceful stop. The caches are in caches.c, the executor in executor.c.
 */

#define DEFAULT_CONCURRENCY 4
#define DEFAULT_SHUTDOWN_TIMEOUT 15.0
#define DEFAULT_ABSENT_RETRY 60.0
#define FLUSH_TIMEOUT 3.0
#define RELEASE_TIMEOUT 5.0
/* Every object is reconciled at least this often (controller-runtime's SyncPeriod). */
#define DEFAULT_SYNC_PERIOD (10 * 3600.0)
#define SA_NAMESPACE_FILE "/var/run/secrets/kubernetes.io/serviceaccount/namespace"

/* ---- processing ---- */

static void resync_timer_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
    struct manager *m = w->data;

    (void)loop;
    (void)revents;
    if (!m->processing)
        return;
    log_info("periodic resync", "period_s=%g", m->opts.sync_period);
    ctrl_enqueue_all(m);
}

void ctrl_processing_start(struct manager *m)
{
    struct workqueue_opts wo = {0};

    if (m->processing || m->phase != PHASE_RUNNING || !m->synced || !manager_leading(m))
        return;
    for (size_t i = 0; i < m->n_controllers; i++) {
        struct controller *c = m->controllers[i];
        wo.concurrency = c->concurrency;
        if (!c->q && workqueue_new(m->loop, &wo, ctrl_executor_process, c, &c->q) < 0) {
            log_error("cannot create workqueue", "controller=%s", c->def.name);
            c->q = NULL;
        }
    }
    m->processing = true;
    log_info("controllers started", "controllers=%zu", m->n_controllers);
    /* Every primary object once: the starting point of level-based reconciling; then again
     * every sync period, so that nothing waits on an event that never comes. */
    ctrl_enqueue_all(m);
    ev_timer_set(&m->resync_timer, m->opts.sync_period, m->opts.sync_period);
    ev_timer_start(m->loop, &m->resync_timer);
}

/* Stops handing out keys; drained (may be NULL) runs for each queue once it is idle. */
static int stop_queues(struct manager *m, void (*drained)(void *userdata))
{
    int n = 0;

    m->processing = false;
    ev_timer_stop(m->loop, &m->resync_timer);
    for (size_t i = 0; i < m->n_controllers; i++) {
        struct controller *c = m->controllers[i];
        if (!c->q || c->q_shut)
            continue;
        c->q_shut = true;
        n++;
        workqueue_shutdown(c->q, drained, c);
    }
    return n;
}

bool manager_synced(const struct manager *m)
{
    return m->synced;
}

bool manager_leading(const struct manager *m)
{
    return !m->opts.leader_elect || m->leading;
}

bool manager_processing(const struct manager *m)
{
    return m->processing;
}

int manager_enqueue(struct manager *m, const char *controller, const char *ns, const char *name)
{
    struct buf key = BUF_INIT;
    int r = -ENOENT;

    for (size_t i = 0; i < m->n_controllers; i++) {
        struct controller *c = m->controllers[i];
        if (strcmp(c->def.name, controller) != 0)
            continue;
        if (!c->q || c->q_shut)
            return -EAGAIN;
        r = ns && ns[0] ? buf_printf(&key, "%s/%s", ns, name) : buf_puts(&key, name);
        if (r == 0)
            r = workqueue_add(c->q, key.data);
        buf_done(&key);
        return r;
    }
    return r;
}

/* ---- leader election ---- */

static void on_started_leading(void *userdata)
{
    struct manager *m = userdata;

    m->leading = true;
    log_info("became leader", "lease=%s/%s identity=%s", m->lease_ns, m->opts.leader_election_id,
             kube_leader_identity(m->leader));
    ctrl_processing_start(m);
}

static void on_stopped_leading(void *userdata, int code)
{
    struct manager *m = userdata;

    m->leading = false;
    stop_queues(m, NULL);
    log_error("leader election lost, stopping", "lease=%s/%s identity=%s error=%s", m->lease_ns,
              m->opts.leader_election_id, kube_leader_identity(m->leader), kube_code_name(code));
    if (m->opts.on_lost_leadership)
        m->opts.on_lost_leadership(m->opts.userdata, code);
}

static void on_new_leader(void *userdata, const char *identity)
{
    struct manager *m = userdata;

    log_info("leader changed", "lease=%s/%s leader=%s", m->lease_ns, m->opts.leader_election_id,
             identity[0] ? identity : "(released)");
}

static int elector_start(struct manager *m, const char *ns)
{
    struct kube_leader_opts lo = {
        .namespace_ = ns,
        .name = m->opts.leader_election_id,
        .lease_duration = m->opts.lease_duration,
        .renew_deadline = m->opts.renew_deadline,
        .retry_period = m->opts.retry_period,
        .on_started_leading = on_started_leading,
        .on_stopped_leading = on_stopped_leading,
        .on_new_leader = on_new_leader,
        .userdata = m,
    };
    struct err e;
    int r;

    err_clear(&e);
    if (!(m->lease_ns = strdup(ns)))
        return -ENOMEM;
    r = kube_leader_new(m->client, &lo, &m->leader, &e);
    if (r < 0) {
        log_error("cannot set up leader election", "error=%s", e.msg);
        return r;
    }
    log_info("waiting for leadership", "lease=%s/%s identity=%s", ns, lo.name,
             kube_leader_identity(m->leader));
    return kube_leader_start(m->leader);
}

static void ns_probe_done(void *userdata, const struct kube_result *res)
{
    struct manager *m = userdata;
    const char *ns = m->opts.leader_election_default_namespace;

    m->ns_probe = NULL;
    if (res->code == -ECANCELED)
        return;
    if (res->code == -ENOENT) {
        ns = "default";
    } else if (res->code < 0 && res->code != -EPERM) {
        log_warn("cannot look up the leader election namespace", "namespace=%s error=%s retry_s=%g",
                 ns, kube_code_name(res->code), m->opts.retry_period);
        ev_timer_set(&m->lease_timer, m->opts.retry_period, 0);
        ev_timer_start(m->loop, &m->lease_timer);
        return;
    }
    if (elector_start(m, ns) < 0)
        log_error("leader election did not start", "namespace=%s", ns);
}

static void ns_probe_start(struct manager *m)
{
    struct kube_request req = {.verb = KUBE_GET,
                               .resource = &KUBE_NAMESPACES,
                               .name = m->opts.leader_election_default_namespace};

    if (m->phase != PHASE_RUNNING)
        return;
    if (kube_request_start(m->client, &req, ns_probe_done, m, &m->ns_probe) < 0) {
        m->ns_probe = NULL;
        ev_timer_set(&m->lease_timer, m->opts.retry_period, 0);
        ev_timer_start(m->loop, &m->lease_timer);
    }
}

static void lease_timer_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
    ns_probe_start(w->data);
}

/* The pod's namespace from its service account, into out; false when not in a pod. */
bool manager_pod_namespace(char *out, size_t size)
{
    int fd = open(SA_NAMESPACE_FILE, O_RDONLY | O_CLOEXEC);
    ssize_t n;

    if (fd < 0)
        return false;
    n = read(fd, out, size - 1);
    close(fd);
    if (n <= 0)
        return false;
    out[n] = '\0';
    out[strcspn(out, " \t\r\n")] = '\0';
    return out[0] != '\0';
}

static int leader_election_start(struct manager *m)
{
    char ns[256];

    if (m->opts.leader_election_namespace)
        return elector_start(m, m->opts.leader_election_namespace);
    if (manager_pod_namespace(ns, sizeof(ns)))
        return elector_start(m, ns);
    if (!m->opts.leader_election_default_namespace)
        return elector_start(m, "default");
    ns_probe_start(m);
    return 0;
}

const char *manager_lease_namespace(const struct manager *m)
{
    return m->leader ? m->lease_ns : NULL;
}

const char *manager_identity(const struct manager *m)
{
    return m->leader ? kube_leader_identity(m->leader) : NULL;
}

/* ---- graceful stop ---- */

static void stop_advance(struct manager *m);

static void queue_drained(void *userdata)
{
    struct controller *c = userdata;
    struct manager *m = c->m;

    if (m->phase == PHASE_DRAINING && --m->pending_drains == 0)
        stop_advance(m);
}

static void events_flushed(void *userdata)
{
    struct manager *m = userdata;

    if (m->phase == PHASE_FLUSHING)
        stop_advance(m);
}

static void lease_released(void *userdata, int code)
{
    struct manager *m = userdata;

    if (m->phase != PHASE_RELEASING)
        return;
    if (code < 0)
        log_warn("lease release failed", "error=%s", kube_code_name(code));
    else
        log_info("lease released", "lease=%s/%s", m->lease_ns, m->opts.leader_election_id);
    stop_advance(m);
}

static void stop_timer_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
    struct manager *m = w->data;

    if (m->phase == PHASE_DRAINING) {
        unsigned n = 0;
        for (size_t i = 0; i < m->n_controllers; i++)
            n += m->controllers[i]->active;
        log_warn("shutdown timeout: cancelling plans in flight", "keys=%u timeout_s=%g", n,
                 m->opts.shutdown_timeout);
        for (size_t i = 0; i < m->n_controllers; i++)
            ctrl_executor_cancel(m->controllers[i]);
    } else if (m->phase == PHASE_FLUSHING) {
        log_warn("shutdown: events still in flight are dropped", "timeout_s=%g", FLUSH_TIMEOUT);
    } else if (m->phase == PHASE_RELEASING) {
        log_warn("shutdown: lease release timed out", "timeout_s=%g", RELEASE_TIMEOUT);
    }
    stop_advance(m);
}

static void arm_stop_timer(struct manager *m, double seconds)
{
    ev_timer_stop(m->loop, &m->stop_timer);
    ev_timer_set(&m->stop_timer, seconds, 0);
    ev_timer_start(m->loop, &m->stop_timer);
}

/* Moves the stop to its next phase: draining -> flushing Events -> releasing the Lease. */
static void stop_advance(struct manager *m)
{
    ev_timer_stop(m->loop, &m->stop_timer);
    switch (m->phase) {
    case PHASE_DRAINING:
        m->phase = PHASE_FLUSHING;
        if (kube_recorder_stats(m->recorder)->in_flight > 0) {
            arm_stop_timer(m, FLUSH_TIMEOUT);
            kube_recorder_flush(m->recorder, events_flushed, m);
            return;
        }
        stop_advance(m);
        return;
    case PHASE_FLUSHING:
        m->phase = PHASE_RELEASING;
        if (m->leader) {
            arm_stop_timer(m, RELEASE_TIMEOUT);
            if (kube_leader_stop(m->leader, lease_released, m) == 0)
                return;
        }
        stop_advance(m);
        return;
    case PHASE_RELEASING:
        m->phase = PHASE_STOPPED;
        log_info("manager stopped", "%s", "");
        if (m->stop_done)
            m->stop_done(m->stop_userdata);
        return;
    case PHASE_RUNNING:
    case PHASE_STOPPED:
        return;
    }
}

int manager_stop(struct manager *m, void (*done)(void *userdata), void *userdata)
{
    unsigned in_flight = 0;

    if (m->phase != PHASE_RUNNING)
        return -EALREADY;
    m->phase = PHASE_DRAINING;
    m->stop_done = done;
    m->stop_userdata = userdata;
    ev_timer_stop(m->loop, &m->lease_timer);
    if (m->ns_probe)
        kube_call_cancel(m->ns_probe);
    ctrl_caches_stop_probes(m);
    for (size_t i = 0; i < m->n_controllers; i++)
        in_flight += m->controllers[i]->active;
    log_info("stopping", "keys_in_flight=%u timeout_s=%g", in_flight, m->opts.shutdown_timeout);
    m->pending_drains = stop_queues(m, queue_drained);
    if (m->pending_drains == 0) {
        stop_advance(m);
        return 0;
    }
    arm_stop_timer(m, m->opts.shutdown_timeout);
    return 0;
}

struct metrics *manager_metrics(struct manager *m)
{
    return m->metrics;
}

struct kube_recorder *manager_recorder(struct manager *m)
{
    return m->recorder;
}

/* ---- lifecycle ---- */

static int dup_opt(const char *s, char **ret)
{
    *ret = NULL;
    if (s && !(*ret = strdup(s)))
        return -ENOMEM;
    return 0;
}

/* The options with their defaults filled in, or -EINVAL (detail in e). */
static int opts_check(const struct manager_opts *opts, bool have_client, struct manager_opts *o,
                      struct err *e)
{
    if (!opts)
        return err_set(e, -EINVAL, "manager: options are required");
    *o = *opts;
    if (!o->component || !o->component[0] || !o->field_manager || !o->field_manager[0] ||
        !o->metrics_prefix || !o->metrics_prefix[0])
        return err_set(e, -EINVAL,
                       "manager: a component, a field manager and a metrics prefix "
                       "are required");
    if (o->n_caches > 0 && !o->caches)
        return err_set(e, -EINVAL, "manager: %zu caches and no table", o->n_caches);
    for (size_t i = 0; i < o->n_caches; i++)
        if (!o->caches[i].resource)
            return err_set(e, -EINVAL, "manager: cache %zu has no resource", i);
    if (o->concurrency < 0 || o->lease_duration < 0 || o->renew_deadline < 0 ||
        o->retry_period < 0 || o->shutdown_timeout < 0 || o->absent_retry < 0 ||
        o->sync_period < 0 || o->progress_interval < 0)
        return err_set(e, -EINVAL, "manager: negative concurrency or duration");
    if (o->leader_elect && !have_client)
        return err_set(e, -EINVAL, "manager: leader election needs a client");
    if (o->leader_elect && (!o->leader_election_id || !o->leader_election_id[0]))
        return err_set(e, -EINVAL, "manager: leader election needs a Lease name");
    if (o->namespace_ && !o->namespace_[0])
        o->namespace_ = NULL;
    o->concurrency = o->concurrency ? o->concurrency : DEFAULT_CONCURRENCY;
    o->lease_duration = o->lease_duration > 0 ? o->lease_duration : 15;
    o->renew_deadline = o->renew_deadline > 0 ? o->renew_deadline : 10;
    o->retry_period = o->retry_period > 0 ? o->retry_period : 2;
    o->shutdown_timeout = o->shutdown_timeout > 0 ? o->shutdown_timeout : DEFAULT_SHUTDOWN_TIMEOUT;
    o->absent_retry = o->absent_retry > 0 ? o->absent_retry : DEFAULT_ABSENT_RETRY;
    o->sync_period = o->sync_period > 0 ? o->sync_period : DEFAULT_SYNC_PERIOD;
    o->progress_interval = o->progress_interval > 0 ? o->progress_interval : 5.0;
    return 0;
}

int manager_new(struct ev_loop *loop, struct kube_client *client, const struct manager_opts *opts,
                struct manager **ret_manager, struct err *e)
{
    struct manager_opts o;
    struct kube_recorder_opts ro;
    struct manager *m = NULL;
    int r;

    if (!loop || (!client && !(opts && opts->send)))
        return err_set(e, -EINVAL, "manager: a loop and a client (or a send hook) are required");
    if ((r = opts_check(opts, client != NULL, &o, e)) < 0)
        return r;

    r = -ENOMEM;
    m = calloc(1, sizeof(*m));
    if (!m)
        goto fail;
    m->loop = loop;
    m->client = client;
    m->opts = o;
    ev_init(&m->resync_timer, resync_timer_cb);
    m->resync_timer.data = m;
    ev_init(&m->lease_timer, lease_timer_cb);
    m->lease_timer.data = m;
    ev_init(&m->stop_timer, stop_timer_cb);
    m->stop_timer.data = m;
    if (ctrl_caches_init(m) < 0)
        goto fail;
    if (dup_opt(o.namespace_, &m->namespace_) < 0 ||
        dup_opt(o.leader_election_namespace, &m->lease_ns_opt) < 0 ||
        dup_opt(o.leader_election_default_namespace, &m->lease_ns_default) < 0 ||
        dup_opt(o.leader_election_id, &m->lease_id) < 0 ||
        dup_opt(o.component, &m->component) < 0 ||
        dup_opt(o.field_manager, &m->field_manager) < 0 ||
        dup_opt(o.metrics_prefix, &m->metrics_prefix) < 0)
        goto fail;
    o.namespace_ = m->namespace_;
    o.leader_election_namespace = m->lease_ns_opt;
    o.leader_election_default_namespace = m->lease_ns_default;
    o.leader_election_id = m->lease_id;
    o.component = m->component;
    o.field_manager = m->field_manager;
    o.metrics_prefix = m->metrics_prefix;
    m->opts = o;
    if (metrics_new(&m->metrics) < 0 || ctrl_metrics_init(m) < 0)
        goto fail;
    ro = (struct kube_recorder_opts){
        .component = m->component, .send = o.send, .send_ctx = o.send_ctx};
    r = kube_recorder_new(loop, client, &ro, &m->recorder, e);
    if (r < 0)
        goto fail;
    *ret_manager = m;
    return 0;
fail:
    manager_free(m);
    return r == -ENOMEM ? err_set(e, r, "manager: out of memory") : r;
}

int manager_add_controller(struct manager *m, const struct controller_def *def, struct err *e)
{
    struct controller *c, **nc;

    if (m->started)
        return err_set(e, -EINVAL, "controller %s: the manager has started", def->name);
    if (!def->name || !def->name[0] || !def->primary || !def->reconcile)
        return err_set(e, -EINVAL, "controller: name, primary and reconcile are required");
    if (!ctrl_cache_of(m, def->primary))
        return err_set(e, -EINVAL, "controller %s: primary %s.%s is not one of the caches",
                       def->name, def->primary->resource, def->primary->group);
    if (def->concurrency < 0)
        return err_set(e, -EINVAL, "controller %s: negative concurrency", def->name);
    for (size_t i = 0; i < m->n_controllers; i++)
        if (strcmp(m->controllers[i]->def.name, def->name) == 0)
            return err_set(e, -EINVAL, "controller %s: added twice", def->name);
    c = calloc(1, sizeof(*c));
    nc = c ? realloc(m->controllers, (m->n_controllers + 1) * sizeof(*nc)) : NULL;
    if (!nc) {
        free(c);
        return err_set(e, -ENOMEM, "controller %s: out of memory", def->name);
    }
    m->controllers = nc;
    c->m = m;
    list_init(&c->jobs);
    c->def = *def;
    c->concurrency = def->concurrency ? def->concurrency : m->opts.concurrency;
    m->controllers[m->n_controllers++] = c;
    return 0;
}

int manager_start(struct manager *m, struct err *e)
{
    int r;

    if (m->started)
        return err_set(e, -EALREADY, "manager: started already");
    m->started = true;
    log_info("manager starting", "namespace=%s controllers=%zu concurrency=%d leader_elect=%s",
             m->namespace_ ? m->namespace_ : "(all)", m->n_controllers, m->opts.concurrency,
             m->opts.leader_elect ? "true" : "false");
    if ((r = ctrl_caches_start(m, e)) < 0)
        return r;
    if (m->opts.leader_elect && (r = leader_election_start(m)) < 0)
        return err_set(e, r, "leader election: cannot start (%s)", err_code_name(r));
    ctrl_caches_check_synced(m);
    return 0;
}

void manager_free(struct manager *m)
{
    if (!m)
        return;
    ev_timer_stop(m->loop, &m->resync_timer);
    strmap_done(&m->conflicts, ctrl_note_free);
    strmap_done(&m->found, ctrl_note_free);
    strmap_done(&m->status_written, ctrl_note_free);
    strmap_done(&m->rejected, ctrl_note_free);
    ev_timer_stop(m->loop, &m->lease_timer);
    ev_timer_stop(m->loop, &m->stop_timer);
    if (m->ns_probe)
        kube_call_cancel(m->ns_probe);
    /* Plans in flight end now. */
    for (size_t i = 0; i < m->n_controllers; i++) {
        struct controller *c = m->controllers[i];
        ctrl_executor_abort(c);
        workqueue_free(c->q);
        free(c);
    }
    free(m->controllers);
    kube_leader_free(m->leader);
    ctrl_caches_done(m);
    kube_recorder_free(m->recorder);
    metrics_free(m->metrics);
    free(m->lease_ns);
    free(m->namespace_);
    free(m->lease_ns_opt);
    free(m->lease_ns_default);
    free(m->lease_id);
    free(m->component);
    free(m->field_manager);
    free(m->metrics_prefix);
    free(m);
}
