#include "nested_sim.h"

#include "api/conditions.h"
#include "controllers/lookup.h"

/* CAPN's cluster template shape (config/samples/capn-cluster.yaml) with Cluster API's
 * controllers absent: no owner references anywhere. */
static const char capn[] =
    "apiVersion: cluster.x-k8s.io/v1beta1\n"
    "kind: Cluster\n"
    "metadata: {name: sample, uid: cl-1}\n"
    "spec:\n"
    "  clusterNetwork:\n"
    "    services: {cidrBlocks: [10.96.0.0/12]}\n"
    "    pods: {cidrBlocks: [10.244.0.0/16]}\n"
    "    serviceDomain: cluster.local\n"
    "  controlPlaneEndpoint: {host: sample-apiserver, port: 6443}\n"
    "  infrastructureRef: {apiVersion: infrastructure.cluster.x-k8s.io/v1beta1, kind: NestedCluster, name: sample}\n"
    "  controlPlaneRef: {apiVersion: controlplane.cluster.x-k8s.io/v1beta1, kind: NestedControlPlane, name: sample-control-plane}\n"
    "---\n"
    "apiVersion: infrastructure.cluster.x-k8s.io/v1beta1\n"
    "kind: NestedCluster\n"
    "metadata: {name: sample, uid: nc-1, generation: 1}\n"
    "spec: {controlPlaneEndpoint: {host: sample-apiserver, port: 6443}}\n"
    "---\n"
    "apiVersion: controlplane.cluster.x-k8s.io/v1beta1\n"
    "kind: NestedControlPlane\n"
    "metadata: {name: sample-control-plane, uid: ncp-1, generation: 1, resourceVersion: '1'}\n"
    "spec:\n"
    "  version: 1.20.2\n"
    "  etcd: {apiVersion: controlplane.cluster.x-k8s.io/v1beta1, kind: NestedEtcd, name: sample-nestedetcd}\n"
    "  apiserver: {apiVersion: controlplane.cluster.x-k8s.io/v1beta1, kind: NestedAPIServer, name: sample-nestedapiserver}\n"
    "  controllerManager: {apiVersion: controlplane.cluster.x-k8s.io/v1beta1, kind: NestedControllerManager, name: sample-nestedcontrollermanager}\n"
    "  certificates: {keyAlgorithm: ECDSA-P256, validityDays: 365, renewBeforeDays: 30}\n"
    "---\n"
    "apiVersion: controlplane.cluster.x-k8s.io/v1beta1\n"
    "kind: NestedEtcd\n"
    "metadata: {name: sample-nestedetcd, uid: etcd-1, generation: 1, resourceVersion: '1'}\n"
    "spec: {replicas: 1}\n"
    "---\n"
    "apiVersion: controlplane.cluster.x-k8s.io/v1beta1\n"
    "kind: NestedAPIServer\n"
    "metadata: {name: sample-nestedapiserver, uid: kas-1, generation: 1, resourceVersion: '1'}\n"
    "spec: {replicas: 1}\n"
    "---\n"
    "apiVersion: controlplane.cluster.x-k8s.io/v1beta1\n"
    "kind: NestedControllerManager\n"
    "metadata: {name: sample-nestedcontrollermanager, uid: kcm-1, generation: 1, resourceVersion: '1'}\n"
    "spec: {replicas: 1}\n";

#define NCP "sample-control-plane"

static const cJSON *ncp_status(struct sim *s)
{
    return fx_path(fx_get(&s->f, FX_CONTROL_PLANES, NCP), "status");
}

static const char *ncp_condition(struct sim *s, const char *type, const char *field)
{
    return fx_str(fx_condition(ncp_status(s), type), field);
}

static size_t reconcile_ncp(struct sim *s, struct plan *p)
{
    struct err e;

    plan_init(p);
    err_clear(&e);
    assert_int_equal(nestedcontrolplane_reconcile(&s->ctx, &s->f.view, "default", NCP, p, &e),
                     0);
    return p->n_actions;
}

static void test_nestedcontrolplane__first_reconcile_creates_the_cas_and_nothing_else(void **state)
{
    struct sim s;
    struct plan p;
    const struct plan_action *a;

    sim_init(&s, capn);
    reconcile_ncp(&s, &p);
    /* the finalizer (with the endpoint) first, conditional on the resourceVersion */
    a = &p.actions[0];
    assert_int_equal(a->verb, KUBE_PATCH);
    assert_int_equal(a->patch_type, KUBE_PATCH_MERGE);
    assert_string_equal(a->name, NCP);
    assert_string_equal(fx_str(a->body, "metadata.resourceVersion"), "1");
    assert_string_equal(
        cJSON_GetArrayItem(fx_path(a->body, "metadata.finalizers"), 0)->valuestring,
        NESTED_FINALIZER);
    assert_string_equal(fx_str(a->body, "spec.controlPlaneEndpoint.host"), "sample-apiserver");
    /* then the four CA Secrets, created (never applied over an existing one) */
    static const char *const cas[] = {"sample-ca", "sample-etcd", "sample-proxy", "sample-sa"};
    for (int i = 0; i < 4; i++) {
        a = fx_action(&p, KUBE_CREATE, "secrets", cas[i]);
        assert_non_null(a);
        assert_int_equal(fx_index(&p, a), 1 + i);
        assert_string_equal(fx_str(a->body, "type"), "cluster.x-k8s.io/secret");
        assert_string_equal(kube_obj_label(a->body, "cluster.x-k8s.io/cluster-name"), "sample");
        assert_true(lookup_controlled_by_uid(a->body, "ncp-1"));
    }
    /* nothing of any component yet */
    assert_int_equal(p.n_actions, 5);
    assert_non_null(fx_event(&p, "CreatedCertificateAuthorities"));
    plan_done(&p);
    sim_done(&s);
}

static void test_nestedcontrolplane__creation_runs_etcd_then_apiserver_then_controller_manager(
    void **state)
{
    struct sim s;
    const cJSON *st;

    sim_init(&s, capn);
    int passes = sim_converge(&s, 40);
    print_message("converged after %d passes, %zu actions\n", passes, s.actions);
    assert_int_equal(s.n_order, 3);
    assert_string_equal(s.order[0], "sample-etcd");
    assert_string_equal(s.order[1], "sample-apiserver");
    assert_string_equal(s.order[2], "sample-controller-manager");
    st = ncp_status(&s);
    assert_true(cJSON_IsTrue(fx_path(st, "ready")));
    assert_true(cJSON_IsTrue(fx_path(st, "initialized")));
    assert_true(cJSON_IsTrue(fx_path(st, "initialization.controlPlaneInitialized")));
    assert_true(cJSON_IsTrue(fx_path(st, "externalManagedControlPlane")));
    assert_string_equal(fx_str(st, "version"), "v1.20.2");
    assert_string_equal(fx_str(st, "phase"), "Ready");
    assert_int_equal(fx_path(st, "replicas")->valueint, 1);
    assert_int_equal(fx_path(st, "readyReplicas")->valueint, 1);
    assert_string_equal(ncp_condition(&s, "Ready", "status"), "True");
    assert_string_equal(ncp_condition(&s, "Upgrading", "status"), "False");
    assert_string_equal(fx_str(st, "apiserver.serviceCidr"), "10.96.0.0/12");
    assert_non_null(fx_str(st, "rollout.components.etcd.configHash"));
    assert_string_equal(fx_str(st, "rollout.components.etcd.version"), "3.4.13");
    assert_string_equal(fx_str(st, "rollout.components.apiserver.version"), "1.20.2");
    /* the NestedCluster follows */
    assert_true(cJSON_IsTrue(fx_path(fx_get(&s.f, FX_NESTED_CLUSTERS, "sample"), "status.ready")));
    /* the components are adopted and report */
    assert_true(lookup_controlled_by_uid(fx_get(&s.f, FX_ETCDS, "sample-nestedetcd"), "ncp-1"));
    assert_string_equal(
        fx_str(fx_get(&s.f, FX_ETCDS, "sample-nestedetcd"), "status.phase"), "Ready");
    sim_done(&s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_nestedcontrolplane__first_reconcile_creates_the_cas_and_nothing_else),
        cmocka_unit_test(
            test_nestedcontrolplane__creation_runs_etcd_then_apiserver_then_controller_manager),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
