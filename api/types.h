#ifndef NESTCP_API_TYPES_H
#define NESTCP_API_TYPES_H

/*
 * C types for nestcp's kinds and the fields of Cluster API's Cluster that nestcp reads, and
 * their parsers. A parse type-checks the object against its schema (api/kinds.c), applies the
 * schema's static defaults, and copies every field into structs that own their memory.
 * Unknown fields are ignored. Every string member is NULL when the field is absent.
 *
 * Parsers return 0, -EINVAL (the problems, each with field path and value, appended to errs),
 * or -ENOMEM. *ret is written only on success; free it with the matching _free.
 */

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "api/errors.h"
#include "api/kinds.h"

struct api_kv {
    char *key;
    char *value;
};

/* A string-to-string map, sorted by key. */
struct api_strmap {
    struct api_kv *items;
    size_t n;
};

struct api_strlist {
    char **items;
    size_t n;
};

struct api_gate {
    char *name;
    bool enabled;
};

/* Feature gates, sorted by name. */
struct api_gates {
    struct api_gate *items;
    size_t n;
};

struct api_owner_ref {
    char *api_version, *kind, *name, *uid;
    bool controller;
};

struct api_meta {
    char *name, *namespace, *uid, *resource_version;
    int64_t generation;
    bool deleting; /* metadata.deletionTimestamp is set */
    struct api_strmap labels, annotations;
    struct api_owner_ref *owners;
    size_t n_owners;
    struct api_strlist finalizers;
};

/* corev1.ObjectReference. Absent when name is NULL. */
/* A reference: an ObjectReference (apiVersion, namespace, ...), or a Cluster API v1beta2
 * ContractVersionedObjectReference, which names the group alone (apiGroup) and is always in
 * the referring object's namespace. */
struct api_object_ref {
    char *api_version, *api_group, *kind, *name, *namespace, *uid, *resource_version, *field_path;
};

/* Cluster API APIEndpoint. Absent when host is NULL. */
struct api_endpoint {
    char *host;
    int32_t port;
};

struct api_condition {
    char *type, *status, *severity, *reason, *message;
    char *last_transition_time; /* RFC 3339 */
    int64_t observed_generation;
};

struct api_conditions {
    struct api_condition *items;
    size_t n;
};

/* Quantities are kept as the text the user wrote (a JSON number becomes its decimal text). */
struct api_resources {
    struct api_strmap limits, requests;
};

struct api_cluster_network {
    struct api_strlist services; /* cidrBlocks */
    struct api_strlist pods;     /* cidrBlocks */
    char *service_domain;
    int32_t api_server_port; /* Cluster only; 0 when absent */
};

enum api_key_algorithm {
    API_KEY_ECDSA_P256 = 0,
    API_KEY_ECDSA_P384,
    API_KEY_RSA_2048,
    API_KEY_RSA_3072,
    API_KEY_RSA_4096,
};

/* The longest life of a service-account token the API servers issue
 * (--service-account-max-token-expiration), and its bounds: the API server's minimum and a
 * year. */
#define API_SA_MAX_TOKEN_EXPIRATION_DEFAULT 86400
#define API_SA_MAX_TOKEN_EXPIRATION_MIN 3600
#define API_SA_MAX_TOKEN_EXPIRATION_MAX 31536000

/* The CAs a control plane rotates (besides the service-account key). */
enum api_ca { API_CA_CLUSTER = 0, API_CA_ETCD, API_CA_FRONT_PROXY, API_CA__COUNT };

struct api_certificates {
    enum api_key_algorithm key_algorithm;
    int32_t validity_days, ca_validity_days, renew_before_days;
    struct api_strlist extra_sans;
    /* serviceAccountKey.maxTokenExpirationSeconds and .rotationOverlapSeconds (default: the
     * former) */
    int32_t sa_max_token_expiration, sa_rotation_overlap;
    char *rotate_sa_key;            /* rotate.serviceAccountKey: a new value requests a rotation */
    char *rotate_ca[API_CA__COUNT]; /* rotate.clusterCA, .etcdCA, .frontProxyCA */
};

/* status.certificates.clusterCA, .etcdCA, .frontProxyCA: a CA's rotation
 * (controllers/carotation.h). */
struct api_ca_rotation_status {
    char *rotation; /* the rotate.<ca> value last taken up */
    char *phase;    /* TrustingNewCA, IssuingFromNewCA, ServingFromNewCA, DroppingOldCA, Complete */
};

/* status.certificates.serviceAccountKey: the service-account key rotation
 * (controllers/sakeyrotation.h). */
struct api_sa_key_status {
    char *rotation;      /* the rotate.serviceAccountKey value last taken up */
    char *phase;         /* TrustingNewKey, SigningWithNewKey, Overlap, DroppingOldKey, Complete */
    char *signing_since; /* RFC 3339: every component signs with the new key since */
    char *drop_after;    /* RFC 3339: the old public key is dropped after */
};

struct api_etcd_address {
    char *ip, *hostname;
    int32_t port;
};

/* One member of a tenant's etcd as NestedEtcd status.members records it. */
struct api_etcd_member_status {
    char *name;     /* the pod's, <c>-etcd-<i> */
    char *id;       /* etcd's member ID in decimal; NULL until listed */
    bool learner;   /* added, not yet promoted */
    char *data_uid; /* the claim (or, on emptyDir, the pod) its data lives in; NULL: unknown */
};

struct api_rollout_target {
    char *version, *config_hash;
    char *rolled_back; /* what failed, while a failed roll to config_hash is held back */
};

/* The etcd snapshot taken before the last etcd or API server version change
 * (controllers/snapshot.h); all NULL before the first such change. */
struct api_rollout_snapshot {
    char *name;       /* the snapshot Job's name; the file is <name>.db on the claim */
    char *claim_name; /* the PersistentVolumeClaim it was written to; NULL: none taken */
    char *taken_at;   /* RFC 3339: when its Job completed */
    char *before;     /* the change it precedes, e.g. "kube-apiserver 1.36.3 -> 1.37.2" */
    char *message;    /* why none was taken; NULL when one was */
};

struct api_rollout {
    char *step, *target_version;
    struct api_rollout_target etcd, apiserver, controller_manager;
    struct api_rollout_snapshot snapshot;
};

/* status.move: a move to another management cluster with an etcd snapshot
 * (controllers/ncpmove.h); all NULL before the first request. */
struct api_move_status {
    char *request;  /* the controlplane.nestcp.x-k8s.io/move value it is for */
    char *phase;    /* Stopping, Snapshotting, Ready, Failed, Moved */
    char *snapshot; /* the snapshot's name: its file is <snapshot>.db on the snapshots claim */
    char *message;  /* what it does or waits for, or why it failed */
};

/* ---- NestedControlPlane ---- */

struct api_network_policy {
    bool enabled;                       /* default true */
    struct api_strlist apiserver_cidrs; /* apiServerAllowedCIDRs; empty: any source */
};

struct api_control_plane_spec {
    struct api_object_ref etcd, apiserver, controller_manager;
    char *version;
    struct api_endpoint control_plane_endpoint;
    struct api_cluster_network cluster_network;
    struct api_gates feature_gates;
    struct api_certificates certificates;
    struct api_network_policy network_policy;
};

struct api_control_plane_status {
    bool ready, initialized;
    bool control_plane_initialized; /* initialization.controlPlaneInitialized */
    bool external_managed;          /* externalManagedControlPlane */
    char *version;                  /* v-prefixed */
    int32_t replicas, ready_replicas, updated_replicas;
    int32_t available_replicas, up_to_date_replicas; /* v1beta2 contract */
    int64_t observed_generation;
    struct api_conditions conditions;
    char *phase, *failure_reason, *failure_message;
    struct api_rollout rollout;
    struct api_etcd_address *etcd_addresses; /* status.etcd.addresses */
    size_t n_etcd_addresses;
    char *service_cidr;                              /* status.apiserver.serviceCidr */
    struct api_sa_key_status sa_key;                 /* status.certificates.serviceAccountKey */
    struct api_ca_rotation_status ca[API_CA__COUNT]; /* status.certificates.<ca> */
    struct api_move_status move;                     /* status.move */
};

struct api_control_plane {
    struct api_meta meta;
    struct api_control_plane_spec spec;
    struct api_control_plane_status status;
};

/* ---- NestedEtcd, NestedAPIServer, NestedControllerManager ---- */

enum api_storage_kind {
    API_STORAGE_UNSET = 0, /* neither given: a PersistentVolumeClaim of 1Gi, except for a
                              StatefulSet made before that default (render_cluster_resolve) */
    API_STORAGE_EMPTYDIR,
    API_STORAGE_PVC,
};

struct api_etcd_storage {
    enum api_storage_kind kind;
    bool both_set;            /* emptyDir and persistentVolumeClaim were both given */
    char *size_limit;         /* emptyDir.sizeLimit */
    char *size;               /* persistentVolumeClaim.size */
    char *storage_class_name; /* persistentVolumeClaim.storageClassName */
};

/* The most members a NestedEtcd may have (spec.replicas 1, 3, 5 or 7): its pods are the
 * StatefulSet's ordinals 0 to API_ETCD_MAX_MEMBERS - 1, and its server and peer certificates
 * name those. */
#define API_ETCD_MAX_MEMBERS 7

struct api_component_spec {
    char *version, *channel;
    cJSON *patches; /* an owned array of objects, or NULL */
    struct api_resources resources;
    int32_t replicas;
    struct api_strmap extra_args;
    struct api_gates feature_gates;
    char *image;
    struct api_etcd_storage storage; /* NestedEtcd only */
    /* NestedEtcd only: spec.snapshots.persistentVolumeClaim.claimName, the claim etcd
     * snapshots are written to before an upgrade; NULL: none are taken. */
    char *snapshot_claim;
};

struct api_component_status {
    char *phase;
    bool healthy;
    struct api_strlist errors;
    int64_t observed_generation;
    struct api_conditions conditions;
    char *version;
    int32_t replicas, ready_replicas, updated_replicas;
    struct api_etcd_address *addresses; /* NestedEtcd only */
    size_t n_addresses;
    /* NestedEtcd only: the cluster ID in decimal once the cluster formed, the peer URL of a
     * member about to be added, and each ordinal's member. */
    char *cluster_id, *adding;
    struct api_etcd_member_status *members;
    size_t n_members;
    /* NestedEtcd only: the last restore from a snapshot (controllers/etcdrestore.h): the
     * snapshot's name, its phase (Stopping, Restoring, Restored) and when etcd was started
     * from it; all NULL before the first. */
    char *restore_snapshot, *restore_phase, *restored_at;
    /* NestedEtcd only: the last snapshot asked for by annotation (controllers/etcdsnapshot.h):
     * the request, the snapshot's name, its phase (Taking, Complete, Failed), when it
     * completed; all NULL before the first. */
    char *snapshot_request, *snapshot_name, *snapshot_phase, *snapshot_taken_at;
    struct api_object_ref apiserver_service; /* NestedAPIServer only */
};

struct api_component {
    enum api_kind kind; /* API_KIND_NESTED_ETCD, _APISERVER or _CONTROLLER_MANAGER */
    struct api_meta meta;
    struct api_component_spec spec;
    struct api_component_status status;
};

/* ---- NestedCluster ---- */

struct api_nested_cluster_status {
    bool ready;
    bool provisioned; /* initialization.provisioned */
    int64_t observed_generation;
    struct api_conditions conditions;
};

struct api_nested_cluster {
    struct api_meta meta;
    struct api_endpoint control_plane_endpoint; /* spec */
    struct api_nested_cluster_status status;
};

/* ---- Cluster API Cluster (read only) ---- */

/* A Cluster as v1beta1 or v1beta2 serve it: the fields nestcp reads have the same paths in
 * both; the references are ObjectReferences in v1beta1 and {apiGroup, kind, name} in v1beta2. */
struct api_capi_cluster {
    struct api_meta meta;
    bool paused;
    struct api_cluster_network cluster_network;
    struct api_endpoint control_plane_endpoint;
    struct api_object_ref control_plane_ref, infrastructure_ref;
};

/* ---- parsing and freeing ---- */

int api_control_plane_from_json(const cJSON *obj, struct api_control_plane **ret,
                                struct api_errors *errs);
void api_control_plane_free(struct api_control_plane *ncp);

/* Parses a NestedEtcd, NestedAPIServer or NestedControllerManager (the kind field says which). */
int api_component_from_json(const cJSON *obj, struct api_component **ret, struct api_errors *errs);
void api_component_free(struct api_component *c);
/* Frees n members and the array. Accepts NULL. */
void api_etcd_members_free(struct api_etcd_member_status *m, size_t n);

int api_nested_cluster_from_json(const cJSON *obj, struct api_nested_cluster **ret,
                                 struct api_errors *errs);
void api_nested_cluster_free(struct api_nested_cluster *nc);

int api_capi_cluster_from_json(const cJSON *obj, struct api_capi_cluster **ret,
                               struct api_errors *errs);
void api_capi_cluster_free(struct api_capi_cluster *cl);

/* ---- small helpers ---- */

/* The value for key, or NULL. */
const char *api_strmap_get(const struct api_strmap *m, const char *key);
/* Sets key to value (copies both), keeping the map sorted. Returns 0 or -ENOMEM. */
int api_strmap_set(struct api_strmap *m, const char *key, const char *value);
void api_strmap_done(struct api_strmap *m);

/* Finds a gate; NULL when absent. */
const struct api_gate *api_gates_get(const struct api_gates *g, const char *name);
/* Sets a gate (copies name), keeping the list sorted. Returns 0 or -ENOMEM. */
int api_gates_set(struct api_gates *g, const char *name, bool enabled);
void api_gates_done(struct api_gates *g);

int api_strlist_add(struct api_strlist *l, const char *s);
void api_strlist_done(struct api_strlist *l);

void api_object_ref_done(struct api_object_ref *r);
/* The group a reference names: its apiGroup, else the group of its apiVersion ("" for the
 * core group, and for a reference with neither). Returns the length written to ret (at most
 * cap - 1 bytes), or -ENAMETOOLONG. */
int api_object_ref_group(const struct api_object_ref *r, char *ret, size_t cap);
void api_endpoint_done(struct api_endpoint *e);
void api_meta_done(struct api_meta *m);
void api_conditions_done(struct api_conditions *c);
void api_rollout_done(struct api_rollout *r);

/* The name the derived objects are named after (<cluster>-etcd, <cluster>-apiserver, ...): the
 * owner Cluster's name (ownerReference of kind Cluster in group cluster.x-k8s.io), else the
 * label cluster.x-k8s.io/cluster-name, else the object's own name. Borrowed. */
const char *api_meta_cluster_name(const struct api_meta *m);

/* True when the meta has the cluster.x-k8s.io/paused annotation. */
bool api_meta_paused(const struct api_meta *m);

/* The text of an algorithm as the API spells it ("ECDSA-P256"), and back (-EINVAL). */
const char *api_key_algorithm_name(enum api_key_algorithm a);
int api_key_algorithm_parse(const char *s, enum api_key_algorithm *ret);

/* The field of a CA under spec.certificates.rotate and status.certificates: "clusterCA",
 * "etcdCA", "frontProxyCA". */
const char *api_ca_field(enum api_ca ca);

/* The Service and StatefulSet name stem of a component: "etcd", "apiserver",
 * "controller-manager"; NULL for a kind that is not a component. */
const char *api_component_suffix(enum api_kind kind);

#endif
