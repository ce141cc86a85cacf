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
    STR("apiVersion", "API version of the referent."),
    STR("fieldPath", "If referring to a piece of an object instead of an entire object, this "
                     "string should contain a valid JSON/Go field access statement. Unused."),
    STR("kind", "Kind of the referent."),
    STR("name", "Name of the referent. nestcp looks the object up by this name in the "
                "referring object's namespace."),
    STR("namespace", "Namespace of the referent. Ignored: the referent must be in the "
                     "referring object's namespace."),
    STR("resourceVersion", "Specific resourceVersion to which this reference is made, if any."),
    STR("uid", "UID of the referent."),
    END,
};

static const struct api_schema api_endpoint[] = {
    {.name = "host", .type = API_SCHEMA_STRING, .flags = API_SCHEMA_REQUIRED,
     .description = "The hostname or IP address on which the API server is serving."},
    {.name = "port", .type = API_SCHEMA_INTEGER, .flags = API_SCHEMA_REQUIRED | API_SCHEMA_INT32,
     .description = "The port on which the API server is serving."},
    END,
};

static const char *const condition_status_enum[] = {"True", "False", "Unknown", NULL};

static const struct api_schema condition_props[] = {
    {.name = "type", .type = API_SCHEMA_STRING, .flags = API_SCHEMA_REQUIRED, .max_length = 256,
     .description = "Type of condition in CamelCase, e.g. Ready, Available, EtcdAvailable."},
    {.name = "status", .type = API_SCHEMA_STRING, .flags = API_SCHEMA_REQUIRED,
     .enums = condition_status_enum,
     .description = "Status of the condition, one of True, False, Unknown."},
    STR("severity", "Severity provides an explicit classification of Reason code, so users or "
                    "machines can immediately understand the current situation and act "
                    "accordingly (Error, Warning, Info). Only set when Status is False."),
    {.name = "reason", .type = API_SCHEMA_STRING, .max_length = 256,
     .description = "The reason for the condition's last transition in CamelCase."},
    {.name = "message", .type = API_SCHEMA_STRING, .max_length = 10240,
     .description = "A human readable message indicating details about the transition."},
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
        "Conditions of the object: Ready summarises the others. Each carries type, status, "     \
        "reason, message, lastTransitionTime and observedGeneration.")
#define OBSERVED_GENERATION                                                                        \
    INT64("observedGeneration", "The metadata.generation the controller last acted on.")

static const struct api_schema resources_props[] = {
    MAP("limits", &quantity_item,
        "Limits describes the maximum amount of compute resources allowed, e.g. cpu: 500m, "
        "memory: 512Mi."),
    MAP("requests", &quantity_item,
        "Requests describes the minimum amount of compute resources required. If Requests is "
        "omitted for a container, it defaults to Limits if that is explicitly specified."),
    END,
};

/* ---- the component kinds (NestedEtcd, NestedAPIServer, NestedControllerManager) ---- */

#define COMPONENT_COMMON_SPEC                                                                      \
    {.name = "version", .type = API_SCHEMA_STRING, .max_length = 64, .rules = version_rules,       \
     .description =                                                                                \
         "Version of the component to run, e.g. 1.36.3 (a leading v is accepted). For etcd it "  \
         "is the etcd version and defaults to the one the cluster's Kubernetes version needs; "   \
         "for kube-apiserver and kube-controller-manager it must be empty or equal to the "        \
         "NestedControlPlane's spec.version."},                                                    \
        STR("channel", "Channel that can be used to resolve a specific version, e.g. stable. "   \
                       "Ignored if version is specified. Kept for CAPN compatibility."),          \
        ARR("patches", &freeform_item,                                                             \
            "Patches applied to the rendered objects of this component, each a strategic-merge "  \
            "patch object with apiVersion, kind and metadata.name selecting its target."),        \
        OBJ("resources", resources_props,                                                          \
            "Resources defines the amount of computing resources that will be used by this "      \
            "component's container."),                                                             \
        MAP("extraArgs", &string_item,                                                             \
            "Extra command-line flags for the component, flag name (without leading dashes) to "  \
            "value. A flag given here replaces the one nestcp would set."),                       \
        MAP("featureGates", &bool_item,                                                            \
            "Feature gates for this component, name to enabled. They override the "               \
            "NestedControlPlane's spec.featureGates gate by gate."),                               \
        STR("image", "Container image of the component. Defaults to the image the version's "    \
                     "package names.")

#define COMPONENT_COMMON_STATUS                                                                    \
    STR("phase", "Phase of the component: Ready or Unready (CAPN compatible)."),                  \
        BOOL("healthy", "True when every replica is ready at the desired version and config."),   \
        ARR("errors", &string_item, "Errors found while reconciling the component."),            \
        OBSERVED_GENERATION, CONDITIONS,                                                           \
        STR("version", "The version every ready replica runs (no leading v)."),                   \
        INT32("replicas", "Replicas the component's StatefulSet has."),                            \
        INT32("readyReplicas", "Replicas that are ready."),                                        \
        INT32("updatedReplicas", "Replicas at the current revision (version and config).")

static const struct api_schema emptydir_props[] = {
    {.name = "sizeLimit", .type = API_SCHEMA_QUANTITY,
     .description = "Total amount of local storage the data directory may use, e.g. 2Gi."},
    END,
};

static const struct api_schema pvc_props[] = {
    {.name = "size", .type = API_SCHEMA_QUANTITY, .def = "\"1Gi\"",
     .description = "Requested size of each replica's volume, e.g. 8Gi."},
    STR("storageClassName", "StorageClass of the claims; empty means the cluster's default "
                            "StorageClass."),
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

static const struct api_schema etcd_spec_props[] = {
    COMPONENT_COMMON_SPEC,
    {.name = "replicas", .type = API_SCHEMA_INTEGER,
     .flags = API_SCHEMA_INT32 | API_SCHEMA_MIN | API_SCHEMA_MAX, .min = 1, .max = 7, .def = "1",
     .rules = etcd_replicas_rules,
     .description = "Number of etcd members: an odd number from 1 to 7."},
    {.name = "storage", .type = API_SCHEMA_OBJECT, .props = etcd_storage_props,
     .rules = etcd_storage_rules,
     .description =
         "Where etcd keeps its data: persistentVolumeClaim (default: 1Gi per member in the "
         "cluster's default StorageClass) or emptyDir, not both."},
    END,
};

static const struct api_schema etcd_address_props[] = {
    STR("ip", "IP Address of the etcd instance."),
    STR("hostname", "Hostname of the etcd instance."),
    INT32("port", "Port of the etcd instance."),
    END,
};
static const struct api_schema etcd_address_item = {
    .type = API_SCHEMA_OBJECT, .props = etcd_address_props,
    .description = "NestedEtcdAddress defines the observed addresses for etcd."};

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

static const struct api_schema etcd_status_props[] = {
    COMPONENT_COMMON_STATUS,
    ARR("addresses", &etcd_address_item, "How to address the etcd members."),
    STR("clusterID",
        "etcd's cluster ID in decimal, recorded when the cluster first formed. Members are only "
        "ever added to this cluster."),
    STR("adding",
        "The peer URL of the member nestcp is adding, recorded before etcd's MemberAdd, so a "
        "restarted manager neither adds it twice nor loses track of it."),
    ARR("members", &etcd_member_item,
        "The members by ordinal: membership changes go through etcd's API one member at a "
        "time (docs/upgrades.md)."),
    END,
};

static const struct api_schema component_spec_props[] = {
    COMPONENT_COMMON_SPEC,
    {.name = "replicas", .type = API_SCHEMA_INTEGER,
     .flags = API_SCHEMA_INT32 | API_SCHEMA_MIN, .min = 1, .def = "1",
     .description = "Number of replicas of the component's StatefulSet (at least 1)."},
    END,
};

static const struct api_schema apiserver_status_props[] = {
    COMPONENT_COMMON_STATUS,
    OBJ("apiserverService", object_reference,
        "Reference to the Service <cluster>-apiserver that fronts the kube-apiserver."),
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
     .description = "CIDR blocks, at most one IPv4 and one IPv6 (dual-stack)."},
    END,
};

static const struct api_schema cluster_network_props[] = {
    OBJ("services", cidr_blocks,
        "Network ranges from which service VIPs are allocated. Default 10.96.0.0/12, or the "
        "owner Cluster's spec.clusterNetwork.services. The block must hold 16 to 2^20 "
        "addresses."),
    OBJ("pods", cidr_blocks,
        "Network ranges from which Pod networks are allocated (passed to "
        "kube-controller-manager --cluster-cidr). Default: the owner Cluster's, else none."),
    STR("serviceDomain", "Domain name for services. Default cluster.local, or the owner "
                         "Cluster's."),
    END,
};

static const char *const key_algorithm_enum[] = {"ECDSA-P256", "ECDSA-P384", "RSA-2048",
                                                 "RSA-3072", "RSA-4096", NULL};

static const struct api_schema certificates_props[] = {
    {.name = "keyAlgorithm", .type = API_SCHEMA_STRING, .enums = key_algorithm_enum,
     .def = "\"ECDSA-P256\"",
     .description = "Key algorithm of the CAs, leaf certificates and service-account key."},
    {.name = "validityDays", .type = API_SCHEMA_INTEGER,
     .flags = API_SCHEMA_INT32 | API_SCHEMA_MIN | API_SCHEMA_MAX, .min = 1, .max = 3650,
     .def = "365", .description = "Validity of leaf certificates and kubeconfigs, in days."},
    {.name = "caValidityDays", .type = API_SCHEMA_INTEGER,
     .flags = API_SCHEMA_INT32 | API_SCHEMA_MIN | API_SCHEMA_MAX, .min = 1, .max = 36500,
     .def = "3650", .description = "Validity of the cluster's certificate authorities, in days."},
    {.name = "renewBeforeDays", .type = API_SCHEMA_INTEGER,
     .flags = API_SCHEMA_INT32 | API_SCHEMA_MIN | API_SCHEMA_MAX, .min = 1, .max = 3649,
     .def = "30",
     .description = "Renew a leaf certificate when fewer than this many days of validity "
                    "remain. Must be less than validityDays."},
    ARR("extraSANs", &string_item,
        "Extra subject alternative names (DNS names or IP addresses) for the kube-apiserver "
        "serving certificate."),
    END,
};

static const struct api_schema_rule allowed_cidrs_rules[] = {
    {"self.all(c, isCIDR(c))", "each entry must be a CIDR such as 203.0.113.0/24"},
    {NULL, NULL},
};

static const struct api_schema network_policy_props[] = {
    {.name = "enabled", .type = API_SCHEMA_BOOLEAN, .def = "true",
     .description =
         "Render a NetworkPolicy for etcd (client and peer ports reachable only from this "
         "cluster's etcd members and API servers, and from the nestcp manager) and one for the "
         "API server. false: none, and those rendered before are deleted."},
    {.name = "apiServerAllowedCIDRs", .type = API_SCHEMA_ARRAY, .items = &cidr_item,
     .flags = API_SCHEMA_MAX, .max = 64, .rules = allowed_cidrs_rules,
     .description =
         "Source address ranges that may reach the API server's port, besides this cluster's "
         "own components. Empty (the default): any source."},
    END,
};

static const struct api_schema ncp_spec_props[] = {
    OBJ("etcd", object_reference, "Reference to the NestedEtcd of this control plane."),
    OBJ("apiserver", object_reference,
        "Reference to the NestedAPIServer of this control plane."),
    OBJ("controllerManager", object_reference,
        "Reference to the NestedControllerManager of this control plane."),
    {.name = "version", .type = API_SCHEMA_STRING, .max_length = 64, .rules = version_rules,
     .description =
         "The Kubernetes version of the control plane, e.g. 1.36.3 or v1.36.3. Every component "
         "follows it; changing it starts an upgrade (etcd, then kube-apiserver, then "
         "kube-controller-manager). Default: the stable channel's version."},
    OBJ("controlPlaneEndpoint", api_endpoint,
        "The endpoint clients use to reach the control plane. Default: the owner Cluster's "
        "spec.controlPlaneEndpoint, else <cluster>-apiserver.<namespace>:6443."),
    OBJ("clusterNetwork", cluster_network_props,
        "The tenant cluster's service and pod networks and service domain."),
    MAP("featureGates", &bool_item,
        "Feature gates for every component, name to enabled, e.g. MaxUnavailableStatefulSet: true. "
        "A component's own featureGates override these gate by gate."),
    {.name = "certificates", .type = API_SCHEMA_OBJECT, .props = certificates_props,
     .def = "{}",
     .description = "How nestcp issues the cluster's certificates and keys."},
    {.name = "networkPolicy", .type = API_SCHEMA_OBJECT, .props = network_policy_props,
     .def = "{}",
     .description = "NetworkPolicies nestcp renders for the control plane's pods (on by "
                    "default)."},
    END,
};

static const struct api_schema rollout_component_props[] = {
    STR("version", "The version the component is being moved to, or runs."),
    STR("configHash", "Hash of the component's rendered configuration at that target."),
    END,
};

static const struct api_schema rollout_components_props[] = {
    OBJ("etcd", rollout_component_props, "Target of the etcd component."),
    OBJ("apiserver", rollout_component_props, "Target of the kube-apiserver component."),
    OBJ("controllerManager", rollout_component_props,
        "Target of the kube-controller-manager component."),
    END,
};

static const struct api_schema rollout_props[] = {
    STR("step", "The component the control plane is waiting on now: etcd, apiserver, "
                "controllerManager, or empty when nothing is rolling out."),
    STR("targetVersion", "The Kubernetes version the rollout moves to."),
    OBJ("components", rollout_components_props,
        "Per component: the target version and config hash. Only the control plane's state "
        "machine changes a component's target."),
    END,
};

static const struct api_schema etcd_addresses_props[] = {
    ARR("addresses", &etcd_address_item, "How to address the etcd members."),
    END,
};

static const struct api_schema ncp_apiserver_status_props[] = {
    STR("serviceCidr", "The service CIDR of the tenant cluster."),
    END,
};

static const struct api_schema initialization_ncp_props[] = {
    BOOL("controlPlaneInitialized",
         "True once the control plane can accept requests (Cluster API contract)."),
    END,
};

static const struct api_schema ncp_status_props[] = {
    BOOL("ready", "True when every component is ready (Cluster API contract, CAPN "
                  "compatible)."),
    BOOL("initialized", "True once the control plane has served its first request (Cluster "
                        "API v1beta1 contract)."),
    OBJ("initialization", initialization_ncp_props, "Initialization progress (Cluster API "
                                                    "v1beta2 contract)."),
    BOOL("externalManagedControlPlane",
         "Always true: the control plane runs as pods, not on Machines (Cluster API "
         "contract)."),
    STR("version", "The Kubernetes version every control-plane component runs, v-prefixed."),
    INT32("replicas", "Replicas of the control plane's kube-apiserver."),
    INT32("readyReplicas", "Ready replicas of the control plane's kube-apiserver."),
    INT32("updatedReplicas",
          "kube-apiserver replicas at the current version and config."),
    OBSERVED_GENERATION,
    CONDITIONS,
    STR("phase", "Where the control plane is in its life: Provisioning, Ready, Upgrading, "
                 "Reconfiguring, Failed, Deleting."),
    STR("failureReason", "A terse, machine-readable reason for a failure that needs a human."),
    STR("failureMessage", "A human-readable description of that failure."),
    OBJ("rollout", rollout_props,
        "The control plane's state machine: the current step and each component's target."),
    OBJ("etcd", etcd_addresses_props, "The etcd members the kube-apiserver uses."),
    OBJ("apiserver", ncp_apiserver_status_props, "Observed kube-apiserver settings."),
    END,
};

static const struct api_schema ncp_spec = OBJ("spec", ncp_spec_props,
    "NestedControlPlaneSpec defines the desired state of NestedControlPlane.");
static const struct api_schema ncp_status = OBJ("status", ncp_status_props,
    "NestedControlPlaneStatus defines the observed state of NestedControlPlane.");

/* ---- NestedCluster ---- */

static const struct api_schema nc_spec_props[] = {
    OBJ("controlPlaneEndpoint", api_endpoint,
        "ControlPlaneEndpoint represents the endpoint used to communicate with the control "
        "plane."),
    END,
};

static const struct api_schema initialization_nc_props[] = {
    BOOL("provisioned", "True once the infrastructure is ready (Cluster API v1beta2 "
                        "contract)."),
    END,
};

static const struct api_schema nc_status_props[] = {
    BOOL("ready", "True when the NestedControlPlane is ready and initialized (Cluster API "
                  "contract)."),
    OBJ("initialization", initialization_nc_props, "Initialization progress."),
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
    INT32("apiServerPort", "Port the API server binds to."),
    OBJ("services", cidr_blocks, "Network ranges from which service VIPs are allocated."),
    OBJ("pods", cidr_blocks, "Network ranges from which Pod networks are allocated."),
    STR("serviceDomain", "Domain name for services."),
    END,
};

static const struct api_schema capi_spec_props[] = {
    BOOL("paused", "Paused can be used to prevent controllers from processing the Cluster."),
    OBJ("clusterNetwork", capi_network_props, "Cluster network configuration."),
    OBJ("controlPlaneEndpoint", api_endpoint, "The endpoint of the control plane."),
    OBJ("controlPlaneRef", object_reference, "Reference to the control plane object."),
    OBJ("infrastructureRef", object_reference, "Reference to the infrastructure object."),
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
