#include "api/kinds.h"

#include <errno.h>
#include <string.h>

#include "api/quantity.h"

/* The tables are laid out by hand, one field per entry; keep the formatter off them. */
/* clang-format off */

/* Shorthands for the tables below. */
#define STR(n, d) {.name = n, .type = API_SCHEMA_STRING, .description = d}
#define BOOL(n, d) {.name = n, .type = API_SCHEMA_BOOLEAN, .description = d}
#define INT32(n, d) \
    {.name = n, .type = API_SCHEMA_INTEGER, .flags = API_SCHEMA_INT32, .description = d}
#define INT64(n, d) \
    {.name = n, .type = API_SCHEMA_INTEGER, .flags = API_SCHEMA_INT64, .description = d}
#define OBJ(n, p, d) {.name = n, .type = API_SCHEMA_OBJECT, .props = p, .description = d}
#define ARR(n, i, d) {.name = n, .type = API_SCHEMA_ARRAY, .items = i, .description = d}
#define MAP(n, i, d) {.name = n, .type = API_SCHEMA_MAP, .items = i, .description = d}
#define END {.name = NULL}

const char *const api_served_versions[] = {API_VERSION_CAPN, API_VERSION_STORAGE, NULL};

const struct api_contract_label api_contract_labels[] = {
    {"cluster.x-k8s.io/v1alpha4", "v1alpha4_v1beta1"},
    {"cluster.x-k8s.io/v1beta1", "v1alpha4_v1beta1"},
    {"cluster.x-k8s.io/v1beta2", "v1alpha4_v1beta1"},
    {NULL, NULL},
};

/* ---- shared pieces ---- */

static const struct api_schema string_item = {.type = API_SCHEMA_STRING};

/* ---- CEL rules the API server checks at admission (no catalog needed) ---- */

static const struct api_schema_rule version_rules[] = {
    {"self.matches('^v?[0-9]+\\\\.[0-9]+\\\\.[0-9]+([-+][0-9A-Za-z.+-]*)?$')",
     "must be a version like 1.36.3 or v1.36.3"},
    {NULL, NULL},
};

static const struct api_schema_rule cidr_blocks_rules[] = {
    {"self.all(c, isCIDR(c))", "each block must be a CIDR such as 10.96.0.0/12 or fd00:10:96::/108"},
    {"self.size() < 2 || !isCIDR(self[0]) || !isCIDR(self[1]) || "
     "cidr(self[0]).ip().family() != cidr(self[1]).ip().family()",
     "two blocks must be one IPv4 and one IPv6 (dual-stack)"},
    {NULL, NULL},
};

static const struct api_schema_rule etcd_replicas_rules[] = {
    {"self % 2 == 1", "must be odd (1, 3, 5 or 7): an even member count adds no fault tolerance"},
    {NULL, NULL},
};

static const struct api_schema_rule etcd_storage_rules[] = {
    {"!(has(self.emptyDir) && has(self.persistentVolumeClaim))",
     "emptyDir and persistentVolumeClaim are mutually exclusive"},
    {NULL, NULL},
};

static const struct api_schema cidr_item = {.type = API_SCHEMA_STRING, .max_length = 64};
static const struct api_schema bool_item = {.type = API_SCHEMA_BOOLEAN};
static const struct api_schema quantity_item = {.type = API_SCHEMA_QUANTITY};
static const struct api_schema freeform_item = {.type = API_SCHEMA_FREEFORM};

static const struct api_schema object_reference[] = {
    STR("apiVersion", "API version of the referent, group/version (v1 for the core group)."),
    STR("fieldPath", "If referring to a piece of an object instead of an entire object, a "
                     "JSON/Go field access statement. nestcp neither sets nor reads it."),
    STR("kind", "Kind of the referent, e.g. NestedEtcd or Service."),
    STR("name", "Name of the referent, an object name in the referring object's namespace."),
    STR("namespace", "Namespace of the referent: empty or the referring object's own. "
                     "References are same-namespace, as Cluster API's are: nestcp looks "
                     "referents up there, and refuses a control plane's component reference "
                     "naming another namespace (Ready False, reason InvalidSpec)."),
    STR("resourceVersion", "Specific resourceVersion to which this reference is made, if any. "
                           "nestcp neither sets nor reads it."),
    STR("uid", "UID of the referent. nestcp neither sets nor reads it."),
    END,
};

static const struct api_schema api_endpoint[] = {
    {.name = "host", .type = API_SCHEMA_STRING, .flags = API_SCHEMA_REQUIRED,
     .description = "DNS name or IP address clients reach the API server at. Required when "
                    "controlPlaneEndpoint is given."},
    {.name = "port", .type = API_SCHEMA_INTEGER, .flags = API_SCHEMA_REQUIRED | API_SCHEMA_INT32,
     .description = "TCP port clients reach the API server at, 1-65535. Required when "
                    "controlPlaneEndpoint is given."},
    END,
};

static const char *const condition_status_enum[] = {"True", "False", "Unknown", NULL};

static const struct api_schema condition_props[] = {
    {.name = "type", .type = API_SCHEMA_STRING, .flags = API_SCHEMA_REQUIRED, .max_length = 256,
     .description = "Type of condition in CamelCase, at most 256 characters, e.g. Ready, "
                    "Progressing, Paused, Upgrading, CertificatesAvailable, MembersReady."},
    {.name = "status", .type = API_SCHEMA_STRING, .flags = API_SCHEMA_REQUIRED,
     .enums = condition_status_enum,
     .description = "Status of the condition, one of True, False, Unknown."},
    STR("severity", "Severity provides an explicit classification of Reason code, so users or "
                    "machines can immediately understand the current situation and act "
                    "accordingly (Error, Warning, Info). Only set when Status is False."),
    {.name = "reason", .type = API_SCHEMA_STRING, .max_length = 256,
     .description = "The reason for the condition's last transition in CamelCase, at most 256 "
                    "characters."},
    {.name = "message", .type = API_SCHEMA_STRING, .max_length = 10240,
     .description = "A human readable message indicating details about the transition, at most "
                    "10240 characters."},
    {.name = "lastTransitionTime", .type = API_SCHEMA_STRING, .flags = API_SCHEMA_DATETIME,
     .description = "Last time the condition transitioned from one status to another (RFC 3339)."},
    INT64("observedGeneration", "The metadata.generation the condition was computed from."),
    END,
};
static const struct api_schema condition_item = {
    .type = API_SCHEMA_OBJECT, .props = condition_props,
    .description = "Condition describes one aspect of the observed state of the object."};

#define CONDITIONS                                                                                 \
    ARR("conditions", &condition_item,                                                            \
        "Conditions of the object, Ready first, then by type: Ready summarises the others. "   \
        "Each carries type, status, reason, message, lastTransitionTime and "                   \
        "observedGeneration, and severity when False.")
#define OBSERVED_GENERATION                                                                        \
    INT64("observedGeneration", "The metadata.generation the controller last acted on.")

static const struct api_schema resources_props[] = {
    MAP("limits", &quantity_item,
        "Maximum compute resources of the component's container, resource name to Kubernetes "
        "quantity, e.g. cpu: 500m, memory: 512Mi. Not negative. Default: none."),
    MAP("requests", &quantity_item,
        "Compute resources the component's container requests, resource name to Kubernetes "
        "quantity, e.g. cpu: 100m, memory: 256Mi. Not negative, and not above the limit of the "
        "same resource. When omitted, Kubernetes uses the limits as requests."),
    END,
};

/* ---- the component kinds (NestedEtcd, NestedAPIServer, NestedControllerManager) ---- */

#define COMPONENT_COMMON_SPEC                                                                      \
    {.name = "version", .type = API_SCHEMA_STRING, .max_length = 64, .rules = version_rules,       \
     .description =                                                                                \
         "Version of the component to run, e.g. 1.36.3 or v1.36.3 (a -/+ suffix is allowed), "  \
         "at most 64 characters; it must be a version the installed packages know. For etcd it " \
         "is the etcd version, not older than the one the API servers' Kubernetes version "       \
         "needs; default: its channel's, else that version (the etcd the kube-apiserver "        \
         "package names). For kube-apiserver and kube-controller-manager it overrides the "      \
         "NestedControlPlane's spec.version for this component; default: the control plane's "   \
         "spec.version, else this component's channel, else (controller manager) the API "        \
         "server's version, else the stable channel's. The rollout refuses a downgrade, a jump "  \
         "of more than one minor version and a controller manager newer than the API servers or " \
         "more than one minor older (Upgrading False on the control plane)."},                     \
        STR("channel", "Channel (a file under the templates directory: stable or rapid) whose "  \
                       "version of this component to run (CAPN). Ignored when version is set, "   \
                       "and for kube-apiserver and kube-controller-manager also when the "        \
                       "NestedControlPlane sets spec.version. Default: none."),                   \
        ARR("patches", &freeform_item,                                                             \
            "Patches to this component's rendered objects, applied in order after extraArgs. "     \
            "Each is either a partial object whose apiVersion, kind and metadata.name (and "       \
            "metadata.namespace, if given) select the target, merged into it strategically, or "   \
            "{target: {kind, name, apiVersion, namespace}, type, patch} with type strategic "      \
            "(default), merge (patch is an RFC 7386 JSON merge patch object) or json (patch is "   \
            "an RFC 6902 JSON patch operation list). Strategic merge merges containers, volumes, " \
            "env and the like by name, ports by port number and args by flag. A patch that "       \
            "matches no object, fails (a JSON patch test), or changes an object's apiVersion, "    \
            "kind or name fails the render, as do changes the security rules forbid."),            \
        OBJ("resources", resources_props,                                                          \
            "Compute resources (requests and limits) of the component's container. Default: "    \
            "none."),                                                                              \
        MAP("extraArgs", &string_item,                                                             \
            "Extra command-line flags for the component's container, flag name without leading " \
            "dashes (no '=', no spaces) to value, e.g. v: \"4\". A flag given here replaces the "  \
            "one nestcp sets; other flags are appended in name order. It must be a flag of the "  \
            "binary at the version that runs; feature-gates is refused (use featureGates), and "   \
            "for etcd the flags its membership and data depend on (name, data-dir, "              \
            "initial-cluster*, listen-*-urls, ...)."),                                            \
        MAP("featureGates", &bool_item,                                                            \
            "Feature gates for this component, name to enabled. They override the "               \
            "NestedControlPlane's spec.featureGates gate by gate. Each must be a gate of the "     \
            "Kubernetes version the component runs and not locked to the other value. etcd has "  \
            "no feature gates: a NestedEtcd must leave this empty."),                              \
        STR("image", "Full image reference of the component's container, without whitespace. "  \
                     "Default: the image the version's package names, e.g. "                     \
                     "registry.k8s.io/kube-apiserver:v1.36.3.")

#define COMPONENT_COMMON_STATUS                                                                    \
    STR("phase", "Ready when the Ready condition is True, else Unready (CAPN)."),                 \
        BOOL("healthy", "True when the component's StatefulSet exists and all its replicas are "   \
                        "ready (CAPN)."),                                                          \
        ARR("errors", &string_item, "CAPN's list of errors. nestcp does not set it: problems are " \
                                    "in the conditions."),                                        \
        OBSERVED_GENERATION, CONDITIONS,                                                           \
        STR("version", "The version every replica runs, without a leading v: set once the "      \
                       "StatefulSet has completely rolled out to it."),                            \
        INT32("replicas", "Pods the component's StatefulSet has (its status.replicas)."),          \
        INT32("readyReplicas", "Pods of the StatefulSet that are ready."),                         \
        INT32("updatedReplicas", "Pods at the revision nestcp last rendered (version and "         \
                                 "config).")

static const struct api_schema emptydir_props[] = {
    {.name = "sizeLimit", .type = API_SCHEMA_QUANTITY,
     .description = "Most local storage the data directory may use, a positive Kubernetes "
                    "quantity, e.g. 2Gi. Default: no limit."},
    END,
};

static const struct api_schema pvc_props[] = {
    {.name = "size", .type = API_SCHEMA_QUANTITY, .def = "\"1Gi\"",
     .description = "Requested size of each member's claim, a positive Kubernetes quantity, "
                    "e.g. 8Gi. Default: 1Gi."},
    STR("storageClassName", "StorageClass of the claims, a DNS subdomain. Default: the "
                            "management cluster's default StorageClass."),
    END,
};

static const struct api_schema etcd_storage_props[] = {
    OBJ("emptyDir", emptydir_props,
        "Keep etcd data in an emptyDir volume: it survives container restarts but not the pod's "
        "deletion, so nestcp never rolls such an etcd (condition DataNotPersistent)."),
    OBJ("persistentVolumeClaim", pvc_props,
        "Keep etcd data in a PersistentVolumeClaim per member (StatefulSet "
        "volumeClaimTemplates), deleted with its member. The default when storage is not "
        "set."),
    END,
};

static const struct api_schema snapshot_claim_props[] = {
    STR("claimName", "Name of a PersistentVolumeClaim in the control plane's namespace, a DNS "
                     "subdomain, that the user provides."),
    END,
};

static const struct api_schema etcd_snapshots_props[] = {
    OBJ("persistentVolumeClaim", snapshot_claim_props,
        "Write snapshots to this claim: one file <name>.db per upgrade, named in the control "
        "plane's status.rollout.snapshot."),
    END,
};

static const struct api_schema etcd_spec_props[] = {
    COMPONENT_COMMON_SPEC,
    {.name = "replicas", .type = API_SCHEMA_INTEGER,
     .flags = API_SCHEMA_INT32 | API_SCHEMA_MIN | API_SCHEMA_MAX, .min = 1, .max = 7, .def = "1",
     .rules = etcd_replicas_rules,
     .description = "Number of etcd members: 1, 3, 5 or 7. Default: 1. Members are added "
                    "and removed one at a time through etcd's API."},
    {.name = "storage", .type = API_SCHEMA_OBJECT, .props = etcd_storage_props,
     .rules = etcd_storage_rules,
     .description =
         "Where etcd keeps its data: persistentVolumeClaim or emptyDir, not both. Default: "
         "persistentVolumeClaim, 1Gi per member in the default StorageClass (an etcd "
         "StatefulSet created earlier on emptyDir keeps it)."},
    OBJ("snapshots", etcd_snapshots_props,
        "Where nestcp writes an etcd snapshot before every etcd or API server version change; "
        "the change waits until the snapshot is complete. Default: no snapshots, and the "
        "control plane's status.rollout.snapshot says that none was taken."),
    END,
};

static const struct api_schema etcd_address_props[] = {
    STR("ip", "IP address of the member (CAPN). nestcp does not set it: members are addressed "
              "by hostname."),
    STR("hostname", "DNS name of the member: <cluster>-etcd-<ordinal>.<cluster>-etcd.<namespace>"
                    ".svc."),
    INT32("port", "etcd's client port, 2379."),
    END,
};
static const struct api_schema etcd_address_item = {
    .type = API_SCHEMA_OBJECT, .props = etcd_address_props,
    .description = "The client address of one etcd member."};

static const struct api_schema etcd_member_props[] = {
    STR("name", "The member's name, that of its pod: <cluster>-etcd-<ordinal>."),
    STR("id", "etcd's ID of the member, in decimal; absent until nestcp has listed it."),
    BOOL("learner",
         "True while the member is a learner: added, catching up, not yet voting (promoted "
         "once it is in sync)."),
    STR("dataUID",
        "The UID of the PersistentVolumeClaim (on emptyDir: of the pod) that held the "
        "member's data when nestcp started it; a member found on other storage has lost its "
        "data and is removed and added again, never started as a new cluster."),
    END,
};
static const struct api_schema etcd_member_item = {
    .type = API_SCHEMA_OBJECT, .props = etcd_member_props,
    .description = "One etcd member as nestcp last saw it, by ordinal."};

static const struct api_schema etcd_restore_props[] = {
    STR("snapshot", "The snapshot being or last restored (the annotation "
                    "etcd.nestcp.x-k8s.io/restore-snapshot)."),
    STR("phase", "Stopping (every member and its claim going), Restoring (the snapshot "
                 "written into member 0's new claim), Restored (member 0 started from it; the "
                 "others are added again one at a time)."),
    STR("restoredAt", "When member 0 was started from the snapshot (RFC 3339): every API "
                      "server and controller-manager pod older than this is restarted."),
    END,
};

static const struct api_schema etcd_snapshot_status_props[] = {
    STR("request", "The value of the annotation etcd.nestcp.x-k8s.io/snapshot it answers."),
    STR("name", "The snapshot's name: its file is <name>.db on the claim of spec.snapshots, "
                "written by the Job of that name; the name to restore it by."),
    STR("phase", "Taking, Complete or Failed."),
    STR("takenAt", "When it completed (RFC 3339)."),
    END,
};

static const struct api_schema etcd_status_props[] = {
    COMPONENT_COMMON_STATUS,
    ARR("addresses", &etcd_address_item,
        "The client addresses of the members, one per member of spec.replicas by ordinal."),
    STR("clusterID",
        "etcd's cluster ID in decimal, recorded when the cluster first formed. Members are only "
        "ever added to this cluster."),
    STR("adding",
        "The peer URL of the member nestcp is adding, recorded before etcd's MemberAdd, so a "
        "restarted manager neither adds it twice nor loses track of it."),
    ARR("members", &etcd_member_item,
        "The members by ordinal: membership changes go through etcd's API one member at a "
        "time (docs/upgrades.md)."),
    OBJ("restore", etcd_restore_props, "The last restore of etcd from a snapshot."),
    OBJ("snapshot", etcd_snapshot_status_props,
        "The last snapshot asked for with the annotation etcd.nestcp.x-k8s.io/snapshot."),
    END,
};

static const struct api_schema component_spec_props[] = {
    COMPONENT_COMMON_SPEC,
    {.name = "replicas", .type = API_SCHEMA_INTEGER,
     .flags = API_SCHEMA_INT32 | API_SCHEMA_MIN, .min = 1, .def = "1",
     .description = "Number of replicas of the component's StatefulSet, at least 1. "
                    "Default: 1."},
    END,
};

static const struct api_schema apiserver_status_props[] = {
    COMPONENT_COMMON_STATUS,
    OBJ("apiserverService", object_reference,
        "Reference to the Service <cluster>-apiserver, in this namespace, that fronts the "
        "kube-apiserver."),
    END,
};

static const struct api_schema controller_manager_status_props[] = {
    COMPONENT_COMMON_STATUS,
    END,
};

static const struct api_schema etcd_spec = OBJ("spec", etcd_spec_props,
    "NestedEtcdSpec defines the desired state of NestedEtcd.");
static const struct api_schema etcd_status = OBJ("status", etcd_status_props,
    "NestedEtcdStatus defines the observed state of NestedEtcd.");
static const struct api_schema apiserver_spec = OBJ("spec", component_spec_props,
    "NestedAPIServerSpec defines the desired state of NestedAPIServer.");
static const struct api_schema apiserver_status = OBJ("status", apiserver_status_props,
    "NestedAPIServerStatus defines the observed state of NestedAPIServer.");
static const struct api_schema kcm_spec = OBJ("spec", component_spec_props,
    "NestedControllerManagerSpec defines the desired state of NestedControllerManager.");
static const struct api_schema kcm_status = OBJ("status", controller_manager_status_props,
    "NestedControllerManagerStatus defines the observed state of NestedControllerManager.");

/* ---- NestedControlPlane ---- */

static const struct api_schema cidr_blocks[] = {
    {.name = "cidrBlocks", .type = API_SCHEMA_ARRAY, .items = &cidr_item,
     .flags = API_SCHEMA_MAX, .max = 2, .rules = cidr_blocks_rules,
     .description = "CIDR blocks with host bits zero, each at most 64 characters: at most "
                    "two, one IPv4 and one IPv6 (dual-stack)."},
    END,
};

static const struct api_schema cluster_network_props[] = {
    OBJ("services", cidr_blocks,
        "Network ranges from which service VIPs are allocated (kube-apiserver "
        "--service-cluster-ip-range). Each block holds 16 to 2^20 addresses (IPv4 /28 to /12, "
        "IPv6 /124 to /108). Default: the owner Cluster's spec.clusterNetwork.services, else "
        "10.96.0.0/12. Fixed once the cluster is set up: a later change is refused "
        "(ServiceCIDRChangeRefused)."),
    OBJ("pods", cidr_blocks,
        "Network ranges from which Pod networks are allocated (kube-controller-manager "
        "--cluster-cidr). They must not overlap a service block; with dual-stack services give "
        "one block per family or none. Default: the owner Cluster's, else 10.244.0.0/16 "
        "(192.168.0.0/16 when that overlaps a service block) for IPv4 services, plus "
        "fd00:10:244::/56 for IPv6 services."),
    STR("serviceDomain", "DNS domain of the tenant's services, a DNS subdomain. Default: the "
                         "owner Cluster's, else cluster.local."),
    END,
};

static const char *const key_algorithm_enum[] = {"ECDSA-P256", "ECDSA-P384", "RSA-2048",
                                                 "RSA-3072", "RSA-4096", NULL};

static const struct api_schema sa_key_props[] = {
    {.name = "maxTokenExpirationSeconds", .type = API_SCHEMA_INTEGER,
     .flags = API_SCHEMA_INT32 | API_SCHEMA_MIN | API_SCHEMA_MAX, .min = 3600, .max = 31536000,
     .def = "86400",
     .description = "The longest life of a service-account token the API servers issue "
                    "(kube-apiserver --service-account-max-token-expiration; tokens asked for "
                    "longer are cut to it, and --service-account-extend-token-expiration is "
                    "false so that no token outlives it): 3600 (the API server's minimum) to "
                    "31536000. Changing it rolls the API servers. Default: 86400 (a day)."},
    {.name = "rotationOverlapSeconds", .type = API_SCHEMA_INTEGER,
     .flags = API_SCHEMA_INT32 | API_SCHEMA_MIN | API_SCHEMA_MAX, .min = 0, .max = 31536000,
     .description = "How long, after every component signs with a new service-account key, "
                    "the API servers still accept tokens signed by the old one before it is "
                    "dropped: 0 to 31536000. Shorter than maxTokenExpirationSeconds cuts the "
                    "life of tokens issued before the rotation short. Default: "
                    "maxTokenExpirationSeconds."},
    END,
};

static const struct api_schema rotate_props[] = {
    {.name = "serviceAccountKey", .type = API_SCHEMA_STRING, .max_length = 63,
     .description = "Set to a new value (any string of at most 63 characters, e.g. a date) to "
                    "rotate the service-account signing key: the API servers first verify with "
                    "the old and a new key, then sign with the new one, and drop the old one "
                    "rotationOverlapSeconds later (docs/certificates.md). Refused while the "
                    "control plane upgrades or another rotation runs (condition "
                    "CertificatesRotating); taken up once that has finished. Default: none."},
    {.name = "clusterCA", .type = API_SCHEMA_STRING, .max_length = 63,
     .description = "Set to a new value to rotate the cluster CA with dual trust, in four "
                    "ordered rolls: every component trusts the old and a new CA; client "
                    "certificates and kubeconfigs are issued from the new one; then serving "
                    "certificates; then the old CA is dropped (docs/certificates.md). A "
                    "kubeconfig from before the rotation keeps working until the third roll. "
                    "Refused while the control plane upgrades, while another rotation runs "
                    "and for a CA nestcp did not make (condition CertificatesRotating). "
                    "Default: none."},
    {.name = "etcdCA", .type = API_SCHEMA_STRING, .max_length = 63,
     .description = "Set to a new value to rotate the etcd CA, as clusterCA rotates the "
                    "cluster CA; etcd members roll one at a time, keeping quorum. Default: none."},
    {.name = "frontProxyCA", .type = API_SCHEMA_STRING, .max_length = 63,
     .description = "Set to a new value to rotate the front-proxy CA, as clusterCA rotates the "
                    "cluster CA. Default: none."},
    END,
};

static const struct api_schema certificates_props[] = {
    {.name = "keyAlgorithm", .type = API_SCHEMA_STRING, .enums = key_algorithm_enum,
     .def = "\"ECDSA-P256\"",
     .description = "Key algorithm of the CAs, leaf certificates and service-account key. "
                    "Default: ECDSA-P256."},
    {.name = "validityDays", .type = API_SCHEMA_INTEGER,
     .flags = API_SCHEMA_INT32 | API_SCHEMA_MIN | API_SCHEMA_MAX, .min = 1, .max = 3650,
     .def = "365",
     .description = "Validity of leaf certificates and kubeconfigs, in days: 1 to 3650, not "
                    "more than caValidityDays. Default: 365."},
    {.name = "caValidityDays", .type = API_SCHEMA_INTEGER,
     .flags = API_SCHEMA_INT32 | API_SCHEMA_MIN | API_SCHEMA_MAX, .min = 1, .max = 36500,
     .def = "3650",
     .description = "Validity of the cluster's certificate authorities, in days: 1 to 36500. "
                    "Default: 3650."},
    {.name = "renewBeforeDays", .type = API_SCHEMA_INTEGER,
     .flags = API_SCHEMA_INT32 | API_SCHEMA_MIN | API_SCHEMA_MAX, .min = 1, .max = 3649,
     .def = "30",
     .description = "Renew a leaf certificate when fewer than this many days of validity "
                    "remain: 1 to 3649, less than validityDays. Default: 30."},
    ARR("extraSANs", &string_item,
        "Extra subject alternative names for the kube-apiserver serving certificate: DNS "
        "names (a leading *. allowed) or IP addresses. Default: none."),
    {.name = "serviceAccountKey", .type = API_SCHEMA_OBJECT, .props = sa_key_props, .def = "{}",
     .description = "Service-account tokens and the rotation of their signing key. Default: "
                    "every field at its default."},
    OBJ("rotate", rotate_props,
        "Requests a rotation of a key: changing a field's value starts one. Default: none."),
    END,
};

static const struct api_schema_rule allowed_cidrs_rules[] = {
    {"self.all(c, isCIDR(c))", "each entry must be a CIDR such as 203.0.113.0/24"},
    {NULL, NULL},
};

static const struct api_schema network_policy_props[] = {
    {.name = "enabled", .type = API_SCHEMA_BOOLEAN, .def = "true",
     .description =
         "Render a NetworkPolicy for etcd (peer port 2380 only from this cluster's etcd "
         "members; client port 2379 also from its API servers and the nestcp manager's pods; "
         "2381, probes and metrics, open) and one for the API server's port 6443 (see "
         "apiServerAllowedCIDRs). false: none, and those rendered before are deleted. Pods do "
         "not roll either way. Default: true."},
    {.name = "apiServerAllowedCIDRs", .type = API_SCHEMA_ARRAY, .items = &cidr_item,
     .flags = API_SCHEMA_MAX, .max = 64, .rules = allowed_cidrs_rules,
     .description =
         "At most 64 CIDRs (host bits zero) that may reach the API server's port, besides "
         "this cluster's own pods. Empty (the default): any source."},
    END,
};

static const struct api_schema ncp_spec_props[] = {
    OBJ("etcd", object_reference,
        "Reference to the NestedEtcd of this control plane (CAPN). When set, name is required, "
        "kind must be NestedEtcd and apiVersion in controlplane.cluster.x-k8s.io; the object "
        "is looked up by name in this namespace. Default: the one NestedEtcd in this namespace "
        "owned by this control plane or labelled cluster.x-k8s.io/cluster-name=<cluster>."),
    OBJ("apiserver", object_reference,
        "Reference to the NestedAPIServer of this control plane (CAPN). When set, name is "
        "required, kind must be NestedAPIServer and apiVersion in "
        "controlplane.cluster.x-k8s.io; the object is looked up by name in this namespace. "
        "Default: the one NestedAPIServer in this namespace owned by this control plane or "
        "labelled cluster.x-k8s.io/cluster-name=<cluster>."),
    OBJ("controllerManager", object_reference,
        "Reference to the NestedControllerManager of this control plane (CAPN). When set, name "
        "is required, kind must be NestedControllerManager and apiVersion in "
        "controlplane.cluster.x-k8s.io; the object is looked up by name in this namespace. "
        "Default: the one NestedControllerManager in this namespace owned by this control "
        "plane or labelled cluster.x-k8s.io/cluster-name=<cluster>."),
    {.name = "version", .type = API_SCHEMA_STRING, .max_length = 64, .rules = version_rules,
     .description =
         "The Kubernetes version of the control plane, e.g. 1.36.3 or v1.36.3 (a -/+ suffix is "
         "allowed), at most 64 characters. It must be a version the installed packages know; "
         "a line older than every shipped one is retired and refused (VersionUnsupported). "
         "Components without a version of their own follow it; changing "
         "it starts an upgrade, one minor version at a time: etcd, then kube-apiserver, then "
         "kube-controller-manager. Default: a component's own channel, else the version the "
         "stable channel (templates/stable) lists for kube-apiserver."},
    OBJ("controlPlaneEndpoint", api_endpoint,
        "The endpoint clients use to reach the control plane: the admin kubeconfig points at "
        "it and it is a subject alternative name of the API server's certificate. Default: "
        "the owner Cluster's spec.controlPlaneEndpoint, else "
        "<cluster>-apiserver.<namespace>.svc:6443, where <cluster> is the owner Cluster's name, "
        "else the label cluster.x-k8s.io/cluster-name, else this object's name."),
    OBJ("clusterNetwork", cluster_network_props,
        "The tenant cluster's service and pod networks and service domain. Each field "
        "defaults to the owner Cluster's spec.clusterNetwork, then to nestcp's default."),
    MAP("featureGates", &bool_item,
        "Feature gates of kube-apiserver and kube-controller-manager, name to enabled, e.g. "
        "MaxUnavailableStatefulSet: true. Names are letters and digits starting with an "
        "upper-case letter, and must be gates of the target Kubernetes version, not locked to "
        "the other value. A component's own featureGates override these gate by gate. "
        "Default: none."),
    {.name = "certificates", .type = API_SCHEMA_OBJECT, .props = certificates_props,
     .def = "{}",
     .description = "How nestcp issues the cluster's certificates and keys. Default: every "
                    "field at its default."},
    {.name = "networkPolicy", .type = API_SCHEMA_OBJECT, .props = network_policy_props,
     .def = "{}",
     .description = "NetworkPolicies nestcp renders for the control plane's pods. Default: "
                    "enabled, any source may reach the API server."},
    END,
};

static const struct api_schema rollout_component_props[] = {
    STR("version", "The version the component is being moved to, or runs (no leading v)."),
    STR("configHash", "SHA-256 (hex) of the component's rendered configuration at that "
                      "target."),
    STR("rolledBack", "Set while a roll to this target failed and is held back: which pod "
                      "failed and how. Every pod runs the last good revision again (the "
                      "StatefulSet's partition holds the update back); a change of the spec "
                      "rolls again."),
    END,
};

static const struct api_schema rollout_components_props[] = {
    OBJ("etcd", rollout_component_props, "Target of the etcd component."),
    OBJ("apiserver", rollout_component_props, "Target of the kube-apiserver component."),
    OBJ("controllerManager", rollout_component_props,
        "Target of the kube-controller-manager component."),
    END,
};

static const struct api_schema rollout_snapshot_props[] = {
    STR("name", "The snapshot's name: its file is <name>.db on the claim, written by the Job of "
                "that name."),
    STR("claimName", "The PersistentVolumeClaim it was written to; unset when none was taken."),
    STR("takenAt", "When the snapshot completed (RFC 3339)."),
    STR("before", "The version change it was taken before, e.g. \"kube-apiserver 1.36.3 -> "
                  "1.37.2\"."),
    STR("message", "Why no snapshot was taken, when none was."),
    END,
};

static const struct api_schema rollout_props[] = {
    STR("step", "The component the control plane is waiting on now: etcd, apiserver, "
                "controllerManager, or empty when nothing is rolling out."),
    STR("targetVersion", "The Kubernetes version being rolled out to the API servers."),
    OBJ("components", rollout_components_props,
        "Per component: the target version and config hash. Only the control plane's state "
        "machine changes a component's target."),
    OBJ("snapshot", rollout_snapshot_props,
        "The etcd snapshot taken before the last etcd or API server version change (NestedEtcd "
        "spec.snapshots), or why none was."),
    END,
};

static const struct api_schema etcd_addresses_props[] = {
    ARR("addresses", &etcd_address_item,
        "The client addresses of the etcd members, one per member by ordinal."),
    END,
};

static const struct api_schema ncp_apiserver_status_props[] = {
    STR("serviceCidr", "The service CIDR blocks the cluster was set up with, joined with ','. "
                       "Recorded when the control plane is first rolled out; "
                       "spec.clusterNetwork.services may not change from it."),
    END,
};

static const struct api_schema sa_key_status_props[] = {
    STR("rotation", "The spec.certificates.rotate.serviceAccountKey value last taken up."),
    STR("phase", "Where that rotation is: TrustingNewKey (1 of 3: the API servers roll to "
                 "verify tokens with the old and the new key), SigningWithNewKey (2 of 3: the "
                 "API servers, then the controller manager, roll to sign with the new key), "
                 "Overlap (tokens signed by the old key are still accepted until dropAfter), "
                 "DroppingOldKey (3 of 3: the API servers roll without the old key) or "
                 "Complete. The CertificatesRotating condition says what it waits for."),
    STR("signingSince", "When every component had rolled to sign with the new key (RFC 3339)."),
    STR("dropAfter", "When the old public key is dropped: signingSince plus "
                     "spec.certificates.serviceAccountKey.rotationOverlapSeconds (RFC 3339)."),
    END,
};

static const struct api_schema ca_rotation_status_props[] = {
    STR("rotation", "The spec.certificates.rotate value of this CA last taken up."),
    STR("phase", "Where that rotation is: TrustingNewCA (1 of 4: the components roll to trust "
                 "the old and the new CA), IssuingFromNewCA (2 of 4: to client certificates "
                 "and kubeconfigs from the new CA), ServingFromNewCA (3 of 4: to serving "
                 "certificates from the new CA), DroppingOldCA (4 of 4: to trusting only the "
                 "new CA) or Complete. The CertificatesRotating condition says what it waits "
                 "for."),
    END,
};

static const struct api_schema ncp_certificates_status_props[] = {
    OBJ("serviceAccountKey", sa_key_status_props,
        "The rotation of the service-account signing key."),
    OBJ("clusterCA", ca_rotation_status_props, "The rotation of the cluster CA."),
    OBJ("etcdCA", ca_rotation_status_props, "The rotation of the etcd CA."),
    OBJ("frontProxyCA", ca_rotation_status_props, "The rotation of the front-proxy CA."),
    END,
};

static const struct api_schema initialization_ncp_props[] = {
    BOOL("controlPlaneInitialized",
         "The same as status.initialized (Cluster API v1beta2 contract)."),
    END,
};

static const struct api_schema ncp_status_props[] = {
    BOOL("ready", "True when the control plane is initialized and serving: a quorum of etcd "
                  "members and at least one kube-apiserver and one kube-controller-manager "
                  "replica are ready (Cluster API contract, CAPN)."),
    BOOL("initialized", "True once every component first reached its desired version and "
                        "config; it stays true (Cluster API v1beta1 contract)."),
    OBJ("initialization", initialization_ncp_props, "Initialization progress (Cluster API "
                                                    "v1beta2 contract)."),
    BOOL("externalManagedControlPlane",
         "Always true: the control plane runs as pods, not on Machines (Cluster API "
         "contract)."),
    STR("version", "The Kubernetes version the API servers run, v-prefixed: set once their "
                   "StatefulSet has completely rolled out to it. A controller manager with a "
                   "version of its own may run one minor older (its status.version says)."),
    INT32("replicas", "Pods of the kube-apiserver StatefulSet."),
    INT32("readyReplicas", "Ready pods of the kube-apiserver StatefulSet."),
    INT32("updatedReplicas",
          "kube-apiserver pods at the version and config nestcp last rendered."),
    INT32("availableReplicas", "Available pods of the kube-apiserver StatefulSet (ready for "
                               "its minReadySeconds; Cluster API v1beta2 contract)."),
    INT32("upToDateReplicas", "The same as updatedReplicas (Cluster API v1beta2 contract)."),
    OBSERVED_GENERATION,
    CONDITIONS,
    STR("phase", "Where the control plane is in its life: Provisioning (not yet "
                 "initialized), Ready, Upgrading (a component moves to another version), "
                 "Reconfiguring (to another config at the same version), Failed (the spec is "
                 "invalid or its cluster name is taken: the Ready condition says why) or "
                 "Deleting."),
    STR("failureReason", "CAPN's and Cluster API's terminal failure reason. nestcp does not "
                         "set it: problems are in the conditions."),
    STR("failureMessage", "CAPN's and Cluster API's terminal failure message. nestcp does not "
                          "set it: problems are in the conditions."),
    OBJ("rollout", rollout_props,
        "The control plane's state machine: the current step and each component's target."),
    OBJ("etcd", etcd_addresses_props, "The etcd members the kube-apiserver uses (CAPN)."),
    OBJ("apiserver", ncp_apiserver_status_props, "Observed kube-apiserver settings (CAPN)."),
    OBJ("certificates", ncp_certificates_status_props, "Key rotations."),
    END,
};

static const struct api_schema ncp_spec = OBJ("spec", ncp_spec_props,
    "NestedControlPlaneSpec defines the desired state of NestedControlPlane.");
static const struct api_schema ncp_status = OBJ("status", ncp_status_props,
    "NestedControlPlaneStatus defines the observed state of NestedControlPlane.");

/* ---- NestedCluster ---- */

static const struct api_schema nc_spec_props[] = {
    OBJ("controlPlaneEndpoint", api_endpoint,
        "The endpoint used to communicate with the control plane. Default: the owner "
        "Cluster's spec.controlPlaneEndpoint."),
    END,
};

static const struct api_schema initialization_nc_props[] = {
    BOOL("provisioned", "True once status.ready has first been true; it stays true (Cluster "
                        "API v1beta2 contract)."),
    END,
};

static const struct api_schema nc_status_props[] = {
    BOOL("ready", "True when the NestedControlPlane is ready and initialized (Cluster API "
                  "contract)."),
    OBJ("initialization", initialization_nc_props,
        "Initialization progress (Cluster API v1beta2 contract)."),
    OBSERVED_GENERATION,
    CONDITIONS,
    END,
};

static const struct api_schema nc_spec = OBJ("spec", nc_spec_props,
    "NestedClusterSpec defines the desired state of NestedCluster.");
static const struct api_schema nc_status = OBJ("status", nc_status_props,
    "NestedClusterStatus defines the observed state of NestedCluster.");

/* ---- Cluster API Cluster (the fields nestcp reads) ---- */

static const struct api_schema capi_network_props[] = {
    INT32("apiServerPort", "Port the API server binds to. nestcp does not use it."),
    OBJ("services", cidr_blocks,
        "Network ranges from which service VIPs are allocated: the default of the "
        "NestedControlPlane's spec.clusterNetwork.services."),
    OBJ("pods", cidr_blocks,
        "Network ranges from which Pod networks are allocated: the default of the "
        "NestedControlPlane's spec.clusterNetwork.pods."),
    STR("serviceDomain", "Domain name for services: the default of the NestedControlPlane's "
                         "spec.clusterNetwork.serviceDomain."),
    END,
};

static const struct api_schema capi_spec_props[] = {
    BOOL("paused", "True pauses reconciliation: nestcp leaves this cluster's control plane as "
                   "it is (condition Paused) until it is false again."),
    OBJ("clusterNetwork", capi_network_props, "Cluster network configuration."),
    OBJ("controlPlaneEndpoint", api_endpoint,
        "The endpoint of the control plane: the default of the NestedControlPlane's and the "
        "NestedCluster's spec.controlPlaneEndpoint."),
    OBJ("controlPlaneRef", object_reference,
        "Reference to the control plane object: the NestedControlPlane of this cluster."),
    OBJ("infrastructureRef", object_reference,
        "Reference to the infrastructure object: the NestedCluster of this cluster."),
    END,
};

static const struct api_schema capi_spec = {
    .name = "spec", .type = API_SCHEMA_OBJECT, .flags = API_SCHEMA_PRESERVE,
    .props = capi_spec_props, .description = "ClusterSpec defines the desired state of Cluster."};
static const struct api_schema capi_status = {
    .name = "status", .type = API_SCHEMA_FREEFORM,
    .description = "ClusterStatus defines the observed state of Cluster."};

/* ---- printer columns ---- */

#define AGE_COLUMN {"Age", "date", ".metadata.creationTimestamp", "Time since creation.", 0}
#define READY_REASON_COLUMN                                                                        \
    {"Reason", "string", ".status.conditions[?(@.type==\"Ready\")].reason",                       \
     "Why the object is not ready.", 1}

static const struct api_printer_column nc_columns[] = {
    {"Ready", "boolean", ".status.ready", "The control plane is ready and initialized.", 0},
    READY_REASON_COLUMN,
    AGE_COLUMN,
    {NULL, NULL, NULL, NULL, 0},
};

static const struct api_printer_column ncp_columns[] = {
    {"Version", "string", ".status.version", "Kubernetes version every component runs.", 0},
    {"Ready", "boolean", ".status.ready", "Every component is ready.", 0},
    {"Initialized", "boolean", ".status.initialized", "The control plane accepts requests.", 1},
    {"Phase", "string", ".status.phase", "Provisioning, Ready, Upgrading, ...", 0},
    {"Step", "string", ".status.rollout.step", "The component a rollout waits on.", 1},
    READY_REASON_COLUMN,
    AGE_COLUMN,
    {NULL, NULL, NULL, NULL, 0},
};

static const struct api_printer_column component_columns[] = {
    {"Version", "string", ".status.version", "Version the ready replicas run.", 0},
    {"Replicas", "integer", ".status.replicas", "Replicas of the StatefulSet.", 1},
    {"Ready", "integer", ".status.readyReplicas", "Ready replicas.", 0},
    {"Phase", "string", ".status.phase", "Ready or Unready.", 0},
    READY_REASON_COLUMN,
    AGE_COLUMN,
    {NULL, NULL, NULL, NULL, 0},
};

static const struct api_printer_column capi_columns[] = {
    {"Phase", "string", ".status.phase", "Cluster lifecycle phase.", 0},
    AGE_COLUMN,
    {NULL, NULL, NULL, NULL, 0},
};

/* ---- the kinds ---- */

static const char *const categories[] = {"capi", "capn", "nestcp", NULL};
static const char *const capi_categories[] = {"cluster-api", NULL};
static const char *const capi_versions[] = {"v1alpha4", "v1beta1", NULL};
static const char *const sn_nc[] = {"nc", NULL};
static const char *const sn_ncp[] = {"ncp", NULL};
static const char *const sn_netcd[] = {"netcd", NULL};
static const char *const sn_nkas[] = {"nkas", NULL};
static const char *const sn_nkcm[] = {"nkcm", NULL};
static const char *const sn_cl[] = {"cl", NULL};

static const struct api_kind_info kinds[API_KIND_COUNT] = {
    [API_KIND_NESTED_CLUSTER] =
        {API_KIND_NESTED_CLUSTER, "NestedCluster", API_GROUP_INFRASTRUCTURE, "nestedclusters",
         "nestedcluster", "NestedClusterList", sn_nc, categories, api_served_versions,
         API_VERSION_STORAGE,
         "NestedCluster is the Cluster API infrastructure of a nested cluster: it has none of "
         "its own and reports ready once the NestedControlPlane is.",
         &nc_spec, &nc_status, nc_columns, true},
    [API_KIND_NESTED_CONTROL_PLANE] =
        {API_KIND_NESTED_CONTROL_PLANE, "NestedControlPlane", API_GROUP_CONTROLPLANE,
         "nestedcontrolplanes", "nestedcontrolplane", "NestedControlPlaneList", sn_ncp,
         categories, api_served_versions, API_VERSION_STORAGE,
         "NestedControlPlane is a tenant Kubernetes control plane (etcd, kube-apiserver, "
         "kube-controller-manager) run as StatefulSets in the management cluster.",
         &ncp_spec, &ncp_status, ncp_columns, true},
    [API_KIND_NESTED_ETCD] =
        {API_KIND_NESTED_ETCD, "NestedEtcd", API_GROUP_CONTROLPLANE, "nestedetcds",
         "nestedetcd", "NestedEtcdList", sn_netcd, categories, api_served_versions,
         API_VERSION_STORAGE, "NestedEtcd is the etcd cluster of a NestedControlPlane.",
         &etcd_spec, &etcd_status, component_columns, true},
    [API_KIND_NESTED_APISERVER] =
        {API_KIND_NESTED_APISERVER, "NestedAPIServer", API_GROUP_CONTROLPLANE,
         "nestedapiservers", "nestedapiserver", "NestedAPIServerList", sn_nkas, categories,
         api_served_versions, API_VERSION_STORAGE,
         "NestedAPIServer is the kube-apiserver of a NestedControlPlane.", &apiserver_spec,
         &apiserver_status, component_columns, true},
    [API_KIND_NESTED_CONTROLLER_MANAGER] =
        {API_KIND_NESTED_CONTROLLER_MANAGER, "NestedControllerManager", API_GROUP_CONTROLPLANE,
         "nestedcontrollermanagers", "nestedcontrollermanager", "NestedControllerManagerList",
         sn_nkcm, categories, api_served_versions, API_VERSION_STORAGE,
         "NestedControllerManager is the kube-controller-manager of a NestedControlPlane.",
         &kcm_spec, &kcm_status, component_columns, true},
    [API_KIND_CLUSTER] =
        {API_KIND_CLUSTER, "Cluster", API_GROUP_CLUSTER, "clusters", "cluster", "ClusterList",
         sn_cl, capi_categories, capi_versions, "v1beta1",
         "Cluster is Cluster API's cluster (a minimal definition for environments without "
         "Cluster API; nestcp only reads it).",
         &capi_spec, &capi_status, capi_columns, false},
};

/* clang-format on */

const struct api_kind_info *api_kind_info(enum api_kind k)
{
    return &kinds[k < API_KIND_COUNT ? k : 0];
}

int api_kind_lookup(const char *api_version, const char *kind, enum api_kind *ret)
{
    const char *slash;
    size_t glen;

    if (!api_version || !kind)
        return -ENOENT;
    slash = strchr(api_version, '/');
    if (!slash)
        return -ENOENT;
    glen = (size_t)(slash - api_version);
    for (int k = 0; k < API_KIND_COUNT; k++) {
        const struct api_kind_info *ki = &kinds[k];
        if (strcmp(ki->name, kind) != 0 || strlen(ki->group) != glen ||
            strncmp(ki->group, api_version, glen) != 0)
            continue;
        if (k == API_KIND_CLUSTER) {
            *ret = (enum api_kind)k;
            return 0;
        }
        for (const char *const *v = ki->versions; *v; v++) {
            if (strcmp(*v, slash + 1) == 0) {
                *ret = (enum api_kind)k;
                return 0;
            }
        }
        return -EPROTONOSUPPORT;
    }
    return -ENOENT;
}
