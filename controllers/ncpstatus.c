/* The NestedControlPlane's status (controllers/ncp.h): ready, initialized, version, replicas,
 * etcd's addresses, the phase, and the Ready, Available and Upgrading conditions, from the
 * rollout's output and the components' StatefulSets. */

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/conditions.h"
#include "api/version.h"
#include "controllers/lookup.h"
#include "controllers/ncp.h"

/* Whether a component from first to last is to run another version than it reports running
 * (its status.version): each may run its own override of the control plane's. */
static bool versions_changing(const struct cp *x, const struct desired_all *da, int first, int last)
{
    for (int i = first; i <= last; i++) {
        const cJSON *comp = lookup_component(x->view, x->obj, (enum render_part)i);
        const cJSON *running = get(get(comp, "status"), "version");
        if (cJSON_IsString(running) && da->d[i].version[0] &&
            !api_version_equal(running->valuestring, da->d[i].version))
            return true;
    }
    return false;
}

/* Whether an API server or controller manager is. */
static bool version_changing(const struct cp *x, const struct desired_all *da)
{
    return versions_changing(x, da, RENDER_PART_APISERVER, RENDER_PART_CONTROLLER_MANAGER);
}

const char *ncp_phase_of(const struct cp *x, const struct rollout_output *out,
                         const struct desired_all *da)
{
    switch (out->phase) {
    case ROLLOUT_PHASE_READY:
        return "Ready";
    case ROLLOUT_PHASE_UPGRADING: {
        const char *running = x->st->version ? x->st->version + (x->st->version[0] == 'v') : NULL;
        return (running && strcmp(running, da->d[RENDER_PART_APISERVER].version) != 0) ||
                       version_changing(x, da)
                   ? "Upgrading"
                   : "Reconfiguring";
    }
    default:
        return out->initialized ? "Ready" : "Provisioning";
    }
}

static int copy_etcd_addresses(struct cp *x)
{
    const cJSON *etcd = lookup_component(x->view, x->obj, RENDER_PART_ETCD), *a;
    const cJSON *arr = get(get(etcd, "status"), "addresses");
    struct api_control_plane_status *st = x->st;
    int n = cJSON_GetArraySize(arr), i = 0;

    for (size_t k = 0; k < st->n_etcd_addresses; k++) {
        free(st->etcd_addresses[k].ip);
        free(st->etcd_addresses[k].hostname);
    }
    free(st->etcd_addresses);
    st->etcd_addresses = NULL;
    st->n_etcd_addresses = 0;
    if (!cJSON_IsArray(arr) || n <= 0)
        return 0;
    if (!(st->etcd_addresses = calloc((size_t)n, sizeof(*st->etcd_addresses))))
        return -ENOMEM;
    cJSON_ArrayForEach(a, arr) {
        const cJSON *ip = get(a, "ip"), *host = get(a, "hostname"), *port = get(a, "port");
        struct api_etcd_address *d = &st->etcd_addresses[i];
        d->ip = cJSON_IsString(ip) ? strdup(ip->valuestring) : NULL;
        d->hostname = cJSON_IsString(host) ? strdup(host->valuestring) : NULL;
        d->port = cJSON_IsNumber(port) ? port->valueint : 0;
        st->n_etcd_addresses = (size_t)++i;
        if ((cJSON_IsString(ip) && !d->ip) || (cJSON_IsString(host) && !d->hostname))
            return -ENOMEM;
    }
    return 0;
}

int ncp_aggregate(struct cp *x, const struct rollout_output *out, const struct desired_all *da,
                  const char *refusal_reason, const char *refusal_message)
{
    struct api_control_plane_status *st = x->st;
    const struct status_sts *as = &da->ss[RENDER_PART_APISERVER];
    const struct api_rollout_target *at = &st->rollout.apiserver;
    char version[RENDER_VERSION_MAX + 2];
    int r;

    st->initialized = st->initialized || out->initialized;
    st->control_plane_initialized = st->initialized;
    st->external_managed = true;
    st->ready = st->initialized && out->serving;
    st->replicas = as->exists ? as->status_replicas : 0;
    st->ready_replicas = as->ready;
    st->updated_replicas = as->updated;
    /* The v1beta2 contract's names: available as the StatefulSet counts it (ready for
     * minReadySeconds), up to date as updatedReplicas. */
    st->available_replicas = as->available;
    st->up_to_date_replicas = as->updated;
    if (as->complete && at->version) {
        snprintf(version, sizeof(version), "v%s", at->version);
        if ((r = ncp_set_str(&st->version, version)) < 0)
            return r;
    }
    if ((r = ncp_set_str(&st->phase, ncp_phase_of(x, out, da))) < 0 ||
        (r = copy_etcd_addresses(x)) < 0)
        return r;
    if (st->ready && out->phase == ROLLOUT_PHASE_STALLED)
        r = ncp_cond(x, "Ready", API_CONDITION_TRUE, NULL, "Ready",
                     "serving the configuration it ran before; a roll is held back (Upgrading: %s)",
                     out->reason);
    else if (st->ready && refusal_reason)
        /* Nothing rolls while a change is refused: say so, not that a rollout runs. */
        r = ncp_cond(x, "Ready", API_CONDITION_TRUE, NULL, "Ready",
                     "serving the configuration it runs; a change was refused and nothing rolls "
                     "(Upgrading: %s)",
                     refusal_reason);
    else if (st->ready)
        r = ncp_cond(x, "Ready", API_CONDITION_TRUE, NULL, "Ready", "%s",
                     out->phase == ROLLOUT_PHASE_READY    ? "every component is ready"
                     : out->phase == ROLLOUT_PHASE_QUEUED ? "serving; a rollout waits for a slot "
                                                            "(Upgrading: RolloutQueued)"
                                                          : "serving while a rollout runs");
    else
        r = ncp_cond(x, "Ready", API_CONDITION_FALSE, STATUS_SEVERITY_INFO, out->reason, "%s",
                     out->message);
    if (r < 0)
        return r;
    if ((r = ncp_cond(x, "Available", out->serving ? API_CONDITION_TRUE : API_CONDITION_FALSE,
                      out->serving ? NULL : STATUS_SEVERITY_INFO,
                      out->serving ? "Available" : "NotServing", "%s",
                      out->serving ? "etcd has quorum and the API servers and controller managers "
                                     "have ready replicas"
                                   : "not every component has ready replicas")) < 0)
        return r;
    if (refusal_reason)
        return ncp_cond(x, "Upgrading", API_CONDITION_FALSE, STATUS_SEVERITY_WARNING,
                        refusal_reason, "%s", refusal_message);
    if (out->phase == ROLLOUT_PHASE_UPGRADING && st->rollout.snapshot.message &&
        versions_changing(x, da, RENDER_PART_ETCD, RENDER_PART_APISERVER))
        /* An upgrade says, while it runs, that it runs without a snapshot. */
        return ncp_cond(x, "Upgrading", API_CONDITION_TRUE, NULL, out->reason, "%s; %s",
                        out->message, st->rollout.snapshot.message);
    if (out->phase == ROLLOUT_PHASE_UPGRADING || out->phase == ROLLOUT_PHASE_QUEUED)
        return ncp_cond(x, "Upgrading", API_CONDITION_TRUE, NULL, out->reason, "%s", out->message);
    if (out->phase == ROLLOUT_PHASE_STALLED)
        return ncp_cond(x, "Upgrading", API_CONDITION_FALSE, STATUS_SEVERITY_WARNING, out->reason,
                        "%s", out->message);
    if (!st->initialized)
        return api_conditions_remove(&st->conditions, "Upgrading") >= 0 ? 0 : -ENOMEM;
    return ncp_cond(x, "Upgrading", API_CONDITION_FALSE, NULL, "UpToDate", "%s",
                    "every component runs its desired configuration");
}
