#include "controllers/lookup.h"

#include <errno.h>
#include <string.h>

#include "lib/kube/store.h"
#include "lib/render/member.h"

static bool eq(const char *a, const char *b)
{
    return a && b && strcmp(a, b) == 0;
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

static void src_each_keyed(void *ctx, enum api_kind kind, const char *ns,
                           const struct render_key *keys, size_t n, render_source_fn fn,
                           void *userdata)
{
    const struct kube_store *s = lookup_store(ctx, kind);
    struct kube_store_index_key k[KUBE_STORE_INDEX_KEYS];

    if (!s)
        return;
    if (n > KUBE_STORE_INDEX_KEYS)
        n = KUBE_STORE_INDEX_KEYS;
    for (size_t i = 0; i < n; i++)
        k[i] = (struct kube_store_index_key){keys[i].tag, keys[i].value};
    /* Without an index (a store a test made): the namespace walk. */
    kube_store_foreach_indexed(s, ns, k, n, fn, userdata);
}

/* ---- the caches' indexes ---- */

static size_t index_of(enum api_kind kind, const cJSON *obj, struct kube_store_index_key *keys)
{
    struct render_key k[MEMBER_INDEX_KEYS_MAX];
    size_t n = member_index_keys(kind, obj, k);

    for (size_t i = 0; i < n; i++)
        keys[i] = (struct kube_store_index_key){k[i].tag, k[i].value};
    return n;
}

size_t lookup_index_control_plane(const cJSON *obj, struct kube_store_index_key *keys)
{
    size_t n = index_of(API_KIND_NESTED_CONTROL_PLANE, obj, keys);
    const char *claimed = lookup_claimed_name(obj);

    if (claimed)
        keys[n++] = (struct kube_store_index_key){LOOKUP_KEY_CLAIM, claimed};
    return n;
}

size_t lookup_index_nested_cluster(const cJSON *obj, struct kube_store_index_key *keys)
{
    return index_of(API_KIND_NESTED_CLUSTER, obj, keys);
}

size_t lookup_index_cluster(const cJSON *obj, struct kube_store_index_key *keys)
{
    return index_of(API_KIND_CLUSTER, obj, keys);
}

size_t lookup_index_component(const cJSON *obj, struct kube_store_index_key *keys)
{
    /* The three component kinds have the same keys. */
    return index_of(API_KIND_NESTED_ETCD, obj, keys);
}

const char *lookup_claimed_name(const cJSON *ncp)
{
    const cJSON *ref;
    const char *label = kube_obj_label(ncp, MEMBER_CLUSTER_NAME_LABEL);

    cJSON_ArrayForEach(
        ref, cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(ncp, "metadata"),
                                              "ownerReferences")) {
        const cJSON *k = cJSON_GetObjectItemCaseSensitive(ref, "kind"),
                    *n = cJSON_GetObjectItemCaseSensitive(ref, "name");
        if (cJSON_IsString(k) && strcmp(k->valuestring, "Cluster") == 0 && cJSON_IsString(n))
            return n->valuestring;
    }
    return label ? label : kube_obj_name(ncp);
}

void lookup_each_claimant(const struct cache_view *view, const char *ns, const char *cluster_name,
                          kube_store_each_fn fn, void *userdata)
{
    struct kube_store_index_key key = {LOOKUP_KEY_CLAIM, cluster_name};

    kube_store_foreach_indexed(view->control_planes, ns, &key, 1, fn, userdata);
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
        .each_keyed = src_each_keyed,
        .get_secret = src_get_secret,
        .each_secret = src_each_secret,
        .get_statefulset = src_get_statefulset,
    };
}

int lookup_kind_of(const cJSON *obj, enum api_kind *ret_kind)
{
    return member_kind_of(obj, ret_kind);
}

/* ---- membership: lib/render/member.h over the caches ---- */

static struct render_source source_of(const struct cache_view *view)
{
    struct render_source src;

    lookup_source(view, &src);
    return src;
}

bool lookup_controlled_by_kind(const cJSON *obj, enum api_kind kind, const char **ret_name)
{
    return member_controlled_by_kind(obj, kind, ret_name);
}

bool lookup_controlled_by_uid(const cJSON *obj, const char *uid)
{
    return member_controlled_by_uid(obj, uid);
}

const cJSON *lookup_capi_cluster(const struct cache_view *view, const cJSON *obj,
                                 enum api_kind kind, bool *ret_by_owner)
{
    struct render_source src = source_of(view);

    return member_capi_cluster(&src, obj, kind, ret_by_owner, NULL);
}

const char *lookup_cluster_name(const struct cache_view *view, const cJSON *obj, enum api_kind kind)
{
    struct render_source src = source_of(view);

    return member_cluster_name(&src, obj, kind);
}

int lookup_part_of_kind(enum api_kind kind, enum render_part *ret_part)
{
    return member_part_of_kind(kind, ret_part);
}

const cJSON *lookup_component(const struct cache_view *view, const cJSON *ncp,
                              enum render_part part)
{
    struct render_source src = source_of(view);

    return member_component(&src, ncp, part, NULL);
}

const cJSON *lookup_control_plane_of_component(const struct cache_view *view,
                                               const cJSON *component, enum render_part part)
{
    struct render_source src = source_of(view);

    return member_control_plane_of_component(&src, component, part);
}

const cJSON *lookup_control_plane_of_nested_cluster(const struct cache_view *view, const cJSON *nc)
{
    struct render_source src = source_of(view);

    return member_control_plane_of_nested_cluster(&src, nc);
}

const cJSON *lookup_nested_cluster_of_control_plane(const struct cache_view *view, const cJSON *ncp)
{
    struct render_source src = source_of(view);

    return member_nested_cluster_of_control_plane(&src, ncp);
}

/* ---- what a change concerns ---- */

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
    struct render_source src = source_of(view);
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
            member_control_planes_of_cluster(&src, obj, fn, userdata);
        else if (lookup_part_of_kind(kind, &part) == 0)
            ncp = lookup_control_plane_of_component(view, obj, part);
    } else if (res == &KUBE_PODS) {
        /* A pod of a component's StatefulSet: the health of a roll is read from it. */
        const cJSON *ref = kube_obj_controller_ref(obj);
        const cJSON *k = cJSON_GetObjectItemCaseSensitive(ref, "kind");
        const cJSON *n = cJSON_GetObjectItemCaseSensitive(ref, "name");
        const cJSON *sts =
            cJSON_IsString(k) && strcmp(k->valuestring, "StatefulSet") == 0 && cJSON_IsString(n)
                ? kube_store_get(view->statefulsets, ns, n->valuestring)
                : NULL;
        if (sts)
            ncp = control_plane_of_owner(view, sts);
    } else {
        ncp = control_plane_of_owner(view, obj);
        if (!ncp && !kube_obj_controller_ref(obj) && eq(res->resource, "secrets"))
            ncp = member_control_plane_of_cluster_name(
                &src, ns, kube_obj_label(obj, MEMBER_CLUSTER_NAME_LABEL));
    }
    if (ncp)
        fn(userdata, ncp);
}
