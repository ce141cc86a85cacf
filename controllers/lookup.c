#include "controllers/lookup.h"

#include <errno.h>
#include <string.h>

#include "api/types.h"
#include "lib/kube/store.h"
#include "lib/pki/secret.h"

/* ---- small cJSON helpers ---- */

static const cJSON *get(const cJSON *o, const char *key)
{
    return cJSON_GetObjectItemCaseSensitive(o, key);
}

static const char *str(const cJSON *o, const char *key)
{
    const cJSON *v = get(o, key);

    return cJSON_IsString(v) ? v->valuestring : NULL;
}

static bool eq(const char *a, const char *b)
{
    return a && b && strcmp(a, b) == 0;
}

/* Whether apiVersion ("group/version") is in group. */
static bool in_group(const char *api_version, const char *group)
{
    size_t n = strlen(group);

    return api_version && strncmp(api_version, group, n) == 0 && api_version[n] == '/';
}

/* Whether ref (an ownerReference or ObjectReference) points at kind. A reference without an
 * apiVersion matches by kind alone (CAPN's samples leave it out). */
static bool ref_is(const cJSON *ref, enum api_kind kind)
{
    const struct api_kind_info *ki = api_kind_info(kind);
    const char *av = str(ref, "apiVersion");

    return eq(str(ref, "kind"), ki->name) && (!av || in_group(av, ki->group));
}

/* ---- the render source over the caches ---- */

const struct kube_store *lookup_store(const struct cache_view *view, enum api_kind kind)
{
    switch (kind) {
    case API_KIND_NESTED_CLUSTER:
        return view->nested_clusters;
    case API_KIND_NESTED_CONTROL_PLANE:
        return view->control_planes;
    case API_KIND_NESTED_ETCD:
        return view->etcds;
    case API_KIND_NESTED_APISERVER:
        return view->apiservers;
    case API_KIND_NESTED_CONTROLLER_MANAGER:
        return view->controller_managers;
    case API_KIND_CLUSTER:
        return view->clusters;
    case API_KIND_COUNT:
        break;
    }
    return NULL;
}

static const cJSON *src_get(void *ctx, enum api_kind kind, const char *ns, const char *name)
{
    const struct kube_store *s = lookup_store(ctx, kind);

    return s ? kube_store_get(s, ns, name) : NULL;
}

static void src_each(void *ctx, enum api_kind kind, const char *ns, render_source_fn fn,
                     void *userdata)
{
    const struct kube_store *s = lookup_store(ctx, kind);

    if (s)
        kube_store_foreach_in_namespace(s, ns, fn, userdata);
}

static const cJSON *src_get_secret(void *ctx, const char *ns, const char *name)
{
    const struct cache_view *view = ctx;
    const cJSON *s = kube_store_get(view->secrets, ns, name);

    /* One without the cluster-name label, read live after a create found it. */
    return s ? s : cache_view_found(view, &KUBE_SECRETS, ns, name);
}

static const cJSON *src_get_statefulset(void *ctx, const char *ns, const char *name)
{
    const struct cache_view *view = ctx;

    return kube_store_get(view->statefulsets, ns, name);
}

static void src_each_secret(void *ctx, const char *ns, const char *owner_uid, render_source_fn fn,
                            void *userdata)
{
    const struct cache_view *view = ctx;

    /* A uid names one object, so its owned objects are all in its namespace. */
    if (owner_uid)
        kube_store_foreach_owned(view->secrets, owner_uid, fn, userdata);
    else
        kube_store_foreach_in_namespace(view->secrets, ns, fn, userdata);
}

void lookup_source(const struct cache_view *view, struct render_source *ret_src)
{
    *ret_src = (struct render_source){
        .ctx = (void *)view,
        .get = src_get,
        .each = src_each,
        .get_secret = src_get_secret,
        .each_secret = src_each_secret,
        .get_statefulset = src_get_statefulset,
    };
}

int lookup_kind_of(const cJSON *obj, enum api_kind *ret_kind)
{
    const char *av = str(obj, "apiVersion"), *kind = str(obj, "kind");

    if (!av || !kind)
        return -ENOENT;
    return api_kind_lookup(av, kind, ret_kind) < 0 ? -ENOENT : 0;
}

/* ---- owners ---- */

bool lookup_controlled_by_kind(const cJSON *obj, enum api_kind kind, const char **ret_name)
{
    const cJSON *ref = kube_obj_controller_ref(obj);

    if (!ref || !ref_is(ref, kind) || !str(ref, "name"))
        return false;
    if (ret_name)
        *ret_name = str(ref, "name");
    return true;
}

bool lookup_controlled_by_uid(const cJSON *obj, const char *uid)
{
    const cJSON *ref = kube_obj_controller_ref(obj);

    return ref && uid && eq(str(ref, "uid"), uid);
}

/* The name of obj's ownerReference (controller or not) of kind Cluster, or NULL. */
static const char *owner_cluster_name(const cJSON *obj)
{
    const cJSON *refs = get(get(obj, "metadata"), "ownerReferences"), *ref;

    cJSON_ArrayForEach(ref, refs)
    {
        if (eq(str(ref, "kind"), "Cluster") && in_group(str(ref, "apiVersion"), API_GROUP_CLUSTER))
            return str(ref, "name");
    }
    return NULL;
}

/* ---- Clusters ---- */

struct ref_search {
    const char *field; /* "controlPlaneRef" or "infrastructureRef" */
    enum api_kind kind;
    const char *ns, *name;
    const cJSON *found;
};

/* Whether the reference names ns/name of kind (a reference without a namespace is in ns). */
static bool ref_names(const cJSON *ref, enum api_kind kind, const char *ns, const char *name)
{
    const char *rns = str(ref, "namespace");

    return ref_is(ref, kind) && eq(str(ref, "name"), name) && (!rns || !rns[0] || eq(rns, ns));
}

static bool find_referring_cluster(void *userdata, const cJSON *cl)
{
    struct ref_search *s = userdata;

    if (!ref_names(get(get(cl, "spec"), s->field), s->kind, s->ns, s->name))
        return true;
    s->found = cl;
    return false;
}

const cJSON *lookup_capi_cluster(const struct cache_view *view, const cJSON *obj,
                                 enum api_kind kind, bool *ret_by_owner)
{
    const char *ns = kube_obj_namespace(obj), *owner = owner_cluster_name(obj);
    struct ref_search s = {
        .field = kind == API_KIND_NESTED_CLUSTER ? "infrastructureRef" : "controlPlaneRef",
        .kind = kind,
        .ns = ns,
        .name = kube_obj_name(obj),
    };

    if (ret_by_owner)
        *ret_by_owner = owner != NULL;
    if (owner)
        return kube_store_get(view->clusters, ns, owner);
    if (!s.name)
        return NULL;
    kube_store_foreach_in_namespace(view->clusters, ns, find_referring_cluster, &s);
    return s.found;
}

const char *lookup_cluster_name(const struct cache_view *view, const cJSON *obj,
                                enum api_kind kind)
{
    bool by_owner;
    const cJSON *cl = lookup_capi_cluster(view, obj, kind, &by_owner);
    const char *label;

    if (cl)
        return kube_obj_name(cl);
    if (by_owner)
        return owner_cluster_name(obj);
    label = kube_obj_label(obj, PKI_CLUSTER_NAME_LABEL);
    return label && label[0] ? label : kube_obj_name(obj);
}

/* ---- components and control planes ---- */

int lookup_part_of_kind(enum api_kind kind, enum render_part *ret_part)
{
    for (int i = 0; i < RENDER_PART__COUNT; i++) {
        if (render_part_kind((enum render_part)i) == kind) {
            *ret_part = (enum render_part)i;
            return 0;
        }
    }
    return -EINVAL;
}

const cJSON *lookup_component(const struct cache_view *view, const cJSON *ncp,
                              enum render_part part)
{
    const cJSON *ref = get(get(ncp, "spec"), render_part_field(part));
    const char *name = str(ref, "name");

    if (!name || (str(ref, "kind") && !ref_is(ref, render_part_kind(part))))
        return NULL;
    return kube_store_get(lookup_store(view, render_part_kind(part)), kube_obj_namespace(ncp), name);
}

struct component_search {
    enum render_part part;
    const char *name;
    const cJSON *found;
};

static bool find_referring_ncp(void *userdata, const cJSON *ncp)
{
    struct component_search *s = userdata;
    const cJSON *ref = get(get(ncp, "spec"), render_part_field(s->part));

    if (!eq(str(ref, "name"), s->name) || (str(ref, "kind") && !ref_is(ref, render_part_kind(s->part))))
        return true;
    s->found = ncp;
    return false;
}

static const cJSON *control_plane_of_cluster_name(const struct cache_view *view, const char *ns,
                                                  const char *cluster_name);

const cJSON *lookup_control_plane_of_component(const struct cache_view *view,
                                               const cJSON *component, enum render_part part)
{
    const char *ns = kube_obj_namespace(component), *owner;
    struct component_search s = {.part = part, .name = kube_obj_name(component)};
    const cJSON *ncp;

    if (lookup_controlled_by_kind(component, API_KIND_NESTED_CONTROL_PLANE, &owner)) {
        ncp = kube_store_get(view->control_planes, ns, owner);
        if (ncp)
            return ncp;
    }
    if (!s.name)
        return NULL;
    kube_store_foreach_in_namespace(view->control_planes, ns, find_referring_ncp, &s);
    if (s.found)
        return s.found;
    /* As render finds it (lib/render/cluster.c, find_components): a control plane that names
     * no component of this kind takes the one labelled with its cluster name. */
    ncp = control_plane_of_cluster_name(view, ns,
                                        kube_obj_label(component, PKI_CLUSTER_NAME_LABEL));
    if (ncp && !str(get(get(ncp, "spec"), render_part_field(part)), "name"))
        return ncp;
    return NULL;
}

/* The object of kind in ns a Cluster's reference field names, or NULL. */
static const cJSON *cluster_ref_target(const struct cache_view *view, const cJSON *cl,
                                       const char *field, enum api_kind kind)
{
    const cJSON *ref = get(get(cl, "spec"), field);
    const char *rns = str(ref, "namespace"), *name = str(ref, "name");

    if (!name || !ref_is(ref, kind))
        return NULL;
    return kube_store_get(lookup_store(view, kind), rns && rns[0] ? rns : kube_obj_namespace(cl),
                          name);
}

struct name_search {
    const struct cache_view *view;
    enum api_kind kind;
    const char *cluster_name;
    const cJSON *found;
};

/* An object of the kind without a Cluster whose cluster name is the one searched for. */
static bool find_by_cluster_name(void *userdata, const cJSON *obj)
{
    struct name_search *s = userdata;
    bool by_owner;

    if (lookup_capi_cluster(s->view, obj, s->kind, &by_owner) || by_owner ||
        !eq(lookup_cluster_name(s->view, obj, s->kind), s->cluster_name))
        return true;
    s->found = obj;
    return false;
}

/* The standalone object of kind (no Cluster) with this cluster name in ns: first the one named
 * like the cluster, then any. */
static const cJSON *standalone_by_cluster_name(const struct cache_view *view, enum api_kind kind,
                                               const char *ns, const char *cluster_name)
{
    struct name_search s = {.view = view, .kind = kind, .cluster_name = cluster_name};
    const cJSON *obj;

    if (!cluster_name)
        return NULL;
    obj = kube_store_get(lookup_store(view, kind), ns, cluster_name);
    if (obj) {
        find_by_cluster_name(&s, obj);
        if (s.found)
            return s.found;
    }
    kube_store_foreach_in_namespace(lookup_store(view, kind), ns, find_by_cluster_name, &s);
    return s.found;
}

const cJSON *lookup_control_plane_of_nested_cluster(const struct cache_view *view,
                                                    const cJSON *nc)
{
    bool by_owner;
    const cJSON *cl = lookup_capi_cluster(view, nc, API_KIND_NESTED_CLUSTER, &by_owner);

    if (cl)
        return cluster_ref_target(view, cl, "controlPlaneRef", API_KIND_NESTED_CONTROL_PLANE);
    if (by_owner)
        return NULL;
    return standalone_by_cluster_name(view, API_KIND_NESTED_CONTROL_PLANE,
                                      kube_obj_namespace(nc),
                                      lookup_cluster_name(view, nc, API_KIND_NESTED_CLUSTER));
}

const cJSON *lookup_nested_cluster_of_control_plane(const struct cache_view *view,
                                                    const cJSON *ncp)
{
    bool by_owner;
    const cJSON *cl = lookup_capi_cluster(view, ncp, API_KIND_NESTED_CONTROL_PLANE, &by_owner);

    if (cl)
        return cluster_ref_target(view, cl, "infrastructureRef", API_KIND_NESTED_CLUSTER);
    if (by_owner)
        return NULL;
    return standalone_by_cluster_name(view, API_KIND_NESTED_CLUSTER, kube_obj_namespace(ncp),
                                      lookup_cluster_name(view, ncp,
                                                          API_KIND_NESTED_CONTROL_PLANE));
}

/* ---- what a change concerns ---- */

/* Control planes a Cluster concerns: the one its controlPlaneRef names, and any that name it
 * as their owner. */
struct owner_search {
    const char *cluster;
    void (*fn)(void *userdata, const cJSON *ncp);
    void *userdata;
    const cJSON *skip;
};

static bool each_owned_by_cluster(void *userdata, const cJSON *ncp)
{
    struct owner_search *s = userdata;

    if (ncp != s->skip && eq(owner_cluster_name(ncp), s->cluster))
        s->fn(s->userdata, ncp);
    return true;
}

static void control_planes_of_cluster(const struct cache_view *view, const cJSON *cl,
                                      void (*fn)(void *userdata, const cJSON *ncp),
                                      void *userdata)
{
    const cJSON *ncp =
        cluster_ref_target(view, cl, "controlPlaneRef", API_KIND_NESTED_CONTROL_PLANE);
    struct owner_search s = {kube_obj_name(cl), fn, userdata, ncp};

    if (ncp)
        fn(userdata, ncp);
    kube_store_foreach_in_namespace(view->control_planes, kube_obj_namespace(cl),
                                    each_owned_by_cluster, &s);
}

/* The control plane of a cluster name in ns: through the Cluster of that name, else the
 * standalone one. */
static const cJSON *control_plane_of_cluster_name(const struct cache_view *view, const char *ns,
                                                  const char *cluster_name)
{
    const cJSON *cl = cluster_name ? kube_store_get(view->clusters, ns, cluster_name) : NULL;
    const cJSON *ncp;

    if (cl) {
        ncp = cluster_ref_target(view, cl, "controlPlaneRef", API_KIND_NESTED_CONTROL_PLANE);
        if (ncp)
            return ncp;
    }
    return standalone_by_cluster_name(view, API_KIND_NESTED_CONTROL_PLANE, ns, cluster_name);
}

/* The control plane of an object's controller owner (a control plane or a component). */
static const cJSON *control_plane_of_owner(const struct cache_view *view, const cJSON *obj)
{
    const char *ns = kube_obj_namespace(obj), *owner;
    const cJSON *comp;

    if (lookup_controlled_by_kind(obj, API_KIND_NESTED_CONTROL_PLANE, &owner))
        return kube_store_get(view->control_planes, ns, owner);
    for (int i = 0; i < RENDER_PART__COUNT; i++) {
        if (!lookup_controlled_by_kind(obj, render_part_kind((enum render_part)i), &owner))
            continue;
        comp = kube_store_get(lookup_store(view, render_part_kind((enum render_part)i)), ns, owner);
        return comp ? lookup_control_plane_of_component(view, comp, (enum render_part)i) : NULL;
    }
    return NULL;
}

/* The kind a resource type holds; -ENOENT for core and apps types. */
static int kind_of_resource(const struct kube_resource *res, enum api_kind *ret_kind)
{
    for (int k = 0; k < API_KIND_COUNT; k++) {
        const struct api_kind_info *ki = api_kind_info((enum api_kind)k);
        if (eq(res->group, ki->group) && eq(res->resource, ki->plural)) {
            *ret_kind = (enum api_kind)k;
            return 0;
        }
    }
    return -ENOENT;
}

void lookup_control_planes_for(const struct cache_view *view, const struct kube_resource *res,
                               const cJSON *obj, void (*fn)(void *userdata, const cJSON *ncp),
                               void *userdata)
{
    const char *ns = kube_obj_namespace(obj);
    const cJSON *ncp = NULL;
    enum api_kind kind;
    enum render_part part;

    if (!obj)
        return;
    if (kind_of_resource(res, &kind) == 0) {
        if (kind == API_KIND_NESTED_CONTROL_PLANE)
            ncp = obj; /* also when it was just deleted: its key needs a reconcile */
        else if (kind == API_KIND_NESTED_CLUSTER)
            ncp = lookup_control_plane_of_nested_cluster(view, obj);
        else if (kind == API_KIND_CLUSTER)
            control_planes_of_cluster(view, obj, fn, userdata);
        else if (lookup_part_of_kind(kind, &part) == 0)
            ncp = lookup_control_plane_of_component(view, obj, part);
    } else if (res == &KUBE_PODS) {
        /* A pod of a component's StatefulSet: the health of a roll is read from it. */
        const cJSON *ref = kube_obj_controller_ref(obj);
        const cJSON *k = cJSON_GetObjectItemCaseSensitive(ref, "kind");
        const cJSON *n = cJSON_GetObjectItemCaseSensitive(ref, "name");
        const cJSON *sts = cJSON_IsString(k) && strcmp(k->valuestring, "StatefulSet") == 0 &&
                                   cJSON_IsString(n)
                               ? kube_store_get(view->statefulsets, ns, n->valuestring)
                               : NULL;
        if (sts)
            ncp = control_plane_of_owner(view, sts);
    } else {
        ncp = control_plane_of_owner(view, obj);
        if (!ncp && !kube_obj_controller_ref(obj) && eq(res->resource, "secrets"))
            ncp = control_plane_of_cluster_name(view, ns,
                                                kube_obj_label(obj, PKI_CLUSTER_NAME_LABEL));
    }
    if (ncp)
        fn(userdata, ncp);
}
