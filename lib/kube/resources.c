/* The well-known resource table of client.h. */

#include "lib/kube/client.h"

const struct kube_resource KUBE_NAMESPACES = {"", "v1", "namespaces", "Namespace", false};
const struct kube_resource KUBE_PODS = {"", "v1", "pods", "Pod", true};
const struct kube_resource KUBE_PVCS = {"", "v1", "persistentvolumeclaims", "PersistentVolumeClaim",
                                        true};
const struct kube_resource KUBE_SERVICES = {"", "v1", "services", "Service", true};
const struct kube_resource KUBE_SECRETS = {"", "v1", "secrets", "Secret", true};
const struct kube_resource KUBE_CONFIGMAPS = {"", "v1", "configmaps", "ConfigMap", true};
const struct kube_resource KUBE_EVENTS = {"", "v1", "events", "Event", true};
const struct kube_resource KUBE_SERVICEACCOUNTS = {"", "v1", "serviceaccounts", "ServiceAccount",
                                                   true};
const struct kube_resource KUBE_NODES = {"", "v1", "nodes", "Node", false};
const struct kube_resource KUBE_STATEFULSETS = {"apps", "v1", "statefulsets", "StatefulSet", true};
const struct kube_resource KUBE_LEASES = {"coordination.k8s.io", "v1", "leases", "Lease", true};
const struct kube_resource KUBE_CRDS = {"apiextensions.k8s.io", "v1", "customresourcedefinitions",
                                        "CustomResourceDefinition", false};
const struct kube_resource KUBE_JOBS = {"batch", "v1", "jobs", "Job", true};
const struct kube_resource KUBE_NETWORKPOLICIES = {"networking.k8s.io", "v1", "networkpolicies",
                                                   "NetworkPolicy", true};
const struct kube_resource KUBE_TOKENREVIEWS = {"authentication.k8s.io", "v1", "tokenreviews",
                                                "TokenReview", false};
const struct kube_resource KUBE_SUBJECTACCESSREVIEWS = {
    "authorization.k8s.io", "v1", "subjectaccessreviews", "SubjectAccessReview", false};
