/* The schemas of the component kinds (api/kinds_internal.h): NestedEtcd, NestedAPIServer and
 * NestedControllerManager, their specs and statuses. */

#include "api/kinds_internal.h"
#include "api/types.h"

/* The tables are laid out by hand, one field per entry; keep the formatter off them. */
/* clang-format off */

static const struct api_schema_rule etcd_replicas_rules[] = {
    {"self % 2 == 1", "must be odd (1, 3, 5 or 7): an even member count adds no fault tolerance"},
    {NULL, NULL},
};

static const struct api_schema_rule etcd_storage_rules[] = {
    {"!(has(self.emptyDir) && has(self.persistentVolumeClaim))",
     "emptyDir and persistentVolumeClaim are mutually exclusive"},
    {NULL, NULL},
};

static const struct api_schema quantity_item = {.type = API_SCHEMA_QUANTITY};
static const struct api_schema freeform_item = {.type = API_SCHEMA_FREEFORM};

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

#define COMPONENT_COMMON_SPEC                                                                      \
    {.name = "version", .type = API_SCHEMA_STRING, .max_length = 64,                              \
     .rules = api_kinds_version_rules,                                                             \
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
        MAP("extraArgs", &api_kinds_string_item,                                                   \
            "Extra command-line flags for the component's container, flag name without leading " \
            "dashes (no '=', no spaces) to value, e.g. v: \"4\". A flag given here replaces the "  \
            "one nestcp sets; other flags are appended in name order. It must be a flag of the "  \
            "binary at the version that runs; feature-gates is refused (use featureGates), and "   \
            "for etcd the flags its membership and data depend on (name, data-dir, "              \
            "initial-cluster*, listen-*-urls, ...)."),                                            \
        MAP("featureGates", &api_kinds_bool_item,                                                  \
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
        ARR("errors", &api_kinds_string_item,                                                      \
            "CAPN's list of errors. nestcp does not set it: problems are in the conditions."),    \
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
     .flags = API_SCHEMA_INT32 | API_SCHEMA_MIN | API_SCHEMA_MAX, .min = 1,
     .max = API_ETCD_MAX_MEMBERS, .def = "1", .rules = etcd_replicas_rules,
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
const struct api_schema api_kinds_etcd_address_item = {
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
    ARR("addresses", &api_kinds_etcd_address_item,
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
    OBJ("apiserverService", api_kinds_object_reference,
        "Reference to the Service <cluster>-apiserver, in this namespace, that fronts the "
        "kube-apiserver."),
    END,
};

static const struct api_schema controller_manager_status_props[] = {
    COMPONENT_COMMON_STATUS,
    END,
};

const struct api_schema api_kinds_etcd_spec = OBJ("spec", etcd_spec_props,
    "NestedEtcdSpec defines the desired state of NestedEtcd.");
const struct api_schema api_kinds_etcd_status = OBJ("status", etcd_status_props,
    "NestedEtcdStatus defines the observed state of NestedEtcd.");
const struct api_schema api_kinds_apiserver_spec = OBJ("spec", component_spec_props,
    "NestedAPIServerSpec defines the desired state of NestedAPIServer.");
const struct api_schema api_kinds_apiserver_status = OBJ("status", apiserver_status_props,
    "NestedAPIServerStatus defines the observed state of NestedAPIServer.");
const struct api_schema api_kinds_kcm_spec = OBJ("spec", component_spec_props,
    "NestedControllerManagerSpec defines the desired state of NestedControllerManager.");
const struct api_schema api_kinds_kcm_status = OBJ("status", controller_manager_status_props,
    "NestedControllerManagerStatus defines the observed state of NestedControllerManager.");

/* clang-format on */
