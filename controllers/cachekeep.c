#include "controllers/cachekeep.h"

#include <string.h>

#include "api/kinds.h"
#include "lib/kube/object.h"
#include "lib/kube/transform.h"
#include "lib/pki/secret.h"

bool cachekeep_object(void *ctx, cJSON *obj)
{
    (void)ctx;
    kube_transform_trim_metadata(obj);
    return true;
}

static bool has_suffix(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);

    return n > m && s[n - m - 1] == '-' && strcmp(s + n - m, suffix) == 0;
}

/* Whether the controller ownerReference of obj is one of nestcp's kinds, of any version. */
static bool controlled_by_nestcp(const cJSON *obj)
{
    const cJSON *ref = kube_obj_controller_ref(obj);
    const cJSON *av = cJSON_GetObjectItemCaseSensitive(ref, "apiVersion");
    const cJSON *kind = cJSON_GetObjectItemCaseSensitive(ref, "kind");
    const char *slash;

    if (!cJSON_IsString(av) || !cJSON_IsString(kind) || !(slash = strchr(av->valuestring, '/')))
        return false;
    for (int k = 0; k < API_KIND_COUNT; k++) {
        const struct api_kind_info *ki = api_kind_info((enum api_kind)k);
        size_t glen = strlen(ki->group);

        if (k != API_KIND_CLUSTER && strcmp(ki->name, kind->valuestring) == 0 &&
            (size_t)(slash - av->valuestring) == glen &&
            strncmp(ki->group, av->valuestring, glen) == 0)
            return true;
    }
    return false;
}

bool cachekeep_secret_is_ours(const cJSON *secret)
{
    static const char *const purposes[] = {PKI_PURPOSE_CA, PKI_PURPOSE_ETCD, PKI_PURPOSE_PROXY,
                                           PKI_PURPOSE_SA, PKI_PURPOSE_KUBECONFIG};
    const char *name = kube_obj_name(secret);

    if (!name)
        return false;
    if (controlled_by_nestcp(secret) || strstr(name, "-certs-"))
        return true;
    for (size_t i = 0; i < sizeof(purposes) / sizeof(purposes[0]); i++)
        if (has_suffix(name, purposes[i]))
            return true;
    return false;
}

bool cachekeep_secret(void *ctx, cJSON *obj)
{
    (void)ctx;
    if (!cachekeep_secret_is_ours(obj))
        return false;
    kube_transform_trim_metadata(obj);
    return true;
}

bool cachekeep_statefulset(void *ctx, cJSON *obj)
{
    /* status_statefulset, render_cluster_certs_mounted, nested_etcd_safety,
     * resolve_etcd_storage, the etcd membership and a held roll (its partition) read these. */
    static const char *const keep[] = {
        "apiVersion",
        "kind",
        "metadata",
        "spec.replicas",
        "spec.updateStrategy",
        "spec.volumeClaimTemplates",
        "spec.template.metadata",
        "spec.template.spec.volumes",
        "status",
        NULL,
    };

    (void)ctx;
    kube_transform_trim_metadata(obj);
    kube_transform_keep(obj, keep);
    return true;
}

bool cachekeep_job(void *ctx, cJSON *obj)
{
    /* A snapshot's state is read from the status alone (snapshot_job_state). */
    static const char *const keep[] = {"apiVersion", "kind", "metadata", "status", NULL};

    (void)ctx;
    kube_transform_trim_metadata(obj);
    kube_transform_keep(obj, keep);
    return true;
}

bool cachekeep_pod(void *ctx, cJSON *obj)
{
    /* The etcd membership reads these of its members' pods, the health of a roll
     * (controllers/rollhealth.h) the containers' restarts. */
    static const char *const keep[] = {
        "apiVersion",
        "kind",
        "metadata",
        "spec.schedulingGates",
        "spec.volumes",
        "status.phase",
        "status.conditions",
        "status.podIP",
        "status.podIPs",
        "status.containerStatuses",
        NULL,
    };

    (void)ctx;
    kube_transform_trim_metadata(obj);
    kube_transform_keep(obj, keep);
    return true;
}

cachekeep_fn *cachekeep_transform(const char *kind)
{
    if (strcmp(kind, "Secret") == 0)
        return cachekeep_secret;
    if (strcmp(kind, "StatefulSet") == 0)
        return cachekeep_statefulset;
    if (strcmp(kind, "Pod") == 0)
        return cachekeep_pod;
    if (strcmp(kind, "Job") == 0)
        return cachekeep_job;
    return cachekeep_object;
}
