#ifndef NESTCP_TEST_NESTED_FIXTURE_H
#define NESTCP_TEST_NESTED_FIXTURE_H

/*
 * Caches filled by hand for the reconciler tests: objects are written as YAML and put in the
 * store of their kind; plans are searched by verb, resource and name.
 */

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "controllers/access.h"
#include "controllers/caches.h"
#include "controllers/lookup.h"
#include "lib/ctrl/plan.h"
#include "lib/kube/store.h"
#include "lib/util/jsonpatch.h"
#include "lib/util/yamlconv.h"

enum fx_store {
    FX_CONTROL_PLANES,
    FX_ETCDS,
    FX_APISERVERS,
    FX_CONTROLLER_MANAGERS,
    FX_NESTED_CLUSTERS,
    FX_CLUSTERS,
    FX_SECRETS,
    FX_SERVICES,
    FX_STATEFULSETS,
    FX_PODS,
    FX_CLAIMS,
    FX_CONFIGMAPS,
    FX_NETWORKPOLICIES,
    FX_JOBS,
    FX__COUNT
};

struct fixture {
    struct kube_store stores[FX__COUNT];
    struct cache_view view;
};

/* The stores without the indexes the manager's caches have (controllers/caches.c): every
 * lookup walks the namespace. */
static inline void fx_init_unindexed(struct fixture *f)
{
    memset(f, 0, sizeof(*f));
    for (int i = 0; i < FX__COUNT; i++)
        kube_store_init(&f->stores[i]);
    f->view = (struct cache_view){
        .control_planes = &f->stores[FX_CONTROL_PLANES],
        .etcds = &f->stores[FX_ETCDS],
        .apiservers = &f->stores[FX_APISERVERS],
        .controller_managers = &f->stores[FX_CONTROLLER_MANAGERS],
        .nested_clusters = &f->stores[FX_NESTED_CLUSTERS],
        .clusters = &f->stores[FX_CLUSTERS],
        .secrets = &f->stores[FX_SECRETS],
        .services = &f->stores[FX_SERVICES],
        .statefulsets = &f->stores[FX_STATEFULSETS],
        .pods = &f->stores[FX_PODS],
        .claims = &f->stores[FX_CLAIMS],
        .configmaps = &f->stores[FX_CONFIGMAPS],
        .networkpolicies = &f->stores[FX_NETWORKPOLICIES],
        .jobs = &f->stores[FX_JOBS],
        .now = 1800000000.0,
    };
}

/* The stores with the indexes of the manager's caches. */
static inline void fx_init(struct fixture *f)
{
    fx_init_unindexed(f);
    kube_store_set_index(&f->stores[FX_CONTROL_PLANES], lookup_index_control_plane);
    kube_store_set_index(&f->stores[FX_ETCDS], lookup_index_component);
    kube_store_set_index(&f->stores[FX_APISERVERS], lookup_index_component);
    kube_store_set_index(&f->stores[FX_CONTROLLER_MANAGERS], lookup_index_component);
    kube_store_set_index(&f->stores[FX_NESTED_CLUSTERS], lookup_index_nested_cluster);
    kube_store_set_index(&f->stores[FX_CLUSTERS], lookup_index_cluster);
}

static inline void fx_done(struct fixture *f)
{
    for (int i = 0; i < FX__COUNT; i++)
        kube_store_done(&f->stores[i]);
}

static inline enum fx_store fx_store_of(const cJSON *obj)
{
    static const struct {
        const char *kind;
        enum fx_store store;
    } kinds[] = {
        {"NestedControlPlane", FX_CONTROL_PLANES},
        {"NestedEtcd", FX_ETCDS},
        {"NestedAPIServer", FX_APISERVERS},
        {"NestedControllerManager", FX_CONTROLLER_MANAGERS},
        {"NestedCluster", FX_NESTED_CLUSTERS},
        {"Cluster", FX_CLUSTERS},
        {"Secret", FX_SECRETS},
        {"Service", FX_SERVICES},
        {"StatefulSet", FX_STATEFULSETS},
        {"Pod", FX_PODS},
        {"PersistentVolumeClaim", FX_CLAIMS},
        {"ConfigMap", FX_CONFIGMAPS},
        {"NetworkPolicy", FX_NETWORKPOLICIES},
        {"Job", FX_JOBS},
    };
    const cJSON *kind = cJSON_GetObjectItemCaseSensitive(obj, "kind");

    assert_true(cJSON_IsString(kind));
    for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
        if (strcmp(kinds[i].kind, kind->valuestring) == 0)
            return kinds[i].store;
    fail_msg("no store for kind %s", kind->valuestring);
    return FX__COUNT;
}

/* Puts obj (taken) in its store; a missing namespace becomes "default". */
/* As the API server does: an object put in place of one with another spec gets the next
 * generation, unless the test set a newer one itself. */
static inline void fx_bump_generation(struct fixture *f, cJSON *obj)
{
    cJSON *meta = cJSON_GetObjectItemCaseSensitive(obj, "metadata");
    const cJSON *ns = cJSON_GetObjectItemCaseSensitive(meta, "namespace"),
                *name = cJSON_GetObjectItemCaseSensitive(meta, "name");
    const cJSON *cur = kube_store_get(&f->stores[fx_store_of(obj)], cJSON_GetStringValue(ns),
                                      cJSON_GetStringValue(name));
    const cJSON *g = cJSON_GetObjectItemCaseSensitive(
                    cJSON_GetObjectItemCaseSensitive(cur, "metadata"), "generation"),
                *mine = cJSON_GetObjectItemCaseSensitive(meta, "generation");

    if (!cur || !cJSON_IsNumber(g) ||
        cJSON_Compare(cJSON_GetObjectItemCaseSensitive(cur, "spec"),
                      cJSON_GetObjectItemCaseSensitive(obj, "spec"), true) ||
        (cJSON_IsNumber(mine) && mine->valuedouble > g->valuedouble))
        return;
    cJSON_DeleteItemFromObjectCaseSensitive(meta, "generation");
    cJSON_AddNumberToObject(meta, "generation", g->valuedouble + 1);
}

static inline cJSON *fx_put_json(struct fixture *f, cJSON *obj)
{
    cJSON *meta = cJSON_GetObjectItemCaseSensitive(obj, "metadata"), *old = NULL;

    assert_non_null(meta);
    if (!cJSON_GetObjectItemCaseSensitive(meta, "namespace"))
        cJSON_AddStringToObject(meta, "namespace", "default");
    fx_bump_generation(f, obj);
    assert_int_equal(kube_store_put(&f->stores[fx_store_of(obj)], obj, &old), 0);
    cJSON_Delete(old);
    return obj;
}

/* Parses YAML (one or more documents) and puts every object. */
static inline void fx_put(struct fixture *f, const char *yaml)
{
    cJSON *docs = NULL, *d;
    struct err e;

    assert_int_equal(yamlconv_parse_all(yaml, strlen(yaml), "fixture", &docs, &e), 0);
    while ((d = cJSON_DetachItemFromArray(docs, 0)))
        fx_put_json(f, d);
    cJSON_Delete(docs);
}

/* The object in a store, borrowed. */
static inline const cJSON *fx_get(struct fixture *f, enum fx_store s, const char *name)
{
    return kube_store_get(&f->stores[s], "default", name);
}

/* The first action of the plan with this verb on resource (plural) name (NULL: any), or
 * NULL. */
static inline const struct plan_action *fx_action(const struct plan *p, enum kube_verb verb,
                                                  const char *resource, const char *name)
{
    for (size_t i = 0; i < p->n_actions; i++) {
        const struct plan_action *a = &p->actions[i];
        if (!a->call && a->verb == verb && strcmp(a->resource->resource, resource) == 0 &&
            (!name || (a->name && strcmp(a->name, name) == 0)))
            return a;
    }
    return NULL;
}

/* The index of an action in the plan, or -1. */
static inline int fx_index(const struct plan *p, const struct plan_action *a)
{
    return a ? (int)(a - p->actions) : -1;
}

static inline const struct plan_event *fx_event(const struct plan *p, const char *reason)
{
    for (size_t i = 0; i < p->n_events; i++)
        if (strcmp(p->events[i].reason, reason) == 0)
            return &p->events[i];
    return NULL;
}

/* A field of a JSON object by a dotted path ("status.conditions"), or NULL. */
static inline const cJSON *fx_path(const cJSON *o, const char *path)
{
    char key[128];

    while (o && *path) {
        size_t n = strcspn(path, ".");
        snprintf(key, sizeof(key), "%.*s", (int)n, path);
        /* "containers.0.image": an index into an array */
        o = cJSON_IsArray(o) ? cJSON_GetArrayItem(o, atoi(key))
                             : cJSON_GetObjectItemCaseSensitive(o, key);
        path += n + (path[n] == '.');
    }
    return o;
}

/* The condition of type in a status object, or NULL. */
static inline const cJSON *fx_condition(const cJSON *status, const char *type)
{
    const cJSON *c;

    cJSON_ArrayForEach(c, cJSON_GetObjectItemCaseSensitive(status, "conditions")) {
        const cJSON *t = cJSON_GetObjectItemCaseSensitive(c, "type");
        if (cJSON_IsString(t) && strcmp(t->valuestring, type) == 0)
            return c;
    }
    return NULL;
}

static inline const char *fx_str(const cJSON *o, const char *path)
{
    const cJSON *v = fx_path(o, path);

    return cJSON_IsString(v) ? v->valuestring : NULL;
}

static inline bool fx_collect_owned(void *ud, const cJSON *obj)
{
    void **a = ud;
    const cJSON *ref = kube_obj_controller_ref(obj);
    const cJSON *uid = cJSON_GetObjectItemCaseSensitive(ref, "uid");

    if (cJSON_IsString(uid) && strcmp(uid->valuestring, (const char *)a[1]) == 0 &&
        cJSON_GetArraySize((cJSON *)a[0]) < 64)
        cJSON_AddItemToArray((cJSON *)a[0], cJSON_Duplicate(obj, true));
    return true;
}

/* Takes the controller ownerReference to uid off every pod. */
static inline void fx_orphan_pods(struct fixture *f, const char *uid)
{
    cJSON *pods = cJSON_CreateArray(), *p;
    void *a[2] = {pods, (void *)uid};

    kube_store_foreach(&f->stores[FX_PODS], fx_collect_owned, a);
    while ((p = cJSON_DetachItemFromArray(pods, 0))) {
        cJSON_DeleteItemFromObjectCaseSensitive(cJSON_GetObjectItemCaseSensitive(p, "metadata"),
                                                "ownerReferences");
        fx_put_json(f, p);
    }
    cJSON_Delete(pods);
}

/* Applies one write to the caches as an API server would (create, apply and status update
 * replace the object; a merge patch is merged; delete removes), bumping resourceVersion. */
static inline void fx_apply_action(struct fixture *f, const struct plan_action *a)
{
    static unsigned long rv = 1000, uid = 1;
    enum fx_store s = FX__COUNT;
    const cJSON *cur;
    cJSON *obj = NULL, *meta, *old = NULL;
    char buf[32];

    for (int k = 0; k < FX__COUNT; k++) {
        static const char *const plurals[FX__COUNT] = {"nestedcontrolplanes",
                                                       "nestedetcds",
                                                       "nestedapiservers",
                                                       "nestedcontrollermanagers",
                                                       "nestedclusters",
                                                       "clusters",
                                                       "secrets",
                                                       "services",
                                                       "statefulsets",
                                                       "pods",
                                                       "persistentvolumeclaims",
                                                       "configmaps",
                                                       "networkpolicies",
                                                       "jobs"};
        if (strcmp(a->resource->resource, plurals[k]) == 0)
            s = (enum fx_store)k;
    }
    assert_true(s < FX__COUNT);
    /* Every action a reconciler plans is one config/rbac grants (controllers/access.c). */
    if (!access_allows_action(a))
        fail_msg("%s %s%s%s is not in the access table: %s", access_action_verb(a),
                 a->resource->resource, a->subresource ? "/" : "",
                 a->subresource ? a->subresource : "", a->why);
    cur = kube_store_get(&f->stores[s], a->namespace_, a->name);
    if (a->verb == KUBE_DELETE) {
        if (cur &&
            (!a->precondition_uid || !kube_obj_uid(cur) ||
             strcmp(a->precondition_uid, kube_obj_uid(cur)) == 0) &&
            kube_store_remove(&f->stores[s], a->namespace_, a->name, &old) == 0) {
            /* Propagation Orphan: the garbage collector takes the ownerReferences off the
             * dependents (here: a StatefulSet's pods) instead of deleting them. */
            if (a->propagation && strcmp(a->propagation, "Orphan") == 0 && s == FX_STATEFULSETS)
                fx_orphan_pods(f, kube_obj_uid(old));
            cJSON_Delete(old);
        }
        return;
    }
    if (a->verb == KUBE_CREATE) {
        if (cur)
            return; /* AlreadyExists */
        obj = cJSON_Duplicate(a->body, true);
        meta = cJSON_GetObjectItemCaseSensitive(obj, "metadata");
        snprintf(buf, sizeof(buf), "uid-%lu", uid++);
        cJSON_AddStringToObject(meta, "uid", buf);
        cJSON_AddStringToObject(meta, "creationTimestamp", "2027-01-15T08:00:00Z");
    } else if (a->verb == KUBE_PATCH && a->patch_type == KUBE_PATCH_APPLY) {
        obj = cJSON_Duplicate(a->body, true);
        meta = cJSON_GetObjectItemCaseSensitive(obj, "metadata");
        cJSON_DeleteItemFromObjectCaseSensitive(meta, "generation");
        if (cur) {
            const cJSON *st = cJSON_GetObjectItemCaseSensitive(cur, "status");
            const cJSON *g = fx_path(cur, "metadata.generation");
            bool same = cJSON_Compare(cJSON_GetObjectItemCaseSensitive(cur, "spec"),
                                      cJSON_GetObjectItemCaseSensitive(obj, "spec"), true);
            cJSON_DeleteItemFromObjectCaseSensitive(meta, "uid");
            cJSON_AddStringToObject(meta, "uid", kube_obj_uid(cur));
            cJSON_AddNumberToObject(meta, "generation",
                                    (cJSON_IsNumber(g) ? g->valuedouble : 1) + (same ? 0 : 1));
            if (st)
                cJSON_AddItemToObject(obj, "status", cJSON_Duplicate(st, true));
        } else {
            snprintf(buf, sizeof(buf), "uid-%lu", uid++);
            cJSON_AddStringToObject(meta, "uid", buf);
            cJSON_AddNumberToObject(meta, "generation", 1);
            cJSON_AddStringToObject(meta, "creationTimestamp", "2027-01-15T08:00:00Z");
        }
    } else if (a->verb == KUBE_PATCH && a->patch_type == KUBE_PATCH_MERGE) {
        const char *want = fx_str(a->body, "metadata.uid");
        assert_non_null(cur);
        if (want && strcmp(want, kube_obj_uid(cur)) != 0)
            return; /* a precondition that fails: 409 */
        assert_int_equal(jsonpatch_merge(cur, a->body, &obj), 0);
    } else if (a->verb == KUBE_UPDATE) {
        assert_non_null(cur);
        obj = cJSON_Duplicate(cur, true);
        cJSON_DeleteItemFromObjectCaseSensitive(obj, "status");
        cJSON_AddItemToObject(
            obj, "status",
            cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(a->body, "status"), true));
    } else {
        fail_msg("unexpected verb %d", (int)a->verb);
    }
    meta = cJSON_GetObjectItemCaseSensitive(obj, "metadata");
    cJSON_DeleteItemFromObjectCaseSensitive(meta, "resourceVersion");
    snprintf(buf, sizeof(buf), "%lu", rv++);
    cJSON_AddStringToObject(meta, "resourceVersion", buf);
    fx_put_json(f, obj);
}

/* Applies a plan's writes to the caches (calls to etcd are left out), so a test can
 * reconcile again and check that the next plan is empty. */
static inline void fx_apply_plan(struct fixture *f, const struct plan *p)
{
    for (size_t i = 0; i < p->n_actions; i++)
        if (!p->actions[i].call)
            fx_apply_action(f, &p->actions[i]);
}

#endif
