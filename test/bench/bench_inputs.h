#ifndef NESTCP_TEST_BENCH_INPUTS_H
#define NESTCP_TEST_BENCH_INPUTS_H

/* The tenant control plane the benches render: NestedControlPlane b in namespace bench with
 * its three components (3 etcd members, 2 API servers, a controller manager), standalone.
 * ncp_spec is appended to the NestedControlPlane's spec flow mapping, after its version: ""
 * for the defaults, or ", certificates: {keyAlgorithm: %s}" to make a format of it. */
#define BENCH_CLUSTER(ncp_spec)                                                                    \
    "apiVersion: controlplane.cluster.x-k8s.io/v1beta1\nkind: NestedControlPlane\n"                \
    "metadata: {name: b, namespace: bench, uid: u0}\n"                                             \
    "spec: {version: 1.36.3" ncp_spec "}\n"                                                        \
    "---\napiVersion: controlplane.cluster.x-k8s.io/v1beta1\nkind: NestedEtcd\n"                   \
    "metadata: {name: b-etcd, namespace: bench, uid: u1, labels: "                                 \
    "{cluster.x-k8s.io/cluster-name: b}}\nspec: {replicas: 3}\n"                                   \
    "---\napiVersion: controlplane.cluster.x-k8s.io/v1beta1\nkind: NestedAPIServer\n"              \
    "metadata: {name: b-apiserver, namespace: bench, uid: u2, labels: "                            \
    "{cluster.x-k8s.io/cluster-name: b}}\nspec: {replicas: 2}\n"                                   \
    "---\napiVersion: controlplane.cluster.x-k8s.io/v1beta1\nkind: NestedControllerManager\n"      \
    "metadata: {name: b-cm, namespace: bench, uid: u3, labels: "                                   \
    "{cluster.x-k8s.io/cluster-name: b}}\nspec: {}\n"

#endif
