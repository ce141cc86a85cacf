#ifndef NESTCP_CONTROLLERS_NESTED_H
#define NESTCP_CONTROLLERS_NESTED_H

/*
 * The five reconcilers of nestcp (docs/architecture.md, "Who owns what"):
 *
 *   nestedcontrolplane       CA Secrets, the admin kubeconfig, adoption of the components,
 *                            the rollout targets in status.rollout, the Cluster API contract
 *   nestedetcd, nestedapiserver, nestedcontrollermanager
 *                            one component each: its certs Secret, Services and StatefulSet,
 *                            applied only at the target the control plane set
 *   nestedcluster            mirrors the control plane's readiness and endpoint
 *
 * Each is a pure function from the caches (struct cache_view) to a plan (lib/ctrl/plan.h);
 * lib/render/cluster.h builds every object, the same code `nestcp render` runs.
 */

#include <stdint.h>

#include "api/catalog.h"
#include "controllers/brake.h"
#include "controllers/caches.h"
#include "controllers/etcdsafety.h"
#include "lib/pki/key.h"
#include "lib/render/catalog.h"
#include "lib/render/cluster.h"
#include "lib/util/list.h"
#include "lib/util/strmap.h"

struct etcd_membership;
struct rollerrors;
struct keypool;

/* CAPN's finalizer on NestedControlPlane. */
#define NESTED_FINALIZER "nested.controlplane.cluster.x-k8s.io"

/* Cluster API's annotation that makes `clusterctl move` wait, on every NestedControlPlane:
 * a move copies Cluster API objects but not the tenant's StatefulSets and etcd data, which the
 * source cluster's garbage collector would then delete (docs/clusterctl.md). */
#define NESTED_BLOCK_MOVE "clusterctl.cluster.x-k8s.io/block-move"

/* How long a reconcile waits for an RSA key from the pool before it looks again, seconds. */
#define NESTED_KEY_WAIT 0.5

struct nested_ctx;

/* The context of one component controller. */
struct nested_part_ctx {
    struct nested_ctx *base;
    enum render_part part;
    /* Certs Secrets created but not seen in the cache yet, by component key: a reconcile
     * that runs before the watch delivers one does not issue another. Forgotten when seen,
     * after NESTED_ISSUE_WAIT, or when the component is deleted. */
    struct strmap issued;
};

/* What every reconciler reads besides the caches. Borrowed pointers must outlive the
 * manager. */
struct nested_ctx {
    const struct render_catalog *cat;
    struct api_catalog api_cat;
    struct keypool *keys;          /* RSA keys off the loop; NULL: generated inline */
    int64_t cert_renew_before;     /* seconds; 0: each control plane's renewBeforeDays */
    int64_t cert_validity;         /* seconds; 0: each control plane's validityDays */
    bool allow_privileged;         /* render_cluster_set_allow_privileged, the admin's flag */
    const char *manager_namespace; /* render_cluster_set_manager_namespace; NULL: default */
    struct nested_part_ctx parts[RENDER_PART__COUNT];
    /* Render and certificate checks that passed, kept across reconciles (render_check_memo),
     * by digest, and in the order they were last remembered (at most NESTED_MEMO_MAX). */
    struct strmap checked;
    struct list_node checked_order;
    struct render_check_memo memo;
    /* What the tenants' etcd members last answered (made on first use). */
    struct etcd_membership *members;
    /* What the API servers a roll started last answered to a scrape (made on first use). */
    struct rollerrors *roll_errors;
    /* The fleet-wide brake (controllers/brake.h); a value of 0: no limit. */
    struct brake_limit max_rollouts;
    /* Rolls let start whose status write the cache does not show yet, by "ns/name" (struct
     * nested_admitted): a reconcile of another control plane before the watch delivers it
     * counts them too. */
    struct strmap admitted;
    /* The control planes whose roll waits for a slot, by "ns/name" (the value is its key): as
     * the cache shows them, and those this manager queued since. While it is empty, the end
     * of a roll wakes nobody without walking every control plane. */
    struct strmap waiting;
    /* CA Secrets created for a control plane but not seen in the cache yet, by "ns/name"
     * (struct nested_cas_created): a reconcile that runs before the watch delivers them does
     * not make others, whose creates would be answered 409 and read back one by one.
     * Forgotten when seen, after NESTED_ISSUE_WAIT, or when the control plane is gone. */
    struct strmap cas_created;
    /* Admin kubeconfig Secrets created but not seen in the cache yet, by control plane, the
     * same way (struct nested_cas_created): a reconcile that runs before the watch delivers
     * one does not create it again, to be answered 409. */
    struct strmap kubeconfigs_created;
};

struct nested_cas_created {
    double at;  /* when their creates were planned */
    char key[]; /* "ns/name", the map's key */
};

/* A roll let start: the control plane's resourceVersion when it was, and until when it counts
 * while the cache still shows that version. */
struct nested_admitted {
    char key[2 * RENDER_CLUSTER_NAME_MAX + 2]; /* "ns/name", the map's key */
    char resource_version[64];
    double until;
};

/* How long a roll let start counts before the cache shows it, seconds. */
#define NESTED_ADMITTED_TTL 30.0

/* How often a control plane whose roll waits for a slot looks again, seconds, besides being
 * woken when a roll ends (nestedcontrolplane_map). */
#define NESTED_QUEUED_RECHECK 60.0

/* The earliest NotAfter (seconds since the epoch) of the certificates of a Secret: every key
 * ending in .crt and the client certificate of every kubeconfig (keys ending in .conf). Private
 * keys are not read. Returns 0, -ENOENT (no certificate), -EINVAL (one does not parse),
 * -ENOMEM. */
int nested_secret_not_after(const cJSON *secret, int64_t *ret_not_after);

/* Bound on the remembered checks (about 15 per control plane); past it the one remembered
 * longest ago is forgotten. */
#define NESTED_MEMO_MAX 16384

/* The longest a reconcile that found good certificates waits before looking again (seconds):
 * a clock that jumps, or a wait of months, is corrected within this. */
#define NESTED_RENEW_CHECK_MAX (12 * 3600.0)

/* Asks for the key to be reconciled again when a certificate it keeps enters its renewal window
 * (renew_at, seconds since the epoch; 0: none), at most NESTED_RENEW_CHECK_MAX from now: a
 * control plane nobody touches is renewed on time. */
void nested_requeue_for_renewal(struct plan *plan, double now, int64_t renew_at);

/* Applies the manager's certificate flags to rc. */
void nested_cert_policy(const struct nested_ctx *ctx, struct render_cluster *rc);

void nested_ctx_init(struct nested_ctx *ctx, const struct render_catalog *cat, struct keypool *keys,
                     int64_t cert_renew_before);
void nested_ctx_done(struct nested_ctx *ctx);

/* Whether the change from the running etcd StatefulSet to desired_hash (NULL: not known) keeps
 * the tenant's data (controllers/etcdsafety.h), read from the caches and rc. */
void nested_etcd_safety(const struct cache_view *view, const struct render_source *src,
                        const struct render_cluster *rc, const char *desired_hash,
                        struct etcd_safety *out);

/* How long an issued certs Secret is waited for before another may be issued, seconds. */
#define NESTED_ISSUE_WAIT 30.0

/* The controller definitions, ready for manager_add_controller(). ctx is borrowed. */
/* The resource of a component kind: NESTCP_ETCDS, NESTCP_APISERVERS,
 * NESTCP_CONTROLLER_MANAGERS. */
const struct kube_resource *nested_part_resource(enum render_part part);

void nestedcluster_def(struct nested_ctx *ctx, struct reconciler_def *ret_def);
void nestedcontrolplane_def(struct nested_ctx *ctx, struct reconciler_def *ret_def);
void nestedcomponent_def(struct nested_ctx *ctx, enum render_part part,
                         struct reconciler_def *ret_def);

/* The reconcile and map functions the definitions hold (for tests). ctx is the struct
 * nested_ctx, or for components the struct nested_part_ctx. */
int nestedcluster_reconcile(void *ctx, const struct cache_view *view, const char *ns,
                            const char *name, struct plan *plan, struct err *e);
void nestedcluster_map(void *ctx, const struct cache_view *view, const struct kube_resource *res,
                       const cJSON *obj, enqueue_fn enqueue, void *q);
int nestedcontrolplane_reconcile(void *ctx, const struct cache_view *view, const char *ns,
                                 const char *name, struct plan *plan, struct err *e);
void nestedcontrolplane_map(void *ctx, const struct cache_view *view,
                            const struct kube_resource *res, const cJSON *obj, enqueue_fn enqueue,
                            void *q);
/* The resource the component controllers write an object a package renders to, by its kind
 * ("StatefulSet": apps/v1 statefulsets), or NULL for a kind they do not handle (the reconcile
 * then fails with -EINVAL). Such objects are server-side applied, cached and deleted with
 * their control plane. */
const struct kube_resource *nestedcomponent_rendered_resource(const char *kind);

/* The i-th resource packages may render (StatefulSets, Services, ConfigMaps,
 * NetworkPolicies), or NULL past the last; and the cache of it in view (NULL when the view has
 * none). */
const struct kube_resource *nestedcomponent_rendered(size_t i);
const struct kube_store *nestedcomponent_rendered_store(const struct cache_view *view,
                                                        const struct kube_resource *res);

int nestedcomponent_reconcile(void *ctx, const struct cache_view *view, const char *ns,
                              const char *name, struct plan *plan, struct err *e);
void nestedcomponent_map(void *ctx, const struct cache_view *view, const struct kube_resource *res,
                         const cJSON *obj, enqueue_fn enqueue, void *q);

#endif
