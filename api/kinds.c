/* The kinds (api/kinds.h): the schema pieces every kind shares, NestedCluster, Cluster API's
 * Cluster, the printer columns and the kinds' metadata; the component kinds' schemas are in
 * kinds_component.c and NestedControlPlane's in kinds_ncp.c (api/kinds_internal.h). */

#include "api/kinds.h"

#include <errno.h>
#include <string.h>

#include "api/kinds_internal.h"
#include "api/quantity.h"

/* The tables are laid out by hand, one field per entry; keep the formatter off them. */
/* clang-format off */

const char *const api_served_versions[] = {API_VERSION_CAPN, API_VERSION_STORAGE, NULL};

const char *const api_capi_cluster_versions[] = {"v1beta2", "v1beta1", NULL};

const struct api_contract_label api_contract_labels[] = {
    {"cluster.x-k8s.io/v1alpha4", "v1alpha4_v1beta1"},
    {"cluster.x-k8s.io/v1beta1", "v1alpha4_v1beta1"},
    {"cluster.x-k8s.io/v1beta2", "v1alpha4_v1beta1"},
    {NULL, NULL},
};

/* ---- shared pieces ---- */

const struct api_schema api_kinds_string_item = {.type = API_SCHEMA_STRING};

/* ---- CEL rules the API server checks at admission (no catalog needed) ---- */

const struct api_schema_rule api_kinds_version_rules[] = {
    {"self.matches('^v?[0-9]+\\\\.[0-9]+\\\\.[0-9]+([-+][0-9A-Za-z.+-]*)?$')",
     "must be a version like 1.36.3 or v1.36.3"},
    {NULL, NULL},
};

const struct api_schema api_kinds_bool_item = {.type = API_SCHEMA_BOOLEAN};

const struct api_schema api_kinds_object_reference[] = {
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

const struct api_schema api_kinds_endpoint[] = {
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
const struct api_schema api_kinds_condition_item = {
    .type = API_SCHEMA_OBJECT, .props = condition_props,
    .description = "Condition describes one aspect of the observed state of the object."};

/* ---- NestedCluster ---- */

static const struct api_schema nc_spec_props[] = {
    OBJ("controlPlaneEndpoint", api_kinds_endpoint,
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
    OBJ("services", api_kinds_cidr_blocks,
        "Network ranges from which service VIPs are allocated: the default of the "
        "NestedControlPlane's spec.clusterNetwork.services."),
    OBJ("pods", api_kinds_cidr_blocks,
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
    OBJ("controlPlaneEndpoint", api_kinds_endpoint,
        "The endpoint of the control plane: the default of the NestedControlPlane's and the "
        "NestedCluster's spec.controlPlaneEndpoint."),
    OBJ("controlPlaneRef", api_kinds_object_reference,
        "Reference to the control plane object: the NestedControlPlane of this cluster."),
    OBJ("infrastructureRef", api_kinds_object_reference,
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
/* The stand-in serves no v1beta2. With one stored shape and conversion None, every stored
 * object must be valid at every served version, and Cluster API's v1beta1 and v1beta2 differ
 * where nestcp reads: v1beta1's references carry apiVersion (and namespace), v1beta2's require
 * apiGroup and have neither. A Cluster written at v1beta1 (the samples, clusterctl's templates)
 * would read at v1beta2 with no apiGroup, which no real v1beta2 Cluster lacks and which a v1beta2
 * write of it would have to add; only a conversion webhook can translate, as Cluster API's does.
 * nestcp reads v1beta1 where v1beta2 is not served (api_capi_cluster_versions). */
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
         &api_kinds_ncp_spec, &api_kinds_ncp_status, ncp_columns, true},
    [API_KIND_NESTED_ETCD] =
        {API_KIND_NESTED_ETCD, "NestedEtcd", API_GROUP_CONTROLPLANE, "nestedetcds",
         "nestedetcd", "NestedEtcdList", sn_netcd, categories, api_served_versions,
         API_VERSION_STORAGE, "NestedEtcd is the etcd cluster of a NestedControlPlane.",
         &api_kinds_etcd_spec, &api_kinds_etcd_status, component_columns, true},
    [API_KIND_NESTED_APISERVER] =
        {API_KIND_NESTED_APISERVER, "NestedAPIServer", API_GROUP_CONTROLPLANE,
         "nestedapiservers", "nestedapiserver", "NestedAPIServerList", sn_nkas, categories,
         api_served_versions, API_VERSION_STORAGE,
         "NestedAPIServer is the kube-apiserver of a NestedControlPlane.",
         &api_kinds_apiserver_spec, &api_kinds_apiserver_status, component_columns, true},
    [API_KIND_NESTED_CONTROLLER_MANAGER] =
        {API_KIND_NESTED_CONTROLLER_MANAGER, "NestedControllerManager", API_GROUP_CONTROLPLANE,
         "nestedcontrollermanagers", "nestedcontrollermanager", "NestedControllerManagerList",
         sn_nkcm, categories, api_served_versions, API_VERSION_STORAGE,
         "NestedControllerManager is the kube-controller-manager of a NestedControlPlane.",
         &api_kinds_kcm_spec, &api_kinds_kcm_status, component_columns, true},
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
