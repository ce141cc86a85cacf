#ifndef NESTCP_CONTROLLERS_NCP_H
#define NESTCP_CONTROLLERS_NCP_H

/*
 * The NestedControlPlane reconciler's parts, shared by its seven files:
 *
 *   nestedcontrolplane.c  the reconcile: the finalizer, the cluster name's owner, the watch
 *                         mapping, and the helpers below
 *   ncpcomponents.c       the components: adopted, and deleted with what they own
 *   ncpsecrets.c          the CA Secrets (created, labelled, near expiry) and the admin
 *                         kubeconfig
 *   ncpstatus.c           the status: readiness, replicas, version, phase and conditions
 *   ncprollout.c          the targets: each component's desired state, the rollout state
 *                         machine with the brake, the etcd snapshot before a version change,
 *                         the health of a roll, and the restarts after an etcd restore
 *   ncprotate.c           the rotations of the service-account key and the CAs
 *   ncpmove.c             a move to another management cluster with an etcd snapshot
 *                         (controllers/move.h)
 *
 * Internal to those files; nothing else includes it.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "api/types.h"
#include "controllers/caches.h"
#include "controllers/nested.h"
#include "controllers/rollout.h"
#include "controllers/status.h"
#include "lib/ctrl/plan.h"
#include "lib/render/cluster.h"

/* One reconcile in progress. */
struct cp {
    struct nested_ctx *ctx;
    const struct cache_view *view;
    struct render_source src;
    struct plan *plan;
    const char *ns, *name;
    const char *cluster; /* the cluster name its objects are named after, once resolved */
    const cJSON *obj;
    struct api_control_plane *ncp;
    struct api_control_plane_status *st;
    int64_t gen;
    bool spec_patched; /* the object changes under this plan: skip the status write */
    size_t step_events, step_events_end; /* the RolloutStep Events: recorded after the status */
};

/* Each component's desired state and its StatefulSet as cached. */
struct desired_all {
    struct render_cluster_desired d[RENDER_PART__COUNT];
    struct status_sts ss[RENDER_PART__COUNT];
    const cJSON *sts[RENDER_PART__COUNT]; /* the cached StatefulSets, or NULL */
};

static inline const cJSON *get(const cJSON *o, const char *key)
{
    return cJSON_GetObjectItemCaseSensitive(o, key);
}

/* Sets a condition; a Warning event goes with an Error or Warning one that changed. Returns 0
 * or -ENOMEM. */
int ncp_cond(struct cp *x, const char *type, const char *status, const char *severity,
             const char *reason, const char *fmt, ...) __attribute__((format(printf, 6, 7)));

/* *dst = a copy of src (NULL allowed), unless equal. Returns 0 or -ENOMEM. */
int ncp_set_str(char **dst, const char *src);

/* The service CIDRs the control plane would run with, joined by ",". */
void ncp_service_cidrs(const struct render_cluster *rc, char *out, size_t size);

/* Whether the control plane carries nestcp's finalizer. */
bool ncp_has_finalizer(const struct api_control_plane *ncp);

/* Plans a merge patch of the control plane's finalizers (with or without nestcp's; with it,
 * the block-move annotation added or removed as block says) and, when endpoint is given,
 * spec.controlPlaneEndpoint. Returns 0 or -ENOMEM. */
int ncp_patch_self(struct cp *x, bool with_finalizer, bool block,
                   const struct api_endpoint *endpoint);

/* Whether the control plane carries the block-move annotation. */
bool ncp_has_block_move(const struct api_control_plane *ncp);

/* MoveBlocked's message for every control plane no move is prepared for. */
#define NCP_TENANT_DATA_NOT_MOVABLE                                                                \
    "clusterctl move would copy the Cluster API objects but not the tenant's StatefulSets and "    \
    "etcd data, which this cluster would then delete; the annotation " NESTED_BLOCK_MOVE           \
    " makes it wait (annotate the control plane controlplane.nestcp.x-k8s.io/move=<request> to "   \
    "prepare a move with an etcd snapshot)"

/* ---- ncpcomponents.c ---- */

/* On deletion: deletes the components and the objects they own, waits until they are gone,
 * then removes the finalizer. Returns 0 or -ENOMEM. */
int ncp_reconcile_delete(struct cp *x);

/* Adopts the components that have no controller. Returns 0, STATUS_STOP (with a condition)
 * when one is controlled by another owner, or -ENOMEM. */
int ncp_adopt_components(struct cp *x);

/* ---- ncpsecrets.c ---- */

/* Plans the creation of the CA Secrets render_cluster_pki_load made. Returns how many, or
 * -ENOMEM. */
int ncp_plan_created_cas(struct cp *x, const struct render_cluster_pki *pki);

/* True while CA Secrets this manager created for the control plane, within NESTED_ISSUE_WAIT,
 * are neither cached nor found live yet: the reconcile waits for them rather than making
 * others. */
bool ncp_cas_pending(struct cp *x, const struct render_cluster *rc);

/* Forgets the CA and admin kubeconfig Secrets created for x->ns/x->name (ncp_cas_pending), for
 * a control plane that is gone: no later reconcile of it would. */
void ncp_forget_created(struct cp *x);

/* Labels the good CA Secrets that were found live without the cluster-name label. Returns how
 * many, or -ENOMEM. */
int ncp_label_found_cas(struct cp *x, const struct render_cluster *rc);

/* CertificatesAvailable, with CertificateAuthorityExpiring for a CA in its last year. Returns
 * 0 or -ENOMEM. */
int ncp_ca_expiry(struct cp *x, const struct render_cluster_pki *pki);

/* Creates the admin kubeconfig Secret, or renews the control plane's own before it expires.
 * Returns 0 (a condition says why it could not) or -ENOMEM. */
int ncp_plan_kubeconfig(struct cp *x, const struct render_cluster *rc,
                        const struct render_cluster_pki *pki);

/* ---- ncpstatus.c ---- */

/* The phase the rollout's output means: Provisioning, Ready, Upgrading or Reconfiguring. */
const char *ncp_phase_of(const struct cp *x, const struct rollout_output *out,
                         const struct desired_all *da);

/* The status from the rollout's output: readiness, replicas, version, etcd's addresses, the
 * phase, and the Ready, Available and Upgrading conditions (refusal_reason: a change is
 * refused, and why). Returns 0 or -ENOMEM. */
int ncp_aggregate(struct cp *x, const struct rollout_output *out, const struct desired_all *da,
                  const char *refusal_reason, const char *refusal_message);

/* ---- ncprollout.c ---- */

/* Each component's desired {version, config hash} and cached StatefulSet. Returns 0,
 * STATUS_STOP (a condition says why), -ENOMEM. */
int ncp_compute_desired(struct cp *x, const struct render_cluster *rc,
                        const struct render_cluster_pki *pki, struct desired_all *da);

/* Runs the state machine, with the brake and the snapshot gate, and writes the targets into
 * status.rollout; returns its output. frozen: the control plane is paused. */
int ncp_step_rollout(struct cp *x, const struct desired_all *da, bool frozen,
                     struct rollout_output *out);

/* Deletes the API server and controller-manager pods older than an etcd restore. */
int ncp_restart_after_restore(struct cp *x, const struct desired_all *da);

/* A control plane whose roll ended (or that went) wakes those that wait for a slot. */
void ncp_wake_queued(struct nested_ctx *ctx, const struct cache_view *view, const cJSON *obj,
                     enqueue_fn enqueue, void *q);

/* ---- ncpmove.c ---- */

/* Whether the control plane is to carry the block-move annotation: always, except once a move
 * prepared for its current request has annotated the NestedEtcd (read from the caches). */
bool ncp_move_blocks(const struct cp *x);

/* The next step of a move (controllers/move.h): status.move, the MoveBlocked condition, the
 * snapshot Job, the annotations of the NestedEtcd and, once done in the target, of the control
 * plane (x->spec_patched is set then). Returns 0 or -ENOMEM. */
int ncp_move_step(struct cp *x, const struct desired_all *da);

/* While a move keeps the API servers and controller managers stopped: status.ready false and
 * Ready False, reason PreparingMove, in place of what the rollout said. Returns 0 or
 * -ENOMEM. */
int ncp_move_report_ready(struct cp *x);

/* ---- ncprotate.c ---- */

/* Runs the machines of the service-account key's and the CAs' rotations after the rollout's,
 * one rotation at a time (rolled: every component runs what the Secrets imply; upgrading: a
 * version change rolls out or is held back), and sets the CertificatesRotating condition. */
int ncp_rotate_certificates(struct cp *x, const struct render_cluster *rc,
                            const struct render_cluster_pki *pki, bool rolled, bool upgrading);

#endif
