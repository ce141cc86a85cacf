#ifndef NESTCP_TEST_CAPN_SAMPLE_H
#define NESTCP_TEST_CAPN_SAMPLE_H

/* CAPN's cluster template shape (config/samples/capn-cluster.yaml) with Cluster API's
 * controllers absent: no owner references anywhere. etcd_spec is the NestedEtcd's spec, a
 * YAML flow mapping. */
#define CAPN_SAMPLE(etcd_spec)                                                                     \
    "apiVersion: cluster.x-k8s.io/v1beta1\n"                                                       \
    "kind: Cluster\n"                                                                              \
    "metadata: {name: sample, uid: cl-1}\n"                                                        \
    "spec:\n"                                                                                      \
    "  clusterNetwork:\n"                                                                          \
    "    services: {cidrBlocks: [10.96.0.0/12]}\n"                                                 \
    "    pods: {cidrBlocks: [10.244.0.0/16]}\n"                                                    \
    "    serviceDomain: cluster.local\n"                                                           \
    "  controlPlaneEndpoint: {host: sample-apiserver, port: 6443}\n"                               \
    "  infrastructureRef: {apiVersion: infrastructure.cluster.x-k8s.io/v1beta1, kind: "            \
    "NestedCluster, name: sample}\n"                                                               \
    "  controlPlaneRef: {apiVersion: controlplane.cluster.x-k8s.io/v1beta1, kind: "                \
    "NestedControlPlane, name: sample-control-plane}\n"                                            \
    "---\n"                                                                                        \
    "apiVersion: infrastructure.cluster.x-k8s.io/v1beta1\n"                                        \
    "kind: NestedCluster\n"                                                                        \
    "metadata: {name: sample, uid: nc-1, generation: 1}\n"                                         \
    "spec: {controlPlaneEndpoint: {host: sample-apiserver, port: 6443}}\n"                         \
    "---\n"                                                                                        \
    "apiVersion: controlplane.cluster.x-k8s.io/v1beta1\n"                                          \
    "kind: NestedControlPlane\n"                                                                   \
    "metadata: {name: sample-control-plane, uid: ncp-1, generation: 1, resourceVersion: '1'}\n"    \
    "spec:\n"                                                                                      \
    "  version: 1.36.3\n"                                                                          \
    "  etcd: {apiVersion: controlplane.cluster.x-k8s.io/v1beta1, kind: NestedEtcd, name: "         \
    "sample-nestedetcd}\n"                                                                         \
    "  apiserver: {apiVersion: controlplane.cluster.x-k8s.io/v1beta1, kind: NestedAPIServer, "     \
    "name: "                                                                                       \
    "sample-nestedapiserver}\n"                                                                    \
    "  controllerManager: {apiVersion: controlplane.cluster.x-k8s.io/v1beta1, kind: "              \
    "NestedControllerManager, name: sample-nestedcontrollermanager}\n"                             \
    "  certificates: {keyAlgorithm: ECDSA-P256, validityDays: 365, renewBeforeDays: 30}\n"         \
    "---\n"                                                                                        \
    "apiVersion: controlplane.cluster.x-k8s.io/v1beta1\n"                                          \
    "kind: NestedEtcd\n"                                                                           \
    "metadata: {name: sample-nestedetcd, uid: etcd-1, generation: 1, resourceVersion: '1'}\n"      \
    "spec: " etcd_spec "\n"                                                                        \
    "---\n"                                                                                        \
    "apiVersion: controlplane.cluster.x-k8s.io/v1beta1\n"                                          \
    "kind: NestedAPIServer\n"                                                                      \
    "metadata: {name: sample-nestedapiserver, uid: kas-1, generation: 1, resourceVersion: '1'}\n"  \
    "spec: {replicas: 1}\n"                                                                        \
    "---\n"                                                                                        \
    "apiVersion: controlplane.cluster.x-k8s.io/v1beta1\n"                                          \
    "kind: NestedControllerManager\n"                                                              \
    "metadata: {name: sample-nestedcontrollermanager, uid: kcm-1, generation: 1, "                 \
    "resourceVersion: "                                                                            \
    "'1'}\n"                                                                                       \
    "spec: {replicas: 1}\n"

#endif
