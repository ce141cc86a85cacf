/* The etcd snapshot taken before a version change (controllers/snapshot.h). */

#include "controllers/snapshot.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <openssl/evp.h>

#include "api/kinds.h"
#include "controllers/status.h"
#include "lib/ctrl/plan.h"
#include "lib/kube/client.h"
#include "lib/kube/store.h"

static void job_name(const char *cluster, const char *what, const char *key,
                     char out[SNAPSHOT_NAME_MAX])
{
    unsigned char md[EVP_MAX_MD_SIZE];
    size_t mdlen = 0;
    char hex[11] = "0000000000";
    int n = (int)strlen(cluster);

    if (EVP_Q_digest(NULL, "SHA256", NULL, key, strlen(key), md, &mdlen) == 1 && mdlen >= 5)
        for (int i = 0; i < 5; i++)
            snprintf(hex + 2 * i, 3, "%02x", md[i]);
    /* A name that ends in '-' before the suffix is still a DNS label; 36 + 15 + 10 < 63, the
     * longest label value a Job's pods carry its name in. */
    snprintf(out, SNAPSHOT_NAME_MAX, "%.*s-etcd-%s-%s", n > 36 ? 36 : n, cluster, what, hex);
}

void snapshot_name(const char *cluster, const char *key, char out[SNAPSHOT_NAME_MAX])
{
    job_name(cluster, "snapshot", key, out);
}

void snapshot_restore_name(const char *cluster, const char *key, char out[SNAPSHOT_NAME_MAX])
{
    job_name(cluster, "restore", key, out);
}

/* The helpers below note a failed allocation in *oom and carry on; the caller checks once. */

static cJSON *obj_in(cJSON *parent, const char *key, bool *oom)
{
    cJSON *o = cJSON_CreateObject();

    if (!o || (parent && !cJSON_AddItemToObject(parent, key, o))) {
        cJSON_Delete(o);
        *oom = true;
        return NULL;
    }
    return o;
}

static cJSON *arr_in(cJSON *parent, const char *key, bool *oom)
{
    cJSON *a = cJSON_CreateArray();

    if (!a || !parent || !cJSON_AddItemToObject(parent, key, a)) {
        cJSON_Delete(a);
        *oom = true;
        return NULL;
    }
    return a;
}

static cJSON *item_in(cJSON *arr, bool *oom)
{
    cJSON *o = cJSON_CreateObject();

    if (!o || !arr || !cJSON_AddItemToArray(arr, o)) {
        cJSON_Delete(o);
        *oom = true;
        return NULL;
    }
    return o;
}

static void str(cJSON *o, const char *key, const char *v, bool *oom)
{
    if (!o || !cJSON_AddStringToObject(o, key, v))
        *oom = true;
}

static void num(cJSON *o, const char *key, double v, bool *oom)
{
    if (!o || !cJSON_AddNumberToObject(o, key, v))
        *oom = true;
}

static void boolean(cJSON *o, const char *key, bool v, bool *oom)
{
    if (!o || !cJSON_AddBoolToObject(o, key, v))
        *oom = true;
}

static void push_str(cJSON *arr, const char *v, bool *oom)
{
    cJSON *s = cJSON_CreateString(v);

    if (!s || !arr || !cJSON_AddItemToArray(arr, s)) {
        cJSON_Delete(s);
        *oom = true;
    }
}

/* What a snapshot or restore Job runs: one container with a command, its claims and its
 * Secret. */
struct job_shape {
    const char *ns, *cluster, *name, *component, *image;
    const char *owner_api_version, *owner_kind, *owner_name, *owner_uid;
    const char *command;
    const char *args[16]; /* NULL-terminated */
    struct {
        const char *volume, *claim, *path;
        bool read_only;
    } claims[2];        /* volume NULL: none */
    const char *secret; /* mounted at /etc/etcd/pki; NULL: none */
};

static void labels(cJSON *meta, const struct job_shape *j, bool managed, bool *oom)
{
    cJSON *l = obj_in(meta, "labels", oom);

    str(l, "cluster.x-k8s.io/cluster-name", j->cluster, oom);
    str(l, "app.kubernetes.io/component", j->component, oom);
    str(l, "app.kubernetes.io/part-of", j->cluster, oom);
    /* The Job is nestcp's and cached; its pod is the Job controller's and is not. */
    if (managed)
        str(l, "app.kubernetes.io/managed-by", "nestcp", oom);
}

static void mount(cJSON *mounts, const char *volume, const char *path, bool read_only, bool *oom)
{
    cJSON *m = item_in(mounts, oom);

    str(m, "name", volume, oom);
    str(m, "mountPath", path, oom);
    if (read_only)
        boolean(m, "readOnly", true, oom);
}

static void pod_spec(cJSON *spec, const struct job_shape *j, bool *oom)
{
    cJSON *sc, *c, *csc, *args, *mounts, *vols, *v, *src;

    str(spec, "restartPolicy", "Never", oom);
    boolean(spec, "automountServiceAccountToken", false, oom);
    boolean(spec, "enableServiceLinks", false, oom);
    /* The restricted Pod Security Standard, as etcd's own pods: the claims are made writable
     * through fsGroup. */
    sc = obj_in(spec, "securityContext", oom);
    boolean(sc, "runAsNonRoot", true, oom);
    num(sc, "runAsUser", 65532, oom);
    num(sc, "runAsGroup", 65532, oom);
    num(sc, "fsGroup", 65532, oom);
    str(sc, "fsGroupChangePolicy", "OnRootMismatch", oom);
    str(obj_in(sc, "seccompProfile", oom), "type", "RuntimeDefault", oom);

    c = item_in(arr_in(spec, "containers", oom), oom);
    str(c, "name", j->component, oom);
    str(c, "image", j->image, oom);
    push_str(arr_in(c, "command", oom), j->command, oom);
    args = arr_in(c, "args", oom);
    for (size_t i = 0; j->args[i]; i++)
        push_str(args, j->args[i], oom);
    csc = obj_in(c, "securityContext", oom);
    boolean(csc, "allowPrivilegeEscalation", false, oom);
    boolean(csc, "readOnlyRootFilesystem", true, oom);
    push_str(arr_in(obj_in(csc, "capabilities", oom), "drop", oom), "ALL", oom);
    mounts = arr_in(c, "volumeMounts", oom);
    vols = arr_in(spec, "volumes", oom);
    for (size_t i = 0; i < 2 && j->claims[i].volume; i++) {
        mount(mounts, j->claims[i].volume, j->claims[i].path, j->claims[i].read_only, oom);
        v = item_in(vols, oom);
        str(v, "name", j->claims[i].volume, oom);
        src = obj_in(v, "persistentVolumeClaim", oom);
        str(src, "claimName", j->claims[i].claim, oom);
        if (j->claims[i].read_only)
            boolean(src, "readOnly", true, oom);
    }
    if (j->secret) {
        mount(mounts, "certs", "/etc/etcd/pki", true, oom);
        v = item_in(vols, oom);
        str(v, "name", "certs", oom);
        src = obj_in(v, "secret", oom);
        str(src, "secretName", j->secret, oom);
        num(src, "defaultMode", 0400, oom);
    }
}

static cJSON *job(const struct job_shape *j)
{
    bool oom = false;
    cJSON *job = obj_in(NULL, NULL, &oom), *meta, *ref, *spec, *tmpl;

    if (!job)
        return NULL;
    str(job, "apiVersion", "batch/v1", &oom);
    str(job, "kind", "Job", &oom);
    meta = obj_in(job, "metadata", &oom);
    str(meta, "name", j->name, &oom);
    str(meta, "namespace", j->ns, &oom);
    labels(meta, j, true, &oom);
    ref = item_in(arr_in(meta, "ownerReferences", &oom), &oom);
    str(ref, "apiVersion", j->owner_api_version, &oom);
    str(ref, "kind", j->owner_kind, &oom);
    str(ref, "name", j->owner_name, &oom);
    str(ref, "uid", j->owner_uid, &oom);
    boolean(ref, "controller", true, &oom);
    boolean(ref, "blockOwnerDeletion", true, &oom);

    spec = obj_in(job, "spec", &oom);
    num(spec, "backoffLimit", SNAPSHOT_BACKOFF_LIMIT, &oom);
    num(spec, "activeDeadlineSeconds", SNAPSHOT_DEADLINE_SECONDS, &oom);
    num(spec, "ttlSecondsAfterFinished", SNAPSHOT_TTL_SECONDS, &oom);
    tmpl = obj_in(spec, "template", &oom);
    labels(obj_in(tmpl, "metadata", &oom), j, false, &oom);
    pod_spec(obj_in(tmpl, "spec", &oom), j, &oom);
    if (oom) {
        cJSON_Delete(job);
        return NULL;
    }
    return job;
}

cJSON *snapshot_job(const struct snapshot_job_input *in)
{
    char endpoint[512], file[SNAPSHOT_NAME_MAX + 32];
    struct job_shape j = {
        .ns = in->ns,
        .cluster = in->cluster,
        .name = in->name,
        .component = SNAPSHOT_COMPONENT,
        .image = in->image,
        .owner_api_version = in->owner_api_version,
        .owner_kind =
            in->owner_kind ? in->owner_kind : api_kind_info(API_KIND_NESTED_CONTROL_PLANE)->name,
        .owner_name = in->owner_name,
        .owner_uid = in->owner_uid,
        .command = "etcdctl",
        .args = {endpoint, "--cacert=/etc/etcd/pki/ca.crt",
                 "--cert=/etc/etcd/pki/healthcheck-client.crt",
                 "--key=/etc/etcd/pki/healthcheck-client.key", "--dial-timeout=10s",
                 "--command-timeout=300s", "snapshot", "save", file, NULL},
        .claims = {{"snapshots", in->claim, SNAPSHOT_DIR, false}},
        .secret = in->certs_secret,
    };

    snprintf(endpoint, sizeof(endpoint), "--endpoints=https://%s:2379", in->endpoint_host);
    snprintf(file, sizeof(file), "%s/%s.db", SNAPSHOT_DIR, in->name);
    return job(&j);
}

cJSON *snapshot_restore_job(const struct snapshot_restore_input *in)
{
    char file[SNAPSHOT_NAME_MAX + 32], name[300], cluster[1024], peer[800], token[300], bump[64];
    struct job_shape j = {
        .ns = in->ns,
        .cluster = in->cluster,
        .name = in->name,
        .component = SNAPSHOT_RESTORE_COMPONENT,
        .image = in->image,
        .owner_api_version = in->owner_api_version,
        .owner_kind = api_kind_info(API_KIND_NESTED_ETCD)->name,
        .owner_name = in->owner_name,
        .owner_uid = in->owner_uid,
        .command = "etcdutl",
        .args = {"snapshot", "restore", file, "--data-dir=/var/lib/etcd/data", name, cluster, peer,
                 token, bump, "--mark-compacted", NULL},
        .claims = {{"data", in->data_claim, "/var/lib/etcd", false},
                   {"snapshots", in->claim, SNAPSHOT_DIR, true}},
    };

    snprintf(file, sizeof(file), "%s/%s.db", SNAPSHOT_DIR, in->snapshot);
    snprintf(name, sizeof(name), "--name=%s", in->member);
    snprintf(cluster, sizeof(cluster), "--initial-cluster=%s=%s", in->member, in->peer_url);
    snprintf(peer, sizeof(peer), "--initial-advertise-peer-urls=%s", in->peer_url);
    snprintf(token, sizeof(token), "--initial-cluster-token=%s", in->token);
    snprintf(bump, sizeof(bump), "--bump-revision=%lld", (long long)in->bump_revision);
    return job(&j);
}

static const cJSON *condition(const cJSON *job, const char *type)
{
    const cJSON *c;

    cJSON_ArrayForEach(c, cJSON_GetObjectItemCaseSensitive(
                              cJSON_GetObjectItemCaseSensitive(job, "status"), "conditions")) {
        const cJSON *t = cJSON_GetObjectItemCaseSensitive(c, "type");
        const cJSON *s = cJSON_GetObjectItemCaseSensitive(c, "status");
        if (cJSON_IsString(t) && strcmp(t->valuestring, type) == 0 && cJSON_IsString(s) &&
            strcmp(s->valuestring, "True") == 0)
            return c;
    }
    return NULL;
}

static const char *text(const cJSON *o, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);

    return cJSON_IsString(v) ? v->valuestring : NULL;
}

enum snapshot_state snapshot_job_state(const cJSON *job, char *why, size_t size,
                                       const char **completed_at)
{
    const cJSON *c;

    if (size)
        why[0] = '\0';
    *completed_at = NULL;
    if (condition(job, "Complete")) {
        *completed_at = text(cJSON_GetObjectItemCaseSensitive(job, "status"), "completionTime");
        return SNAPSHOT_COMPLETE;
    }
    if ((c = condition(job, "Failed"))) {
        const char *reason = text(c, "reason"), *message = text(c, "message");
        snprintf(why, size, "%s%s%s", reason ? reason : "Failed", message ? ": " : "",
                 message ? message : "");
        return SNAPSHOT_FAILED;
    }
    return SNAPSHOT_RUNNING;
}

int snapshot_source(const struct kube_store *pods, const cJSON *sts, const cJSON *etcd,
                    const char **ret_host, const char **ret_image)
{
    const cJSON *replicas =
        cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(sts, "spec"), "replicas");
    const cJSON *addresses = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(etcd, "status"), "addresses");
    const char *ns = kube_obj_namespace(sts), *name = kube_obj_name(sts);
    int n = cJSON_IsNumber(replicas) ? replicas->valueint : 0;

    if (!ns || !name)
        return -ENOENT;
    for (int i = 0; i < n; i++) {
        char pod_name[320];
        const cJSON *pod, *cs, *a;
        const char *host = NULL, *image = NULL;
        size_t len;

        snprintf(pod_name, sizeof(pod_name), "%s-%d", name, i);
        len = strlen(pod_name);
        pod = kube_store_get(pods, ns, pod_name);
        if (!pod || !status_pod_ready(pod))
            continue;
        cJSON_ArrayForEach(
            cs, cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(pod, "status"),
                                                 "containerStatuses")) {
            const char *c = text(cs, "name");
            if (c && strcmp(c, "etcd") == 0)
                image = text(cs, "image");
        }
        cJSON_ArrayForEach(a, addresses) {
            const char *h = text(a, "hostname");
            if (h && strncmp(h, pod_name, len) == 0 && h[len] == '.')
                host = h;
        }
        if (host && image) {
            *ret_host = host;
            *ret_image = image;
            return 0;
        }
    }
    return -ENOENT;
}

struct prune {
    const char *component, *only_name;
    struct plan *plan;
    int r;
};

static bool prune_one(void *userdata, const cJSON *job)
{
    struct prune *p = userdata;
    const char *name = kube_obj_name(job),
               *which = kube_obj_label(job, "app.kubernetes.io/component");
    const char *done;
    char why[256];

    if (!name || !which || strcmp(which, p->component) != 0 ||
        (p->only_name && strcmp(name, p->only_name) != 0) ||
        cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(job, "metadata"),
                                         "deletionTimestamp") ||
        snapshot_job_state(job, why, sizeof(why), &done) == SNAPSHOT_RUNNING)
        return true;
    if (plan_delete(p->plan, &KUBE_JOBS, kube_obj_namespace(job), name, kube_obj_uid(job),
                    "Job %s/%s: finished, and what it did is recorded", kube_obj_namespace(job),
                    name) < 0) {
        p->r = -ENOMEM;
        return false;
    }
    return true;
}

int snapshot_prune(const struct kube_store *jobs, const char *owner_uid, const char *component,
                   const char *only_name, struct plan *plan)
{
    struct prune p = {component, only_name, plan, 0};

    if (owner_uid)
        kube_store_foreach_owned(jobs, owner_uid, prune_one, &p);
    return p.r;
}
