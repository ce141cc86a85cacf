/* What the manager does to the API (controllers/access.h). */

#include "controllers/access.h"

#include <string.h>

#include "api/kinds.h"

#define CP API_GROUP_CONTROLPLANE
#define INFRA API_GROUP_INFRASTRUCTURE

const struct access_rule access_rules[] = {
    /* The informers behind struct cache_view. */
    {CP, "nestedcontrolplanes", "list watch", NULL, ACCESS_CACHE, "cache"},
    {CP, "nestedetcds", "list watch", NULL, ACCESS_CACHE, "cache"},
    {CP, "nestedapiservers", "list watch", NULL, ACCESS_CACHE, "cache"},
    {CP, "nestedcontrollermanagers", "list watch", NULL, ACCESS_CACHE, "cache"},
    {INFRA, "nestedclusters", "list watch", NULL, ACCESS_CACHE, "cache"},
    {API_GROUP_CLUSTER, "clusters", "list watch", NULL, ACCESS_CACHE,
     "cache (network, endpoint, pause); read only"},
    {"", "secrets", "list watch", NULL, ACCESS_CACHE, "cache, by the cluster-name label"},
    {"", "services", "list watch", NULL, ACCESS_CACHE, "cache of what nestcp manages"},
    {"apps", "statefulsets", "list watch", NULL, ACCESS_CACHE, "cache of what nestcp manages"},
    {"", "configmaps", "list watch", NULL, ACCESS_CACHE, "cache of what nestcp manages"},
    {"networking.k8s.io", "networkpolicies", "list watch", NULL, ACCESS_CACHE,
     "cache of what nestcp manages"},
    {"", "pods", "list watch", NULL, ACCESS_CACHE, "cache of the tenants' control-plane pods"},
    {"batch", "jobs", "list watch", NULL, ACCESS_CACHE,
     "cache of the etcd snapshot Jobs nestcp made"},
    {"", "persistentvolumeclaims", "list watch", NULL, ACCESS_CACHE,
     "cache of the etcd members' claims: where a member's data lives"},

    /* Plans. */
    {CP, "nestedcontrolplanes", "patch", NULL, ACCESS_PLAN,
     "the finalizer, the block-move annotation, a move request done (merge patch)"},
    {CP, "nestedetcds", "patch delete", NULL, ACCESS_PLAN,
     "adopted by their control plane, start-from-snapshot for a move (merge patch), deleted "
     "with it"},
    {CP, "nestedapiservers", "patch delete", NULL, ACCESS_PLAN,
     "adopted by their control plane (merge patch), deleted with it"},
    {CP, "nestedcontrollermanagers", "patch delete", NULL, ACCESS_PLAN,
     "adopted by their control plane (merge patch), deleted with it"},
    {CP, "nestedcontrolplanes/status", "update", NULL, ACCESS_PLAN, "status"},
    {CP, "nestedetcds/status", "update", NULL, ACCESS_PLAN, "status"},
    {CP, "nestedapiservers/status", "update", NULL, ACCESS_PLAN, "status"},
    {CP, "nestedcontrollermanagers/status", "update", NULL, ACCESS_PLAN, "status"},
    {INFRA, "nestedclusters", "patch", NULL, ACCESS_PLAN, "the endpoint (merge patch)"},
    {INFRA, "nestedclusters/status", "update", NULL, ACCESS_PLAN, "status"},
    {"", "secrets", "get create patch delete", NULL, ACCESS_PLAN,
     "CAs and certificates created (never overwritten; a CA Secret that exists without the "
     "cluster-name label is read, then labelled), the kubeconfig applied, superseded "
     "certificates deleted"},
    {"", "services", "get create patch delete", NULL, ACCESS_PLAN,
     "rendered: server-side applied (which creates; read first when the cache does not hold "
     "it, so that a same-named object nestcp does not own is left alone), deleted with their "
     "control plane"},
    {"apps", "statefulsets", "get create patch delete", NULL, ACCESS_PLAN,
     "rendered: server-side applied (which creates; read first when the cache does not hold "
     "it), deleted with their control plane"},
    {"", "configmaps", "get create patch delete", NULL, ACCESS_PLAN,
     "rendered (kube-apiserver's authentication configuration): server-side applied (which "
     "creates; read first when the cache does not hold it), deleted with their control plane; "
     "and the admission policy's parameters in the manager's namespace, server-side applied "
     "when they differ from the packages"},
    {"", "pods", "patch delete", NULL, ACCESS_PLAN,
     "an etcd member's pod released: its initial cluster in its annotations, its scheduling "
     "gate lifted (merge patch); deleted to move its member from emptyDir to a claim (the "
     "StatefulSet controller does not replace a pod whose volumes differ from its claim "
     "templates)"},
    {"batch", "jobs", "create delete", NULL, ACCESS_PLAN,
     "etcd snapshots and restores (controllers/snapshot.h): created, and deleted once what "
     "they did is recorded"},
    {"networking.k8s.io", "networkpolicies", "get create patch delete", NULL, ACCESS_PLAN,
     "rendered (etcd's and the API server's): server-side applied (which creates; read first "
     "when the cache does not hold it), deleted with their control plane or when no longer "
     "rendered"},

    /* What the objects nestcp writes need at admission: ownerReferences with
     * blockOwnerDeletion ask for update on the owner's finalizers where
     * OwnerReferencesPermissionEnforcement is on. A NestedCluster owns nothing. */
    {CP, "nestedcontrolplanes/finalizers", "update", NULL, ACCESS_ADMISSION, "owner"},
    {CP, "nestedetcds/finalizers", "update", NULL, ACCESS_ADMISSION, "owner"},
    {CP, "nestedapiservers/finalizers", "update", NULL, ACCESS_ADMISSION, "owner"},
    {CP, "nestedcontrollermanagers/finalizers", "update", NULL, ACCESS_ADMISSION, "owner"},

    {"", "events", "create patch", NULL, ACCESS_EVENTS,
     "core/v1 Events, their count patched when repeated"},

    {"coordination.k8s.io", "leases", "create", NULL, ACCESS_LEADER,
     "the Lease, the first time (create cannot be limited to a name)"},
    {"coordination.k8s.io", "leases", "get update", "nestcp-manager", ACCESS_LEADER,
     "read and renew the Lease"},
    {"authentication.k8s.io", "tokenreviews", "create", NULL, ACCESS_METRICS,
     "a scrape's bearer token authenticated"},
    {"authorization.k8s.io", "subjectaccessreviews", "create", NULL, ACCESS_METRICS,
     "a scrape's user allowed get on /metrics"},
    {NULL, NULL, NULL, NULL, 0, NULL},
};

const char *access_action_verb(const struct plan_action *a)
{
    switch (a->verb) {
    case KUBE_GET:
        return "get";
    case KUBE_LIST:
        return "list";
    case KUBE_CREATE:
        return "create";
    case KUBE_UPDATE:
        return "update";
    case KUBE_PATCH:
        return "patch";
    case KUBE_DELETE:
        return "delete";
    }
    return "";
}

/* Whether the space-separated list has word. */
static bool has_word(const char *list, const char *word)
{
    size_t n = strlen(word);

    while (*list) {
        size_t m = strcspn(list, " ");
        if (m == n && strncmp(list, word, n) == 0)
            return true;
        list += m + (list[m] == ' ');
    }
    return false;
}

bool access_allows(const char *group, const char *resource, const char *verb)
{
    for (const struct access_rule *r = access_rules; r->resource; r++)
        if (!r->resource_name && r->use != ACCESS_LEADER && r->use != ACCESS_METRICS &&
            strcmp(r->group, group) == 0 && strcmp(r->resource, resource) == 0 &&
            has_word(r->verbs, verb))
            return true;
    return false;
}

bool access_allows_action(const struct plan_action *a)
{
    const char *verb = access_action_verb(a);
    char resource[128];
    size_t n = strlen(a->resource->resource);

    if (n >= sizeof(resource) - 1)
        return false;
    memcpy(resource, a->resource->resource, n + 1);
    if (a->subresource) {
        size_t m = strlen(a->subresource);
        if (n + 1 + m >= sizeof(resource))
            return false;
        resource[n] = '/';
        memcpy(resource + n + 1, a->subresource, m + 1);
    }
    /* A server-side apply of an object that does not exist yet creates it: the API server
     * asks for create as well as patch then. */
    if (a->verb == KUBE_PATCH && a->patch_type == KUBE_PATCH_APPLY &&
        !access_allows(a->resource->group, resource, "create"))
        return false;
    return access_allows(a->resource->group, resource, verb);
}
