/* The etcd reconciler's membership step (controllers/etcdmembership.h): the caches read, the
 * decision of controllers/etcdmembers.h turned into plan actions, and the roll's partition.
 * What etcd answered and the calls to it are in etcdmembercalls.c. */

#include "controllers/etcdmembership.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "controllers/etcdmembercalls.h"
#include "controllers/status.h"
#include "lib/etcd/json.h"
#include "lib/kube/store.h"
#include "lib/pki/base64.h"
#include "lib/pki/key.h"
#include "lib/util/log.h"

#define MAXR ETCD_MEMBERS_REPLICAS_MAX
/* Seconds before a reconcile looks again after a call or a release, and the bound on the
 * wait after failed calls (doubling from the first). */
#define AFTER_CALL 0.2
#define AFTER_RELEASE 1.0
#define WHILE_WAITING 2.0
#define FAILURE_WAIT_MAX 30.0

/* ---- reading the caches ---- */

static const cJSON *get(const cJSON *o, const char *key)
{
    return cJSON_GetObjectItemCaseSensitive(o, key);
}

static const char *str(const cJSON *o, const char *key)
{
    const cJSON *v = get(o, key);

    return cJSON_IsString(v) ? v->valuestring : NULL;
}

static bool pod_gated(const cJSON *pod)
{
    return cJSON_GetArraySize(get(get(pod, "spec"), "schedulingGates")) > 0;
}

/* A base64 data key of a Secret, decoded; NULL when absent or bad. */
static char *secret_pem(const cJSON *secret, const char *key)
{
    const char *v = str(get(secret, "data"), key);
    unsigned char *pem = NULL;
    size_t len;

    if (!v || pki_base64_decode(v, strlen(v), PKI_PEM_MAX, &pem, &len) < 0)
        return NULL;
    return (char *)pem;
}

/* The recorded member of ordinal name in st, or NULL. */
static struct api_etcd_member_status *member_of(struct api_component_status *st, const char *name)
{
    for (size_t i = 0; i < st->n_members; i++)
        if (st->members[i].name && strcmp(st->members[i].name, name) == 0)
            return &st->members[i];
    return NULL;
}

static int set_str(char **dst, const char *src)
{
    char *c = NULL;

    if (src && !(c = strdup(src)))
        return -ENOMEM;
    free(*dst);
    *dst = c;
    return 0;
}

/* ---- one step ---- */

struct step {
    struct etcd_membership *em;
    const struct etcd_membership_input *in;
    struct api_component_status *st;
    struct obs *o;
    const cJSON *sts;
    const cJSON *pod[MAXR];
    char pod_name[MAXR][NAME_LEN];
    char claim_uid[MAXR][64];
    struct etcd_members_input mi;
    struct etcd_members_decision d;
};

static void read_pods(struct step *s)
{
    const struct etcd_membership_input *in = s->in;
    const char *sts_uid = kube_obj_uid(s->sts);

    for (int i = 0; i < MAXR; i++) {
        struct etcd_members_pod *p = &s->mi.pods[i];
        const cJSON *pod;
        const struct api_etcd_member_status *rec;

        snprintf(s->pod_name[i], sizeof(s->pod_name[i]), "%s-etcd-%d", in->cluster, i);
        pod = kube_store_get(in->view->pods, in->ns, s->pod_name[i]);
        /* Only the StatefulSet's own pods are members. */
        if (pod && sts_uid) {
            const cJSON *ref = kube_obj_controller_ref(pod);
            if (!ref || !str(ref, "uid") || strcmp(str(ref, "uid"), sts_uid) != 0)
                pod = NULL;
        } else if (pod && !s->sts) {
            pod = NULL;
        }
        s->pod[i] = pod;
        rec = member_of(s->st, s->pod_name[i]);
        p->recorded_data_uid = rec ? rec->data_uid : NULL;
        if (!pod)
            continue;
        p->exists = true;
        p->gated = pod_gated(pod);
        p->ready = status_pod_ready(pod);
        p->deleting = status_deleting(pod);
        if (s->mi.storage == API_STORAGE_PVC) {
            char claim[NAME_LEN + 8];
            const cJSON *c;
            snprintf(claim, sizeof(claim), "data-%s", s->pod_name[i]);
            c = kube_store_get(in->view->claims, in->ns, claim);
            if (c && kube_obj_uid(c)) {
                snprintf(s->claim_uid[i], sizeof(s->claim_uid[i]), "%s", kube_obj_uid(c));
                p->data_uid = s->claim_uid[i];
            }
        } else {
            p->data_uid = kube_obj_uid(pod);
        }
    }
}

static int read_input(struct step *s)
{
    const struct etcd_membership_input *in = s->in;
    char name[NAME_LEN];
    const cJSON *rep;

    snprintf(name, sizeof(name), "%s-etcd", in->cluster);
    s->sts = kube_store_get(in->view->statefulsets, in->ns, name);
    s->mi = (struct etcd_members_input){
        .cluster = in->cluster,
        .ns = in->ns,
        .desired = in->desired,
        .storage = in->storage,
        .cluster_id = s->st->cluster_id,
        .adding = s->st->adding,
        .now = in->view->now,
    };
    if (s->sts) {
        const cJSON *vct = get(get(s->sts, "spec"), "volumeClaimTemplates");
        s->mi.sts_exists = !status_deleting(s->sts);
        rep = get(get(s->sts, "spec"), "replicas");
        s->mi.sts_replicas = cJSON_IsNumber(rep) ? rep->valueint : 1;
        /* The storage the members run on is the StatefulSet's own. */
        s->mi.storage = cJSON_GetArraySize(vct) > 0 ? API_STORAGE_PVC : API_STORAGE_EMPTYDIR;
    }
    read_pods(s);
    if (s->o && s->o->list) {
        s->mi.list = s->o->list;
        s->mi.list_time = s->o->list_time;
        s->mi.changed_time = s->o->changed_time;
    }
    return 0;
}

/* The cluster ID: recorded from the first list, replaced after a member started a new cluster,
 * and otherwise never changes. Returns false (and says why in out) on a mismatch. */
static int check_cluster_id(struct step *s, struct etcd_membership_output *out, bool *ret_ok)
{
    const struct etcd_member_list *l = s->mi.list;
    char id[ETCD_ID_STRLEN];
    uint64_t recorded = 0;

    *ret_ok = true;
    if (!l || s->mi.list_time < s->mi.changed_time || !l->header.cluster_id)
        return 0;
    etcd_json_format_id(l->header.cluster_id, id);
    if (s->o->new_cluster && s->mi.list_time >= s->o->new_cluster_time) {
        s->o->new_cluster = false;
        return set_str(&s->st->cluster_id, id);
    }
    if (!s->st->cluster_id)
        return set_str(&s->st->cluster_id, id);
    if (etcd_json_parse_id(s->st->cluster_id, &recorded) == 0 && recorded == l->header.cluster_id)
        return 0;
    *ret_ok = false;
    out->refused = true;
    out->reason = "ClusterIDMismatch";
    snprintf(out->message, sizeof(out->message),
             "etcd answers with cluster ID %s, but this etcd formed as cluster %s: a member "
             "started a cluster of its own; nestcp changes no membership until it is resolved "
             "(see docs/upgrades.md)",
             id, s->st->cluster_id);
    return 0;
}

/* The pod an endpoint ordinal names, with its IP; -1 picks any running pod. NULL: none. */
static const cJSON *endpoint_pod(struct step *s, int ordinal, int *ret_ordinal)
{
    for (int pass = 0; pass < 2; pass++)
        for (int i = 0; i < MAXR; i++) {
            const cJSON *pod = s->pod[i];
            if ((pass == 0 && i != ordinal) || (pass == 1 && ordinal >= 0) || !pod ||
                pod_gated(pod) || !str(get(pod, "status"), "podIP"))
                continue;
            *ret_ordinal = i;
            return pod;
        }
    return NULL;
}

static int plan_etcd_call(struct step *s, struct plan *after)
{
    const struct etcd_membership_input *in = s->in;
    const cJSON *secret = kube_store_get(in->view->secrets, in->ns, in->certs);
    const cJSON *pod;
    struct op *op;
    int at = -1;

    if (!(pod = endpoint_pod(s, s->d.endpoint, &at)))
        return 0; /* nothing to talk to yet; a pod event brings the next reconcile */
    if (!(op = calloc(1, sizeof(*op))))
        return -ENOMEM;
    op->em = s->em;
    snprintf(op->key, sizeof(op->key), "%s", in->key);
    op->action = s->d.action;
    op->ordinal = at;
    snprintf(op->pod, sizeof(op->pod), "%s",
             s->d.ordinal >= 0 ? s->pod_name[s->d.ordinal] : s->pod_name[at]);
    snprintf(op->host, sizeof(op->host), "%s.%s-etcd.%s.svc", s->pod_name[at], in->cluster, in->ns);
    snprintf(op->ip, sizeof(op->ip), "%s", str(get(pod, "status"), "podIP"));
    snprintf(op->peer_url, sizeof(op->peer_url), "%s", s->d.peer_url);
    op->member_id = s->d.member_id;
    op->ca = secret_pem(secret, "ca.crt");
    op->cert = secret_pem(secret, "healthcheck-client.crt");
    op->key_pem = secret_pem(secret, "healthcheck-client.key");
    if (!op->ca || !op->cert || !op->key_pem) {
        etcd_membership_op_free(op);
        return 0; /* the certs Secret is not in the cache yet */
    }
    return plan_call(after, &etcd_membership_call_ops, op, "etcd %s/%s: %s via %s", in->ns,
                     in->cluster, s->d.message, s->pod_name[at]);
}

static int plan_release(struct step *s, struct plan *after)
{
    const struct etcd_membership_input *in = s->in;
    int i = s->d.ordinal;
    const cJSON *pod = s->pod[i];
    cJSON *patch = cJSON_CreateObject(), *meta, *ann, *spec;
    struct api_etcd_member_status *rec;

    if (!patch)
        return -ENOMEM;
    /* The UID in the patch makes it fail with a conflict if the pod was replaced since. */
    if (!(meta = cJSON_AddObjectToObject(patch, "metadata")) ||
        !cJSON_AddStringToObject(meta, "uid", kube_obj_uid(pod)) ||
        !(ann = cJSON_AddObjectToObject(meta, "annotations")) ||
        !cJSON_AddStringToObject(ann, ETCD_MEMBERSHIP_INITIAL_CLUSTER, s->d.initial_cluster) ||
        !cJSON_AddStringToObject(ann, ETCD_MEMBERSHIP_INITIAL_STATE, s->d.state) ||
        !(spec = cJSON_AddObjectToObject(patch, "spec")) ||
        !cJSON_AddNullToObject(spec, "schedulingGates")) {
        cJSON_Delete(patch);
        return -ENOMEM;
    }
    /* The data UID it starts from is recorded (with the status write before the patch). */
    if (!(rec = member_of(s->st, s->pod_name[i]))) {
        struct api_etcd_member_status *m =
            realloc(s->st->members, (s->st->n_members + 1) * sizeof(*m));
        if (!m) {
            cJSON_Delete(patch);
            return -ENOMEM;
        }
        s->st->members = m;
        rec = &m[s->st->n_members++];
        memset(rec, 0, sizeof(*rec));
        if (!(rec->name = strdup(s->pod_name[i]))) {
            cJSON_Delete(patch);
            return -ENOMEM;
        }
    }
    if (set_str(&rec->data_uid, s->mi.pods[i].data_uid) < 0) {
        cJSON_Delete(patch);
        return -ENOMEM;
    }
    if (s->d.data_lost) {
        s->o->new_cluster = true;
        s->o->new_cluster_time = in->view->now;
    }
    return plan_merge_patch(after, &KUBE_PODS, in->ns, s->pod_name[i], NULL, patch,
                            "Pod %s/%s: %s (%s, initial cluster %s)", in->ns, s->pod_name[i],
                            s->d.message, s->d.state, s->d.initial_cluster);
}

static int record_adding(struct step *s)
{
    struct api_etcd_member_status *rec = member_of(s->st, s->pod_name[s->d.ordinal]);

    if (rec && set_str(&rec->data_uid, NULL) < 0)
        return -ENOMEM;
    return set_str(&s->st->adding, s->d.peer_url);
}

/* The members in status: each ordinal that is or may be one, as the last usable list shows
 * it, with its recorded data UID. */
static int update_members(struct step *s)
{
    const struct etcd_members_input *mi = &s->mi;
    int n = mi->desired, keep = 0;
    bool usable = mi->list && mi->list_time >= mi->changed_time;
    struct api_etcd_member_status *m;

    if (mi->sts_exists && mi->sts_replicas > n)
        n = mi->sts_replicas;
    for (int i = 0; i < MAXR; i++)
        if (member_of(s->st, s->pod_name[i]) && i + 1 > n)
            n = i + 1;
    if (!(m = calloc((size_t)n, sizeof(*m))))
        return -ENOMEM;
    for (int i = 0; i < n; i++) {
        const struct api_etcd_member_status *rec = member_of(s->st, s->pod_name[i]);
        const struct etcd_member *em = NULL;
        char url[ETCD_MEMBERS_URL_MAX], id[ETCD_ID_STRLEN];

        if (usable && etcd_members_peer_url(mi->cluster, mi->ns, i, url, sizeof(url)) == 0)
            em = etcd_member_list_find_peer_url(mi->list, url);
        /* An ordinal above both the spec and the StatefulSet that is no member is gone, and
         * its claim with it. */
        if (!em && i >= mi->desired && (!mi->sts_exists || i >= mi->sts_replicas))
            continue;
        m[keep].name = strdup(s->pod_name[i]);
        if (em) {
            m[keep].id = strdup(etcd_json_format_id(em->id, id));
            m[keep].learner = em->is_learner;
        } else if (rec && rec->id && !usable) {
            m[keep].id = strdup(rec->id);
            m[keep].learner = rec->learner;
        }
        if (rec && rec->data_uid)
            m[keep].data_uid = strdup(rec->data_uid);
        keep++;
    }
    api_etcd_members_free(s->st->members, s->st->n_members);
    s->st->members = m;
    s->st->n_members = (size_t)keep;
    for (int i = 0; i < keep; i++)
        if (!m[i].name)
            return -ENOMEM;
    return 0;
}

/* Every pod below the StatefulSet's replicas runs and is Ready. */
static bool pods_ready(const struct step *s)
{
    for (int i = 0; i < s->mi.sts_replicas && i < MAXR; i++) {
        const struct etcd_members_pod *p = &s->mi.pods[i];
        if (!p->exists || p->gated || !p->ready || p->deleting)
            return false;
    }
    return true;
}

/* The partition: above every pod that does not run the rendered template until etcd has
 * converged and every pod is Ready, then the highest such ordinal. A pod being deleted, or
 * not recreated yet, is not stale: counting it would raise the partition above it, and the
 * StatefulSet recreates a pod below its partition from the old template. (Pods above the
 * highest stale one are updated or gone, so they come back from the new template.) */
static int partition(const struct step *s, bool settled, bool *ret_stale)
{
    int stale = -1;

    *ret_stale = false;
    if (!s->mi.sts_exists || !s->in->pod_hash)
        return 0;
    for (int i = 0; i < s->mi.sts_replicas && i < MAXR; i++) {
        const cJSON *pod = s->pod[i];
        const char *h = pod ? kube_obj_annotation(pod, "nestcp.x-k8s.io/config-hash") : NULL;
        if (pod && !s->mi.pods[i].deleting && (!h || strcmp(h, s->in->pod_hash) != 0))
            stale = i;
    }
    if (stale < 0)
        return 0;
    *ret_stale = true;
    return settled ? stale : stale + 1;
}

static void say(struct etcd_membership_output *out, bool refused, const char *reason,
                const char *fmt, ...) __attribute__((format(printf, 4, 5)));

/* A pod that mounts no claim "data" while its StatefulSet has claim templates: it was
 * adopted from a StatefulSet on emptyDir, and moves to a claim when it is replaced. */
static bool on_old_storage(const struct step *s, int i)
{
    const cJSON *v;

    if (!s->pod[i] || s->mi.storage != API_STORAGE_PVC)
        return false;
    cJSON_ArrayForEach(v, get(get(s->pod[i], "spec"), "volumes")) {
        const char *name = str(v, "name");
        if (name && strcmp(name, "data") == 0)
            return !get(v, "persistentVolumeClaim");
    }
    return true;
}

/* Members moving from emptyDir to claims: the StatefulSet controller does not replace a pod
 * whose volumes differ from its claim templates (it tries to update the pod, which fails, and
 * goes no further than that ordinal), so the manager deletes such pods itself, the lowest
 * first, once every member votes and every pod is Ready; the StatefulSet recreates it on a
 * new claim and the member is added again. Returns 1 while some pod has still to move (the
 * partition then holds every pod), 0 when none has, -ENOMEM. */
static int move_to_claim(struct step *s, bool settled, struct plan *after,
                         struct etcd_membership_output *out)
{
    const struct etcd_membership_input *in = s->in;
    int lowest = -1, n = 0;

    for (int i = 0; i < s->mi.sts_replicas && i < MAXR; i++)
        if (on_old_storage(s, i)) {
            if (lowest < 0)
                lowest = i;
            n++;
        }
    if (lowest < 0)
        return 0;
    out->partition = s->mi.sts_replicas;
    if (!settled || s->mi.pods[lowest].deleting) {
        if (s->d.phase == ETCD_MEMBERS_PHASE_OBSERVING)
            out->reason = NULL;
        else
            say(out, false, s->d.reason, "%s (%d members still to move to claims)", s->d.message,
                n);
        return 1;
    }
    say(out, false, "MovingToClaim",
        "moving member %s to a claim of its own: its pod is replaced and the member added "
        "again (%d members still to move)",
        s->pod_name[lowest], n);
    return plan_delete(after, &KUBE_PODS, in->ns, s->pod_name[lowest], kube_obj_uid(s->pod[lowest]),
                       "Pod %s/%s: member moves from emptyDir to a claim of its own", in->ns,
                       s->pod_name[lowest]) < 0
               ? -ENOMEM
               : 1;
}

static void say(struct etcd_membership_output *out, bool refused, const char *reason,
                const char *fmt, ...)
{
    va_list ap;

    out->refused = refused;
    out->reason = reason;
    va_start(ap, fmt);
    vsnprintf(out->message, sizeof(out->message), fmt, ap);
    va_end(ap);
}

static double failure_wait(const struct obs *o)
{
    double w = AFTER_CALL;

    for (int i = 0; i < o->failures && w < FAILURE_WAIT_MAX; i++)
        w *= 2;
    return w < FAILURE_WAIT_MAX ? w : FAILURE_WAIT_MAX;
}

int etcd_membership_step(struct etcd_membership *em, const struct etcd_membership_input *in,
                         struct api_component_status *st, struct plan *plan,
                         struct plan *after_status, struct etcd_membership_output *out)
{
    struct step s = {.em = em, .in = in, .st = st};
    bool id_ok, settled, stale;
    int r;

    memset(out, 0, sizeof(*out));
    out->replicas = in->desired;
    if (!(s.o = etcd_membership_obs(em, in->key, true)))
        return -ENOMEM;
    if ((r = read_input(&s)) < 0)
        return r;
    out->replicas = s.mi.sts_exists ? s.mi.sts_replicas : in->desired;
    /* What etcd confirmed since the last reconcile. */
    for (int i = 0; i < s.o->n_told; i++)
        if (plan_event(plan, s.o->told[i].type, s.o->told[i].reason, "%s", s.o->told[i].message) <
            0)
            return -ENOMEM;
    etcd_membership_told_clear(s.o);
    if ((r = check_cluster_id(&s, out, &id_ok)) < 0)
        return r;
    s.mi.cluster_id = st->cluster_id;
    if (!id_ok) {
        if ((r = update_members(&s)) < 0)
            return r;
        out->partition = partition(&s, false, &stale);
        plan_requeue_after(plan, FAILURE_WAIT_MAX);
        return 0;
    }
    etcd_members_decide(&s.mi, &s.d);
    log_debug("etcd membership", "key=%s action=%s reason=%s message=%s", in->key,
              etcd_members_action_name(s.d.action), s.d.reason, s.d.message);
    if (s.d.forget_adding && (r = set_str(&st->adding, NULL)) < 0)
        return r;
    switch (s.d.action) {
    case ETCD_MEMBERS_NONE:
        break;
    case ETCD_MEMBERS_SET_REPLICAS:
        if (in->may_apply) {
            out->replicas = s.d.replicas;
        } else {
            s.d.phase = ETCD_MEMBERS_PHASE_WAITING;
            s.d.reason = "WaitingForRollout";
            snprintf(s.d.message, sizeof(s.d.message),
                     "%d members wanted; the StatefulSet changes when the control plane's "
                     "rollout reaches etcd",
                     s.d.replicas);
        }
        break;
    case ETCD_MEMBERS_RELEASE:
        if (s.d.data_lost &&
            plan_event(plan, KUBE_EVENT_WARNING, "MemberDataLost", "%s", s.d.message) < 0)
            return -ENOMEM;
        if ((r = plan_release(&s, after_status)) < 0)
            return r;
        plan_requeue_after(plan, AFTER_RELEASE);
        break;
    case ETCD_MEMBERS_RECORD_ADDING:
        if ((r = record_adding(&s)) < 0)
            return r;
        plan_requeue_after(plan, AFTER_CALL);
        break;
    case ETCD_MEMBERS_LIST:
    case ETCD_MEMBERS_ADD_LEARNER:
    case ETCD_MEMBERS_PROMOTE:
    case ETCD_MEMBERS_REMOVE:
        if ((r = plan_etcd_call(&s, after_status)) < 0)
            return r;
        plan_requeue_after(plan, failure_wait(s.o));
        break;
    }
    if ((r = update_members(&s)) < 0)
        return r;
    settled = s.d.converged && pods_ready(&s) && s.d.action == ETCD_MEMBERS_NONE;
    out->settled = settled;
    out->partition = partition(&s, settled, &stale);
    out->converged = settled && !stale;
    /* The StatefulSet being replaced (members moving to claims): the new one rolls nothing by
     * itself. */
    if (!s.mi.sts_exists && st->cluster_id)
        out->partition = out->replicas;
    if ((r = move_to_claim(&s, settled, after_status, out)) != 0) {
        if (r < 0)
            return r;
        out->converged = false;
    } else if (s.d.phase == ETCD_MEMBERS_PHASE_OBSERVING && !out->converged)
        out->reason = NULL; /* a LIST says nothing new: the condition stays as it is */
    else if (s.d.phase == ETCD_MEMBERS_PHASE_REFUSED)
        say(out, true, s.d.reason, "%s", s.d.message);
    else if (out->converged)
        say(out, false, "Scaled", "%d of %d members voting, every member's pod Ready", in->desired,
            in->desired);
    else if (settled && stale)
        say(out, false, "ReplacingMember",
            "replacing member %s-etcd-%d to run the new configuration, one member at a time",
            in->cluster, out->partition);
    else if (s.o->error[0])
        say(out, false, s.d.reason, "%s; last failure: %s", s.d.message, s.o->error);
    else
        say(out, false, s.d.reason, "%s", s.d.message);
    if (!out->converged)
        plan_requeue_after(plan, s.o->failures ? failure_wait(s.o) : WHILE_WAITING);
    return 0;
}
