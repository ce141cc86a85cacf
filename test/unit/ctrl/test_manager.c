#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>
#include <ev.h>

#include "lib/ctrl/manager.h"
#include "lib/ctrl/metrics.h"
#include "lib/util/buf.h"
#include "lib/util/strutil.h"

/*
 * The executor with the real workqueue and event recorder, and a send hook in place of the
 * network: the hook records each request and completes it on the loop with a scripted result.
 * What is checked is what the plan contract (lib/ctrl/plan.h) promises: actions in order,
 * stop at the first failure, conflicts and AlreadyExists requeued, other failures backed off,
 * requeue_after honoured, Events recorded, concurrency capped, a graceful stop.
 */

#define MAX_SENT 128

/* The test's own kinds, and the caches its manager keeps: widgets (the primary), gadgets (not
 * served: an optional cache), and Secrets and Services by label. */
static const struct kube_resource WIDGETS = {"example.com", "v1", "widgets", "Widget", true};
static const struct kube_resource GADGETS = {"example.com", "v1", "gadgets", "Gadget", true};
static const struct ctrl_cache_spec test_caches[] = {
    {&WIDGETS, NULL, false, NULL, NULL, NULL},
    {&GADGETS, NULL, true, NULL, NULL, NULL},
    {&KUBE_SECRETS, "app=test", false, NULL, NULL, NULL},
    {&KUBE_SERVICES, "app=test", false, NULL, NULL, NULL},
};
#define N_CACHES (sizeof(test_caches) / sizeof(test_caches[0]))
#define FIELD_MANAGER "tester"

/* The test's rights: everything but Pods. */
static const char *refuse_pods(const struct plan_action *a)
{
    return a->resource == &KUBE_PODS ? "refused: Pods are not granted" : NULL;
}

struct sent {
    enum kube_verb verb;
    enum kube_patch_type patch_type;
    bool force;
    const struct kube_resource *res;
    char key[128];
    char field_manager[32];
    char subresource[16];
    char propagation[16];
    char reason[64];  /* Events: the reason */
    char message[64]; /* Events: the message */
    char rv[32];      /* the body's metadata.resourceVersion, if any */
};

struct pending {
    ev_timer timer;
    struct hook *h;
    kube_done_fn done;
    void *userdata;
    int code;
    long http;
    double retry_after;
    const char *body; /* JSON of the response body, or NULL */
    struct pending *next;
};

struct hook {
    struct ev_loop *loop;
    struct sent sent[MAX_SENT];
    int n_sent;
    int n_events;
    struct {
        int code;
        long http;
        double retry_after;
        const char *body;
    } script[16];
    int n_script, next_script;
    bool hold; /* keep completions until release_all() */
    struct pending *held;
    int in_flight;
};

static void complete_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
    struct pending *p = w->data;
    struct kube_result res = {.code = p->code,
                              .http_status = p->http,
                              .message = p->code ? "scripted failure" : "",
                              .retry_after = p->retry_after};

    res.body = p->body ? cJSON_Parse(p->body) : NULL;
    p->h->in_flight--;
    p->done(p->userdata, &res);
    cJSON_Delete(res.body);
    free(p);
}

static void schedule(struct pending *p)
{
    ev_timer_init(&p->timer, complete_cb, 0.001, 0);
    p->timer.data = p;
    ev_timer_start(p->h->loop, &p->timer);
}

static int hook_send(void *ctx, const struct kube_request *req, kube_done_fn done, void *userdata)
{
    struct hook *h = ctx;
    struct pending *p = calloc(1, sizeof(*p));
    struct sent *s;

    assert_non_null(p);
    p->h = h;
    p->done = done;
    p->userdata = userdata;
    p->http = 200;
    h->in_flight++;
    if (req->resource == &KUBE_EVENTS) {
        h->n_events++;
        p->http = req->verb == KUBE_CREATE ? 201 : 200;
        schedule(p);
        assert_true(h->n_sent < MAX_SENT);
        s = &h->sent[h->n_sent++];
        memset(s, 0, sizeof(*s));
        s->verb = req->verb;
        s->res = req->resource;
        if (req->body) {
            const cJSON *reason = cJSON_GetObjectItemCaseSensitive(req->body, "reason");
            const cJSON *message = cJSON_GetObjectItemCaseSensitive(req->body, "message");
            const cJSON *inv = cJSON_GetObjectItemCaseSensitive(req->body, "involvedObject");
            const cJSON *name = cJSON_GetObjectItemCaseSensitive(inv, "name");
            if (cJSON_IsString(reason))
                snprintf(s->reason, sizeof(s->reason), "%s", reason->valuestring);
            if (cJSON_IsString(message))
                snprintf(s->message, sizeof(s->message), "%s", message->valuestring);
            if (cJSON_IsString(name))
                snprintf(s->key, sizeof(s->key), "%s", name->valuestring);
        }
        return 0;
    }
    assert_true(h->n_sent < MAX_SENT);
    s = &h->sent[h->n_sent++];
    memset(s, 0, sizeof(*s));
    s->verb = req->verb;
    s->patch_type = req->patch_type;
    s->force = req->force;
    s->res = req->resource;
    snprintf(s->key, sizeof(s->key), "%s/%s", req->namespace_ ? req->namespace_ : "",
             req->name ? req->name : kube_obj_name(req->body));
    snprintf(s->field_manager, sizeof(s->field_manager), "%s",
             req->field_manager ? req->field_manager : "");
    snprintf(s->subresource, sizeof(s->subresource), "%s",
             req->subresource ? req->subresource : "");
    snprintf(s->propagation, sizeof(s->propagation), "%s",
             req->propagation_policy ? req->propagation_policy : "");
    if (req->body) {
        const cJSON *rv = cJSON_GetObjectItemCaseSensitive(
            cJSON_GetObjectItemCaseSensitive(req->body, "metadata"), "resourceVersion");
        if (cJSON_IsString(rv))
            snprintf(s->rv, sizeof(s->rv), "%s", rv->valuestring);
    }
    if (h->next_script < h->n_script) {
        p->code = h->script[h->next_script].code;
        p->http = h->script[h->next_script].http;
        p->retry_after = h->script[h->next_script].retry_after;
        p->body = h->script[h->next_script].body;
        h->next_script++;
    }
    if (h->hold) {
        p->next = h->held;
        h->held = p;
    } else {
        schedule(p);
    }
    return 0;
}

static void release_all(struct hook *h)
{
    struct pending *p = h->held, *next;

    h->held = NULL;
    h->hold = false;
    for (; p; p = next) {
        next = p->next;
        schedule(p);
    }
}

static void script(struct hook *h, int code, long http)
{
    h->script[h->n_script].code = code;
    h->script[h->n_script].http = http;
    h->n_script++;
}

/* ---- a test controller: its plan is set by the test ---- */

#define PROGRESS_INTERVAL 0.3

enum plan_kind {
    PLAN_THREE_ACTIONS, /* apply, create, delete */
    PLAN_STATUS,        /* update status */
    PLAN_CREATE,
    PLAN_REQUEUE_AFTER, /* nothing to do; look again in 0.2 s */
    PLAN_EVENT,         /* one Event, one apply */
    PLAN_FAIL,          /* the reconcile function itself fails */
    PLAN_DELETE,
    PLAN_UNGRANTED,
    PLAN_CLAIMED,           /* an apply of Service svc, claimed for uid "mine" */
    PLAN_CREATE_ELSE_READ,  /* a create of Secret ca, read when it exists */
    PLAN_APPLY_THEN_STATUS, /* an apply of Service svc, then the primary's status */
    PLAN_PROGRESS,          /* the primary's status, then progress only, then an apply */
    PLAN_TOGETHER,          /* an apply of svc and a create of ca together, an Event, a delete */
    PLAN_TOGETHER_CLAIMED,  /* claimed applies of svc and svc2 together, for uid "mine" */
    PLAN_COUNTED_TOGETHER,  /* creates of Secrets a, b, c together, read when they exist, and
                               an Event that counts those made; nothing once one was found */
};

struct fixture {
    struct ev_loop *loop;
    struct hook hook;
    struct manager *m;
    enum plan_kind kind;
    int fail_first; /* PLAN_FAIL: fail this many times, then succeed */
    int reconciles;
    double reconciled_at[16];
    int max_active, active_now;
    char conflict[512];  /* what the last reconcile's view said of Service svc, or "" */
    bool found;          /* the last reconcile's view held Secret ca, read live */
    char rejected[1024]; /* what the last reconcile's view said of its own key, or "" */
};

static cJSON *object(const char *api_version, const char *kind, const char *ns, const char *name)
{
    cJSON *o = cJSON_CreateObject(), *meta = cJSON_CreateObject();

    cJSON_AddStringToObject(o, "apiVersion", api_version);
    cJSON_AddStringToObject(o, "kind", kind);
    cJSON_AddStringToObject(meta, "name", name);
    cJSON_AddStringToObject(meta, "namespace", ns);
    cJSON_AddItemToObject(o, "metadata", meta);
    return o;
}

static int reconcile(void *ctx, const struct ctrl_view *view, const char *ns, const char *name,
                     struct plan *plan, struct err *e)
{
    struct fixture *f = ctx;
    const char *why;

    assert_int_equal(view->n_stores, N_CACHES);
    for (size_t i = 0; i < N_CACHES; i++)
        assert_non_null(view->stores[i]);
    assert_true(view->now > 1.6e9);
    if (f->reconciles < 16)
        f->reconciled_at[f->reconciles] = time_mono();
    f->reconciles++;
    switch (f->kind) {
    case PLAN_THREE_ACTIONS:
        assert_int_equal(plan_apply(plan, &KUBE_SERVICES, object("v1", "Service", ns, "svc"),
                                    "Service %s/svc: spec changed", ns),
                         0);
        assert_int_equal(plan_create(plan, &KUBE_SECRETS, object("v1", "Secret", ns, "ca"),
                                     "Secret %s/ca: missing", ns),
                         0);
        assert_int_equal(plan_delete(plan, &KUBE_SECRETS, ns, "old", "uid-1", "superseded"), 0);
        break;
    case PLAN_STATUS:
        assert_int_equal(plan_update_status(plan, &WIDGETS,
                                            object("example.com/v1", "Widget", ns, name), "status"),
                         0);
        break;
    case PLAN_PROGRESS:
        if (f->reconciles == 1)
            assert_int_equal(plan_update_status(plan, &WIDGETS,
                                                object("example.com/v1", "Widget", ns, name),
                                                "status changed"),
                             0);
        else
            assert_int_equal(
                plan_update_status_progress(
                    plan, &WIDGETS, object("example.com/v1", "Widget", ns, name), "progress"),
                0);
        assert_int_equal(plan_apply(plan, &KUBE_SERVICES, object("v1", "Service", ns, "svc"),
                                    "Service %s/svc: spec changed", ns),
                         0);
        break;
    case PLAN_CREATE:
        assert_int_equal(
            plan_create(plan, &KUBE_SECRETS, object("v1", "Secret", ns, "ca"), "CA missing"), 0);
        break;
    case PLAN_REQUEUE_AFTER:
        plan_requeue_after(plan, 0.2);
        break;
    case PLAN_EVENT: /* an apply, the Event that reports it, a create */
        assert_int_equal(plan_apply(plan, &KUBE_SERVICES, object("v1", "Service", ns, "svc"),
                                    "Service: missing"),
                         0);
        assert_int_equal(
            plan_event(plan, KUBE_EVENT_NORMAL, "CreatedService", "Service %s/svc", ns), 0);
        assert_int_equal(
            plan_create(plan, &KUBE_SECRETS, object("v1", "Secret", ns, "ca"), "Secret: missing"),
            0);
        break;
    case PLAN_FAIL:
        if (f->reconciles <= f->fail_first)
            return err_set(e, -EINVAL, "Widget %s/%s: spec.version: bad", ns, name);
        break;
    case PLAN_DELETE:
        assert_int_equal(plan_delete(plan, &KUBE_SECRETS, ns, "gone", NULL, "superseded"), 0);
        break;
    case PLAN_CLAIMED:
        why = ctrl_note_why(view->conflicts, view->now, &KUBE_SERVICES, ns, "svc");
        snprintf(f->conflict, sizeof(f->conflict), "%s", why ? why : "");
        if (!why)
            assert_int_equal(plan_apply_claimed(plan, &KUBE_SERVICES,
                                                object("v1", "Service", ns, "svc"), "mine",
                                                "Service %s/svc: missing", ns),
                             0);
        break;
    case PLAN_CREATE_ELSE_READ:
        f->found = ctrl_note_object(view->found, view->now, &KUBE_SECRETS, ns, "ca") != NULL;
        if (!f->found)
            assert_int_equal(plan_create_else_read(plan, &KUBE_SECRETS,
                                                   object("v1", "Secret", ns, "ca"),
                                                   "Secret %s/ca: missing", ns),
                             0);
        break;
    case PLAN_APPLY_THEN_STATUS:
        why = ctrl_note_why(view->rejected, view->now, &WIDGETS, ns, name);
        snprintf(f->rejected, sizeof(f->rejected), "%s", why ? why : "");
        assert_int_equal(plan_apply(plan, &KUBE_SERVICES, object("v1", "Service", ns, "svc"),
                                    "Service %s/svc: missing", ns),
                         0);
        assert_int_equal(plan_create(plan, &KUBE_SECRETS, object("v1", "Secret", ns, "ca"),
                                     "Secret %s/ca: missing", ns),
                         0);
        assert_int_equal(plan_update_status(plan, &WIDGETS,
                                            object("example.com/v1", "Widget", ns, name), "status"),
                         0);
        break;
    case PLAN_TOGETHER:
        assert_int_equal(plan_apply(plan, &KUBE_SERVICES, object("v1", "Service", ns, "svc"),
                                    "Service %s/svc: missing", ns),
                         0);
        assert_int_equal(plan_create(plan, &KUBE_SECRETS, object("v1", "Secret", ns, "ca"),
                                     "Secret %s/ca: missing", ns),
                         0);
        plan_together(plan, 0);
        assert_int_equal(plan_event(plan, KUBE_EVENT_NORMAL, "CreatedBoth", "svc and ca"), 0);
        assert_int_equal(plan_delete(plan, &KUBE_SECRETS, ns, "old", NULL, "superseded"), 0);
        break;
    case PLAN_TOGETHER_CLAIMED:
        for (int i = 0; i < 2; i++)
            assert_int_equal(plan_apply_claimed(plan, &KUBE_SERVICES,
                                                object("v1", "Service", ns, i ? "svc2" : "svc"),
                                                "mine", "Service %s/svc: missing", ns),
                             0);
        plan_together(plan, 0);
        break;
    case PLAN_COUNTED_TOGETHER:
        f->found = ctrl_note_object(view->found, view->now, &KUBE_SECRETS, ns, "a") != NULL;
        if (f->found)
            break;
        for (int i = 0; i < 3; i++) {
            const char *n = i == 0 ? "a" : i == 1 ? "b" : "c";
            assert_int_equal(plan_create_else_read(plan, &KUBE_SECRETS,
                                                   object("v1", "Secret", ns, n),
                                                   "Secret %s/%s: missing", ns, n),
                             0);
        }
        plan_together(plan, 0);
        assert_int_equal(
            plan_event_count(plan, 0, KUBE_EVENT_NORMAL, "CreatedSecrets", "Secrets created"), 0);
        break;
    case PLAN_UNGRANTED:
        assert_int_equal(plan_apply(plan, &KUBE_SERVICES, object("v1", "Service", ns, "svc"),
                                    "Service: missing"),
                         0);
        assert_int_equal(
            plan_create(plan, &KUBE_PODS, object("v1", "Pod", ns, "pod"), "Pod: missing"), 0);
        break;
    }
    return 0;
}

/* A manager of the test's caches, whose requests go to f's hook. */
static struct manager_opts test_opts(struct fixture *f)
{
    return (struct manager_opts){
        .caches = test_caches,
        .n_caches = N_CACHES,
        .component = "tester",
        .field_manager = FIELD_MANAGER,
        .metrics_prefix = "tester",
        .refuse = refuse_pods,
        .send = hook_send,
        .send_ctx = &f->hook,
        .progress_interval = PROGRESS_INTERVAL,
    };
}

static int setup_with(struct fixture *f, int concurrency)
{
    struct manager_opts o = test_opts(f);
    struct controller_def def = {
        .name = "test",
        .primary = &WIDGETS,
        .reconcile = reconcile,
        .ctx = f,
    };
    struct err e;

    o.concurrency = concurrency;
    f->loop = ev_loop_new(EVFLAG_AUTO);
    f->hook.loop = f->loop;
    assert_int_equal(manager_new(f->loop, NULL, &o, &f->m, &e), 0);
    assert_int_equal(manager_add_controller(f->m, &def, &e), 0);
    assert_int_equal(manager_start(f->m, &e), 0);
    assert_true(manager_synced(f->m));
    assert_true(manager_processing(f->m));
    return 0;
}

static int setup(void **state)
{
    struct fixture *f = calloc(1, sizeof(*f));

    *state = f;
    return setup_with(f, 0);
}

static int teardown(void **state)
{
    struct fixture *f = *state;
    double end = time_mono() + 2;

    /* Let completions still scheduled run (Events, held requests). */
    release_all(&f->hook);
    while (f->hook.in_flight > 0 && time_mono() < end)
        ev_run(f->loop, EVRUN_ONCE);
    manager_free(f->m);
    ev_loop_destroy(f->loop);
    free(f);
    return 0;
}

static void tick_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
}

static void run_for(struct fixture *f, double seconds)
{
    double end = time_mono() + seconds;
    ev_timer tick;

    ev_timer_init(&tick, tick_cb, 0.005, 0.005);
    ev_timer_start(f->loop, &tick);
    while (time_mono() < end)
        ev_run(f->loop, EVRUN_ONCE);
    ev_timer_stop(f->loop, &tick);
}

static bool run_until_reconciles(struct fixture *f, int n, double timeout)
{
    double end = time_mono() + timeout;
    ev_timer tick;

    ev_timer_init(&tick, tick_cb, 0.005, 0.005);
    ev_timer_start(f->loop, &tick);
    while (f->reconciles < n && time_mono() < end)
        ev_run(f->loop, EVRUN_ONCE);
    ev_timer_stop(f->loop, &tick);
    return f->reconciles >= n;
}

static bool run_until_sent(struct fixture *f, int n, double timeout)
{
    double end = time_mono() + timeout;
    ev_timer tick;

    ev_timer_init(&tick, tick_cb, 0.005, 0.005);
    ev_timer_start(f->loop, &tick);
    while (f->hook.n_sent < n && time_mono() < end)
        ev_run(f->loop, EVRUN_ONCE);
    ev_timer_stop(f->loop, &tick);
    return f->hook.n_sent >= n;
}

static double reconcile_total(struct fixture *f, const char *result)
{
    struct metric *m = metrics_find(manager_metrics(f->m), "controller_runtime_reconcile_total");

    assert_non_null(m);
    return metric_value(m, (const char *[]){"test", result});
}

static double metric(struct fixture *f, const char *name, const char *const *labels)
{
    struct metric *m = metrics_find(manager_metrics(f->m), name);
    struct buf out = BUF_INIT;

    assert_non_null(m);
    /* Rendering runs the collectors, which copy live counters into the registry. */
    assert_int_equal(metrics_render(manager_metrics(f->m), &out), 0);
    buf_done(&out);
    return metric_value(m, labels);
}

/* Nothing more to do for now: no request in flight, no key queued or being processed (a key
 * waiting out a backoff may come back later). */
static bool quiet(struct fixture *f)
{
    const char *const queue[] = {"test", NULL};

    return f->hook.in_flight == 0 && metric(f, "tester_workqueue_in_flight", queue) == 0 &&
           metric(f, "workqueue_depth", queue) == 0;
}

/* Runs the loop until the manager is quiet: what a reconcile planned has been carried out. */
static void settle(struct fixture *f)
{
    double end = time_mono() + 5;
    ev_timer tick;

    ev_timer_init(&tick, tick_cb, 0.005, 0.005);
    ev_timer_start(f->loop, &tick);
    while (!quiet(f) && time_mono() < end)
        ev_run(f->loop, EVRUN_ONCE);
    ev_timer_stop(f->loop, &tick);
    assert_true(quiet(f));
}

static void test_manager__actions_run_in_order_with_field_manager(void **state)
{
    struct fixture *f = *state;

    f->kind = PLAN_THREE_ACTIONS;
    assert_int_equal(manager_enqueue(f->m, "test", "ns1", "cp"), 0);
    assert_true(run_until_reconciles(f, 1, 2));
    settle(f);
    assert_int_equal(f->hook.n_sent, 3);
    assert_int_equal(f->hook.sent[0].verb, KUBE_PATCH);
    assert_int_equal(f->hook.sent[0].patch_type, KUBE_PATCH_APPLY);
    assert_true(f->hook.sent[0].force);
    assert_string_equal(f->hook.sent[0].field_manager, FIELD_MANAGER);
    assert_string_equal(f->hook.sent[0].key, "ns1/svc");
    assert_int_equal(f->hook.sent[1].verb, KUBE_CREATE);
    assert_string_equal(f->hook.sent[1].key, "ns1/ca");
    assert_int_equal(f->hook.sent[2].verb, KUBE_DELETE);
    assert_string_equal(f->hook.sent[2].key, "ns1/old");
    assert_string_equal(f->hook.sent[2].propagation, "Background");
    assert_int_equal(reconcile_total(f, "success"), 1);
    assert_int_equal(f->reconciles, 1);
    assert_int_equal(metric(f, "tester_api_requests_total", (const char *[]){"apply", "200"}), 1);
    assert_int_equal(metric(f, "tester_api_requests_total", (const char *[]){"delete", "200"}), 1);
}

static void test_manager__stops_at_first_failure_and_backs_off(void **state)
{
    struct fixture *f = *state;

    f->kind = PLAN_THREE_ACTIONS;
    script(&f->hook, 0, 200);
    script(&f->hook, -EIO, 500);
    assert_int_equal(manager_enqueue(f->m, "test", "ns1", "cp"), 0);
    assert_true(run_until_reconciles(f, 2, 3));
    settle(f);
    /* First pass: apply, then the failed create, and no delete; the retry does all three. */
    assert_int_equal(f->hook.n_sent, 5);
    assert_int_equal(f->hook.sent[1].verb, KUBE_CREATE);
    assert_int_equal(f->hook.sent[2].verb, KUBE_PATCH);
    assert_int_equal(reconcile_total(f, "error"), 1);
    assert_int_equal(reconcile_total(f, "success"), 1);
    assert_int_equal(
        metric(f, "controller_runtime_reconcile_errors_total", (const char *[]){"test"}), 1);
    assert_int_equal(metric(f, "workqueue_retries_total", (const char *[]){"test"}), 1);
    assert_int_equal(metric(f, "tester_api_requests_total", (const char *[]){"create", "500"}), 1);
}

/* Each controller's reconcile counters are exported from the start, at 0, as
 * controller-runtime's are: an alert on their increase then sees the first error too. */
static void test_manager__reconcile_counters_start_at_zero(void **state)
{
    struct fixture *f = *state;
    struct buf out = BUF_INIT;
    static const char *const want[] = {
        "controller_runtime_reconcile_errors_total{controller=\"test\"} 0\n",
        "controller_runtime_reconcile_total{controller=\"test\",result=\"success\"} 0\n",
        "controller_runtime_reconcile_total{controller=\"test\",result=\"requeue_after\"} 0\n",
        "controller_runtime_reconcile_total{controller=\"test\",result=\"requeue\"} 0\n",
        "controller_runtime_reconcile_total{controller=\"test\",result=\"error\"} 0\n",
    };

    assert_int_equal(metrics_render(manager_metrics(f->m), &out), 0);
    assert_non_null(out.data);
    for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
        if (!strstr(out.data, want[i]))
            fail_msg("/metrics lacks %s", want[i]);
    }
    buf_done(&out);
}

static void test_manager__conflict_requeues_without_error(void **state)
{
    struct fixture *f = *state;

    f->kind = PLAN_STATUS;
    script(&f->hook, -EBUSY, 409);
    assert_int_equal(manager_enqueue(f->m, "test", "ns1", "cp"), 0);
    assert_true(run_until_reconciles(f, 2, 2));
    settle(f);
    assert_string_equal(f->hook.sent[0].subresource, "status");
    assert_string_equal(f->hook.sent[0].field_manager, FIELD_MANAGER);
    assert_int_equal(reconcile_total(f, "requeue"), 1);
    assert_int_equal(reconcile_total(f, "success"), 1);
    assert_int_equal(
        metric(f, "controller_runtime_reconcile_errors_total", (const char *[]){"test"}), 0);
    /* Requeued at once: the second reconcile follows within the first rate-limit step. */
    assert_true(f->reconciled_at[1] - f->reconciled_at[0] < 0.5);
}

/* A status write of progress only, within progress_interval of the object's last status
 * write, is left out (the rest of the plan goes on) and the key comes back when the interval
 * ends; then it is sent. */
static void test_manager__progress_waits_for_the_interval_after_a_status_write(void **state)
{
    struct fixture *f = *state;
    const struct sent *s = f->hook.sent;
    double written;

    f->kind = PLAN_PROGRESS;
    assert_int_equal(manager_enqueue(f->m, "test", "ns1", "cp"), 0);
    assert_true(run_until_reconciles(f, 1, 2));
    settle(f);
    written = f->reconciled_at[0];
    assert_int_equal(f->hook.n_sent, 2);
    assert_string_equal(s[0].subresource, "status");
    assert_int_equal(s[1].verb, KUBE_PATCH);

    assert_int_equal(manager_enqueue(f->m, "test", "ns1", "cp"), 0);
    assert_true(run_until_reconciles(f, 2, 2));
    settle(f);
    assert_int_equal(f->hook.n_sent, 3); /* only the apply */
    assert_int_equal(s[2].verb, KUBE_PATCH);
    assert_int_equal(reconcile_total(f, "requeue_after"), 1);

    /* Back when the interval since the first write ends, and written then. */
    assert_true(run_until_sent(f, 5, 2));
    settle(f);
    assert_true(f->reconciled_at[f->reconciles - 1] - written >= PROGRESS_INTERVAL);
    assert_int_equal(f->hook.n_sent, 5);
    assert_int_equal(s[3].verb, KUBE_UPDATE);
    assert_string_equal(s[3].subresource, "status");
    assert_string_equal(s[3].key, "ns1/cp");
    assert_int_equal(s[4].verb, KUBE_PATCH);
}

static void test_manager__already_exists_on_create_requeues(void **state)
{
    struct fixture *f = *state;

    f->kind = PLAN_CREATE;
    script(&f->hook, -EEXIST, 409);
    assert_int_equal(manager_enqueue(f->m, "test", "ns1", "cp"), 0);
    assert_true(run_until_reconciles(f, 2, 2));
    settle(f);
    assert_int_equal(reconcile_total(f, "requeue"), 1);
    assert_int_equal(reconcile_total(f, "success"), 1);
}

static void test_manager__requeue_after_reconciles_again_later(void **state)
{
    struct fixture *f = *state;

    f->kind = PLAN_REQUEUE_AFTER;
    assert_int_equal(manager_enqueue(f->m, "test", "ns1", "cp"), 0);
    assert_true(run_until_reconciles(f, 2, 2));
    assert_true(f->reconciled_at[1] - f->reconciled_at[0] >= 0.19);
    assert_true(reconcile_total(f, "requeue_after") >= 1);
    assert_int_equal(f->hook.n_sent, 0);
}

static void test_manager__retry_after_is_the_least_wait_before_the_next_reconcile(void **state)
{
    struct fixture *f = *state;

    f->kind = PLAN_CREATE;
    script(&f->hook, -EAGAIN, 429);
    f->hook.script[0].retry_after = 0.3; /* the backoff alone would say 5 ms */
    assert_int_equal(manager_enqueue(f->m, "test", "ns1", "cp"), 0);
    assert_true(run_until_reconciles(f, 2, 2));
    assert_true(f->reconciled_at[1] - f->reconciled_at[0] >= 0.3 - 0.002);
    assert_int_equal(reconcile_total(f, "error"), 1);
    assert_int_equal(metric(f, "tester_api_requests_total", (const char *[]){"create", "429"}), 1);
}

static void test_manager__reconcile_error_retries_with_backoff(void **state)
{
    struct fixture *f = *state;

    f->kind = PLAN_FAIL;
    f->fail_first = 3;
    assert_int_equal(manager_enqueue(f->m, "test", "ns1", "cp"), 0);
    assert_true(run_until_reconciles(f, 4, 3));
    settle(f);
    assert_int_equal(reconcile_total(f, "error"), 3);
    assert_int_equal(reconcile_total(f, "success"), 1);
    /* Waits of at least 5 ms, 10 ms, 20 ms: the backoff doubles. (A timer fires no earlier
     * than it is due, however loaded the machine; later it may, so only the lower bounds
     * are checked, with 1 ms for the clocks' rounding.) */
    assert_true(f->reconciled_at[1] - f->reconciled_at[0] >= 0.005 - 0.001);
    assert_true(f->reconciled_at[2] - f->reconciled_at[1] >= 0.010 - 0.001);
    assert_true(f->reconciled_at[3] - f->reconciled_at[2] >= 0.020 - 0.001);
    assert_int_equal(f->hook.n_sent, 0);
}

static void test_manager__delete_of_missing_object_succeeds(void **state)
{
    struct fixture *f = *state;

    f->kind = PLAN_DELETE;
    script(&f->hook, -ENOENT, 404);
    assert_int_equal(manager_enqueue(f->m, "test", "ns1", "cp"), 0);
    assert_true(run_until_reconciles(f, 1, 2));
    settle(f);
    assert_int_equal(f->reconciles, 1);
    assert_int_equal(reconcile_total(f, "success"), 1);
}

/* An action the manager's rights do not grant (manager_opts.refuse) is refused before it is
 * sent, as the API server would answer it 403: the key fails and nothing after it runs. */
static void test_manager__an_action_outside_the_access_table_is_not_sent(void **state)
{
    struct fixture *f = *state;

    f->kind = PLAN_UNGRANTED;
    assert_int_equal(manager_enqueue(f->m, "test", "ns1", "cp"), 0);
    assert_true(run_until_reconciles(f, 2, 2));
    settle(f);
    /* Each attempt sends the Service's apply, never the Pod's create, and says why in a
     * Warning Event. */
    assert_true(f->hook.n_sent - f->hook.n_events >= 2);
    assert_true(f->hook.n_events >= 1);
    for (int i = 0; i < f->hook.n_sent; i++) {
        if (f->hook.sent[i].res == &KUBE_EVENTS) {
            if (f->hook.sent[i].verb == KUBE_CREATE) /* later ones: the count patched */
                assert_string_equal(f->hook.sent[i].reason, "WriteRejected");
            continue;
        }
        assert_int_equal(f->hook.sent[i].verb, KUBE_PATCH);
    }
    assert_true(reconcile_total(f, "error") >= 2);
    assert_int_equal(reconcile_total(f, "success"), 0);
}

static const char owned_by_other[] =
    "{\"apiVersion\":\"v1\",\"kind\":\"Service\",\"metadata\":{\"name\":\"svc\","
    "\"namespace\":\"ns1\",\"ownerReferences\":[{\"apiVersion\":\"v1\",\"kind\":"
    "\"ConfigMap\",\"name\":\"theirs\",\"uid\":\"other\",\"controller\":true}]}}";
static const char owned_by_mine[] =
    "{\"apiVersion\":\"v1\",\"kind\":\"Service\",\"metadata\":{\"name\":\"svc\","
    "\"namespace\":\"ns1\",\"ownerReferences\":[{\"apiVersion\":\"v1\",\"kind\":"
    "\"ConfigMap\",\"name\":\"mine\",\"uid\":\"mine\",\"controller\":true}]}}";

/* An apply of an object the caches do not hold is sent with a resourceVersion no object has:
 * absent, the API server creates it (one request, no read); existing (409), it is read, and
 * applied without that precondition if it is the claimer's; anyone else's is left untouched,
 * with a Warning Event, and the next reconcile's view says why. */
static void test_manager__a_claimed_apply_leaves_someone_elses_object_alone(void **state)
{
    struct fixture *f = *state;
    int conflicts = 0;
    const struct sent *s = f->hook.sent;
    const struct {
        enum kube_verb verb;
        bool precondition;
    } want[] = {
        {KUBE_PATCH, true},                                         /* absent: created */
        {KUBE_PATCH, true}, {KUBE_GET, false}, {KUBE_PATCH, false}, /* the claimer's own */
        {KUBE_PATCH, true}, {KUBE_GET, false},                      /* someone else's */
    };
    size_t n = 0;

    f->kind = PLAN_CLAIMED;
    script(&f->hook, 0, 201);      /* absent: the apply creates it */
    script(&f->hook, -EBUSY, 409); /* exists ... */
    script(&f->hook, 0, 200);      /* ... and is the claimer's own: */
    f->hook.script[2].body = owned_by_mine;
    script(&f->hook, 0, 200);      /* applied */
    script(&f->hook, -EBUSY, 409); /* exists ... */
    script(&f->hook, 0, 200);      /* ... and is someone else's: left alone */
    f->hook.script[5].body = owned_by_other;
    assert_int_equal(manager_enqueue(f->m, "test", "ns1", "cp"), 0);
    assert_true(run_until_reconciles(f, 1, 2));
    settle(f);
    assert_int_equal(manager_enqueue(f->m, "test", "ns1", "cp"), 0);
    assert_true(run_until_reconciles(f, 2, 2));
    settle(f);
    assert_int_equal(reconcile_total(f, "success"), 2);
    assert_int_equal(manager_enqueue(f->m, "test", "ns1", "cp"), 0);
    /* The refusal backs off; the retry sees the conflict and plans nothing. */
    assert_true(run_until_reconciles(f, 4, 3));
    settle(f);
    assert_non_null(strstr(f->conflict, "Service ns1/svc exists and is controlled by ConfigMap "
                                        "theirs"));
    for (int i = 0; i < f->hook.n_sent; i++) {
        if (s[i].res == &KUBE_EVENTS) {
            assert_string_equal(s[i].reason, "ObjectConflict");
            conflicts++;
            continue;
        }
        assert_true(n < sizeof(want) / sizeof(want[0]));
        assert_string_equal(s[i].key, "ns1/svc");
        assert_int_equal(s[i].verb, want[n].verb);
        if (want[n].precondition)
            assert_string_equal(s[i].rv, "18446744073709551615");
        else
            assert_string_equal(s[i].rv, "");
        n++;
    }
    assert_int_equal(n, sizeof(want) / sizeof(want[0]));
    assert_int_equal(conflicts, 1);
    assert_true(reconcile_total(f, "error") >= 1);
}

/* A create that finds its object existing (one the caches do not select) reads it, and the
 * key is reconciled again at once with the object in its view. */
static void test_manager__a_create_that_finds_its_object_reads_it(void **state)
{
    struct fixture *f = *state;

    f->kind = PLAN_CREATE_ELSE_READ;
    script(&f->hook, -EEXIST, 409);
    script(&f->hook, 0, 200);
    f->hook.script[1].body = "{\"apiVersion\":\"v1\",\"kind\":\"Secret\",\"metadata\":"
                             "{\"name\":\"ca\",\"namespace\":\"ns1\"}}";
    assert_int_equal(manager_enqueue(f->m, "test", "ns1", "cp"), 0);
    assert_true(run_until_reconciles(f, 2, 2));
    settle(f);
    assert_true(f->found);
    assert_int_equal(f->hook.n_sent, 2);
    assert_int_equal(f->hook.sent[0].verb, KUBE_CREATE);
    assert_int_equal(f->hook.sent[1].verb, KUBE_GET);
    assert_string_equal(f->hook.sent[1].key, "ns1/ca");
    assert_int_equal(reconcile_total(f, "requeue"), 1);
    assert_int_equal(reconcile_total(f, "success"), 1);
}

/* A write the API server rejects (422) is shown: a Warning Event WriteRejected, the plan's
 * status write still runs (what comes between does not), the next reconcile's view says why,
 * and the key backs off; once a plan goes through, the view forgets it. */
static void test_manager__a_rejected_write_is_shown_on_the_object(void **state)
{
    struct fixture *f = *state;
    int events = 0;

    f->kind = PLAN_APPLY_THEN_STATUS;
    script(&f->hook, -EINVAL, 422); /* the apply */
    script(&f->hook, 0, 200);       /* the status, still written */
    assert_int_equal(manager_enqueue(f->m, "test", "ns1", "cp"), 0);
    assert_true(run_until_reconciles(f, 2, 2));
    settle(f);
    assert_non_null(strstr(f->rejected, "apply of Service ns1/svc was rejected: scripted failure"));
    /* apply (rejected), status; then the retry's apply, create, status */
    assert_int_equal(f->hook.sent[0].verb, KUBE_PATCH);
    assert_ptr_equal(f->hook.sent[0].res, &KUBE_SERVICES);
    int i = 1;
    while (f->hook.sent[i].res == &KUBE_EVENTS) {
        assert_string_equal(f->hook.sent[i].reason, "WriteRejected");
        events++;
        i++;
    }
    assert_int_equal(f->hook.sent[i].verb, KUBE_UPDATE);
    assert_string_equal(f->hook.sent[i].subresource, "status");
    assert_int_equal(events, 1);
    assert_int_equal(reconcile_total(f, "error"), 1);
    assert_true(reconcile_total(f, "success") >= 1);
    /* The retry went through: forgotten. */
    assert_int_equal(manager_enqueue(f->m, "test", "ns1", "cp"), 0);
    assert_true(run_until_reconciles(f, 3, 2));
    settle(f);
    assert_string_equal(f->rejected, "");
}

/* An Event says a thing happened only after it did: recorded once the plan's actions
 * succeeded, never for a plan that failed. */
static void test_manager__events_are_recorded_after_the_actions_succeed(void **state)
{
    struct fixture *f = *state;
    const enum kube_verb want_verbs[] = {KUBE_PATCH, KUBE_PATCH, KUBE_CREATE, KUBE_PATCH,
                                         KUBE_CREATE};
    const char *const want_events[] = {"WriteRejected", "CreatedService", "WriteRejected",
                                       "CreatedService"};
    int v = 0, k = 0;

    f->kind = PLAN_EVENT;
    script(&f->hook, -EINVAL, 422); /* 1: the apply is refused: no CreatedService */
    script(&f->hook, 0, 200);       /* 2: the apply goes through: CreatedService, */
    script(&f->hook, -EINVAL, 422); /*    though the create after it is refused */
    assert_int_equal(manager_enqueue(f->m, "test", "ns1", "cp"), 0);
    assert_true(run_until_reconciles(f, 3, 2));
    settle(f);
    for (int i = 0; i < f->hook.n_sent; i++) {
        const struct sent *s = &f->hook.sent[i];
        if (s->res == &KUBE_EVENTS) {
            if (s->verb != KUBE_CREATE)
                continue; /* a repeat: its count patched */
            assert_true(k < 4);
            assert_string_equal(s->reason, want_events[k++]);
            assert_string_equal(s->key, "cp");
        } else if (v < 5) {
            assert_int_equal(s->verb, want_verbs[v++]);
        }
    }
    assert_int_equal(v, 5);
    assert_true(k >= 3); /* the third attempt's CreatedService is a repeat of the second's */
}

/* The requests of the plan's writes sent together (two keys' worth of objects) go out at
 * once; what follows them waits for both answers, and their Event for both successes. */
static void test_manager__actions_together_are_sent_at_once(void **state)
{
    struct fixture *f = *state;
    int events = 0;

    f->kind = PLAN_TOGETHER;
    f->hook.hold = true;
    assert_int_equal(manager_enqueue(f->m, "test", "ns1", "cp"), 0);
    assert_true(run_until_sent(f, 2, 2));
    /* both in flight, no answer yet, nothing after them sent */
    assert_int_equal(f->hook.in_flight, 2);
    assert_int_equal(f->hook.sent[0].verb, KUBE_PATCH);
    assert_string_equal(f->hook.sent[0].key, "ns1/svc");
    assert_int_equal(f->hook.sent[1].verb, KUBE_CREATE);
    assert_string_equal(f->hook.sent[1].key, "ns1/ca");
    release_all(&f->hook);
    settle(f);
    assert_int_equal(reconcile_total(f, "success"), 1);
    for (int i = 2; i < f->hook.n_sent; i++) {
        if (f->hook.sent[i].res == &KUBE_EVENTS) {
            assert_string_equal(f->hook.sent[i].reason, "CreatedBoth");
            events++;
        } else {
            assert_int_equal(f->hook.sent[i].verb, KUBE_DELETE);
            assert_string_equal(f->hook.sent[i].key, "ns1/old");
        }
    }
    assert_int_equal(events, 1);
    assert_int_equal(f->hook.n_sent, 4);
}

/* When one of the writes sent together fails, the other still has its answer, and the plan
 * ends as if the first failure in the plan's order had come alone: nothing after them is
 * sent, their Event is not recorded, and the key backs off. */
static void test_manager__a_failure_among_actions_together_ends_the_plan(void **state)
{
    struct fixture *f = *state;
    double end = time_mono() + 2;

    f->kind = PLAN_TOGETHER;
    f->hook.hold = true;
    script(&f->hook, -EIO, 500); /* the apply fails */
    script(&f->hook, 0, 201);    /* the create, sent with it, succeeds */
    assert_int_equal(manager_enqueue(f->m, "test", "ns1", "cp"), 0);
    assert_true(run_until_sent(f, 2, 2));
    release_all(&f->hook);
    /* The key's failure is counted as the last answer comes in; its retry waits for a timer. */
    while (reconcile_total(f, "error") < 1 && time_mono() < end)
        ev_run(f->loop, EVRUN_ONCE);
    assert_int_equal(reconcile_total(f, "error"), 1);
    assert_int_equal(f->hook.in_flight, 0);
    assert_int_equal(f->hook.n_sent, 2); /* no delete, no Event */
    assert_int_equal(metric(f, "tester_api_requests_total", (const char *[]){"apply", "500"}), 1);
    assert_int_equal(metric(f, "tester_api_requests_total", (const char *[]){"create", "201"}), 1);
}

/* Creates sent together, one of which finds its object existing: the others are made, the
 * Event that counts them says how many were, and the key is reconciled again with the object
 * found in its view. When all are made, the Event counts them all. */
static void test_manager__a_counted_event_says_how_many_writes_together_were_made(void **state)
{
    struct fixture *f = *state;
    int events = 0, gets = 0;

    f->kind = PLAN_COUNTED_TOGETHER;
    script(&f->hook, -EEXIST, 409); /* a exists */
    script(&f->hook, 0, 201);       /* b and c are made */
    script(&f->hook, 0, 201);
    script(&f->hook, 0, 200); /* a is read */
    f->hook.script[3].body = "{\"apiVersion\":\"v1\",\"kind\":\"Secret\",\"metadata\":"
                             "{\"name\":\"a\",\"namespace\":\"ns1\"}}";
    assert_int_equal(manager_enqueue(f->m, "test", "ns1", "cp"), 0);
    assert_true(run_until_reconciles(f, 2, 2));
    settle(f);
    assert_true(f->found);
    for (int i = 0; i < f->hook.n_sent; i++) {
        const struct sent *s = &f->hook.sent[i];
        if (s->res == &KUBE_EVENTS) {
            assert_string_equal(s->reason, "CreatedSecrets");
            assert_string_equal(s->message, "2 Secrets created");
            events++;
        } else if (s->verb == KUBE_GET) {
            assert_string_equal(s->key, "ns1/a");
            gets++;
        }
    }
    assert_int_equal(events, 1);
    assert_int_equal(gets, 1);
    assert_int_equal(reconcile_total(f, "requeue"), 1);

    /* All made: all counted. */
    f->hook.n_sent = 0;
    assert_int_equal(manager_enqueue(f->m, "test", "ns2", "cp"), 0);
    assert_true(run_until_reconciles(f, 3, 2));
    settle(f);
    events = 0;
    for (int i = 0; i < f->hook.n_sent; i++) {
        const struct sent *s = &f->hook.sent[i];
        if (s->res == &KUBE_EVENTS) {
            assert_string_equal(s->message, "3 Secrets created");
            events++;
        }
    }
    assert_int_equal(events, 1);
    assert_int_equal(f->hook.n_sent, 4);
}

/* Claimed applies sent together each take their own claim check: one finds its object the
 * claimer's own and applies again, the other creates its object. */
static void test_manager__claimed_applies_together_check_each_claim(void **state)
{
    struct fixture *f = *state;
    int svc_patches = 0, svc2_patches = 0, gets = 0;

    f->kind = PLAN_TOGETHER_CLAIMED;
    script(&f->hook, -EBUSY, 409); /* svc exists ... */
    script(&f->hook, 0, 201);      /* svc2 is created */
    script(&f->hook, 0, 200);      /* svc is read: the claimer's own */
    f->hook.script[2].body = owned_by_mine;
    script(&f->hook, 0, 200); /* and applied */
    assert_int_equal(manager_enqueue(f->m, "test", "ns1", "cp"), 0);
    assert_true(run_until_reconciles(f, 1, 2));
    settle(f);
    assert_int_equal(reconcile_total(f, "success"), 1);
    for (int i = 0; i < f->hook.n_sent; i++) {
        const struct sent *s = &f->hook.sent[i];
        if (s->verb == KUBE_GET) {
            assert_string_equal(s->key, "ns1/svc");
            gets++;
        } else if (strcmp(s->key, "ns1/svc") == 0) {
            svc_patches++;
        } else {
            assert_string_equal(s->key, "ns1/svc2");
            svc2_patches++;
        }
    }
    assert_int_equal(gets, 1);
    assert_int_equal(svc_patches, 2);
    assert_int_equal(svc2_patches, 1);
    assert_string_equal(f->hook.sent[f->hook.n_sent - 1].rv, "");
}

static void test_manager__concurrency_is_capped(void **state)
{
    struct fixture *f = calloc(1, sizeof(*f));

    *state = f;
    setup_with(f, 2);
    f->kind = PLAN_CREATE;
    f->hook.hold = true;
    for (int i = 0; i < 5; i++) {
        char name[16];
        snprintf(name, sizeof(name), "cp%d", i);
        assert_int_equal(manager_enqueue(f->m, "test", "ns1", name), 0);
    }
    run_for(f, 0.1);
    /* Two keys hold their one request each; the other three wait in the queue. */
    assert_int_equal(f->reconciles, 2);
    assert_int_equal(f->hook.n_sent, 2);
    assert_int_equal(metric(f, "controller_runtime_active_workers", (const char *[]){"test"}), 2);
    assert_int_equal(metric(f, "workqueue_depth", (const char *[]){"test"}), 3);
    release_all(&f->hook);
    f->hook.hold = false;
    assert_true(run_until_reconciles(f, 5, 2));
    settle(f);
    assert_int_equal(reconcile_total(f, "success"), 5);
}

static void stopped(void *userdata)
{
    *(bool *)userdata = true;
}

static void test_manager__stop_waits_for_plans_in_flight(void **state)
{
    struct fixture *f = *state;
    bool done = false;

    f->kind = PLAN_CREATE;
    f->hook.hold = true;
    assert_int_equal(manager_enqueue(f->m, "test", "ns1", "cp"), 0);
    run_for(f, 0.05);
    assert_int_equal(f->hook.n_sent, 1);
    assert_int_equal(manager_stop(f->m, stopped, &done), 0);
    assert_int_equal(manager_stop(f->m, stopped, &done), -EALREADY);
    assert_false(manager_processing(f->m));
    /* New keys are refused while stopping. */
    assert_int_equal(manager_enqueue(f->m, "test", "ns1", "other"), -EAGAIN);
    run_for(f, 0.1);
    assert_false(done);
    release_all(&f->hook);
    run_for(f, 0.1);
    assert_true(done);
    assert_int_equal(reconcile_total(f, "success"), 1);
}

static void test_manager__add_controller_checks_its_definition(void **state)
{
    struct fixture *f = calloc(1, sizeof(*f));
    struct manager_opts o = test_opts(f);
    struct controller_def def = {.name = "a", .primary = &GADGETS, .reconcile = reconcile};
    struct controller_def bad = def;
    struct err e;

    *state = f;
    f->loop = ev_loop_new(EVFLAG_AUTO);
    f->hook.loop = f->loop;
    assert_int_equal(manager_new(f->loop, NULL, &o, &f->m, &e), 0);
    assert_int_equal(manager_add_controller(f->m, &def, &e), 0);
    assert_int_equal(manager_add_controller(f->m, &def, &e), -EINVAL);
    assert_non_null(strstr(e.msg, "twice"));
    bad.primary = &KUBE_NODES;
    bad.name = "b";
    assert_int_equal(manager_add_controller(f->m, &bad, &e), -EINVAL);
    assert_non_null(strstr(e.msg, "nodes"));
    bad = def;
    bad.name = "c";
    bad.reconcile = NULL;
    assert_int_equal(manager_add_controller(f->m, &bad, &e), -EINVAL);
    assert_int_equal(manager_enqueue(f->m, "a", "ns", "x"), -EAGAIN);
    assert_int_equal(manager_enqueue(f->m, "nope", "ns", "x"), -ENOENT);
    assert_int_equal(manager_start(f->m, &e), 0);
    assert_int_equal(manager_add_controller(f->m, &bad, &e), -EINVAL);
    assert_int_equal(manager_enqueue(f->m, "a", "ns", "x"), 0);
    f->kind = PLAN_REQUEUE_AFTER;
    assert_int_equal(manager_new(f->loop, NULL, NULL, &(struct manager *){NULL}, &e), -EINVAL);
    o.field_manager = NULL;
    assert_int_equal(manager_new(f->loop, NULL, &o, &(struct manager *){NULL}, &e), -EINVAL);
}

static int teardown_owned(void **state)
{
    return *state ? teardown(state) : 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_manager__actions_run_in_order_with_field_manager,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_manager__stops_at_first_failure_and_backs_off, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_manager__reconcile_counters_start_at_zero, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_manager__conflict_requeues_without_error, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_manager__already_exists_on_create_requeues, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(
            test_manager__a_claimed_apply_leaves_someone_elses_object_alone, setup, teardown),
        cmocka_unit_test_setup_teardown(test_manager__a_create_that_finds_its_object_reads_it,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_manager__a_rejected_write_is_shown_on_the_object,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_manager__requeue_after_reconciles_again_later, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(
            test_manager__retry_after_is_the_least_wait_before_the_next_reconcile, setup, teardown),
        cmocka_unit_test_setup_teardown(test_manager__reconcile_error_retries_with_backoff, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_manager__delete_of_missing_object_succeeds, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(
            test_manager__an_action_outside_the_access_table_is_not_sent, setup, teardown),
        cmocka_unit_test_setup_teardown(test_manager__events_are_recorded_after_the_actions_succeed,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_manager__actions_together_are_sent_at_once, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(
            test_manager__a_failure_among_actions_together_ends_the_plan, setup, teardown),
        cmocka_unit_test_setup_teardown(test_manager__claimed_applies_together_check_each_claim,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(
            test_manager__a_counted_event_says_how_many_writes_together_were_made, setup, teardown),
        cmocka_unit_test_teardown(test_manager__concurrency_is_capped, teardown_owned),
        cmocka_unit_test_setup_teardown(
            test_manager__progress_waits_for_the_interval_after_a_status_write, setup, teardown),
        cmocka_unit_test_setup_teardown(test_manager__stop_waits_for_plans_in_flight, setup,
                                        teardown),
        cmocka_unit_test_teardown(test_manager__add_controller_checks_its_definition,
                                  teardown_owned),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
