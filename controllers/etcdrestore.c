/* Restoring etcd from a snapshot (controllers/etcdrestore.h). */

#include "controllers/etcdrestore.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/kinds.h"
#include "api/types.h"
#include "controllers/etcdmembership.h"
#include "controllers/move.h"
#include "controllers/snapshot.h"
#include "lib/kube/client.h"
#include "lib/kube/store.h"
#include "lib/util/strutil.h"

/* The most members an etcd has (NestedEtcd spec.replicas). */
#define MAX_MEMBERS API_ETCD_MAX_MEMBERS

static const cJSON *get(const cJSON *o, const char *key)
{
    return cJSON_GetObjectItemCaseSensitive(o, key);
}

static const char *text(const cJSON *o, const char *key)
{
    const cJSON *v = get(o, key);

    return cJSON_IsString(v) ? v->valuestring : NULL;
}

static bool is(const char *a, const char *b)
{
    return a && b && strcmp(a, b) == 0;
}

/* The value of --<flag>= among the rendered etcd container's args, or NULL. */
static const char *arg_of(const cJSON *container, const char *flag)
{
    const cJSON *a;
    size_t n = strlen(flag);

    cJSON_ArrayForEach(a, get(container, "args")) {
        if (cJSON_IsString(a) && strncmp(a->valuestring, "--", 2) == 0 &&
            strncmp(a->valuestring + 2, flag, n) == 0 && a->valuestring[2 + n] == '=')
            return a->valuestring + 3 + n;
    }
    return NULL;
}

static const cJSON *etcd_container(const cJSON *sts)
{
    const cJSON *c;

    cJSON_ArrayForEach(c, get(get(get(get(sts, "spec"), "template"), "spec"), "containers")) {
        if (is(text(c, "name"), "etcd"))
            return c;
    }
    return NULL;
}

static void say(struct etcd_restore_output *out, const char *status, const char *reason,
                bool warning, const char *fmt, ...) __attribute__((format(printf, 5, 6)));

static void say(struct etcd_restore_output *out, const char *status, const char *reason,
                bool warning, const char *fmt, ...)
{
    va_list ap;

    out->status = status;
    out->reason = reason;
    out->warning = warning;
    va_start(ap, fmt);
    vsnprintf(out->message, sizeof(out->message), fmt, ap);
    va_end(ap);
}

/* Whether any member pod or claim of the StatefulSet sts is left. */
static bool members_left(const struct etcd_restore_input *in, const char *sts, char *which,
                         size_t size)
{
    char name[300];

    for (int i = 0; i < MAX_MEMBERS; i++) {
        str_printf(name, sizeof(name), "%s-%d", sts, i);
        if (kube_store_get(in->view->pods, in->ns, name)) {
            str_printf(which, size, "pod %s", name);
            return true;
        }
        str_printf(name, sizeof(name), "data-%s-%d", sts, i);
        if (kube_store_get(in->view->claims, in->ns, name)) {
            str_printf(which, size, "claim %s", name);
            return true;
        }
    }
    return false;
}

static bool gated(const cJSON *pod)
{
    return cJSON_GetArraySize(get(get(pod, "spec"), "schedulingGates")) > 0;
}

static void forget_cluster(struct api_component_status *st)
{
    free(st->cluster_id);
    free(st->adding);
    st->cluster_id = st->adding = NULL;
    api_etcd_members_free(st->members, st->n_members);
    st->members = NULL;
    st->n_members = 0;
}

/* Member 0 starts from the restored data: its claim is recorded as its data, and its gate is
 * lifted (after the status write) with itself as the initial cluster. */
static int start_member(const struct etcd_restore_input *in, struct api_component_status *st,
                        const cJSON *pod, const cJSON *claim, const char *member,
                        const char *peer_url, struct plan *after_status)
{
    char initial[1200];
    cJSON *patch = cJSON_CreateObject(), *meta, *ann, *spec;

    forget_cluster(st);
    if (!(st->members = calloc(1, sizeof(*st->members))))
        goto oom;
    st->n_members = 1;
    if (str_set(&st->members[0].name, member) < 0 ||
        str_set(&st->members[0].data_uid, kube_obj_uid(claim)) < 0)
        goto oom;
    snprintf(initial, sizeof(initial), "%s=%s", member, peer_url);
    /* The UID in the patch makes it fail with a conflict if the pod was replaced since. */
    if (!patch || !(meta = cJSON_AddObjectToObject(patch, "metadata")) ||
        !cJSON_AddStringToObject(meta, "uid", kube_obj_uid(pod)) ||
        !(ann = cJSON_AddObjectToObject(meta, "annotations")) ||
        !cJSON_AddStringToObject(ann, ETCD_MEMBERSHIP_INITIAL_CLUSTER, initial) ||
        !cJSON_AddStringToObject(ann, ETCD_MEMBERSHIP_INITIAL_STATE, "new") ||
        !(spec = cJSON_AddObjectToObject(patch, "spec")) ||
        !cJSON_AddNullToObject(spec, "schedulingGates"))
        goto oom;
    return plan_merge_patch(after_status, &KUBE_PODS, in->ns, member, NULL, patch,
                            "Pod %s/%s: started from the restored snapshot", in->ns, member);
oom:
    cJSON_Delete(patch);
    return -ENOMEM;
}

/* The snapshot a NestedEtcd that never formed a cluster here starts from (annotation
 * start-from-snapshot: the target of a move), or NULL: no cluster ID, no member recorded, and
 * no member pod that ever left its scheduling gate. Once taken up, the start goes on as a
 * restore of that name; on a cluster that formed, the annotation is ignored. */
static const char *start_snapshot(const struct etcd_restore_input *in,
                                  const struct api_component_status *st)
{
    const char *want = kube_obj_annotation(in->etcd, MOVE_START_FROM_SNAPSHOT);
    const cJSON *pod;
    char name[320];

    if (!want || !*want)
        return NULL;
    if (is(st->restore_snapshot, want))
        return want;
    if (st->cluster_id || st->n_members > 0)
        return NULL;
    for (int i = 0; i < MAX_MEMBERS; i++) {
        str_printf(name, sizeof(name), "%s-etcd-%d", in->cluster, i);
        pod = kube_store_get(in->view->pods, in->ns, name);
        if (pod && !gated(pod))
            return NULL;
    }
    return want;
}

int etcd_restore_step(const struct etcd_restore_input *in, struct api_component_status *st,
                      struct plan *plan, struct plan *after_status, struct etcd_restore_output *out)
{
    const char *want = kube_obj_annotation(in->etcd, ETCD_RESTORE_ANNOTATION);
    const cJSON *claim_v =
        get(get(get(get(in->etcd, "spec"), "snapshots"), "persistentVolumeClaim"), "claimName");
    const char *claim = cJSON_IsString(claim_v) ? claim_v->valuestring : NULL;
    const cJSON *container = etcd_container(in->sts), *pod, *data, *sts, *job;
    const char *image = text(container, "image"),
               *token = arg_of(container, "initial-cluster-token");
    const char *completed_at, *domain;
    char sts_name[300], member[320], peer_url[800], job_name[SNAPSHOT_NAME_MAX], key[600], why[512],
        left[340], when[32];
    bool starting;
    int r;

    memset(out, 0, sizeof(*out));
    /* A finished restore Job is of no use once the cached status shows etcd restored, or a
     * new restore stopping the members; its pod would keep the claim it wrote from being
     * deleted. */
    {
        const char *phase = text(get(get(in->etcd, "status"), "restore"), "phase");
        if ((is(phase, ETCD_RESTORE_RESTORED) || is(phase, ETCD_RESTORE_STOPPING)) &&
            (r = snapshot_prune(in->view->jobs, kube_obj_uid(in->etcd), SNAPSHOT_RESTORE_COMPONENT,
                                NULL, plan)) < 0)
            return r;
    }
    if ((!want || !*want) && !(want = start_snapshot(in, st)))
        return 0;
    starting = !is(want, kube_obj_annotation(in->etcd, ETCD_RESTORE_ANNOTATION));
    snprintf(sts_name, sizeof(sts_name), "%s-etcd", in->cluster);
    if (is(st->restore_snapshot, want) && is(st->restore_phase, ETCD_RESTORE_RESTORED)) {
        /* Until the cache shows member 0 started (its gate gone), the membership step would
         * take the cluster for one that never formed and start the other members as a new
         * cluster of their own: it stays at 1 replica until then. Once the membership step
         * has recorded the new cluster's ID, nothing here holds it any more. */
        snprintf(member, sizeof(member), "%s-0", sts_name);
        pod = kube_store_get(in->view->pods, in->ns, member);
        if (!st->cluster_id && (!pod || gated(pod))) {
            out->active = true;
            out->replicas = 1;
            say(out, "True", "Restored", false,
                "restored from snapshot %s at %s: waiting for member %s to start", want,
                st->restored_at ? st->restored_at : "?", member);
        }
        return 0;
    }
    if (!claim || !*claim) {
        say(out, "False", "NoSnapshotClaim", true,
            "cannot restore snapshot %s: the NestedEtcd names no "
            "spec.snapshots.persistentVolumeClaim to read %s.db from",
            want, want);
        return 0;
    }
    if (!is(st->restore_snapshot, want)) {
        if ((r = str_set(&st->restore_snapshot, want)) < 0 ||
            (r = str_set(&st->restore_phase, ETCD_RESTORE_STOPPING)) < 0 ||
            (r = str_set(&st->restored_at, NULL)) < 0)
            return r;
        if (!starting && plan_event(plan, KUBE_EVENT_WARNING, "RestoreStarted",
                                    "restoring etcd from snapshot %s.db on claim %s: every "
                                    "member stops, and the data written since the snapshot is "
                                    "discarded",
                                    want, claim) < 0)
            return -ENOMEM;
        if (starting && plan_event(plan, KUBE_EVENT_NORMAL, "RestoreStarted",
                                   "etcd starts from snapshot %s.db on claim %s (annotation "
                                   "%s): the control plane was moved here",
                                   want, claim, MOVE_START_FROM_SNAPSHOT) < 0)
            return -ENOMEM;
    }
    out->active = true;
    if (is(st->restore_phase, ETCD_RESTORE_STOPPING)) {
        sts = kube_store_get(in->view->statefulsets, in->ns, sts_name);
        out->replicas = 0;
        if (members_left(in, sts_name, left, sizeof(left)) ||
            (sts && cJSON_IsNumber(get(get(sts, "status"), "replicas")) &&
             get(get(sts, "status"), "replicas")->valueint > 0)) {
            say(out, "False", "Stopping", false,
                "restoring snapshot %s: stopping every member (%s is still there)", want,
                left[0] ? left : "a pod");
            return 0;
        }
        forget_cluster(st);
        if ((r = str_set(&st->restore_phase, ETCD_RESTORE_RESTORING)) < 0)
            return r;
    }
    /* Restoring: member 0 comes back behind its gate with an empty claim, and a Job restores
     * the snapshot into it. */
    out->replicas = 1;
    snprintf(member, sizeof(member), "%s-0", sts_name);
    snprintf(left, sizeof(left), "data-%s", member);
    pod = kube_store_get(in->view->pods, in->ns, member);
    data = kube_store_get(in->view->claims, in->ns, left);
    domain = arg_of(container, "initial-advertise-peer-urls");
    domain = domain ? strstr(domain, "$(POD_NAME).") : NULL;
    if (!image || !token || !domain) {
        say(out, "False", "Restoring", true,
            "restoring snapshot %s: the rendered etcd StatefulSet has no image, "
            "--initial-cluster-token or --initial-advertise-peer-urls to restore with",
            want);
        return 0;
    }
    snprintf(peer_url, sizeof(peer_url), "https://%s.%s", member, domain + strlen("$(POD_NAME)."));
    if (!pod || !data || !kube_obj_uid(data)) {
        say(out, "False", "Restoring", false,
            "restoring snapshot %s: waiting for pod %s and its new claim %s", want, member, left);
        return 0;
    }
    /* One Job per claim: a member recreated on another claim is restored again. */
    snprintf(key, sizeof(key), "restore %s into %s", want, kube_obj_uid(data));
    snapshot_restore_name(in->cluster, key, job_name);
    job = kube_store_get(in->view->jobs, in->ns, job_name);
    if (!job) {
        struct snapshot_restore_input ri = {.ns = in->ns,
                                            .cluster = in->cluster,
                                            .owner_api_version = text(in->etcd, "apiVersion"),
                                            .owner_name = kube_obj_name(in->etcd),
                                            .owner_uid = kube_obj_uid(in->etcd),
                                            .name = job_name,
                                            .snapshot = want,
                                            .claim = claim,
                                            .data_claim = left,
                                            .image = image,
                                            .member = member,
                                            .peer_url = peer_url,
                                            .token = token,
                                            .bump_revision = ETCD_RESTORE_BUMP};
        cJSON *obj = snapshot_restore_job(&ri);

        if (!obj || plan_create(plan, &KUBE_JOBS, obj, "Job %s/%s: restore snapshot %s into %s",
                                in->ns, job_name, want, left) < 0)
            return -ENOMEM;
        say(out, "False", "Restoring", false,
            "restoring snapshot %s: Job %s writes it into claim %s", want, job_name, left);
        return 0;
    }
    switch (snapshot_job_state(job, why, sizeof(why), &completed_at)) {
    case SNAPSHOT_RUNNING:
        say(out, "False", "Restoring", false,
            "restoring snapshot %s: Job %s writes it into claim %s", want, job_name, left);
        return 0;
    case SNAPSHOT_FAILED:
        say(out, "False", "RestoreFailed", true,
            "restoring snapshot %s: Job %s failed (%s); is %s.db on claim %s? Delete the Job "
            "to try again",
            want, job_name, why, want, claim);
        return 0;
    case SNAPSHOT_COMPLETE:
        break;
    }
    time_format_rfc3339(in->now, when);
    if ((r = start_member(in, st, pod, data, member, peer_url, after_status)) < 0 ||
        (r = str_set(&st->restore_phase, ETCD_RESTORE_RESTORED)) < 0 ||
        (r = str_set(&st->restored_at, when)) < 0)
        return r;
    out->started_cluster = true;
    say(out, "True", "Restored", false,
        "restored from snapshot %s at %s: member %s started from it, the others are added "
        "again one at a time, and every API server and controller manager restarts",
        want, when, member);
    return plan_event(plan, KUBE_EVENT_NORMAL, "Restored",
                      "etcd member %s starts from snapshot %s.db; every revision is moved "
                      "up by %d and compacted, so clients list again",
                      member, want, ETCD_RESTORE_BUMP) < 0
               ? -ENOMEM
               : 0;
}
