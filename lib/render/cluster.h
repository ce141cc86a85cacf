#ifndef NESTCP_RENDER_CLUSTER_H
#define NESTCP_RENDER_CLUSTER_H

/*
 * One tenant control plane assembled from its API objects: the one code path that the
 * controllers and `nestcp render` share (docs/render.md).
 *
 *   render_cluster_resolve     NestedControlPlane, its three components, the Cluster API
 *                              Cluster and NestedCluster -> validated, effective settings
 *   render_cluster_pki_load    the CA Secrets <c>-ca, <c>-etcd, <c>-proxy, <c>-sa: an existing
 *                              one is checked and used as it is, a missing one is generated
 *   render_cluster_certs*      each component's immutable certs Secret <c>-<short>-certs-<hash>:
 *                              an existing one that is still good, or a new one
 *   render_cluster_kubeconfig  the admin kubeconfig Secret <c>-kubeconfig
 *   render_cluster_component   one component's Services and StatefulSet, and its config hash
 *   render_cluster_all         all of the above in apply order (`nestcp render`)
 *
 * Everything is a pure function of the objects a struct render_source hands out, the render
 * catalog and a clock: given the same Secrets the output is byte-identical, and key generation
 * is the only randomness. Nothing here does I/O or logs.
 *
 * A controller reconciling one component needs only: resolve, pki_load (without generating),
 * certs (or certs_find when it may not create), component. The NestedControlPlane controller
 * computes every component's desired {version, config hash} with render_cluster_desired().
 */

#include <stdbool.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "api/catalog.h"
#include "api/errors.h"
#include "api/kinds.h"
#include "api/types.h"
#include "lib/pki/key.h"
#include "lib/render/catalog.h"
#include "lib/util/err.h"

/* The components of a control plane, in rollout (and apply) order. */
enum render_part {
    RENDER_PART_ETCD = 0,
    RENDER_PART_APISERVER,
    RENDER_PART_CONTROLLER_MANAGER,
    RENDER_PART__COUNT
};

/* Room for any object name (253) plus NUL. */
#define RENDER_CLUSTER_NAME_MAX 254
/* A config hash: sha256 in hex, plus NUL. */
#define RENDER_CLUSTER_HASH_MAX 65
/* Length of the content hash in a certs Secret's name. */
#define RENDER_CLUSTER_SECRET_HASH_LEN 10
/* Default pod networks when neither the NestedControlPlane nor the Cluster gives one. */
#define RENDER_CLUSTER_DEFAULT_POD_CIDR "10.244.0.0/16"
#define RENDER_CLUSTER_FALLBACK_POD_CIDR "192.168.0.0/16" /* when the default overlaps services */
#define RENDER_CLUSTER_DEFAULT_POD_CIDR6 "fd00:10:244::/56"

/* Labels on the Secrets this module builds. */
#define RENDER_CLUSTER_COMPONENT_LABEL "nestcp.x-k8s.io/component"

/* "etcd", "kube-apiserver", "kube-controller-manager". */
const char *render_part_component(enum render_part part);
/* "etcd", "apiserver", "controller-manager" (object names, the component label). */
const char *render_part_short(enum render_part part);
/* API_KIND_NESTED_ETCD, _APISERVER, _CONTROLLER_MANAGER. */
enum api_kind render_part_kind(enum render_part part);
/* "etcd", "apiserver", "controllerManager": the NestedControlPlane's spec field that names
 * the component, and its key in status.rollout.components; "" for an unknown one. */
const char *render_part_field(enum render_part part);

/* ---- where objects come from ---- */

/* Return false to stop an iteration. Objects are borrowed. */
typedef bool (*render_source_fn)(void *userdata, const cJSON *obj);

/* A key the membership rule looks objects up by (lib/render/member.h, member_index_keys): which
 * field (enum member_key) and its value. */
struct render_key {
    unsigned tag;
    const char *value;
};

/*
 * A read-only view of the objects of the management cluster: the informer caches for the
 * controllers, the input documents for `nestcp render`. Objects are borrowed and must not
 * change while a function of this module runs.
 */
struct render_source {
    void *ctx;
    /* The object of kind (a nestcp kind or API_KIND_CLUSTER) at ns/name, or NULL. */
    const cJSON *(*get)(void *ctx, enum api_kind kind, const char *ns, const char *name);
    /* Calls fn with every object of kind in ns until fn returns false. */
    void (*each)(void *ctx, enum api_kind kind, const char *ns, render_source_fn fn,
                 void *userdata);
    /* May be NULL (then each serves). Calls fn, until it returns false, with every object of
     * kind in ns that has one of keys[0..n) among its member_index_keys, each once and in the
     * order each would; it may call fn with other objects of kind in ns too (every caller
     * checks what it is given). An informer cache answers this from an index, so a lookup of
     * one cluster's objects does not walk a namespace of many clusters. */
    void (*each_keyed)(void *ctx, enum api_kind kind, const char *ns, const struct render_key *keys,
                       size_t n, render_source_fn fn, void *userdata);
    /* The same for core/v1 Secrets; with owner_uid, only the Secrets whose controller
     * ownerReference has that uid (an informer cache answers that from its owner index, so a
     * component's lookup does not walk every Secret of a namespace of many clusters). */
    const cJSON *(*get_secret)(void *ctx, const char *ns, const char *name);
    void (*each_secret)(void *ctx, const char *ns, const char *owner_uid, render_source_fn fn,
                        void *userdata);
    /* The apps/v1 StatefulSet at ns/name as it runs now, or NULL. May itself be NULL (nothing
     * runs). Only the etcd StatefulSet is asked for: its volumeClaimTemplates cannot change in
     * place, so an etcd that spec.storage says nothing about keeps the storage it has. */
    const cJSON *(*get_statefulset)(void *ctx, const char *ns, const char *name);
};

/* A source over a JSON array of objects (borrowed; it must outlive the source). Objects are
 * told apart by apiVersion and kind; an object without metadata.namespace is in "default". */
void render_source_from_objects(const cJSON *objects, struct render_source *ret_src);

/* ---- resolution ---- */

struct render_cluster;

/*
 * Resolves the NestedControlPlane ns/name and everything it is assembled from:
 *
 * - its components: those its spec.etcd / spec.apiserver / spec.controllerManager name in its
 *   namespace (CAPN's shape); for a reference that is not set, the one component of that kind
 *   in the namespace whose controller ownerReference is this control plane or whose label
 *   cluster.x-k8s.io/cluster-name is the cluster name (standalone). A missing component is
 *   not an error here (see render_cluster_missing);
 * - the Cluster API Cluster: the one named by the control plane's ownerReference (it must
 *   exist: -ENOENT), else one in the namespace whose spec.controlPlaneRef names this control
 *   plane, else none; its NestedCluster through spec.infrastructureRef;
 * - the cluster name: the Cluster's name when there is one (as CAPN names every child after
 *   the Cluster), else the label cluster.x-k8s.io/cluster-name, else the control plane's name;
 * - defaults: network from the NestedControlPlane, else the Cluster, else services
 *   10.96.0.0/12, pods RENDER_CLUSTER_DEFAULT_POD_CIDR (RENDER_CLUSTER_FALLBACK_POD_CIDR when
 *   that overlaps a service block; plus RENDER_CLUSTER_DEFAULT_POD_CIDR6 for IPv6 services),
 *   serviceDomain cluster.local; endpoint from the control plane, else the Cluster, else
 *   <c>-apiserver.<ns>.svc:6443;
 * - versions: kube-apiserver runs its own spec.version (an override), else the control
 *   plane's spec.version, else its spec.channel's, else the "stable" channel's; the controller
 *   manager likewise, falling back to the API server's version. Each component is rendered
 *   from the package of the version it runs. Whether the API server's and the controller
 *   manager's versions keep the version skew policy is not an error here (the rollout refuses
 *   it, VersionSkewRefused); render_cluster_version_skew says, and render_cluster_all fails.
 *   etcd runs its spec.version, else its channel's, else the version the API server's package
 *   names (package.yaml `etcd`), and never older than that;
 * - etcd storage: spec.storage, else a PersistentVolumeClaim of 1Gi per member in the default
 *   StorageClass; but an etcd StatefulSet that already runs without volumeClaimTemplates (made
 *   before that default) keeps its emptyDir (render_cluster_etcd_storage_kept);
 * - feature gates: the control plane's, overridden gate by gate by the component's; checked
 *   against the package (unknown or locked gates are errors), as are extraArgs flags.
 *
 * Every problem is appended to errs (which may be NULL) as one line naming the object and the
 * field, e.g.
 *   NestedControlPlane default/c: spec.clusterNetwork.services.cidrBlocks[0]: "10.96.0.0/33"
 *   is not a valid CIDR
 * Returns 0 with *ret_rc (free with render_cluster_free), -EINVAL (invalid objects), -ENOENT
 * (the control plane or its owner Cluster does not exist), -ENOMEM.
 */
int render_cluster_resolve(const struct render_catalog *cat, const struct render_source *src,
                           const char *ns, const char *name, struct render_cluster **ret_rc,
                           struct api_errors *errs);
void render_cluster_free(struct render_cluster *rc);

/* A validation catalog over the render catalog (borrowed; it must outlive the result):
 * Kubernetes versions with both a kube-apiserver and a kube-controller-manager package, etcd
 * versions with an etcd package, feature gates of the kube-apiserver package of that minor
 * (true for a version without a package, which is reported on its own), the etcd version the
 * kube-apiserver package names, and the stable channel's kube-apiserver version. */
struct api_catalog render_cluster_api_catalog(const struct render_catalog *cat);

/* Accessors; everything is borrowed from rc. */
const char *render_cluster_name(const struct render_cluster *rc);
const char *render_cluster_namespace(const struct render_cluster *rc);
/* Parsed and defaulted (network, endpoint, certificates). */
const struct api_control_plane *render_cluster_control_plane(const struct render_cluster *rc);
const struct api_capi_cluster *render_cluster_capi_cluster(const struct render_cluster *rc);
const struct api_nested_cluster *render_cluster_nested_cluster(const struct render_cluster *rc);
/* The component object, parsed and defaulted; NULL when it does not exist (yet). */
const struct api_component *render_cluster_component_object(const struct render_cluster *rc,
                                                            enum render_part part);
/* Why a component is missing ("spec.etcd.name: NestedEtcd default/x does not exist"), or NULL
 * when it is there. */
/* Whether etcd stays on emptyDir only because its StatefulSet was made that way before
 * persistent storage became the default (spec.storage unset). */
bool render_cluster_etcd_storage_kept(const struct render_cluster *rc);
const char *render_cluster_missing(const struct render_cluster *rc, enum render_part part);
/* The version a component runs ("1.20.2", "3.4.13"); never NULL after a successful resolve. */
const char *render_cluster_version(const struct render_cluster *rc, enum render_part part);
/* Why the versions the API server and the controller manager run break the version skew
 * policy (render_version_skew_ok), as one error line naming the object and field that chose
 * the version; NULL when they keep it. */
const char *render_cluster_version_skew(const struct render_cluster *rc);
/* The Kubernetes version skew policy between a kube-apiserver and a kube-controller-manager:
 * the controller manager is never newer than the API server, nor more than one minor older.
 * Returns true when the pair keeps it (or a version does not parse: validation reports that);
 * otherwise writes why into msg ("kube-controller-manager 1.21.14 would be newer than
 * kube-apiserver 1.20.2; ...") and returns false. */
bool render_version_skew_ok(const char *apiserver, const char *controller_manager, char *msg,
                            size_t msgsz);
/* The gates a component runs with (empty for etcd). */
const struct api_gates *render_cluster_gates(const struct render_cluster *rc,
                                             enum render_part part);

/* ---- CAs ---- */

/* Where render_cluster_pki_load and render_cluster_certs* / _kubeconfig take private keys
 * from: fn(ctx, alg, &pem, e) returns 0 with a PEM the caller owns, or a negative code that
 * the call then fails with (-EAGAIN: a key is on its way, try again later). Unset (the
 * default): pki_key_generate, inline. */
typedef int (*render_key_fn)(void *ctx, enum pki_key_alg alg, char **ret_key_pem, struct err *e);
void render_cluster_set_key_source(struct render_cluster *rc, render_key_fn fn, void *ctx);

/* Renews leaves and kubeconfig client certificates with less than `seconds` of validity left
 * when that is longer than spec.certificates.renewBeforeDays (it stays below validityDays, so
 * a new certificate is never due at once). 0: renewBeforeDays alone. */
void render_cluster_set_renew_before(struct render_cluster *rc, int64_t seconds);

/* Issues leaves and kubeconfig client certificates valid for `seconds` instead of
 * spec.certificates.validityDays (the admin's policy of short-lived certificates; CAs keep
 * caValidityDays). The renewal window is then render_cluster_set_renew_before's, else a third
 * of the validity, and never more than half of it. 0: validityDays. */
void render_cluster_set_leaf_validity(struct render_cluster *rc, int64_t seconds);

/* Lets spec.patches and extraArgs pass the privilege, placement and flag rules of the security
 * gate (lib/render/gate.h): the platform admin's choice (`--allow-privileged-patches`), never a
 * tenant's. Off by default. */
void render_cluster_set_allow_privileged(struct render_cluster *rc, bool allow);

/* The namespace the nestcp manager's pods run in, which the etcd NetworkPolicy lets reach
 * etcd (with the pods' label control-plane: controller-manager). Default (also for NULL or
 * ""): RENDER_CLUSTER_MANAGER_NAMESPACE. */
#define RENDER_CLUSTER_MANAGER_NAMESPACE "nestcp-system"
void render_cluster_set_manager_namespace(struct render_cluster *rc, const char *ns);

/* The algorithm of the cluster's keys (spec.certificates.keyAlgorithm). */
enum pki_key_alg render_cluster_key_alg(const struct render_cluster *rc);

/* A memo of certificate checks that a caller keeps across calls (the controllers keep one
 * across reconciles): a check of a CA Secret, leaf or kubeconfig that passed is not repeated
 * while everything it reads is the same (OpenSSL 3 takes milliseconds to decode each PEM
 * key): a leaf's or kubeconfig's until it enters its renewal window, anything else for up to
 * RENDER_CHECK_MEMO_TTL seconds. A digest is the sha256 (hex) of everything the
 * check reads; no key material is kept. Unset (the default): every check runs. */
#define RENDER_CHECK_MEMO_TTL 300
struct render_check_memo {
    void *ctx;
    /* True when digest passed and is remembered until a time after now; *ret_value (may be
     * NULL) is then what was remembered with it. */
    bool (*passed)(void *ctx, const char *digest, int64_t now, int64_t *ret_value);
    void (*remember)(void *ctx, const char *digest, int64_t until, int64_t value);
};
void render_cluster_set_check_memo(struct render_cluster *rc, const struct render_check_memo *memo);

/* Renders every component of rc that exists (part RENDER_PART__COUNT; else only that one) with
 * a placeholder certs Secret, so that what fails without any key (a patch that matches
 * nothing, a template) is known before anything is created. Under a check memo a pass is
 * remembered for RENDER_CHECK_MEMO_TTL by a digest of the objects resolved into rc (uid,
 * generation, labels, annotations) and rc's settings, and not rendered again while they stay
 * the same. Returns 0, -EINVAL with the message in e, -ENOMEM. */
int render_cluster_check(const struct render_catalog *cat, const struct render_cluster *rc,
                         enum render_part part, int64_t now, struct err *e);

struct render_cluster_pki;

/*
 * Loads the four CA Secrets of the cluster from src. A Secret that exists is used as it is,
 * never regenerated, after checking it (tls.crt and tls.key present and parse, the key
 * matches, a CA that may sign, valid at now; for <c>-sa a key and its public half); each bad
 * one is a line in errs naming the Secret and key ("Secret default/c-ca: tls.key does not
 * match tls.crt"). A missing one is generated with spec.certificates' algorithm and validity
 * when generate_missing is set (render_cluster_pki_created lists the new Secrets), else the
 * call fails with -ENOENT. now is seconds since the epoch (0: the wall clock); every
 * certificate later issued through this pki uses it.
 *
 * Generated Secrets are type cluster.x-k8s.io/secret, labelled with the cluster name, and
 * owned (controller) by the NestedControlPlane when its uid is known.
 *
 * Returns 0 with *ret_pki (free with render_cluster_pki_free; it borrows from rc, free it
 * first), -EINVAL, -ENOENT, -ENOMEM.
 */
int render_cluster_pki_load(const struct render_cluster *rc, const struct render_source *src,
                            int64_t now, bool generate_missing, struct render_cluster_pki **ret_pki,
                            struct api_errors *errs);
void render_cluster_pki_free(struct render_cluster_pki *pki);

/* The CA Secrets generated by render_cluster_pki_load, in the order ca, etcd, proxy, sa (a
 * JSON array, borrowed; empty when all existed). */
const cJSON *render_cluster_pki_created(const struct render_cluster_pki *pki);

/* The time the pki works at (seconds since the epoch). */
int64_t render_cluster_pki_now(const struct render_cluster_pki *pki);

/* A new CA for a rotation of ca (cluster, etcd or front-proxy), made as the cluster's CAs
 * are made (same subject, validity and key algorithm, a key from the key source). Returns 0,
 * -EAGAIN (the key source has no key yet), -ENOMEM, or another code of the issue. */
int render_cluster_pki_new_ca(const struct render_cluster_pki *pki, enum api_ca ca,
                              char **ret_cert_pem, char **ret_key_pem, struct err *e);

/* The CA (cluster, etcd or front-proxy) that expires first: its Secret's name in ret_name,
 * "cluster", "etcd" or "front-proxy" in *ret_which, and its NotAfter. Returns 0, or -ENOENT
 * when none is loaded. */
int render_cluster_pki_earliest_ca(const struct render_cluster_pki *pki, char *ret_name,
                                   size_t size, const char **ret_which, int64_t *ret_not_after);

/* ---- each component's certs Secret ---- */

/*
 * A component mounts one immutable Secret <c>-<short>-certs-<hash of its data>, type Opaque,
 * labelled cluster.x-k8s.io/cluster-name and nestcp.x-k8s.io/component, owned (controller) by
 * the component object when its uid is known. Keys (docs/render.md):
 *   etcd:               ca.crt, <c>-etcd-<i>-server.{crt,key}, <c>-etcd-<i>-peer.{crt,key} for
 *                       each member i, healthcheck-client.{crt,key}
 *   kube-apiserver:     ca.crt, etcd-ca.crt, front-proxy-ca.crt, apiserver.{crt,key},
 *                       apiserver-etcd-client.{crt,key}, apiserver-kubelet-client.{crt,key},
 *                       front-proxy-client.{crt,key}, sa.pub, sa.key
 *   controller-manager: controller-manager.conf (kubeconfig, client CN
 *                       system:kube-controller-manager, server
 * https://<c>-apiserver.<ns>.svc:6443), ca.crt, ca.key, front-proxy-ca.crt, sa.key
 *
 * An existing certs Secret is still good when every key is present, every certificate is
 * signed by the current CA, matches what is needed now (subject, SANs - e.g. a new etcd member
 * after a scale-up - usages, algorithm) with more than spec.certificates.renewBeforeDays left,
 * every key matches its certificate, and every copied CA certificate or key equals the current
 * one.
 */

/* Finds a good certs Secret of part among the Secrets of src in the cluster's namespace that
 * carry its labels: prefer (the one the live StatefulSet mounts, see
 * render_cluster_certs_mounted; may be NULL) when it is good, else the newest good one
 * (creationTimestamp, then name). Cheap: no key is generated. Returns 0 with its name and, when
 * ret_renew_at is not NULL, the moment (seconds since the epoch) its first certificate enters
 * the renewal window, -ENOENT (none is good; e says why for the best candidate), -ENOMEM. */
int render_cluster_certs_find(const struct render_cluster *rc, const struct render_cluster_pki *pki,
                              const struct render_source *src, enum render_part part,
                              const char *prefer, char ret_name[static RENDER_CLUSTER_NAME_MAX],
                              int64_t *ret_renew_at, struct err *e);

/* Builds a new certs Secret of part, reusing every certificate and key of the best existing
 * one (prefer, else the newest) that is still good and generating the rest. The component
 * object must exist. Returns 0 with *ret_secret (caller frees), -ENOENT (no such component),
 * -EINVAL, -ENOMEM. */
int render_cluster_certs_issue(const struct render_cluster *rc,
                               const struct render_cluster_pki *pki,
                               const struct render_source *src, enum render_part part,
                               const char *prefer, cJSON **ret_secret, struct err *e);

/* render_cluster_certs_find, else render_cluster_certs_issue: ret_name is the Secret to mount,
 * *ret_secret the new Secret to create or NULL when an existing one is kept. */
int render_cluster_certs(const struct render_cluster *rc, const struct render_cluster_pki *pki,
                         const struct render_source *src, enum render_part part, const char *prefer,
                         cJSON **ret_secret, char ret_name[static RENDER_CLUSTER_NAME_MAX],
                         struct err *e);

/* The name of the certs Secret a rendered or live StatefulSet mounts (its volume "certs"), or
 * NULL. Borrowed from statefulset. */
const char *render_cluster_certs_mounted(const cJSON *statefulset);

/* ---- the admin kubeconfig ---- */

/*
 * The Secret <c>-kubeconfig (key `value`, type cluster.x-k8s.io/secret, Cluster API's shape):
 * a kubeconfig for https://<controlPlaneEndpoint> (the control plane's, else the Cluster's,
 * else <c>-apiserver.<ns>.svc:6443) with a client certificate CN kubernetes-admin,
 * O system:masters, owned (controller) by the NestedControlPlane when its uid is known. Sets
 * *ret_secret to NULL when the existing one is still good (same server and CA, client
 * certificate signed by the current CA with more than renewBeforeDays left), else to a new
 * Secret to create or replace it with (caller frees). When the existing one is kept and
 * ret_renew_at is not NULL, *ret_renew_at is the moment its client certificate enters the
 * renewal window (else 0). Returns 0, -EINVAL, -ENOMEM.
 */
int render_cluster_kubeconfig(const struct render_cluster *rc, const struct render_cluster_pki *pki,
                              const struct render_source *src, cJSON **ret_secret,
                              int64_t *ret_renew_at, struct err *e);

/* ---- rendering ---- */

/* The values document render_component() gets for part (lib/render/render.h), mounting the
 * certs Secret certs_name. Returns 0 with *ret_values (caller frees), -ENOENT (the component,
 * or for kube-apiserver the NestedEtcd, does not exist), -ENOMEM. */
int render_cluster_values(const struct render_cluster *rc, enum render_part part,
                          const char *certs_name, cJSON **ret_values, struct err *e);

/*
 * Renders one component: its Services and StatefulSet in apply order, with a controller owner
 * reference to the component object (when its uid is known), the cluster labels, and the
 * config hash annotations. ret_hash (may be NULL) receives the component's config hash: the
 * StatefulSet pod template's annotation nestcp.x-k8s.io/config-hash, a sha256 of the pod
 * template and the certs Secret name. It covers version, image, flags, feature gates, CIDRs,
 * extraArgs, resources, patches and the certs Secret, but not replicas (except for etcd,
 * whose member list is in its flags). This is the hash the controllers compare with the live
 * StatefulSet's pod template annotation and keep in status.rollout.
 *
 * Errors name the object and field ("NestedAPIServer default/c-apiserver: spec.patches[0]:
 * matches no object (kind StatefulSet, name x)"). Returns 0 with *ret_objects (caller frees),
 * -EINVAL, -ENOENT, -ENOMEM.
 */
int render_cluster_component(const struct render_catalog *cat, const struct render_cluster *rc,
                             enum render_part part, const char *certs_name, cJSON **ret_objects,
                             char ret_hash[RENDER_CLUSTER_HASH_MAX], struct err *e);

/* The config hash of rendered objects (the first StatefulSet's pod template annotation), or
 * NULL. Borrowed. */
const char *render_cluster_config_hash(const cJSON *objects);

/* What the NestedControlPlane controller keeps as each component's target: the version and
 * config hash the component would render with the certs Secret it has now. known is false
 * when the component does not exist or has no good certs Secret yet (its controller will
 * issue one). Never generates keys. */
struct render_cluster_desired {
    bool known;
    char version[RENDER_VERSION_MAX];
    char config_hash[RENDER_CLUSTER_HASH_MAX];
    char certs_name[RENDER_CLUSTER_NAME_MAX];
};
int render_cluster_desired(const struct render_catalog *cat, const struct render_cluster *rc,
                           const struct render_cluster_pki *pki, const struct render_source *src,
                           enum render_part part, const char *prefer,
                           struct render_cluster_desired *ret, struct err *e);

/*
 * Everything the controllers would create or update for the cluster, in apply order: CA
 * Secrets that do not exist yet, certs Secrets that are new, the kubeconfig Secret when new or
 * due, then per component in rollout order (etcd, kube-apiserver, kube-controller-manager) its
 * Services and StatefulSet. Existing Secrets in src that are still good are reused, not
 * repeated. Versions off the skew policy (render_cluster_version_skew) are a problem here,
 * as the controllers would refuse to create them. Every problem goes to errs; on failure
 * nothing is returned. now: seconds since the epoch, 0 for the wall clock. Returns 0 with
 * *ret_objects (caller frees), -EINVAL, -ENOENT (a component is missing), -ENOMEM.
 */
int render_cluster_all(const struct render_catalog *cat, const struct render_cluster *rc,
                       const struct render_source *src, int64_t now, cJSON **ret_objects,
                       struct api_errors *errs);

#endif
