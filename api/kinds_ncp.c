/* The schema of NestedControlPlane (api/kinds_internal.h): its spec (cluster network, component
 * references, certificates, network policy) and its status (the rollout, the rotations). */

#include "api/kinds_internal.h"

/* The tables are laid out by hand, one field per entry; keep the formatter off them. */
/* clang-format off */

static const struct api_schema_rule cidr_blocks_rules[] = {
    {"self.all(c, isCIDR(c))", "each block must be a CIDR such as 10.96.0.0/12 or fd00:10:96::/108"},
    {"self.size() < 2 || !isCIDR(self[0]) || !isCIDR(self[1]) || "
     "cidr(self[0]).ip().family() != cidr(self[1]).ip().family()",
     "two blocks must be one IPv4 and one IPv6 (dual-stack)"},
    {NULL, NULL},
};

static const struct api_schema cidr_item = {.type = API_SCHEMA_STRING, .max_length = 64};


const struct api_schema api_kinds_cidr_blocks[] = {
    {.name = "cidrBlocks", .type = API_SCHEMA_ARRAY, .items = &cidr_item,
     .flags = API_SCHEMA_MAX, .max = 2, .rules = cidr_blocks_rules,
     .description = "CIDR blocks with host bits zero, each at most 64 characters: at most "
                    "two, one IPv4 and one IPv6 (dual-stack)."},
    END,
};

static const struct api_schema cluster_network_props[] = {
    OBJ("services", api_kinds_cidr_blocks,
        "Network ranges from which service VIPs are allocated (kube-apiserver "
        "--service-cluster-ip-range). Each block holds 16 to 2^20 addresses (IPv4 /28 to /12, "
        "IPv6 /124 to /108). Default: the owner Cluster's spec.clusterNetwork.services, else "
        "10.96.0.0/12. Fixed once the cluster is set up: a later change is refused "
        "(ServiceCIDRChangeRefused)."),
    OBJ("pods", api_kinds_cidr_blocks,
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
    ARR("extraSANs", &api_kinds_string_item,
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
    OBJ("etcd", api_kinds_object_reference,
        "Reference to the NestedEtcd of this control plane (CAPN). When set, name is required, "
        "kind must be NestedEtcd and apiVersion in controlplane.cluster.x-k8s.io; the object "
        "is looked up by name in this namespace. Default: the one NestedEtcd in this namespace "
        "owned by this control plane or labelled cluster.x-k8s.io/cluster-name=<cluster>."),
    OBJ("apiserver", api_kinds_object_reference,
        "Reference to the NestedAPIServer of this control plane (CAPN). When set, name is "
        "required, kind must be NestedAPIServer and apiVersion in "
        "controlplane.cluster.x-k8s.io; the object is looked up by name in this namespace. "
        "Default: the one NestedAPIServer in this namespace owned by this control plane or "
        "labelled cluster.x-k8s.io/cluster-name=<cluster>."),
    OBJ("controllerManager", api_kinds_object_reference,
        "Reference to the NestedControllerManager of this control plane (CAPN). When set, name "
        "is required, kind must be NestedControllerManager and apiVersion in "
        "controlplane.cluster.x-k8s.io; the object is looked up by name in this namespace. "
        "Default: the one NestedControllerManager in this namespace owned by this control "
        "plane or labelled cluster.x-k8s.io/cluster-name=<cluster>."),
    {.name = "version", .type = API_SCHEMA_STRING, .max_length = 64,
     .rules = api_kinds_version_rules,
     .description =
         "The Kubernetes version of the control plane, e.g. 1.36.3 or v1.36.3 (a -/+ suffix is "
         "allowed), at most 64 characters. It must be a version the installed packages know; "
         "a line older than every shipped one is retired and refused (VersionUnsupported). "
         "Components without a version of their own follow it; changing "
         "it starts an upgrade, one minor version at a time: etcd, then kube-apiserver, then "
         "kube-controller-manager. Default: a component's own channel, else the version the "
         "stable channel (templates/stable) lists for kube-apiserver."},
    OBJ("controlPlaneEndpoint", api_kinds_endpoint,
        "The endpoint clients use to reach the control plane: the admin kubeconfig points at "
        "it and it is a subject alternative name of the API server's certificate. Default: "
        "the owner Cluster's spec.controlPlaneEndpoint, else "
        "<cluster>-apiserver.<namespace>.svc:6443, where <cluster> is the owner Cluster's name, "
        "else the label cluster.x-k8s.io/cluster-name, else this object's name."),
    OBJ("clusterNetwork", cluster_network_props,
        "The tenant cluster's service and pod networks and service domain. Each field "
        "defaults to the owner Cluster's spec.clusterNetwork, then to nestcp's default."),
    MAP("featureGates", &api_kinds_bool_item,
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
    ARR("addresses", &api_kinds_etcd_address_item,
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

static const struct api_schema move_status_props[] = {
    STR("request", "The controlplane.nestcp.x-k8s.io/move annotation's value this is for."),
    STR("phase", "Where the preparation is: Stopping (the API servers and controller managers "
                 "stop), Snapshotting (the etcd snapshot is taken), Ready (clusterctl move may "
                 "go on), Failed (the message says why) or, in the management cluster the "
                 "control plane was moved to, Moved (etcd started from the snapshot)."),
    STR("snapshot", "The snapshot's name: its file is <snapshot>.db on the NestedEtcd's "
                    "snapshots claim."),
    STR("message", "What the preparation does or waits for, or why it failed."),
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
    OBJ("move", move_status_props,
        "The preparation of a clusterctl move with an etcd snapshot (annotation "
        "controlplane.nestcp.x-k8s.io/move)."),
    END,
};

const struct api_schema api_kinds_ncp_spec = OBJ("spec", ncp_spec_props,
    "NestedControlPlaneSpec defines the desired state of NestedControlPlane.");
const struct api_schema api_kinds_ncp_status = OBJ("status", ncp_status_props,
    "NestedControlPlaneStatus defines the observed state of NestedControlPlane.");

/* clang-format on */
