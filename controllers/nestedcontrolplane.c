/*
 * NestedControlPlane: the control-plane side of the Cluster API contract.
 *
 *   render_cluster_resolve: invalid input stops here with a condition and an event
 *   -> finalizer, the block-move annotation and spec.controlPlaneEndpoint (one merge patch,
 *      carrying resourceVersion)
 *   -> adopt the three components (controller ownerReference, merge patch with
 *      resourceVersion)
 *   -> the CA Secrets <c>-ca, <c>-etcd, <c>-proxy, <c>-sa: created (never overwritten) when
 *      missing, checked and used as they are when present; on creation these three steps
 *      are one, their writes sent at once
 *   -> the admin kubeconfig <c>-kubeconfig, renewed before it expires
 *   -> each component's desired {version, config hash}, rollout_step, the targets in
 *      status.rollout (the only place targets change)
 *   -> status: ready, initialized, version, replicas, conditions, phase
 *   -> the service-account key rotation (controllers/sakeyrotation.h): one write of <c>-sa
 *      or of the status per step, condition CertificatesRotating
 *
 * On deletion it creates nothing, deletes its components and the objects they own, waits
 * until they are gone and then removes its finalizer; the CA and kubeconfig Secrets it owns
 * go with it through garbage collection.
 *
 * This file holds the reconcile, the finalizer, the cluster name's owner and the watch
 * mapping; the components' adoption and deletion are in ncpcomponents.c, the CA and
 * kubeconfig Secrets in ncpsecrets.c, the status in ncpstatus.c, the targets in ncprollout.c
 * and the rotations in ncprotate.c (controllers/ncp.h).
 */

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>

#include "api/conditions.h"
#include "api/status.h"
#include "api/types.h"
#include "api/version.h"
#include "controllers/brake.h"
#include "controllers/etcdmembership.h"
#include "controllers/keypool.h"
#include "controllers/lookup.h"
#include "controllers/move.h"
#include "controllers/ncp.h"
#include "controllers/nested.h"
#include "controllers/rollhealth.h"
#include "controllers/rollout.h"
#include "controllers/sakeyrotation.h"
#include "controllers/snapshot.h"
#include "controllers/status.h"
#include "lib/kube/store.h"
#include "lib/pki/base64.h"
#include "lib/pki/key.h"
#include "lib/pki/secret.h"
#include "lib/util/strutil.h"

int ncp_cond(struct cp *x, const char *type, const char *status, const char *severity,
             const char *reason, const char *fmt, ...)
{
    char msg[ERR_MSG_MAX + 512];
    va_list ap;
    int r;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    r = status_condition(&x->st->conditions, type, status, severity, reason, x->gen, x->view->now,
                         "%s", msg);
    if (r > 0 && severity && strcmp(severity, STATUS_SEVERITY_INFO) != 0 &&
        plan_event(x->plan, KUBE_EVENT_WARNING, reason, "%s", msg) < 0)
        return -ENOMEM;
    return r < 0 ? r : 0;
}

int ncp_set_str(char **dst, const char *src)
{
    return str_set(dst, src);
}

/* The service CIDRs the control plane would run with, joined by ",". */
void ncp_service_cidrs(const struct render_cluster *rc, char *out, size_t size)
{
    const struct api_strlist *l = &render_cluster_control_plane(rc)->spec.cluster_network.services;
    size_t n = 0;

    out[0] = '\0';
    for (size_t i = 0; i < l->n && n < size; i++)
        n += (size_t)snprintf(out + n, size - n, "%s%s", i ? "," : "", l->items[i]);
}

bool ncp_has_finalizer(const struct api_control_plane *ncp)
{
    for (size_t i = 0; i < ncp->meta.finalizers.n; i++)
        if (strcmp(ncp->meta.finalizers.items[i], NESTED_FINALIZER) == 0)
            return true;
    return false;
}

bool ncp_has_block_move(const struct api_control_plane *ncp)
{
    return api_strmap_get(&ncp->meta.annotations, NESTED_BLOCK_MOVE) != NULL;
}

/* A merge patch of the control plane's metadata.finalizers (with or without ours), with ours
 * the block-move annotation added or removed as block says, and, when endpoint is given,
 * spec.controlPlaneEndpoint; resourceVersion makes it conditional. */
int ncp_patch_self(struct cp *x, bool with_finalizer, bool block,
                   const struct api_endpoint *endpoint)
{
    cJSON *patch = cJSON_CreateObject(), *meta, *fins, *ep, *ann;
    const struct api_strlist *f = &x->ncp->meta.finalizers;
    bool has_block = ncp_has_block_move(x->ncp);

    meta = cJSON_AddObjectToObject(patch, "metadata");
    fins = cJSON_AddArrayToObject(meta, "finalizers");
    if (!fins || !cJSON_AddStringToObject(
                     meta, "resourceVersion",
                     x->ncp->meta.resource_version ? x->ncp->meta.resource_version : ""))
        goto oom;
    if (with_finalizer && block != has_block) {
        ann = cJSON_AddObjectToObject(meta, "annotations");
        if (!ann || !(block ? cJSON_AddStringToObject(ann, NESTED_BLOCK_MOVE, "")
                            : cJSON_AddNullToObject(ann, NESTED_BLOCK_MOVE)))
            goto oom;
    }
    for (size_t i = 0; i < f->n; i++)
        if (strcmp(f->items[i], NESTED_FINALIZER) != 0 &&
            !cJSON_AddItemToArray(fins, cJSON_CreateString(f->items[i])))
            goto oom;
    if (with_finalizer && !cJSON_AddItemToArray(fins, cJSON_CreateString(NESTED_FINALIZER)))
        goto oom;
    if (endpoint) {
        ep =
            cJSON_AddObjectToObject(cJSON_AddObjectToObject(patch, "spec"), "controlPlaneEndpoint");
        if (!ep || !cJSON_AddStringToObject(ep, "host", endpoint->host) ||
            !cJSON_AddNumberToObject(ep, "port", endpoint->port))
            goto oom;
    }
    x->spec_patched = true;
    return plan_merge_patch(x->plan, &NESTCP_CONTROL_PLANES, x->ns, x->name, NULL, patch,
                            "NestedControlPlane %s/%s: %s%s", x->ns, x->name,
                            !with_finalizer      ? "finalizer removed"
                            : block == has_block ? "finalizer"
                            : block              ? "finalizer, block-move annotation"
                                                 : "finalizer, block-move annotation removed "
                                                   "(the move is prepared)",
                            endpoint ? " and controlPlaneEndpoint" : "");
oom:
    cJSON_Delete(patch);
    return -ENOMEM;
}

/* ---- the normal path ---- */

struct name_claim {
    const struct cp *x;
    const char *cluster;
    const char *owner; /* the other control plane that holds the name, or NULL */
};

/* Whether a is older than b: creationTimestamp (RFC 3339 compares as text), then name. */
static bool older(const cJSON *a, const cJSON *b)
{
    const cJSON *ta = get(get(a, "metadata"), "creationTimestamp"),
                *tb = get(get(b, "metadata"), "creationTimestamp");
    int c = cJSON_IsString(ta) && cJSON_IsString(tb) ? strcmp(ta->valuestring, tb->valuestring) : 0;

    return c < 0 || (c == 0 && strcmp(kube_obj_name(a), kube_obj_name(b)) < 0);
}

static bool check_claim(void *userdata, const cJSON *other)
{
    struct name_claim *c = userdata;
    const char *name = kube_obj_name(other);

    if (!name || strcmp(name, c->x->name) == 0 || status_deleting(other) ||
        strcmp(lookup_claimed_name(other), c->cluster) != 0 || !older(other, c->x->obj))
        return true;
    c->owner = name;
    return false;
}

/* The name of the control plane that holds rc's cluster name, when it is not this one: the
 * controller of the cluster's CA Secret, or an older control plane of the same name. */
static bool cluster_name_owner(const struct cp *x, const struct render_cluster *rc, char *out,
                               size_t size)
{
    struct name_claim c = {x, render_cluster_name(rc), NULL};
    char ca[RENDER_CLUSTER_NAME_MAX + 8];
    const char *ca_owner;
    const cJSON *secret;

    snprintf(ca, sizeof(ca), "%s-ca", c.cluster);
    secret = kube_store_get(x->view->secrets, x->ns, ca);
    if (secret && lookup_controlled_by_kind(secret, API_KIND_NESTED_CONTROL_PLANE, &ca_owner) &&
        !lookup_controlled_by_uid(secret, kube_obj_uid(x->obj))) {
        snprintf(out, size, "%s", ca_owner);
        return true;
    }
    lookup_each_claimant(x->view, x->ns, c.cluster, check_claim, &c);
    if (!c.owner)
        return false;
    snprintf(out, size, "%s", c.owner);
    return true;
}

static int take_key(void *ctx, enum pki_key_alg alg, char **ret_key_pem, struct err *e)
{
    return keypool_take(ctx, alg, ret_key_pem, e);
}

/* Ready False for something the user must fix: phase Failed, as docs/api.md promises, until a
 * later pass finds it fixed (ncp_aggregate() then sets the phase of the rollout). */
static int invalid(struct cp *x, const char *reason, const char *message)
{
    int r = ncp_set_str(&x->st->phase, "Failed");

    return r < 0 ? r
                 : ncp_cond(x, "Ready", API_CONDITION_FALSE, STATUS_SEVERITY_ERROR, reason, "%s",
                            message);
}

/* Waiting for objects the user has yet to create: Provisioning, unless the rollout has set a
 * phase of its own. */
static int waiting_phase(struct cp *x)
{
    if (x->st->phase && strcmp(x->st->phase, "Failed") != 0)
        return 0;
    return ncp_set_str(&x->st->phase, "Provisioning");
}

/* The CA Secrets are being created: planned now, or created and not seen yet. */
static int cas_being_created(struct cp *x)
{
    int r = ncp_cond(x, "CertificatesAvailable", API_CONDITION_FALSE, STATUS_SEVERITY_INFO,
                     "Creating", "the CA Secrets are being created");

    return r < 0 ? r
                 : ncp_cond(x, "Ready", API_CONDITION_FALSE, STATUS_SEVERITY_INFO, "Creating",
                            "the CA Secrets are being created");
}

static int reconcile_normal(struct cp *x)
{
    struct nested_ctx *ctx = x->ctx;
    struct api_errors errs = API_ERRORS_INIT;
    struct render_cluster *rc = NULL;
    struct render_cluster_pki *pki = NULL;
    struct desired_all *da = NULL;
    struct rollout_output out;
    const char *refusal = NULL;
    char cidrs[512], refusal_msg[1024];
    struct err e;
    size_t first;
    int r;

    err_clear(&e);
    r = render_cluster_resolve(ctx->cat, &x->src, x->ns, x->name, &rc, &errs);
    if (r == -EINVAL) {
        api_errors_to_err(&errs, NULL, &e);
        r = invalid(x, api_errors_reason(&errs), e.msg);
        goto out;
    }
    if (r == -ENOENT) {
        api_errors_to_err(&errs, NULL, &e);
        if ((r = waiting_phase(x)) == 0)
            r = ncp_cond(x, "Ready", API_CONDITION_FALSE, STATUS_SEVERITY_ERROR, "MissingObjects",
                         "%s", e.msg);
        goto out;
    }
    if (r < 0)
        goto out;
    /* Nothing is created before every component exists and renders: what fails without any
     * key stops everything. */
    for (int i = 0; i < RENDER_PART__COUNT; i++) {
        const char *missing = render_cluster_missing(rc, (enum render_part)i);
        if (missing) {
            if ((r = waiting_phase(x)) == 0)
                r = ncp_cond(x, "Ready", API_CONDITION_FALSE, STATUS_SEVERITY_INFO,
                             "WaitingForComponents", "%s", missing);
            goto out;
        }
    }
    /* One cluster name, one owner: nothing is touched for a name another control plane
     * holds. */
    {
        char owner[RENDER_CLUSTER_NAME_MAX];
        if (cluster_name_owner(x, rc, owner, sizeof(owner))) {
            char msg[1024];
            snprintf(msg, sizeof(msg),
                     "cluster name %s is in use by NestedControlPlane %s/%s; this control plane "
                     "touches nothing of it (rename it, or set its %s label to a name of its "
                     "own)",
                     render_cluster_name(rc), x->ns, owner, "cluster.x-k8s.io/cluster-name");
            r = invalid(x, "ClusterNameInUse", msg);
            goto out;
        }
    }
    x->cluster = render_cluster_name(rc);
    /* Checked under the admin's privilege rules, as the components render. */
    render_cluster_set_allow_privileged(rc, ctx->allow_privileged);
    render_cluster_set_manager_namespace(rc, ctx->manager_namespace);
    render_cluster_set_check_memo(rc, &ctx->memo);
    r = render_cluster_check(ctx->cat, rc, RENDER_PART__COUNT, (int64_t)x->view->now, &e);
    if (r == -EINVAL) {
        r = invalid(x, "InvalidSpec", e.msg);
        goto out;
    }
    if (r < 0)
        goto out;
    if (ctx->keys)
        render_cluster_set_key_source(rc, take_key, ctx->keys);
    nested_cert_policy(ctx, rc);

    /* The finalizer and the endpoint. A new control plane's first writes go with the patch,
     * at once: the components' adoption and the CA Secrets, none of which the finalizer
     * guards (the garbage collector removes them with the control plane). What the finalizer
     * does guard, the components' objects, waits for it: their targets are set below, once
     * the patch is seen, and the status with them (the patch changes the resourceVersion
     * the status write would carry). */
    first = x->plan->n_actions;
    {
        const struct api_endpoint *ep =
            &render_cluster_control_plane(rc)->spec.control_plane_endpoint;
        bool need_ep = !x->ncp->spec.control_plane_endpoint.host && ep->host;
        bool block = ncp_move_blocks(x);
        if ((!ncp_has_finalizer(x->ncp) || ncp_has_block_move(x->ncp) != block || need_ep) &&
            (r = ncp_patch_self(x, true, block, need_ep ? ep : NULL)) < 0)
            goto out;
    }
    /* Until the move step below says otherwise (controllers/ncpmove.c). */
    if (!x->st->move.phase && !kube_obj_annotation(x->obj, MOVE_ANNOTATION) &&
        (r = ncp_cond(x, "MoveBlocked", API_CONDITION_TRUE, NULL, "TenantDataNotMovable", "%s",
                      NCP_TENANT_DATA_NOT_MOVABLE)) < 0)
        goto out;

    r = ncp_adopt_components(x);
    if (r == STATUS_STOP) {
        r = 0;
        goto out;
    }
    if (r < 0)
        goto out;
    /* CAs first: when one is created, the rest waits for it to be read back. */
    if (ncp_cas_pending(x, rc)) {
        plan_requeue_after(x->plan, 1.0);
        r = cas_being_created(x);
        goto out;
    }
    if (ctx->keys)
        keypool_reserve(ctx->keys, render_cluster_key_alg(rc), 5);
    r = render_cluster_pki_load(rc, &x->src, (int64_t)x->view->now, true, &pki, &errs);
    if (r == -EAGAIN) {
        plan_requeue_after(x->plan, NESTED_KEY_WAIT);
        r = ncp_cond(x, "CertificatesAvailable", API_CONDITION_FALSE, STATUS_SEVERITY_INFO,
                     "GeneratingKeys", "waiting for private keys");
        goto out;
    }
    if (r == -EINVAL) {
        api_errors_to_err(&errs, NULL, &e);
        r = ncp_cond(x, "CertificatesAvailable", API_CONDITION_FALSE, STATUS_SEVERITY_ERROR,
                     "InvalidCertificateAuthority", "%s", e.msg);
        if (r == 0)
            r = ncp_cond(x, "Ready", API_CONDITION_FALSE, STATUS_SEVERITY_INFO,
                         "InvalidCertificateAuthority", "%s", e.msg);
        /* A CA Secret without the label changes without the cache seeing it: read it again. */
        plan_requeue_after(x->plan, CACHE_VIEW_CONFLICT_TTL);
        goto out;
    }
    if (r < 0)
        goto out;
    r = ncp_plan_created_cas(x, pki);
    plan_together(x->plan, first);
    if (r != 0) {
        if (r > 0)
            r = cas_being_created(x);
        goto out;
    }
    if ((r = ncp_label_found_cas(x, rc)) != 0) {
        if (r > 0)
            r = ncp_cond(x, "CertificatesAvailable", API_CONDITION_FALSE, STATUS_SEVERITY_INFO,
                         "Labelling",
                         "CA Secrets supplied without the cluster-name label are "
                         "being labelled");
        goto out;
    }
    if ((r = ncp_ca_expiry(x, pki)) < 0 || x->spec_patched ||
        (r = ncp_plan_kubeconfig(x, rc, pki)) < 0)
        goto out;

    if (!(da = calloc(1, sizeof(*da)))) {
        r = -ENOMEM;
        goto out;
    }
    if ((r = ncp_compute_desired(x, rc, pki, da)) != 0) {
        if (r == STATUS_STOP)
            r = 0;
        goto out;
    }
    if ((r = ncp_restart_after_restore(x, da)) < 0 || (r = ncp_move_step(x, da)) < 0 ||
        x->spec_patched)
        goto out;
    /* The service CIDR is fixed once the cluster has been set up with it. */
    ncp_service_cidrs(rc, cidrs, sizeof(cidrs));
    if (x->st->service_cidr && strcmp(x->st->service_cidr, cidrs) != 0) {
        refusal = "ServiceCIDRChangeRefused";
        snprintf(refusal_msg, sizeof(refusal_msg),
                 "spec.clusterNetwork.services.cidrBlocks: %s differs from %s, the service "
                 "range the cluster was set up with; it cannot change (kubeadm treats it as "
                 "immutable)",
                 cidrs, x->st->service_cidr);
    }
    /* Nothing rolls etcd in a way that loses the tenant's data (controllers/etcdsafety.h). */
    if (!refusal) {
        struct etcd_safety es;
        nested_etcd_safety(
            x->view, &x->src, rc,
            da->d[RENDER_PART_ETCD].known ? da->d[RENDER_PART_ETCD].config_hash : NULL, &es);
        if (es.refusal) {
            refusal = es.refusal;
            snprintf(refusal_msg, sizeof(refusal_msg), "%s", es.message);
        }
    }
    r = ncp_step_rollout(x, da, refusal != NULL, &out);
    if (r < 0)
        goto out;
    if (!refusal && out.phase == ROLLOUT_PHASE_REFUSED) {
        refusal = out.reason;
        snprintf(refusal_msg, sizeof(refusal_msg), "%s", out.message);
    }
    if (!refusal && !x->st->service_cidr && x->st->rollout.etcd.config_hash &&
        (r = ncp_set_str(&x->st->service_cidr, cidrs)) < 0)
        goto out;
    r = ncp_aggregate(x, &out, da, refusal, refusal_msg);
    if (r == 0)
        r = ncp_move_report_ready(x);
    if (r == 0)
        r = ncp_rotate_certificates(x, rc, pki, !refusal && out.phase == ROLLOUT_PHASE_READY,
                                    (refusal && strcmp(refusal, "ServiceCIDRChangeRefused") != 0) ||
                                        (out.phase == ROLLOUT_PHASE_UPGRADING &&
                                         strcmp(ncp_phase_of(x, &out, da), "Upgrading") == 0));
out:
    free(da);
    render_cluster_pki_free(pki);
    render_cluster_free(rc);
    api_errors_done(&errs);
    return r;
}

int nestedcontrolplane_reconcile(void *ctx, const struct cache_view *view, const char *ns,
                                 const char *name, struct plan *plan, struct err *e)
{
    struct cp x = {.ctx = ctx, .view = view, .plan = plan, .ns = ns, .name = name};
    struct api_errors errs = API_ERRORS_INIT;
    const cJSON *cl;
    const char *rejected;
    cJSON *old = NULL;
    struct err msg;
    int r;

    x.obj = kube_store_get(view->control_planes, ns, name);
    /* Gone: the reconcile its deletion brings is the last, and forgets what was kept for it. */
    if (!x.obj) {
        ncp_forget_created(&x);
        return 0;
    }
    /* clusterctl copied it elsewhere and deletes it here (it removes the finalizers itself):
     * the garbage collector removes what it owns, nestcp does nothing of its own. */
    if (move_deleting_for_move(x.obj))
        return 0;
    lookup_source(view, &x.src);
    r = api_control_plane_from_json(x.obj, &x.ncp, &errs);
    if (r == -EINVAL) {
        err_clear(&msg);
        api_errors_to_err(&errs, NULL, &msg);
        r = status_deleting(x.obj)
                ? 0
                : status_plan_invalid(plan, &NESTCP_CONTROL_PLANES, x.obj, "InvalidSpec", msg.msg,
                                      "Failed", view->now);
        goto out;
    }
    if (r < 0)
        goto out;
    x.st = &x.ncp->status;
    x.gen = x.ncp->meta.generation;
    if (!(old = api_control_plane_status_to_json(x.st))) {
        r = -ENOMEM;
        goto out;
    }
    x.st->observed_generation = x.gen;
    cl = lookup_capi_cluster(view, x.obj, API_KIND_NESTED_CONTROL_PLANE, NULL);
    if (x.ncp->meta.deleting) {
        r = ncp_reconcile_delete(&x);
    } else if (status_paused(x.obj, cl)) {
        r = ncp_cond(&x, "Paused", API_CONDITION_TRUE, NULL, "Paused", "%s",
                     "reconciliation is paused (annotation cluster.x-k8s.io/paused or Cluster "
                     "spec.paused)");
    } else {
        r = ncp_cond(&x, "Paused", API_CONDITION_FALSE, NULL, "NotPaused", "%s", "");
        if (r == 0)
            r = reconcile_normal(&x);
    }
    /* A write of the last plan was refused (the runtime's Event said so): Ready tells why
     * until a plan goes through. */
    rejected = cache_view_rejected(view, &NESTCP_CONTROL_PLANES, ns, name);
    if (r >= 0 && rejected && !x.ncp->meta.deleting)
        r = status_condition(&x.st->conditions, "Ready", API_CONDITION_FALSE, STATUS_SEVERITY_ERROR,
                             "WriteRejected", x.gen, view->now, "%s", rejected);
    if (r >= 0 && !x.spec_patched)
        r = status_plan_write(plan, &NESTCP_CONTROL_PLANES, x.obj,
                              api_control_plane_status_to_json(x.st), old);
    /* A step is taken when status.rollout records its target (the components read it there):
     * its Event goes out after that write, and not at all without it (it is planned again). */
    if (r >= 0 && x.spec_patched)
        plan_events_drop(plan, x.step_events, x.step_events_end);
    else if (r >= 0)
        plan_events_after_all(plan, x.step_events, x.step_events_end);
out:
    if (r > 0)
        r = 0;
    if (r < 0)
        err_set(e, r, "NestedControlPlane %s/%s: %s", ns, name,
                r == -ENOMEM ? "out of memory" : err_code_name(r));
    cJSON_Delete(old);
    api_control_plane_free(x.ncp);
    api_errors_done(&errs);
    return r;
}

struct map_ctx {
    enqueue_fn enqueue;
    void *q;
};

static void enqueue_ncp(void *userdata, const cJSON *ncp)
{
    struct map_ctx *m = userdata;

    m->enqueue(m->q, kube_obj_namespace(ncp), kube_obj_name(ncp));
}

void nestedcontrolplane_map(void *ctx, const struct cache_view *view,
                            const struct kube_resource *res, const cJSON *obj, enqueue_fn enqueue,
                            void *q)
{
    struct map_ctx m = {enqueue, q};

    lookup_control_planes_for(view, res, obj, enqueue_ncp, &m);
    if (res == &NESTCP_CONTROL_PLANES && ctx)
        ncp_wake_queued(ctx, view, obj, enqueue, q);
}

void nestedcontrolplane_def(struct nested_ctx *ctx, struct reconciler_def *ret_def)
{
    *ret_def = (struct reconciler_def){
        .name = "nestedcontrolplane",
        .primary = &NESTCP_CONTROL_PLANES,
        .reconcile = nestedcontrolplane_reconcile,
        .map = nestedcontrolplane_map,
        .ctx = ctx,
    };
}
