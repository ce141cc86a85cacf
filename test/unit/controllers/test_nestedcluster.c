#include "nested_fixture.h"

#include "controllers/nested.h"

static const char cluster[] =
    "apiVersion: cluster.x-k8s.io/v1beta1\n"
    "kind: Cluster\n"
    "metadata: {name: sample, uid: cl-1}\n"
    "spec:\n"
    "  controlPlaneEndpoint: {host: sample-apiserver, port: 6443}\n"
    "  controlPlaneRef: {kind: NestedControlPlane, name: sample-control-plane}\n"
    "  infrastructureRef: {kind: NestedCluster, name: sample}\n";

static const char ncp_ready[] =
    "apiVersion: controlplane.cluster.x-k8s.io/v1beta1\n"
    "kind: NestedControlPlane\n"
    "metadata: {name: sample-control-plane, uid: ncp-1}\n"
    "spec:\n"
    "  controlPlaneEndpoint: {host: sample-apiserver, port: 6443}\n"
    "status:\n"
    "  ready: true\n"
    "  initialized: true\n"
    "  conditions: [{type: Ready, status: 'True', reason: Ready, message: ok}]\n";

static const char ncp_provisioning[] =
    "apiVersion: controlplane.cluster.x-k8s.io/v1beta1\n"
    "kind: NestedControlPlane\n"
    "metadata: {name: sample-control-plane, uid: ncp-1}\n"
    "spec:\n"
    "  controlPlaneEndpoint: {host: sample-apiserver, port: 6443}\n"
    "status:\n"
    "  conditions: [{type: Ready, status: 'False', reason: Provisioning, message: etcd 0/1 "
    "updated}]\n";

static const char nc[] =
    "apiVersion: infrastructure.cluster.x-k8s.io/v1beta1\n"
    "kind: NestedCluster\n"
    "metadata: {name: sample, uid: nc-1, generation: 2, resourceVersion: '7'}\n"
    "spec:\n"
    "  controlPlaneEndpoint: {host: sample-apiserver, port: 6443}\n";

/* The NestedCluster "sample" at generation, with spec (a YAML flow mapping) or none. */
static void put_nested_cluster(struct fixture *f, int generation, const char *spec)
{
    char yaml[1024];

    snprintf(yaml, sizeof(yaml),
             "apiVersion: infrastructure.cluster.x-k8s.io/v1beta1\n"
             "kind: NestedCluster\n"
             "metadata: {name: sample, uid: nc-1, generation: %d, resourceVersion: '7'}\n"
             "%s%s\n",
             generation, spec ? "spec: " : "", spec ? spec : "");
    fx_put(f, yaml);
}

static int reconcile(struct fixture *f, struct plan *p)
{
    struct err e;

    plan_init(p);
    err_clear(&e);
    return nestedcluster_reconcile(NULL, &f->view, "default", "sample", p, &e);
}

/* The status body of the plan's /status write, or NULL. */
static const cJSON *status_written(const struct plan *p)
{
    const struct plan_action *a = fx_action(p, KUBE_UPDATE, "nestedclusters", "sample");

    if (!a)
        return NULL;
    assert_string_equal(a->subresource, "status");
    assert_string_equal(fx_str(a->body, "metadata.resourceVersion"), "7");
    return cJSON_GetObjectItemCaseSensitive(a->body, "status");
}

static void test_nestedcluster__ready_when_the_control_plane_is(void **state)
{
    struct fixture f;
    struct plan p;
    const cJSON *st;

    fx_init(&f);
    fx_put(&f, cluster);
    fx_put(&f, ncp_ready);
    fx_put(&f, nc);
    assert_int_equal(reconcile(&f, &p), 0);
    assert_int_equal(p.n_actions, 1);
    st = status_written(&p);
    assert_non_null(st);
    assert_true(cJSON_IsTrue(fx_path(st, "ready")));
    assert_true(cJSON_IsTrue(fx_path(st, "initialization.provisioned")));
    assert_int_equal((int)fx_path(st, "observedGeneration")->valuedouble, 2);
    assert_string_equal(fx_str(fx_condition(st, "Ready"), "status"), "True");
    assert_string_equal(fx_str(fx_condition(st, "Paused"), "status"), "False");
    plan_done(&p);
    fx_done(&f);
}

static void test_nestedcluster__not_ready_says_why(void **state)
{
    struct fixture f;
    struct plan p;
    const cJSON *st;

    fx_init(&f);
    fx_put(&f, cluster);
    fx_put(&f, ncp_provisioning);
    fx_put(&f, nc);
    assert_int_equal(reconcile(&f, &p), 0);
    st = status_written(&p);
    assert_false(cJSON_IsTrue(fx_path(st, "ready")));
    assert_string_equal(fx_str(fx_condition(st, "Ready"), "reason"), "ControlPlaneNotReady");
    assert_string_equal(fx_str(fx_condition(st, "Ready"), "message"),
                        "NestedControlPlane sample-control-plane: etcd 0/1 updated");
    plan_done(&p);

    /* without any control plane */
    cJSON *old = NULL;
    kube_store_remove(&f.stores[FX_CONTROL_PLANES], "default", "sample-control-plane", &old);
    cJSON_Delete(old);
    assert_int_equal(reconcile(&f, &p), 0);
    st = status_written(&p);
    assert_string_equal(fx_str(fx_condition(st, "Ready"), "reason"), "WaitingForControlPlane");
    plan_done(&p);
    fx_done(&f);
}

static void test_nestedcluster__steady_state_writes_nothing(void **state)
{
    struct fixture f;
    struct plan p;

    fx_init(&f);
    fx_put(&f, cluster);
    fx_put(&f, ncp_ready);
    fx_put(&f, nc);
    assert_int_equal(reconcile(&f, &p), 0);
    fx_apply_plan(&f, &p);
    plan_done(&p);
    f.view.now += 3600;
    assert_int_equal(reconcile(&f, &p), 0);
    assert_int_equal(p.n_actions, 0);
    assert_int_equal(p.n_events, 0);
    plan_done(&p);
    fx_done(&f);
}

static void test_nestedcluster__fills_an_empty_endpoint_from_the_control_plane(void **state)
{
    struct fixture f;
    struct plan p;
    const struct plan_action *a;

    fx_init(&f);
    fx_put(&f, ncp_ready);
    fx_put(&f, cluster);
    put_nested_cluster(&f, 1, NULL);
    assert_int_equal(reconcile(&f, &p), 0);
    a = fx_action(&p, KUBE_PATCH, "nestedclusters", "sample");
    assert_non_null(a);
    assert_null(a->subresource);
    assert_int_equal(a->patch_type, KUBE_PATCH_MERGE);
    assert_string_equal(fx_str(a->body, "spec.controlPlaneEndpoint.host"), "sample-apiserver");
    assert_int_equal(fx_path(a->body, "spec.controlPlaneEndpoint.port")->valueint, 6443);
    plan_done(&p);
    fx_done(&f);
}

static void test_nestedcluster__a_different_endpoint_is_reported(void **state)
{
    struct fixture f;
    struct plan p;
    const cJSON *st;

    fx_init(&f);
    fx_put(&f, ncp_ready);
    fx_put(&f, cluster);
    /* CAPN's template gives the NestedCluster localhost:6443 */
    put_nested_cluster(&f, 1, "{controlPlaneEndpoint: {host: localhost, port: 6443}}");
    assert_int_equal(reconcile(&f, &p), 0);
    assert_null(fx_action(&p, KUBE_PATCH, "nestedclusters", "sample"));
    st = status_written(&p);
    assert_string_equal(fx_str(fx_condition(st, "EndpointConsistent"), "reason"),
                        "EndpointMismatch");
    assert_string_equal(fx_str(fx_condition(st, "EndpointConsistent"), "severity"), "Warning");
    assert_non_null(fx_event(&p, "EndpointMismatch"));
    /* readiness still follows the control plane */
    assert_true(cJSON_IsTrue(fx_path(st, "ready")));
    fx_apply_plan(&f, &p);
    plan_done(&p);
    /* reported once */
    assert_int_equal(reconcile(&f, &p), 0);
    assert_int_equal(p.n_actions, 0);
    assert_int_equal(p.n_events, 0);
    plan_done(&p);
    fx_done(&f);
}

static void test_nestedcluster__paused_shows_only_the_paused_condition(void **state)
{
    struct fixture f;
    struct plan p;
    const cJSON *st;

    fx_init(&f);
    fx_put(&f, ncp_ready);
    fx_put(&f, "apiVersion: cluster.x-k8s.io/v1beta1\n"
               "kind: Cluster\n"
               "metadata: {name: sample, uid: cl-1}\n"
               "spec:\n"
               "  paused: true\n"
               "  controlPlaneRef: {kind: NestedControlPlane, name: sample-control-plane}\n"
               "  infrastructureRef: {kind: NestedCluster, name: sample}\n");
    put_nested_cluster(&f, 1, NULL);
    assert_int_equal(reconcile(&f, &p), 0);
    assert_int_equal(p.n_actions, 1); /* no endpoint patch */
    st = status_written(&p);
    assert_string_equal(fx_str(fx_condition(st, "Paused"), "status"), "True");
    assert_null(fx_condition(st, "Ready"));
    assert_false(cJSON_IsTrue(fx_path(st, "ready")));
    plan_done(&p);
    fx_done(&f);
}

static void test_nestedcluster__invalid_object_gets_a_condition_and_an_event(void **state)
{
    struct fixture f;
    struct plan p;
    const cJSON *st;

    fx_init(&f);
    fx_put(&f, ncp_ready);
    fx_put(&f, cluster);
    put_nested_cluster(&f, 3, "{controlPlaneEndpoint: {host: sample-apiserver, port: six}}");
    assert_int_equal(reconcile(&f, &p), 0);
    assert_int_equal(p.n_actions, 1);
    st = status_written(&p);
    assert_string_equal(fx_str(fx_condition(st, "Ready"), "reason"), "InvalidSpec");
    assert_non_null(
        strstr(fx_str(fx_condition(st, "Ready"), "message"), "spec.controlPlaneEndpoint.port"));
    assert_int_equal((int)fx_path(st, "observedGeneration")->valuedouble, 3);
    assert_non_null(fx_event(&p, "InvalidSpec"));
    fx_apply_plan(&f, &p);
    plan_done(&p);
    f.view.now += 60;
    assert_int_equal(reconcile(&f, &p), 0);
    assert_int_equal(p.n_actions, 0);
    assert_int_equal(p.n_events, 0);
    plan_done(&p);
    fx_done(&f);
}

/* What a user sees for an object the CRD's schema would not let in (an older CRD, or one
 * applied with validation off): Ready False InvalidSpec naming the field, a Warning Event saying
 * the same, and nothing else written. */
static void test_nestedcluster__objects_of_the_wrong_shape_say_which_field(void **state)
{
    static const struct {
        const char *obj, *field;
    } bad[] = {
        {"apiVersion: infrastructure.cluster.x-k8s.io/v1beta1\nkind: NestedCluster\n"
         "metadata: {name: sample}\nspec: 7\n",
         "spec: 7 is not an object"},
        {"apiVersion: infrastructure.cluster.x-k8s.io/v1beta1\nkind: NestedCluster\n"
         "metadata: {name: sample}\nspec: {controlPlaneEndpoint: [1, 2]}\nstatus: [x]\n",
         "spec.controlPlaneEndpoint: [1,2] is not an object"},
        {"apiVersion: infrastructure.cluster.x-k8s.io/v1beta1\nkind: NestedCluster\n"
         "metadata: {name: sample, generation: x, ownerReferences: 5}\n"
         "status: {conditions: [{type: 1}, 7, {type: Ready}]}\n",
         "status.conditions[1]: 7 is not an object"},
        {"apiVersion: infrastructure.cluster.x-k8s.io/v7\nkind: NestedCluster\n"
         "metadata: {name: sample}\n",
         "apiVersion: \"infrastructure.cluster.x-k8s.io/v7\" is not served"},
    };
    struct fixture f;
    struct plan p;
    const cJSON *st, *ready;

    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        fx_init(&f);
        fx_put(&f, "apiVersion: cluster.x-k8s.io/v1beta1\nkind: Cluster\n"
                   "metadata: {name: sample}\n"
                   "spec: {infrastructureRef: 3, controlPlaneRef: {kind: 4, name: [x]}, "
                   "paused: yes}\n");
        fx_put(&f, bad[i].obj);
        assert_int_equal(reconcile(&f, &p), 0);
        assert_int_equal(p.n_actions, 1);
        assert_null(fx_action(&p, KUBE_PATCH, "nestedclusters", NULL));
        st = cJSON_GetObjectItemCaseSensitive(
            fx_action(&p, KUBE_UPDATE, "nestedclusters", "sample")->body, "status");
        ready = fx_condition(st, "Ready");
        assert_non_null(ready);
        assert_string_equal(fx_str(ready, "status"), "False");
        assert_string_equal(fx_str(ready, "reason"), "InvalidSpec");
        assert_non_null(strstr(fx_str(ready, "message"), bad[i].field));
        assert_false(cJSON_IsTrue(fx_path(st, "ready")));
        assert_int_equal(p.n_events, 1);
        assert_int_equal(p.events[0].type, KUBE_EVENT_WARNING);
        assert_string_equal(p.events[0].reason, "InvalidSpec");
        assert_non_null(strstr(p.events[0].message, bad[i].field));
        plan_done(&p);
        fx_done(&f);
    }
}

static void enqueued(void *q, const char *ns, const char *name)
{
    char *out = q;

    snprintf(out, 128, "%s/%s", ns, name);
}

static void test_nestedcluster__control_plane_changes_enqueue_its_nested_cluster(void **state)
{
    struct fixture f;
    char key[128] = "";

    fx_init(&f);
    fx_put(&f, cluster);
    fx_put(&f, ncp_ready);
    fx_put(&f, nc);
    nestedcluster_map(NULL, &f.view, &NESTCP_CONTROL_PLANES,
                      fx_get(&f, FX_CONTROL_PLANES, "sample-control-plane"), enqueued, key);
    assert_string_equal(key, "default/sample");
    key[0] = '\0';
    nestedcluster_map(NULL, &f.view, &CAPI_CLUSTERS, fx_get(&f, FX_CLUSTERS, "sample"), enqueued,
                      key);
    assert_string_equal(key, "default/sample");
    fx_done(&f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_nestedcluster__ready_when_the_control_plane_is),
        cmocka_unit_test(test_nestedcluster__not_ready_says_why),
        cmocka_unit_test(test_nestedcluster__steady_state_writes_nothing),
        cmocka_unit_test(test_nestedcluster__fills_an_empty_endpoint_from_the_control_plane),
        cmocka_unit_test(test_nestedcluster__a_different_endpoint_is_reported),
        cmocka_unit_test(test_nestedcluster__paused_shows_only_the_paused_condition),
        cmocka_unit_test(test_nestedcluster__invalid_object_gets_a_condition_and_an_event),
        cmocka_unit_test(test_nestedcluster__objects_of_the_wrong_shape_say_which_field),
        cmocka_unit_test(test_nestedcluster__control_plane_changes_enqueue_its_nested_cluster),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
