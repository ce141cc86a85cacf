#ifndef NESTCP_TEST_SIM_ETCD_H
#define NESTCP_TEST_SIM_ETCD_H

/*
 * For the controller simulation (nested_sim.h): a tenant etcd's StatefulSet controller, kubelet
 * and members. Pods are created from the template (scheduling gate included) for ordinals
 * below spec.replicas, with a claim each when the set has claim templates; pods above it go,
 * with their claims (whenScaled: Delete). A roll replaces the highest ordinal at or above the
 * partition that runs another template, once every pod above it is updated and Ready. A pod
 * without a gate starts its member: from the data on its claim (or, on emptyDir, its own
 * volume), else as its annotations say ("new": bootstrap from the initial cluster, "existing":
 * join as the member listed under its peer URL). A member is Ready once started in a cluster
 * with a quorum of started voters. Calls are answered as etcd would: list, add a learner
 * (one at a time), promote once started, remove while a quorum remains.
 *
 * The model counts clusters formed; a test that expects no data loss checks it stays 1.
 */

#include <errno.h>
#include <inttypes.h>

#include "controllers/etcdmembership.h"
#include "lib/etcd/json.h"
#include "nested_fixture.h"

#define SIM_ETCD_MAX 8
#define SIM_MEMBERS_MAX 16

struct sim_member {
    uint64_t id;
    char url[ETCD_MEMBERS_URL_MAX];
    char name[64]; /* "" until started; kept when it stops */
    bool learner;
    bool running; /* its pod runs it */
};

struct sim_data {
    char holder[96]; /* the claim's or pod's UID */
    uint64_t cluster, member;
};

struct sim_etcd {
    char sts[96]; /* "<c>-etcd" */
    uint64_t cluster_id;
    struct sim_member m[SIM_MEMBERS_MAX];
    int n;
    struct sim_data data[32];
    int n_data;
    int clusters_formed;
    int crashes;       /* pods that started with nothing to join */
    int quorum_losses; /* kubelet steps that ended without the quorum a cluster of 3 or more
                          voters had before */
    bool had_quorum;
    int max_learners; /* at once */
    cJSON *cur_tpl;   /* the pod template of the current revision (the one rolled from) */
    char sts_uid[64]; /* the StatefulSet cur_tpl belongs to: a new one starts afresh */
    int created[ETCD_MEMBERS_REPLICAS_MAX]; /* pods created, by ordinal */
    char last_list[1024];
};

struct sim_etcds {
    struct sim_etcd e[SIM_ETCD_MAX];
    int n;
    uint64_t next_id;
    unsigned long next_uid;
    unsigned long changes; /* writes of the StatefulSet controller and kubelet */
};

static inline void sim_etcds_done(struct sim_etcds *es)
{
    for (int i = 0; i < es->n; i++)
        cJSON_Delete(es->e[i].cur_tpl);
}

static inline struct sim_etcd *sim_etcd_of(struct sim_etcds *es, const char *sts)
{
    for (int i = 0; i < es->n; i++)
        if (strcmp(es->e[i].sts, sts) == 0)
            return &es->e[i];
    assert_true(es->n < SIM_ETCD_MAX);
    memset(&es->e[es->n], 0, sizeof(es->e[0]));
    snprintf(es->e[es->n].sts, sizeof(es->e[0].sts), "%s", sts);
    return &es->e[es->n++];
}

static inline struct sim_member *sim_member_by_url(struct sim_etcd *e, const char *url)
{
    for (int k = 0; k < e->n; k++)
        if (strcmp(e->m[k].url, url) == 0)
            return &e->m[k];
    return NULL;
}

static inline struct sim_member *sim_member_by_id(struct sim_etcd *e, uint64_t id)
{
    for (int k = 0; k < e->n; k++)
        if (e->m[k].id == id)
            return &e->m[k];
    return NULL;
}

static inline struct sim_data *sim_data_of(struct sim_etcd *e, const char *holder)
{
    for (int k = 0; holder && k < e->n_data; k++)
        if (strcmp(e->data[k].holder, holder) == 0)
            return &e->data[k];
    return NULL;
}

static inline void sim_data_set(struct sim_etcd *e, const char *holder, uint64_t member)
{
    struct sim_data *d = sim_data_of(e, holder);

    if (!d) {
        assert_true(e->n_data < 32);
        d = &e->data[e->n_data++];
        snprintf(d->holder, sizeof(d->holder), "%s", holder);
    }
    d->cluster = e->cluster_id;
    d->member = member;
}

/* "ns" and the peer URL of ordinal i of sts "<c>-etcd". */
static inline void sim_etcd_url(const char *sts, int i, char *out, size_t size)
{
    int n = (int)strlen(sts) - 5; /* without "-etcd" */

    snprintf(out, size, "https://%.*s-etcd-%d.%s.default.svc:2380", n, sts, i, sts);
}

/* Voting members, and how many of them run. */
static inline int sim_voters(const struct sim_etcd *e, int *ret_running)
{
    int v = 0, run = 0;

    for (int k = 0; k < e->n; k++)
        if (!e->m[k].learner) {
            v++;
            run += e->m[k].running;
        }
    *ret_running = run;
    return v;
}

/* The member of pod ordinal i stops (its pod is gone). */
static inline void sim_member_stop(struct sim_etcd *e, int i)
{
    char name[128];

    snprintf(name, sizeof(name), "%s-%d", e->sts, i);
    for (int k = 0; k < e->n; k++)
        if (strcmp(e->m[k].name, name) == 0)
            e->m[k].running = false;
}

static inline bool sim_quorum(const struct sim_etcd *e)
{
    int started, voters = sim_voters(e, &started);

    return voters > 0 && started >= voters / 2 + 1;
}

/* A pod of sts from the pod template tpl. */
static inline cJSON *sim_pod_from(const cJSON *sts, const cJSON *tpl, const char *name)
{
    cJSON *pod = cJSON_CreateObject(), *meta, *tmeta, *refs, *ref;

    cJSON_AddStringToObject(pod, "apiVersion", "v1");
    cJSON_AddStringToObject(pod, "kind", "Pod");
    tmeta = cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(tpl, "metadata"), true);
    meta = tmeta ? tmeta : cJSON_CreateObject();
    cJSON_AddItemToObject(pod, "metadata", meta);
    cJSON_AddStringToObject(meta, "name", name);
    cJSON_AddStringToObject(meta, "namespace", "default");
    refs = cJSON_AddArrayToObject(meta, "ownerReferences");
    ref = cJSON_CreateObject();
    cJSON_AddStringToObject(ref, "apiVersion", "apps/v1");
    cJSON_AddStringToObject(ref, "kind", "StatefulSet");
    cJSON_AddStringToObject(ref, "name", kube_obj_name(sts));
    cJSON_AddStringToObject(ref, "uid", kube_obj_uid(sts));
    cJSON_AddTrueToObject(ref, "controller");
    cJSON_AddItemToArray(refs, ref);
    cJSON_AddItemToObject(pod, "spec",
                          cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(tpl, "spec"), true));
    cJSON_AddObjectToObject(pod, "status");
    /* The StatefulSet controller mounts each claim template's claim of the pod. */
    if (cJSON_GetArraySize(fx_path(sts, "spec.volumeClaimTemplates")) > 0) {
        cJSON *spec = cJSON_GetObjectItemCaseSensitive(pod, "spec"), *vols, *v, *c;
        char claim[160];
        if (!(vols = cJSON_GetObjectItemCaseSensitive(spec, "volumes")))
            vols = cJSON_AddArrayToObject(spec, "volumes");
        v = cJSON_CreateObject();
        cJSON_AddStringToObject(v, "name", "data");
        c = cJSON_AddObjectToObject(v, "persistentVolumeClaim");
        snprintf(claim, sizeof(claim), "data-%s", name);
        cJSON_AddStringToObject(c, "claimName", claim);
        cJSON_AddItemToArray(vols, v);
    }
    return pod;
}

/* The pod's volume "data" is no claim while its StatefulSet has claim templates (it was
 * adopted from one on emptyDir). */
static inline bool sim_pod_storage_differs(const cJSON *sts, const cJSON *pod)
{
    const cJSON *v;

    if (cJSON_GetArraySize(fx_path(sts, "spec.volumeClaimTemplates")) == 0)
        return false;
    cJSON_ArrayForEach(v, fx_path(pod, "spec.volumes"))
        if (fx_str(v, "name") && strcmp(fx_str(v, "name"), "data") == 0)
            return !fx_path(v, "persistentVolumeClaim");
    return true;
}

static inline void sim_set_uid(struct sim_etcds *es, cJSON *obj, const char *prefix)
{
    char uid[64];

    snprintf(uid, sizeof(uid), "%s-%lu", prefix, ++es->next_uid);
    cJSON_AddStringToObject(cJSON_GetObjectItemCaseSensitive(obj, "metadata"), "uid", uid);
    cJSON_AddStringToObject(cJSON_GetObjectItemCaseSensitive(obj, "metadata"), "resourceVersion",
                            uid);
}

static inline const char *sim_annotation(const cJSON *obj, const char *key)
{
    return kube_obj_annotation(obj, key);
}

/* Starts the member of a pod that lost its gate. Returns true when it runs. */
static inline bool sim_member_start(struct sim_etcds *es, struct sim_etcd *e, const cJSON *pod,
                                    int ordinal, const char *holder)
{
    const char *state = sim_annotation(pod, ETCD_MEMBERSHIP_INITIAL_STATE);
    const char *init = sim_annotation(pod, ETCD_MEMBERSHIP_INITIAL_CLUSTER);
    const char *name = kube_obj_name(pod);
    struct sim_data *d = sim_data_of(e, holder);
    struct sim_member *m;
    char url[ETCD_MEMBERS_URL_MAX];

    sim_etcd_url(e->sts, ordinal, url, sizeof(url));
    if (d) {
        /* Its data names its member: it restarts as that member, if it still is one. */
        m = d->cluster == e->cluster_id ? sim_member_by_id(e, d->member) : NULL;
        if (!m)
            return false;
        snprintf(m->name, sizeof(m->name), "%s", name);
        m->running = true;
        return true;
    }
    assert_non_null(state);
    assert_non_null(init);
    m = sim_member_by_url(e, url);
    if (strcmp(state, "existing") == 0) {
        if (!m || m->name[0])
            return false;
        snprintf(m->name, sizeof(m->name), "%s", name);
        m->running = true;
        sim_data_set(e, holder, m->id);
        return true;
    }
    assert_string_equal(state, "new");
    if (m && !m->name[0] && e->cluster_id) {
        /* One of a new cluster's members, starting after the first. */
        snprintf(m->name, sizeof(m->name), "%s", name);
        m->running = true;
        sim_data_set(e, holder, m->id);
        return true;
    }
    /* A new cluster of the members the initial cluster names. */
    e->n = 0;
    e->cluster_id = ++es->next_id + 1000000;
    e->clusters_formed++;
    for (const char *p = init; p && *p;) {
        const char *eq = strchr(p, '='), *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - eq - 1) : strlen(eq + 1);
        struct sim_member *nm = &e->m[e->n++];
        memset(nm, 0, sizeof(*nm));
        nm->id = ++es->next_id;
        snprintf(nm->url, sizeof(nm->url), "%.*s", (int)len, eq + 1);
        p = comma ? comma + 1 : NULL;
    }
    m = sim_member_by_url(e, url);
    assert_non_null(m);
    snprintf(m->name, sizeof(m->name), "%s", name);
    m->running = true;
    sim_data_set(e, holder, m->id);
    return true;
}

static inline void sim_pod_status(struct fixture *f, const cJSON *pod, bool running, bool ready,
                                  int ordinal)
{
    cJSON *np = cJSON_Duplicate(pod, true), *st, *conds, *c;
    char ip[32];

    cJSON_DeleteItemFromObjectCaseSensitive(np, "status");
    st = cJSON_AddObjectToObject(np, "status");
    cJSON_AddStringToObject(st, "phase", running ? "Running" : "Pending");
    if (running) {
        cJSON *cs = cJSON_CreateObject();
        snprintf(ip, sizeof(ip), "10.0.0.%d", ordinal + 10);
        cJSON_AddStringToObject(st, "podIP", ip);
        cJSON_AddStringToObject(cs, "name", "etcd");
        cJSON_AddStringToObject(cs, "image", "registry.k8s.io/etcd:3.6.17-0");
        cJSON_AddItemToArray(cJSON_AddArrayToObject(st, "containerStatuses"), cs);
    }
    conds = cJSON_AddArrayToObject(st, "conditions");
    c = cJSON_CreateObject();
    cJSON_AddStringToObject(c, "type", "Ready");
    cJSON_AddStringToObject(c, "status", ready ? "True" : "False");
    cJSON_AddItemToArray(conds, c);
    fx_put_json(f, np);
}

static inline bool sim_pod_ready(const cJSON *pod)
{
    const cJSON *c = cJSON_GetArrayItem(fx_path(pod, "status.conditions"), 0);

    return c && fx_str(c, "status") && strcmp(fx_str(c, "status"), "True") == 0;
}

/* The config hash of a pod or pod template (the key has dots: no fx_path). */
static inline const char *sim_pod_hash(const cJSON *pod)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(fx_path(pod, "metadata.annotations"),
                                                      "nestcp.x-k8s.io/config-hash");

    return cJSON_IsString(v) ? v->valuestring : NULL;
}

/* One step of the StatefulSet controller and kubelet for an etcd StatefulSet. */
static inline void sim_etcd_set(struct fixture *f, struct sim_etcds *es, const char *sts_name)
{

    const cJSON *sts = fx_get(f, FX_STATEFULSETS, sts_name);
    struct sim_etcd *e = sim_etcd_of(es, sts_name);
    const cJSON *rep = fx_path(sts, "spec.replicas"), *part;
    const char *hash = sim_pod_hash(fx_path(sts, "spec.template"));
    bool claims = cJSON_GetArraySize(fx_path(sts, "spec.volumeClaimTemplates")) > 0;
    int n = cJSON_IsNumber(rep) ? rep->valueint : 1, p, ready = 0, updated = 0, stale = -1;
    bool stuck = false; /* failed to update a pod's storage: goes no further */
    char name[96], claim[112];
    cJSON *ns, *st;

    part = fx_path(sts, "spec.updateStrategy.rollingUpdate.partition");
    p = cJSON_IsNumber(part) ? part->valueint : 0;
    if (strcmp(e->sts_uid, kube_obj_uid(sts)) != 0) {
        /* A new StatefulSet: its only revision is its own template. */
        snprintf(e->sts_uid, sizeof(e->sts_uid), "%s", kube_obj_uid(sts));
        cJSON_Delete(e->cur_tpl);
        e->cur_tpl = cJSON_Duplicate(fx_path(sts, "spec.template"), true);
    }
    for (int i = 0; i < ETCD_MEMBERS_REPLICAS_MAX; i++) {
        const cJSON *pod;
        cJSON *old = NULL;

        snprintf(name, sizeof(name), "%s-%d", sts_name, i);
        snprintf(claim, sizeof(claim), "data-%s", name);
        pod = fx_get(f, FX_PODS, name);
        if (i >= n) {
            if (pod && kube_store_remove(&f->stores[FX_PODS], "default", name, &old) == 0) {
                cJSON_Delete(old);
                sim_member_stop(e, i);
                es->changes++;
            }
            old = NULL;
            if (fx_get(f, FX_CLAIMS, claim) &&
                kube_store_remove(&f->stores[FX_CLAIMS], "default", claim, &old) == 0) {
                cJSON_Delete(old);
                es->changes++;
            }
            continue;
        }
        if (claims && !fx_get(f, FX_CLAIMS, claim)) {
            cJSON *c = cJSON_CreateObject(), *m;
            cJSON_AddStringToObject(c, "apiVersion", "v1");
            cJSON_AddStringToObject(c, "kind", "PersistentVolumeClaim");
            m = cJSON_AddObjectToObject(c, "metadata");
            cJSON_AddStringToObject(m, "name", claim);
            cJSON_AddStringToObject(m, "namespace", "default");
            sim_set_uid(es, c, "claim");
            fx_put_json(f, c);
            es->changes++;
        }
        if (pod && fx_path(pod, "metadata.deletionTimestamp")) {
            /* Terminated in the step after its deletion, and recreated at once. */
            if (kube_store_remove(&f->stores[FX_PODS], "default", name, &old) == 0)
                cJSON_Delete(old);
            es->changes++;
            pod = NULL;
        }
        if (pod && !kube_obj_controller_ref(pod)) {
            /* An orphan of a StatefulSet deleted with propagation Orphan: adopted. */
            cJSON *np = cJSON_Duplicate(pod, true), *refs, *ref;
            cJSON *meta = cJSON_GetObjectItemCaseSensitive(np, "metadata");
            cJSON_DeleteItemFromObjectCaseSensitive(meta, "ownerReferences");
            refs = cJSON_AddArrayToObject(meta, "ownerReferences");
            ref = cJSON_CreateObject();
            cJSON_AddStringToObject(ref, "kind", "StatefulSet");
            cJSON_AddStringToObject(ref, "name", sts_name);
            cJSON_AddStringToObject(ref, "uid", kube_obj_uid(sts));
            cJSON_AddTrueToObject(ref, "controller");
            cJSON_AddItemToArray(refs, ref);
            fx_put_json(f, np);
            es->changes++;
            pod = fx_get(f, FX_PODS, name);
        }
        if (pod && sim_pod_storage_differs(sts, pod)) {
            /* Its update to the claim templates fails (pod volumes are immutable); the
             * controller goes no further than this ordinal. */
            stuck = true;
        }
        if (!pod && stuck)
            continue;
        if (!pod) {
            /* As the StatefulSet controller does: below the partition from the current
             * revision, at or above it from the update revision. */
            sim_member_stop(e, i); /* deleted outright: its member stopped with it */
            cJSON *np = sim_pod_from(
                sts, i >= p || !e->cur_tpl ? fx_path(sts, "spec.template") : e->cur_tpl, name);
            sim_set_uid(es, np, "pod");
            fx_put_json(f, np);
            e->created[i]++;
            es->changes++;
            continue;
        }
        if (cJSON_GetArraySize(fx_path(pod, "spec.schedulingGates")) == 0 &&
            !fx_str(pod, "status.podIP")) {
            const char *holder =
                claims ? kube_obj_uid(fx_get(f, FX_CLAIMS, claim)) : kube_obj_uid(pod);
            bool runs = sim_member_start(es, e, pod, i, holder);
            if (!runs)
                e->crashes++;
            sim_pod_status(f, pod, runs, false, i);
            es->changes++;
            pod = fx_get(f, FX_PODS, name);
        }
    }
    /* Readiness, and the roll. */
    for (int i = 0; i < n && i < ETCD_MEMBERS_REPLICAS_MAX; i++) {
        const cJSON *pod;
        char url[ETCD_MEMBERS_URL_MAX];
        struct sim_member *m;
        bool want;

        snprintf(name, sizeof(name), "%s-%d", sts_name, i);
        if (!(pod = fx_get(f, FX_PODS, name)))
            continue;
        sim_etcd_url(sts_name, i, url, sizeof(url));
        m = sim_member_by_url(e, url);
        want = fx_str(pod, "status.podIP") && m && m->running && strcmp(m->name, name) == 0 &&
               sim_quorum(e);
        if (want != sim_pod_ready(pod) && fx_str(pod, "status.podIP")) {
            sim_pod_status(f, pod, true, want, i);
            es->changes++;
        }
        pod = fx_get(f, FX_PODS, name);
        ready += sim_pod_ready(pod);
        if (hash && sim_pod_hash(pod) && strcmp(hash, sim_pod_hash(pod)) == 0)
            updated++;
        else if (i >= p && !fx_path(pod, "metadata.deletionTimestamp"))
            stale = i;
    }
    if (stale >= 0 && !stuck) {
        bool above_ok = true;
        for (int i = stale + 1; i < n; i++) {
            const cJSON *pod;
            snprintf(name, sizeof(name), "%s-%d", sts_name, i);
            pod = fx_get(f, FX_PODS, name);
            above_ok = above_ok && pod && sim_pod_ready(pod);
        }
        if (above_ok) {
            /* Deleted: terminating for one step (the member stops at once). */
            cJSON *np;
            snprintf(name, sizeof(name), "%s-%d", sts_name, stale);
            np = cJSON_Duplicate(fx_get(f, FX_PODS, name), true);
            cJSON_AddStringToObject(cJSON_GetObjectItemCaseSensitive(np, "metadata"),
                                    "deletionTimestamp", "2027-01-15T08:00:00Z");
            fx_put_json(f, np);
            sim_member_stop(e, stale);
            es->changes++;
        }
    }
    {
        int running, voters = sim_voters(e, &running), learners = 0;
        if (voters >= 3 && running < voters / 2 + 1 && e->had_quorum)
            e->quorum_losses++;
        if (voters >= 3 && running >= voters / 2 + 1)
            e->had_quorum = true;
        for (int k = 0; k < e->n; k++)
            learners += e->m[k].learner;
        if (learners > e->max_learners)
            e->max_learners = learners;
    }
    ns = cJSON_Duplicate(sts, true);
    cJSON_DeleteItemFromObjectCaseSensitive(ns, "status");
    st = cJSON_AddObjectToObject(ns, "status");
    {
        const cJSON *g = fx_path(sts, "metadata.generation");
        const char *cur = fx_str(sts, "status.currentRevision");
        char rev[64];
        snprintf(rev, sizeof(rev), "%s-%.10s", sts_name, hash ? hash : "x");
        cJSON_AddNumberToObject(st, "observedGeneration", cJSON_IsNumber(g) ? g->valuedouble : 1);
        cJSON_AddNumberToObject(st, "replicas", n);
        cJSON_AddNumberToObject(st, "readyReplicas", ready);
        cJSON_AddNumberToObject(st, "updatedReplicas", updated);
        cJSON_AddNumberToObject(st, "currentReplicas", updated);
        cJSON_AddStringToObject(st, "updateRevision", rev);
        cJSON_AddStringToObject(st, "currentRevision",
                                updated == n && ready == n ? rev
                                : cur                      ? cur
                                                           : "none");
        if (!e->cur_tpl || (updated == n && ready == n)) {
            cJSON_Delete(e->cur_tpl);
            e->cur_tpl = cJSON_Duplicate(fx_path(sts, "spec.template"), true);
        }
    }
    if (!cJSON_Compare(fx_path(ns, "status"), fx_path(sts, "status"), true)) {
        cJSON *meta = cJSON_GetObjectItemCaseSensitive(ns, "metadata");
        cJSON_DeleteItemFromObjectCaseSensitive(meta, "resourceVersion");
        cJSON_AddStringToObject(meta, "resourceVersion", "sts-status");
        fx_put_json(f, ns);
        es->changes++;
    } else {
        cJSON_Delete(ns);
    }
}

/* The signature of the membership a LIST shows, to tell whether it changed. */
static inline void sim_etcd_signature(const struct sim_etcd *e, char *out, size_t size)
{
    size_t n = (size_t)snprintf(out, size, "%" PRIu64 ":", e->cluster_id);

    for (int k = 0; k < e->n && n < size; k++)
        n += (size_t)snprintf(out + n, size - n, "%" PRIu64 "%s%s,", e->m[k].id,
                              e->m[k].learner ? "L" : "", e->m[k].name[0] ? "S" : "");
}

/* Answers a call of the plan as the member it is sent to would. Returns whether anything
 * changed (a LIST that shows what the last one showed changes nothing). */
static inline bool sim_etcd_call(struct fixture *f, struct sim_etcds *es,
                                 const struct plan_action *a)
{
    struct etcd_membership_call call;
    struct etcd_result res = {0};
    struct etcd_member_list list = {0};
    struct etcd_member lm[SIM_MEMBERS_MAX];
    char *peer[SIM_MEMBERS_MAX], *client[SIM_MEMBERS_MAX];
    char curl[SIM_MEMBERS_MAX][128];
    struct err e;
    struct sim_etcd *et = NULL;
    struct sim_member *via = NULL, *m;
    const cJSON *pod = NULL;
    char sig[1024], stsname[96], url[ETCD_MEMBERS_URL_MAX];
    bool changed = true;

    assert_int_equal(etcd_membership_call_of(a, &call), 0);
    /* The StatefulSet from the "why": "etcd default/<c>: ... via <c>-etcd-<i>". */
    {
        const char *via_s = strstr(a->why, " via ");
        const char *dash;
        assert_non_null(via_s);
        via_s += 5;
        dash = strrchr(via_s, '-');
        snprintf(stsname, sizeof(stsname), "%.*s", (int)(dash - via_s), via_s);
        pod = fx_get(f, FX_PODS, via_s);
    }
    et = sim_etcd_of(es, stsname);
    sim_etcd_url(stsname, call.ordinal, url, sizeof(url));
    via = sim_member_by_url(et, url);
    err_clear(&e);
    res.err = &e;
    if (!pod || !fx_str(pod, "status.podIP") || !via || !via->running) {
        res.code = -ECONNREFUSED;
    } else if (via->learner) {
        res.code = -EOPNOTSUPP;
        snprintf(e.msg, sizeof(e.msg), "etcdserver: rpc not supported for learner");
    } else if (!sim_quorum(et)) {
        res.code = -ETIMEDOUT;
    } else {
        switch (call.action) {
        case ETCD_MEMBERS_LIST:
            changed = false;
            break;
        case ETCD_MEMBERS_ADD_LEARNER:
            for (int k = 0; k < et->n; k++)
                if (et->m[k].learner)
                    res.code = -EUSERS;
            if (!res.code && sim_member_by_url(et, call.peer_url))
                res.code = -EEXIST;
            if (!res.code) {
                m = &et->m[et->n++];
                memset(m, 0, sizeof(*m));
                m->id = ++es->next_id;
                m->learner = true;
                snprintf(m->url, sizeof(m->url), "%s", call.peer_url);
            }
            break;
        case ETCD_MEMBERS_PROMOTE:
            m = sim_member_by_id(et, call.member_id);
            if (!m)
                res.code = -ENOENT;
            else if (!m->learner)
                res.code = -EALREADY;
            else if (!m->running)
                res.code = -EAGAIN;
            else
                m->learner = false;
            break;
        case ETCD_MEMBERS_REMOVE: {
            int k = -1, started, voters;
            for (int j = 0; j < et->n; j++)
                if (et->m[j].id == call.member_id)
                    k = j;
            if (k < 0) {
                res.code = -ENOENT;
                break;
            }
            struct sim_member gone = et->m[k];
            et->m[k] = et->m[--et->n];
            voters = sim_voters(et, &started);
            if (!gone.learner && voters > 0 && started < voters / 2 + 1) {
                et->m[et->n++] = gone; /* etcd refuses what leaves no quorum */
                res.code = -EHOSTDOWN;
            }
            break;
        }
        default:
            fail_msg("unexpected call %d", (int)call.action);
        }
    }
    if (res.code == 0) {
        list.header.cluster_id = et->cluster_id;
        list.n_members = (size_t)et->n;
        list.members = lm;
        for (int k = 0; k < et->n; k++) {
            lm[k] = (struct etcd_member){
                .id = et->m[k].id, .name = et->m[k].name, .is_learner = et->m[k].learner};
            peer[k] = et->m[k].url;
            lm[k].peer_urls = &peer[k];
            lm[k].n_peer_urls = 1;
            if (et->m[k].name[0]) {
                snprintf(curl[k], sizeof(curl[k]), "https://%s:2379", et->m[k].name);
                client[k] = curl[k];
                lm[k].client_urls = &client[k];
                lm[k].n_client_urls = 1;
            }
            if (call.action == ETCD_MEMBERS_ADD_LEARNER && k == et->n - 1)
                list.added = &lm[k];
        }
        res.members = &list;
    }
    etcd_membership_answer(a, &res, f->view.now, f->view.now);
    if (call.action == ETCD_MEMBERS_LIST && res.code == 0) {
        sim_etcd_signature(et, sig, sizeof(sig));
        changed = strcmp(sig, et->last_list) != 0;
        snprintf(et->last_list, sizeof(et->last_list), "%s", sig);
    }
    return changed;
}

#endif
