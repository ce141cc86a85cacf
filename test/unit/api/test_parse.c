#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/types.h"
#include "lib/util/yamlconv.h"

static cJSON *yaml(const char *text)
{
    cJSON *doc = NULL;
    struct err e;

    if (yamlconv_parse_one(text, strlen(text), "t.yaml", &doc, &e) < 0)
        fail_msg("bad test YAML: %s", e.msg);
    return doc;
}

/* Parses text as a component and returns the formatted error lines ("" when it parsed). */
static char *component_errors(const char *text)
{
    cJSON *doc = yaml(text);
    struct api_errors errs = API_ERRORS_INIT;
    struct api_component *c = NULL;
    struct buf out = BUF_INIT;
    int r = api_component_from_json(doc, &c, &errs);

    assert_int_equal(r == 0, api_errors_count(&errs) == 0);
    api_errors_format(&errs, &out);
    api_errors_done(&errs);
    api_component_free(c);
    cJSON_Delete(doc);
    return buf_steal(&out);
}

static void test_parse__capn_control_plane_reads_refs_and_defaults(void **state)
{
    cJSON *doc = yaml("apiVersion: controlplane.cluster.x-k8s.io/v1alpha4\n"
                      "kind: NestedControlPlane\n"
                      "metadata:\n"
                      "  name: c1-control-plane\n"
                      "  namespace: default\n"
                      "  generation: 3\n"
                      "  labels: {cluster.x-k8s.io/cluster-name: c1}\n"
                      "  unknownMeta: 1\n"
                      "spec:\n"
                      "  etcd:\n"
                      "    apiVersion: controlplane.cluster.x-k8s.io/v1alpha4\n"
                      "    kind: NestedEtcd\n"
                      "    name: c1-nestedetcd\n"
                      "  apiserver: {kind: NestedAPIServer, name: c1-nestedapiserver}\n"
                      "  controllerManager: {kind: NestedControllerManager, name: c1-kcm}\n"
                      "  somethingNew: [1, 2]\n"
                      "status:\n"
                      "  ready: true\n"
                      "  initialized: true\n"
                      "  conditions:\n"
                      "  - {type: Ready, status: \"True\", severity: \"\", "
                      "lastTransitionTime: \"2021-06-09T10:00:00Z\"}\n");
    struct api_errors errs = API_ERRORS_INIT;
    struct api_control_plane *ncp = NULL;

    assert_int_equal(api_control_plane_from_json(doc, &ncp, &errs), 0);
    assert_string_equal(ncp->meta.name, "c1-control-plane");
    assert_int_equal(ncp->meta.generation, 3);
    assert_string_equal(api_meta_cluster_name(&ncp->meta), "c1");
    assert_string_equal(ncp->spec.etcd.name, "c1-nestedetcd");
    assert_string_equal(ncp->spec.etcd.kind, "NestedEtcd");
    assert_string_equal(ncp->spec.apiserver.name, "c1-nestedapiserver");
    assert_string_equal(ncp->spec.controller_manager.name, "c1-kcm");
    assert_null(ncp->spec.version);
    /* spec.certificates defaults to {} and its fields to the schema's defaults. */
    assert_int_equal(ncp->spec.certificates.key_algorithm, API_KEY_ECDSA_P256);
    assert_int_equal(ncp->spec.certificates.validity_days, 365);
    assert_int_equal(ncp->spec.certificates.ca_validity_days, 3650);
    assert_int_equal(ncp->spec.certificates.renew_before_days, 30);
    assert_true(ncp->status.ready);
    assert_true(ncp->status.initialized);
    assert_int_equal(ncp->status.conditions.n, 1);
    assert_string_equal(ncp->status.conditions.items[0].type, "Ready");
    api_control_plane_free(ncp);
    api_errors_done(&errs);
    cJSON_Delete(doc);
}

static void test_parse__capn_components_default_replicas(void **state)
{
    const char *kinds[] = {"NestedEtcd", "NestedAPIServer", "NestedControllerManager"};
    const enum api_kind want[] = {API_KIND_NESTED_ETCD, API_KIND_NESTED_APISERVER,
                                  API_KIND_NESTED_CONTROLLER_MANAGER};

    for (int i = 0; i < 3; i++) {
        char text[512];
        snprintf(text, sizeof(text),
                 "apiVersion: controlplane.cluster.x-k8s.io/v1alpha4\nkind: %s\n"
                 "metadata: {name: c1-x}\nspec: {}\n",
                 kinds[i]);
        cJSON *doc = yaml(text);
        struct api_errors errs = API_ERRORS_INIT;
        struct api_component *c = NULL;
        assert_int_equal(api_component_from_json(doc, &c, &errs), 0);
        assert_int_equal(c->kind, want[i]);
        assert_int_equal(c->spec.replicas, 1);
        assert_int_equal(c->spec.storage.kind, API_STORAGE_UNSET);
        api_component_free(c);
        cJSON_Delete(doc);
    }
}

static void test_parse__component_fields(void **state)
{
    cJSON *doc = yaml("apiVersion: controlplane.cluster.x-k8s.io/v1beta1\n"
                      "kind: NestedEtcd\n"
                      "metadata: {name: e, namespace: ns}\n"
                      "spec:\n"
                      "  replicas: 3\n"
                      "  version: 3.4.13\n"
                      "  image: registry.local/etcd:3.4.13\n"
                      "  resources:\n"
                      "    limits: {cpu: 2, memory: 1Gi}\n"
                      "    requests: {cpu: 500m}\n"
                      "  extraArgs: {quota-backend-bytes: \"8589934592\", v: \"2\"}\n"
                      "  featureGates: {B: false, A: true}\n"
                      "  patches:\n"
                      "  - {kind: StatefulSet, metadata: {name: x}}\n"
                      "  storage:\n"
                      "    persistentVolumeClaim: {storageClassName: fast}\n"
                      "status:\n"
                      "  healthy: true\n"
                      "  phase: Ready\n"
                      "  addresses: [{ip: 10.0.0.1, port: 2379}]\n");
    struct api_errors errs = API_ERRORS_INIT;
    struct api_component *c = NULL;

    assert_int_equal(api_component_from_json(doc, &c, &errs), 0);
    assert_int_equal(c->spec.replicas, 3);
    assert_string_equal(c->spec.version, "3.4.13");
    assert_string_equal(c->spec.image, "registry.local/etcd:3.4.13");
    assert_string_equal(api_strmap_get(&c->spec.resources.limits, "cpu"), "2");
    assert_string_equal(api_strmap_get(&c->spec.resources.limits, "memory"), "1Gi");
    assert_string_equal(api_strmap_get(&c->spec.resources.requests, "cpu"), "500m");
    assert_string_equal(api_strmap_get(&c->spec.extra_args, "v"), "2");
    /* Gates come back sorted by name. */
    assert_int_equal(c->spec.feature_gates.n, 2);
    assert_string_equal(c->spec.feature_gates.items[0].name, "A");
    assert_true(c->spec.feature_gates.items[0].enabled);
    assert_false(api_gates_get(&c->spec.feature_gates, "B")->enabled);
    assert_int_equal(cJSON_GetArraySize(c->spec.patches), 1);
    assert_int_equal(c->spec.storage.kind, API_STORAGE_PVC);
    assert_string_equal(c->spec.storage.size, "1Gi"); /* the schema default */
    assert_string_equal(c->spec.storage.storage_class_name, "fast");
    assert_true(c->status.healthy);
    assert_int_equal(c->status.n_addresses, 1);
    assert_string_equal(c->status.addresses[0].ip, "10.0.0.1");
    assert_int_equal(c->status.addresses[0].port, 2379);
    api_component_free(c);
    api_errors_done(&errs);
    cJSON_Delete(doc);
}

static void test_parse__type_errors_name_path_and_value(void **state)
{
    char *got = component_errors("apiVersion: controlplane.cluster.x-k8s.io/v1beta1\n"
                                 "kind: NestedAPIServer\n"
                                 "metadata: {name: a}\n"
                                 "spec:\n"
                                 "  replicas: three\n"
                                 "  version: 1\n"
                                 "  extraArgs: {v: [2]}\n"
                                 "  featureGates: {Foo: \"yes\"}\n"
                                 "  resources: {limits: {cpu: 2 cores}}\n"
                                 "  patches: [3]\n"
                                 "status:\n"
                                 "  conditions: [{type: Ready, status: maybe}]\n");

    assert_string_equal(got, "spec.version: 1 is not a string\n"
                             "spec.patches[0]: 3 is not an object\n"
                             "spec.resources.limits[cpu]: \"2 cores\" is not a valid quantity\n"
                             "spec.extraArgs[v]: [2] is not a string\n"
                             "spec.featureGates[Foo]: \"yes\" is not a boolean\n"
                             "spec.replicas: \"three\" is not an integer\n"
                             "status.conditions[0].status: \"maybe\" is not one of True, "
                             "False, Unknown\n");
    free(got);
}

static void test_parse__ranges_and_required(void **state)
{
    char *got = component_errors("apiVersion: controlplane.cluster.x-k8s.io/v1beta1\n"
                                 "kind: NestedEtcd\n"
                                 "metadata: {}\n"
                                 "spec: {replicas: 9}\n"
                                 "status: {replicas: 1.5}\n");

    assert_string_equal(got, "metadata.name: is required\n"
                             "spec.replicas: 9 is more than the maximum 7\n"
                             "status.replicas: 1.5 is not an integer\n");
    free(got);
}

static void test_parse__storage_size_is_a_quantity(void **state)
{
    char *got = component_errors("apiVersion: controlplane.cluster.x-k8s.io/v1beta1\n"
                                 "kind: NestedEtcd\n"
                                 "metadata: {name: e}\n"
                                 "spec:\n"
                                 "  storage:\n"
                                 "    emptyDir: {sizeLimit: 1.5.0Gi}\n"
                                 "    persistentVolumeClaim: {size: 10Qi}\n");

    assert_string_equal(got, "spec.storage.emptyDir.sizeLimit: \"1.5.0Gi\" is not a valid "
                             "quantity\n"
                             "spec.storage.persistentVolumeClaim.size: \"10Qi\" is not a valid "
                             "quantity\n");
    free(got);
}

static void test_parse__wrong_kind_or_version(void **state)
{
    char *got = component_errors("apiVersion: controlplane.cluster.x-k8s.io/v1alpha3\n"
                                 "kind: NestedEtcd\nmetadata: {name: x}\n");

    assert_string_equal(got, "apiVersion: \"controlplane.cluster.x-k8s.io/v1alpha3\" is not "
                             "served; use controlplane.cluster.x-k8s.io/v1alpha4 or "
                             "controlplane.cluster.x-k8s.io/v1beta1\n");
    free(got);
    got = component_errors("apiVersion: apps/v1\nkind: StatefulSet\nmetadata: {name: x}\n");
    assert_string_equal(got, "kind: \"apps/v1/StatefulSet\" is not a NestedEtcd, "
                             "NestedAPIServer or NestedControllerManager\n");
    free(got);
}

static void test_parse__nested_cluster_and_capi_cluster(void **state)
{
    cJSON *nc_doc = yaml("apiVersion: infrastructure.cluster.x-k8s.io/v1alpha4\n"
                         "kind: NestedCluster\n"
                         "metadata: {name: c1}\n"
                         "spec: {controlPlaneEndpoint: {host: localhost, port: 6443}}\n"
                         "status: {ready: true, initialization: {provisioned: true}}\n");
    cJSON *cl_doc = yaml("apiVersion: cluster.x-k8s.io/v1beta1\n"
                         "kind: Cluster\n"
                         "metadata:\n"
                         "  name: c1\n"
                         "  annotations: {cluster.x-k8s.io/paused: \"\"}\n"
                         "spec:\n"
                         "  paused: true\n"
                         "  clusterNetwork:\n"
                         "    services: {cidrBlocks: [10.128.0.0/16]}\n"
                         "    pods: {cidrBlocks: [192.168.0.0/16]}\n"
                         "    serviceDomain: tenant.local\n"
                         "  controlPlaneEndpoint: {host: c1-apiserver, port: 6443}\n"
                         "  controlPlaneRef: {kind: NestedControlPlane, name: c1-cp}\n"
                         "  infrastructureRef: {kind: NestedCluster, name: c1}\n"
                         "  topology: {class: whatever}\n"
                         "status: {phase: Provisioned, anything: [1]}\n");
    struct api_errors errs = API_ERRORS_INIT;
    struct api_nested_cluster *nc = NULL;
    struct api_capi_cluster *cl = NULL;

    assert_int_equal(api_nested_cluster_from_json(nc_doc, &nc, &errs), 0);
    assert_string_equal(nc->control_plane_endpoint.host, "localhost");
    assert_int_equal(nc->control_plane_endpoint.port, 6443);
    assert_true(nc->status.ready);
    assert_true(nc->status.provisioned);
    assert_int_equal(api_capi_cluster_from_json(cl_doc, &cl, &errs), 0);
    assert_true(cl->paused);
    assert_true(api_meta_paused(&cl->meta));
    assert_string_equal(cl->cluster_network.services.items[0], "10.128.0.0/16");
    assert_string_equal(cl->cluster_network.pods.items[0], "192.168.0.0/16");
    assert_string_equal(cl->cluster_network.service_domain, "tenant.local");
    assert_string_equal(cl->control_plane_endpoint.host, "c1-apiserver");
    assert_string_equal(cl->control_plane_ref.name, "c1-cp");
    assert_string_equal(cl->infrastructure_ref.kind, "NestedCluster");
    assert_int_equal(api_errors_count(&errs), 0);
    api_nested_cluster_free(nc);
    api_capi_cluster_free(cl);
    cJSON_Delete(nc_doc);
    cJSON_Delete(cl_doc);
}

/* Cluster API v1beta2 (what 1.11 and later store): the fields nestcp reads keep their paths,
 * and the references name {apiGroup, kind, name}. */
static void test_parse__capi_cluster_v1beta2_references_name_their_group(void **state)
{
    cJSON *doc = yaml("apiVersion: cluster.x-k8s.io/v1beta2\n"
                      "kind: Cluster\n"
                      "metadata: {name: c2, namespace: ns}\n"
                      "spec:\n"
                      "  paused: true\n"
                      "  clusterNetwork:\n"
                      "    apiServerPort: 6443\n"
                      "    services: {cidrBlocks: [10.96.0.0/12]}\n"
                      "    pods: {cidrBlocks: [10.244.0.0/16]}\n"
                      "    serviceDomain: cluster.local\n"
                      "  controlPlaneEndpoint: {host: c2-apiserver, port: 6443}\n"
                      "  controlPlaneRef: {apiGroup: controlplane.cluster.x-k8s.io, kind: "
                      "NestedControlPlane, name: c2-cp}\n"
                      "  infrastructureRef: {apiGroup: infrastructure.cluster.x-k8s.io, kind: "
                      "NestedCluster, name: c2}\n"
                      "status: {initialization: {infrastructureProvisioned: true}}\n");
    struct api_errors errs = API_ERRORS_INIT;
    struct api_capi_cluster *cl = NULL;
    char group[64];

    assert_int_equal(api_capi_cluster_from_json(doc, &cl, &errs), 0);
    assert_int_equal(api_errors_count(&errs), 0);
    assert_true(cl->paused);
    assert_int_equal(cl->cluster_network.api_server_port, 6443);
    assert_string_equal(cl->cluster_network.services.items[0], "10.96.0.0/12");
    assert_string_equal(cl->cluster_network.pods.items[0], "10.244.0.0/16");
    assert_string_equal(cl->cluster_network.service_domain, "cluster.local");
    assert_string_equal(cl->control_plane_endpoint.host, "c2-apiserver");
    assert_int_equal(cl->control_plane_endpoint.port, 6443);
    assert_null(cl->control_plane_ref.api_version);
    assert_string_equal(cl->control_plane_ref.api_group, "controlplane.cluster.x-k8s.io");
    assert_string_equal(cl->control_plane_ref.kind, "NestedControlPlane");
    assert_string_equal(cl->control_plane_ref.name, "c2-cp");
    assert_int_equal(api_object_ref_group(&cl->infrastructure_ref, group, sizeof(group)),
                     (int)strlen("infrastructure.cluster.x-k8s.io"));
    assert_string_equal(group, "infrastructure.cluster.x-k8s.io");
    assert_string_equal(cl->infrastructure_ref.name, "c2");
    api_capi_cluster_free(cl);
    cJSON_Delete(doc);
}

/* The group of a reference in either shape, and of one that names none. */
static void test_parse__object_ref_group_from_either_shape(void **state)
{
    struct api_object_ref v1beta1 = {.api_version = "controlplane.cluster.x-k8s.io/v1beta1"};
    struct api_object_ref v1beta2 = {.api_group = "controlplane.cluster.x-k8s.io"};
    struct api_object_ref core = {.api_version = "v1"}, none = {0};
    char group[64], tiny[8];

    assert_int_equal(api_object_ref_group(&v1beta1, group, sizeof(group)), 29);
    assert_string_equal(group, "controlplane.cluster.x-k8s.io");
    assert_int_equal(api_object_ref_group(&v1beta2, group, sizeof(group)), 29);
    assert_string_equal(group, "controlplane.cluster.x-k8s.io");
    assert_int_equal(api_object_ref_group(&core, group, sizeof(group)), 0);
    assert_string_equal(group, "");
    assert_int_equal(api_object_ref_group(&none, group, sizeof(group)), 0);
    assert_string_equal(group, "");
    assert_int_equal(api_object_ref_group(&v1beta2, tiny, sizeof(tiny)), -ENAMETOOLONG);
}

static void test_parse__cluster_name_prefers_owner_cluster(void **state)
{
    cJSON *doc = yaml("apiVersion: controlplane.cluster.x-k8s.io/v1beta1\n"
                      "kind: NestedControlPlane\n"
                      "metadata:\n"
                      "  name: cp\n"
                      "  labels: {cluster.x-k8s.io/cluster-name: from-label}\n"
                      "  ownerReferences:\n"
                      "  - {apiVersion: v1, kind: Cluster, name: not-capi, uid: u0}\n"
                      "  - {apiVersion: cluster.x-k8s.io/v1beta1, kind: Cluster, name: owner, "
                      "uid: u1, controller: true}\n");
    struct api_errors errs = API_ERRORS_INIT;
    struct api_control_plane *ncp = NULL;

    assert_int_equal(api_control_plane_from_json(doc, &ncp, &errs), 0);
    assert_string_equal(api_meta_cluster_name(&ncp->meta), "owner");
    assert_true(ncp->meta.owners[1].controller);
    api_control_plane_free(ncp);
    cJSON_Delete(doc);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse__capn_control_plane_reads_refs_and_defaults),
        cmocka_unit_test(test_parse__capn_components_default_replicas),
        cmocka_unit_test(test_parse__component_fields),
        cmocka_unit_test(test_parse__type_errors_name_path_and_value),
        cmocka_unit_test(test_parse__ranges_and_required),
        cmocka_unit_test(test_parse__storage_size_is_a_quantity),
        cmocka_unit_test(test_parse__wrong_kind_or_version),
        cmocka_unit_test(test_parse__nested_cluster_and_capi_cluster),
        cmocka_unit_test(test_parse__capi_cluster_v1beta2_references_name_their_group),
        cmocka_unit_test(test_parse__object_ref_group_from_either_shape),
        cmocka_unit_test(test_parse__cluster_name_prefers_owner_cluster),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
