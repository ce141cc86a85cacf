/* Snapshots on demand (controllers/etcdsnapshot.h). */

#include "controllers/etcdsnapshot.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/kinds.h"
#include "controllers/snapshot.h"
#include "lib/kube/client.h"
#include "lib/kube/store.h"
#include "lib/util/strutil.h"

static const cJSON *get(const cJSON *o, const char *key)
{
    return cJSON_GetObjectItemCaseSensitive(o, key);
}

static bool is(const char *a, const char *b)
{
    return a && b && strcmp(a, b) == 0;
}

static void say(struct etcd_snapshot_output *out, const char *status, const char *reason,
                bool warning, const char *fmt, ...) __attribute__((format(printf, 5, 6)));

static void say(struct etcd_snapshot_output *out, const char *status, const char *reason,
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

int etcd_snapshot_step(const struct etcd_snapshot_input *in, struct api_component_status *st,
                       struct plan *plan, struct etcd_snapshot_output *out)
{
    const char *want = kube_obj_annotation(in->etcd, ETCD_SNAPSHOT_ANNOTATION);
    const cJSON *claim_v =
        get(get(get(get(in->etcd, "spec"), "snapshots"), "persistentVolumeClaim"), "claimName");
    const char *claim =
        cJSON_IsString(claim_v) && claim_v->valuestring[0] ? claim_v->valuestring : NULL;
    const char *host, *image, *done_at;
    const cJSON *job, *sts;
    char key[700], name[SNAPSHOT_NAME_MAX], sts_name[300], why[512];
    int r;

    memset(out, 0, sizeof(*out));
    /* The Job of the snapshot the cached status records as complete is of no more use. */
    {
        const cJSON *rec = get(get(in->etcd, "status"), "snapshot");
        if (cJSON_IsString(get(rec, "name")) && cJSON_IsString(get(rec, "phase")) &&
            is(get(rec, "phase")->valuestring, ETCD_SNAPSHOT_COMPLETE) &&
            (r = snapshot_prune(in->view->jobs, kube_obj_uid(in->etcd), SNAPSHOT_COMPONENT,
                                get(rec, "name")->valuestring, plan)) < 0)
            return r;
    }
    if (!want || !*want ||
        (is(st->snapshot_request, want) && (is(st->snapshot_phase, ETCD_SNAPSHOT_COMPLETE) ||
                                            is(st->snapshot_phase, ETCD_SNAPSHOT_FAILED))))
        return 0;
    if (!claim) {
        say(out, "False", "NoSnapshotClaim", true,
            "snapshot %s asked for, but the NestedEtcd names no "
            "spec.snapshots.persistentVolumeClaim to write it to",
            want);
        return 0;
    }
    /* One Job per request of this NestedEtcd. */
    str_printf(key, sizeof(key), "on demand %s/%s %s %s", in->ns, kube_obj_name(in->etcd),
               kube_obj_uid(in->etcd) ? kube_obj_uid(in->etcd) : "", want);
    snapshot_name(in->cluster, key, name);
    if (!is(st->snapshot_request, want)) {
        if ((r = str_set(&st->snapshot_request, want)) < 0 ||
            (r = str_set(&st->snapshot_name, name)) < 0 ||
            (r = str_set(&st->snapshot_phase, ETCD_SNAPSHOT_TAKING)) < 0 ||
            (r = str_set(&st->snapshot_taken_at, NULL)) < 0)
            return r;
    }
    job = kube_store_get(in->view->jobs, in->ns, name);
    if (!job) {
        struct snapshot_job_input ji = {.ns = in->ns,
                                        .cluster = in->cluster,
                                        .owner_api_version =
                                            cJSON_IsString(get(in->etcd, "apiVersion"))
                                                ? get(in->etcd, "apiVersion")->valuestring
                                                : "",
                                        .owner_kind = api_kind_info(API_KIND_NESTED_ETCD)->name,
                                        .owner_name = kube_obj_name(in->etcd),
                                        .owner_uid = kube_obj_uid(in->etcd),
                                        .name = name,
                                        .claim = claim,
                                        .certs_secret = in->certs};
        cJSON *obj;

        snprintf(sts_name, sizeof(sts_name), "%s-etcd", in->cluster);
        sts = kube_store_get(in->view->statefulsets, in->ns, sts_name);
        if (!in->certs || snapshot_source(in->view->pods, sts, in->etcd, &host, &image) < 0) {
            say(out, "False", ETCD_SNAPSHOT_TAKING, false,
                "snapshot %s (request %s): waiting for a ready member to take it from", name, want);
            return 0;
        }
        ji.endpoint_host = host;
        ji.image = image;
        if (!(obj = snapshot_job(&ji)) ||
            plan_create(plan, &KUBE_JOBS, obj, "Job %s/%s: etcd snapshot (request %s)", in->ns,
                        name, want) < 0)
            return -ENOMEM;
        say(out, "False", ETCD_SNAPSHOT_TAKING, false,
            "Job %s writes snapshot %s.db (request %s) from %s to claim %s", name, name, want, host,
            claim);
        return 0;
    }
    switch (snapshot_job_state(job, why, sizeof(why), &done_at)) {
    case SNAPSHOT_RUNNING:
        say(out, "False", ETCD_SNAPSHOT_TAKING, false,
            "Job %s writes snapshot %s.db (request %s) to claim %s", name, name, want, claim);
        return 0;
    case SNAPSHOT_FAILED:
        if ((r = str_set(&st->snapshot_phase, ETCD_SNAPSHOT_FAILED)) < 0)
            return r;
        say(out, "False", "SnapshotFailed", true,
            "snapshot %s (request %s) failed: Job %s: %s; ask again with another value of %s", name,
            want, name, why, ETCD_SNAPSHOT_ANNOTATION);
        return 0;
    case SNAPSHOT_COMPLETE:
        break;
    }
    if ((r = str_set(&st->snapshot_phase, ETCD_SNAPSHOT_COMPLETE)) < 0 ||
        (r = str_set(&st->snapshot_taken_at, done_at ? done_at : "")) < 0)
        return r;
    say(out, "True", "Taken", false, "snapshot %s.db (request %s) is on claim %s, taken at %s",
        name, want, claim, done_at ? done_at : "?");
    return plan_event(plan, KUBE_EVENT_NORMAL, "SnapshotTaken",
                      "etcd snapshot %s.db (request %s) is on claim %s", name, want, claim) < 0
               ? -ENOMEM
               : 0;
}
