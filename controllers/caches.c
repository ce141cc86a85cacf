#include "controllers/caches.h"

#include "api/kinds.h"
#include "controllers/access.h"
#include "controllers/cachekeep.h"
#include "controllers/lookup.h"

const struct kube_resource NESTCP_CONTROL_PLANES = {
    API_GROUP_CONTROLPLANE, API_VERSION_STORAGE, "nestedcontrolplanes", "NestedControlPlane", true};
const struct kube_resource NESTCP_ETCDS = {API_GROUP_CONTROLPLANE, API_VERSION_STORAGE,
                                           "nestedetcds", "NestedEtcd", true};
const struct kube_resource NESTCP_APISERVERS = {API_GROUP_CONTROLPLANE, API_VERSION_STORAGE,
                                                "nestedapiservers", "NestedAPIServer", true};
const struct kube_resource NESTCP_CONTROLLER_MANAGERS = {
    API_GROUP_CONTROLPLANE, API_VERSION_STORAGE, "nestedcontrollermanagers",
    "NestedControllerManager", true};
const struct kube_resource NESTCP_NESTED_CLUSTERS = {API_GROUP_INFRASTRUCTURE, API_VERSION_STORAGE,
                                                     "nestedclusters", "NestedCluster", true};
const struct kube_resource CAPI_CLUSTERS = {API_GROUP_CLUSTER, API_VERSION_STORAGE, "clusters",
                                            "Cluster", true};

enum cache_id {
    CACHE_CONTROL_PLANES,
    CACHE_ETCDS,
    CACHE_APISERVERS,
    CACHE_CONTROLLER_MANAGERS,
    CACHE_NESTED_CLUSTERS,
    CACHE_CLUSTERS,
    CACHE_SECRETS,
    CACHE_SERVICES,
    CACHE_STATEFULSETS,
    CACHE_PODS,
    CACHE_CLAIMS,
    CACHE_CONFIGMAPS,
    CACHE_NETWORKPOLICIES,
    CACHE_JOBS,
    CACHE_COUNT,
};

/* The resource, the selector, whether its CRD may be absent, what is kept of each object, and
 * the versions an optional one is read at (newest served first), and the index of the store. */
static const struct ctrl_cache_spec cache_specs[CACHE_COUNT] = {
    [CACHE_CONTROL_PLANES] = {&NESTCP_CONTROL_PLANES, NULL, false, cachekeep_object, NULL,
                              lookup_index_control_plane},
    [CACHE_ETCDS] = {&NESTCP_ETCDS, NULL, false, cachekeep_object, NULL, lookup_index_component},
    [CACHE_APISERVERS] = {&NESTCP_APISERVERS, NULL, false, cachekeep_object, NULL,
                          lookup_index_component},
    [CACHE_CONTROLLER_MANAGERS] = {&NESTCP_CONTROLLER_MANAGERS, NULL, false, cachekeep_object, NULL,
                                   lookup_index_component},
    [CACHE_NESTED_CLUSTERS] = {&NESTCP_NESTED_CLUSTERS, NULL, false, cachekeep_object, NULL,
                               lookup_index_nested_cluster},
    [CACHE_CLUSTERS] = {&CAPI_CLUSTERS, NULL, true, cachekeep_object, api_capi_cluster_versions,
                        lookup_index_cluster},
    [CACHE_SECRETS] = {&KUBE_SECRETS, MANAGER_SECRET_SELECTOR, false, cachekeep_secret},
    [CACHE_SERVICES] = {&KUBE_SERVICES, MANAGER_OWNED_SELECTOR, false, cachekeep_object},
    [CACHE_STATEFULSETS] = {&KUBE_STATEFULSETS, MANAGER_OWNED_SELECTOR, false,
                            cachekeep_statefulset},
    [CACHE_PODS] = {&KUBE_PODS, MANAGER_POD_SELECTOR, false, cachekeep_pod},
    [CACHE_CLAIMS] = {&KUBE_PVCS, MANAGER_CLAIM_SELECTOR, false, cachekeep_object},
    [CACHE_CONFIGMAPS] = {&KUBE_CONFIGMAPS, MANAGER_OWNED_SELECTOR, false, cachekeep_object},
    [CACHE_NETWORKPOLICIES] = {&KUBE_NETWORKPOLICIES, MANAGER_OWNED_SELECTOR, false,
                               cachekeep_object},
    [CACHE_JOBS] = {&KUBE_JOBS, MANAGER_OWNED_SELECTOR, false, cachekeep_job},
};

const struct kube_resource *caches_resource(size_t i)
{
    return i < CACHE_COUNT ? cache_specs[i].resource : NULL;
}

/* What config/rbac does not grant would be answered 403: the executor refuses it first. */
static const char *refuse_unlisted(const struct plan_action *a)
{
    if (access_allows_action(a))
        return NULL;
    return "refused: not in the manager's access table (controllers/access.c), which "
           "config/rbac grants";
}

void caches_manager_opts(struct manager_opts *opts)
{
    if (!opts->caches) {
        opts->caches = cache_specs;
        opts->n_caches = CACHE_COUNT;
    }
    if (!opts->refuse)
        opts->refuse = refuse_unlisted;
    if (!opts->component)
        opts->component = NESTCP_COMPONENT;
    if (!opts->field_manager)
        opts->field_manager = NESTCP_COMPONENT;
    if (!opts->metrics_prefix)
        opts->metrics_prefix = NESTCP_COMPONENT;
    if (!opts->leader_election_id || !opts->leader_election_id[0])
        opts->leader_election_id = MANAGER_LEASE_NAME;
    if (!opts->leader_election_default_namespace)
        opts->leader_election_default_namespace = MANAGER_LEASE_NAMESPACE;
}

static const struct kube_store *store_of(const struct ctrl_view *view, enum cache_id id)
{
    return (size_t)id < view->n_stores ? view->stores[id] : NULL;
}

void cache_view_of(const struct ctrl_view *view, struct cache_view *ret_view)
{
    *ret_view = (struct cache_view){
        .control_planes = store_of(view, CACHE_CONTROL_PLANES),
        .etcds = store_of(view, CACHE_ETCDS),
        .apiservers = store_of(view, CACHE_APISERVERS),
        .controller_managers = store_of(view, CACHE_CONTROLLER_MANAGERS),
        .nested_clusters = store_of(view, CACHE_NESTED_CLUSTERS),
        .clusters = store_of(view, CACHE_CLUSTERS),
        .secrets = store_of(view, CACHE_SECRETS),
        .services = store_of(view, CACHE_SERVICES),
        .statefulsets = store_of(view, CACHE_STATEFULSETS),
        .pods = store_of(view, CACHE_PODS),
        .claims = store_of(view, CACHE_CLAIMS),
        .configmaps = store_of(view, CACHE_CONFIGMAPS),
        .networkpolicies = store_of(view, CACHE_NETWORKPOLICIES),
        .jobs = store_of(view, CACHE_JOBS),
        .now = view->now,
        .conflicts = view->conflicts,
        .found = view->found,
        .rejected = view->rejected,
    };
}

void cache_view_get(const struct manager *m, struct cache_view *ret_view)
{
    struct ctrl_view view;

    manager_view(m, &view);
    cache_view_of(&view, ret_view);
}

const char *cache_view_conflict(const struct cache_view *view, const struct kube_resource *res,
                                const char *ns, const char *name)
{
    return ctrl_note_why(view->conflicts, view->now, res, ns, name);
}

const char *cache_view_rejected(const struct cache_view *view, const struct kube_resource *res,
                                const char *ns, const char *name)
{
    return ctrl_note_why(view->rejected, view->now, res, ns, name);
}

const cJSON *cache_view_found(const struct cache_view *view, const struct kube_resource *res,
                              const char *ns, const char *name)
{
    return ctrl_note_object(view->found, view->now, res, ns, name);
}

/* The manager's callbacks, which hand a reconciler its named view; ctx is the
 * struct reconciler_def. */

static int reconcile_named(void *ctx, const struct ctrl_view *v, const char *ns, const char *name,
                           struct plan *plan, struct err *e)
{
    const struct reconciler_def *def = ctx;
    struct cache_view view;

    cache_view_of(v, &view);
    return def->reconcile(def->ctx, &view, ns, name, plan, e);
}

static void map_named(void *ctx, const struct ctrl_view *v, const struct kube_resource *res,
                      const cJSON *obj, enqueue_fn enqueue, void *q)
{
    const struct reconciler_def *def = ctx;
    struct cache_view view;

    cache_view_of(v, &view);
    def->map(def->ctx, &view, res, obj, enqueue, q);
}

static void seed_named(void *ctx, enqueue_fn enqueue, void *q)
{
    const struct reconciler_def *def = ctx;

    def->seed(def->ctx, enqueue, q);
}

int caches_add_reconciler(struct manager *m, const struct reconciler_def *def, struct err *e)
{
    struct controller_def cd = {
        .name = def->name,
        .primary = def->primary,
        .reconcile = def->reconcile ? reconcile_named : NULL,
        .map = def->map ? map_named : NULL,
        .seed = def->seed ? seed_named : NULL,
        .ctx = (void *)def,
        .concurrency = def->concurrency,
    };

    return manager_add_controller(m, &cd, e);
}
