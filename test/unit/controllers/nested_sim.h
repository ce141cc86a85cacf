#ifndef NESTCP_TEST_NESTED_SIM_H
#define NESTCP_TEST_NESTED_SIM_H

/*
 * The five reconcilers run against hand-filled caches: each pass reconciles every object of
 * every primary type and applies the plans to the caches as the API server would
 * (nested_fixture.h); a stand-in for the StatefulSet controller and kubelet marks StatefulSets
 * rolled out. No server, no event loop: keys are generated inline.
 */

#include <stdlib.h>

#include "controllers/nested.h"
#include "lib/render/catalog.h"
#include "nested_fixture.h"
#include "sim_etcd.h"

struct sim {
    struct fixture f;
    struct render_catalog *cat;
    struct nested_ctx ctx;
    size_t actions;     /* applied so far */
    size_t last_pass;   /* actions of the last pass */
    struct plan last;   /* the last non-empty plan of the last pass, kept for inspection */
    char order[16][64]; /* StatefulSets in the order they were first applied */
    int n_order;
    struct sim_etcds etcds; /* etcd members, their pods and claims */
    const char *watch;      /* an Event reason to count; NULL: none */
    int watch_hits;
    enum { SIM_JOBS_COMPLETE, SIM_JOBS_RUN, SIM_JOBS_FAIL } jobs; /* what Jobs do */
    int jobs_created;
    char watch_msg[512]; /* the last such Event's message */
    /* Called with every action applied, when set. */
    void (*on_action)(void *ud, const struct plan_action *a);
    void *on_action_ud;
};

static inline struct render_catalog *sim_catalog(void)
{
    const char *src = getenv("NESTCP_SOURCE_DIR"), *me = __FILE__;
    const char *at = strstr(me, "/test/unit/controllers/");
    struct render_catalog *cat = NULL;
    char dir[4096];
    struct err e = {0};

    if (src)
        snprintf(dir, sizeof(dir), "%s/templates", src);
    else
        snprintf(dir, sizeof(dir), "%.*s/templates", at ? (int)(at - me) : 1, at ? me : ".");
    if (render_catalog_open(dir, &cat, &e) < 0)
        fail_msg("catalog %s: %s", dir, e.msg);
    return cat;
}

static inline void sim_init(struct sim *s, const char *yaml)
{
    memset(s, 0, sizeof(*s));
    fx_init(&s->f);
    s->cat = sim_catalog();
    nested_ctx_init(&s->ctx, s->cat, NULL, 0);
    plan_init(&s->last);
    if (yaml)
        fx_put(&s->f, yaml);
}

static inline void sim_done(struct sim *s)
{
    sim_etcds_done(&s->etcds);
    plan_done(&s->last);
    nested_ctx_done(&s->ctx);
    render_catalog_free(s->cat);
    fx_done(&s->f);
}

/* Reconciles one object with a controller and applies the plan. Returns the plan's actions. */
static inline size_t sim_one(struct sim *s, int which, const char *ns, const char *name)
{
    struct plan p;
    struct err e;
    size_t n;
    int r;

    plan_init(&p);
    err_clear(&e);
    if (which < 0)
        r = nestedcontrolplane_reconcile(&s->ctx, &s->f.view, ns, name, &p, &e);
    else if (which < RENDER_PART__COUNT)
        r = nestedcomponent_reconcile(&s->ctx.parts[which], &s->f.view, ns, name, &p, &e);
    else
        r = nestedcluster_reconcile(&s->ctx, &s->f.view, ns, name, &p, &e);
    if (r < 0)
        fail_msg("reconcile %s/%s: %s", ns, name, e.msg);
    for (size_t i = 0; i < p.n_actions; i++) {
        const struct plan_action *a = &p.actions[i];
        bool seen = false;
        if (s->on_action && !a->call) /* API requests, not calls to etcd */
            s->on_action(s->on_action_ud, a);
        if (getenv("NESTED_SIM_TRACE"))
            print_message("  %s/%s: %d %s %s %s\n", ns, name, (int)a->verb,
                          a->call ? a->call->name : a->resource->resource, a->name ? a->name : "",
                          a->why);
        if (!a->call && a->verb == KUBE_CREATE && strcmp(a->resource->resource, "jobs") == 0)
            s->jobs_created++;
        if (a->call || strcmp(a->resource->resource, "statefulsets") != 0 || a->verb != KUBE_PATCH)
            continue;
        for (int k = 0; k < s->n_order; k++)
            seen = seen || strcmp(s->order[k], a->name) == 0;
        if (!seen && s->n_order < 16)
            snprintf(s->order[s->n_order++], sizeof(s->order[0]), "%s", a->name);
    }
    for (size_t i = 0; s->watch && i < p.n_events; i++)
        if (strcmp(p.events[i].reason, s->watch) == 0) {
            s->watch_hits++;
            snprintf(s->watch_msg, sizeof(s->watch_msg), "%s", p.events[i].message);
        }
    if (getenv("NESTED_SIM_TRACE"))
        for (size_t i = 0; i < p.n_events; i++)
            print_message("  %s/%s: event %s %s\n", ns, name, p.events[i].reason,
                          p.events[i].message);
    /* In order, as the runtime carries a plan out; a call that changes nothing (a LIST that
     * shows what the last one showed) does not count. */
    n = 0;
    for (size_t i = 0; i < p.n_actions; i++) {
        if (p.actions[i].call) {
            n += sim_etcd_call(&s->f, &s->etcds, &p.actions[i]);
        } else {
            fx_apply_action(&s->f, &p.actions[i]);
            n++;
        }
    }
    if (n || p.n_events) {
        plan_done(&s->last);
        s->last = p;
    } else {
        plan_done(&p);
    }
    return n;
}

struct sim_keys {
    char keys[64][256];
    int n;
};

static inline bool sim_collect(void *ud, const cJSON *obj)
{
    struct sim_keys *k = ud;

    if (k->n < 64)
        snprintf(k->keys[k->n++], sizeof(k->keys[0]), "%s", kube_obj_name(obj));
    return true;
}

/* One pass over every control plane, component and NestedCluster in "default". */
static inline size_t sim_pass(struct sim *s)
{
    static const enum fx_store stores[] = {FX_CONTROL_PLANES, FX_ETCDS, FX_APISERVERS,
                                           FX_CONTROLLER_MANAGERS, FX_NESTED_CLUSTERS};
    static const int which[] = {-1, RENDER_PART_ETCD, RENDER_PART_APISERVER,
                                RENDER_PART_CONTROLLER_MANAGER, RENDER_PART__COUNT};
    size_t n = 0;

    for (size_t i = 0; i < sizeof(stores) / sizeof(stores[0]); i++) {
        struct sim_keys k = {.n = 0};
        kube_store_foreach(&s->f.stores[stores[i]], sim_collect, &k);
        for (int j = 0; j < k.n; j++)
            n += sim_one(s, which[i], "default", k.keys[j]);
    }
    s->actions += n;
    s->last_pass = n;
    return n;
}

/* Marks the StatefulSet name rolled out: every replica of its current template ready. */
static inline void sim_roll_out(struct sim *s, const char *name)
{
    const cJSON *cur = fx_get(&s->f, FX_STATEFULSETS, name);
    cJSON *sts, *st, *meta;
    const cJSON *g, *rep;
    char rev[64];
    int n;

    if (!cur)
        return;
    sts = cJSON_Duplicate(cur, true);
    meta = cJSON_GetObjectItemCaseSensitive(sts, "metadata");
    g = cJSON_GetObjectItemCaseSensitive(meta, "generation");
    rep = fx_path(sts, "spec.replicas");
    n = cJSON_IsNumber(rep) ? rep->valueint : 1;
    {
        const cJSON *ann = fx_path(sts, "spec.template.metadata.annotations");
        const cJSON *h = cJSON_GetObjectItemCaseSensitive(ann, "nestcp.x-k8s.io/config-hash");
        snprintf(rev, sizeof(rev), "%s-%.10s", name, cJSON_IsString(h) ? h->valuestring : "x");
    }
    cJSON_DeleteItemFromObjectCaseSensitive(sts, "status");
    st = cJSON_AddObjectToObject(sts, "status");
    cJSON_AddNumberToObject(st, "observedGeneration", cJSON_IsNumber(g) ? g->valuedouble : 1);
    cJSON_AddNumberToObject(st, "replicas", n);
    cJSON_AddNumberToObject(st, "readyReplicas", n);
    cJSON_AddNumberToObject(st, "updatedReplicas", n);
    cJSON_AddNumberToObject(st, "currentReplicas", n);
    cJSON_AddStringToObject(st, "currentRevision", rev);
    cJSON_AddStringToObject(st, "updateRevision", rev);
    cJSON_DeleteItemFromObjectCaseSensitive(meta, "resourceVersion");
    cJSON_AddStringToObject(meta, "resourceVersion", "sts-rolled");
    fx_put_json(&s->f, sts);
}

static inline bool sim_collect_sts(void *ud, const cJSON *obj)
{
    return sim_collect(ud, obj);
}

/* Finishes a Job as s->jobs says: Complete, as the Job controller marks it once its pod
 * succeeded, or Failed. */
static inline void sim_job(struct sim *s, const char *name)
{
    cJSON *job = cJSON_Duplicate(fx_get(&s->f, FX_JOBS, name), true), *st, *c;

    cJSON_DeleteItemFromObjectCaseSensitive(job, "status");
    st = cJSON_AddObjectToObject(job, "status");
    c = cJSON_CreateObject();
    cJSON_AddStringToObject(c, "type", s->jobs == SIM_JOBS_FAIL ? "Failed" : "Complete");
    cJSON_AddStringToObject(c, "status", "True");
    if (s->jobs == SIM_JOBS_FAIL) {
        cJSON_AddStringToObject(c, "reason", "BackoffLimitExceeded");
        cJSON_AddStringToObject(c, "message", "Job has reached the specified backoff limit");
    } else {
        cJSON_AddStringToObject(st, "completionTime", "2027-01-15T08:00:00Z");
    }
    cJSON_AddItemToArray(cJSON_AddArrayToObject(st, "conditions"), c);
    fx_put_json(&s->f, job);
}

/* Rolls out every StatefulSet whose status is behind, and finishes every Job. Returns whether
 * anything changed. */
static inline bool sim_kubelet(struct sim *s)
{
    struct sim_keys k = {.n = 0}, jobs = {.n = 0};
    unsigned long before = s->etcds.changes;

    kube_store_foreach(&s->f.stores[FX_JOBS], sim_collect, &jobs);
    for (int i = 0; i < jobs.n; i++)
        if (s->jobs != SIM_JOBS_RUN &&
            !fx_path(fx_get(&s->f, FX_JOBS, jobs.keys[i]), "status.conditions")) {
            sim_job(s, jobs.keys[i]);
            s->etcds.changes++;
        }

    kube_store_foreach(&s->f.stores[FX_STATEFULSETS], sim_collect_sts, &k);
    for (int i = 0; i < k.n; i++) {
        const cJSON *cur = fx_get(&s->f, FX_STATEFULSETS, k.keys[i]);
        const cJSON *og = fx_path(cur, "status.observedGeneration");
        const cJSON *g = fx_path(cur, "metadata.generation");
        const char *comp = kube_obj_label(cur, "app.kubernetes.io/component");
        if (comp && strcmp(comp, "etcd") == 0) {
            sim_etcd_set(&s->f, &s->etcds, k.keys[i]);
            continue;
        }
        if (!cJSON_IsNumber(og) || !cJSON_IsNumber(g) || og->valuedouble < g->valuedouble) {
            sim_roll_out(s, k.keys[i]);
            s->etcds.changes++;
        }
    }
    return s->etcds.changes != before;
}

/* Passes (with the kubelet stand-in between them) until one changes nothing. Returns the
 * number of passes. */
static inline int sim_converge(struct sim *s, int max_passes)
{
    for (int i = 1; i <= max_passes; i++) {
        size_t n;
        if (getenv("NESTED_SIM_TRACE"))
            print_message("pass %d\n", i);
        n = sim_pass(s);
        s->f.view.now += 1.0;
        if (!sim_kubelet(s) && n == 0)
            return i;
    }
    fail_msg("no steady state after %d passes", max_passes);
    return -1;
}

#endif
