#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "controllers/cachekeep.h"
#include "controllers/status.h"
#include "lib/kube/client.h"
#include "lib/render/cluster.h"

/* A StatefulSet and one of its Pods as the 1.37 API server sent them to the manager (an etcd
 * member of a bench cluster, managedFields included). */
static cJSON *load(const char *name)
{
    const char *src = getenv("NESTCP_SOURCE_DIR");
    char path[4096], *text;
    FILE *f;
    long n;
    cJSON *o;

    snprintf(path, sizeof(path), "%s/test/unit/controllers/data/%s", src ? src : ".", name);
    f = fopen(path, "re");
    assert_non_null(f);
    assert_int_equal(fseek(f, 0, SEEK_END), 0);
    n = ftell(f);
    assert_true(n > 0);
    rewind(f);
    text = malloc((size_t)n + 1);
    assert_non_null(text);
    assert_int_equal(fread(text, 1, (size_t)n, f), (size_t)n);
    text[n] = '\0';
    fclose(f);
    o = cJSON_Parse(text);
    free(text);
    assert_non_null(o);
    return o;
}

static const cJSON *at(const cJSON *o, const char *a, const char *b, const char *c)
{
    o = cJSON_GetObjectItemCaseSensitive(o, a);
    if (b)
        o = cJSON_GetObjectItemCaseSensitive(o, b);
    if (c)
        o = cJSON_GetObjectItemCaseSensitive(o, c);
    return o;
}

static void assert_same(const cJSON *a, const cJSON *b)
{
    assert_non_null(a);
    assert_true(cJSON_Compare(a, b, true));
}

static size_t text_size(const cJSON *o)
{
    char *t = cJSON_PrintUnformatted(o);
    size_t n = strlen(t);

    free(t);
    return n;
}

static void test_cachekeep__a_statefulset_keeps_what_the_controllers_read(void **state)
{
    cJSON *full = load("cachekeep-statefulset.json"), *kept = cJSON_Duplicate(full, true);
    struct status_sts a, b;
    const char *hash;

    assert_true(cachekeep_statefulset(NULL, kept));
    /* The readings of status_statefulset, at the target hash and at another. */
    status_statefulset(full, NULL, &a);
    hash = a.template_hash;
    assert_non_null(hash);
    status_statefulset(full, hash, &a);
    status_statefulset(kept, hash, &b);
    assert_true(a.exists && b.exists);
    assert_true(a.complete);
    assert_int_equal(b.complete, a.complete);
    assert_int_equal(b.replicas, a.replicas);
    assert_int_equal(b.status_replicas, a.status_replicas);
    assert_int_equal(b.ready, a.ready);
    assert_int_equal(b.updated, a.updated);
    assert_non_null(b.template_hash);
    assert_string_equal(b.template_hash, a.template_hash);
    assert_non_null(b.certs);
    assert_string_equal(b.certs, a.certs);
    status_statefulset(kept, "another", &b);
    assert_false(b.complete);
    assert_string_equal(render_cluster_certs_mounted(kept), render_cluster_certs_mounted(full));
    /* The whole metadata but managedFields (ownership, uid, generation, the config hash),
     * the claims and the whole status. */
    assert_null(at(kept, "metadata", "managedFields", NULL));
    assert_non_null(at(full, "metadata", "managedFields", NULL));
    cJSON_DeleteItemFromObjectCaseSensitive(cJSON_GetObjectItemCaseSensitive(full, "metadata"),
                                            "managedFields");
    assert_same(at(kept, "metadata", NULL, NULL), at(full, "metadata", NULL, NULL));
    assert_same(at(kept, "spec", "volumeClaimTemplates", NULL),
                at(full, "spec", "volumeClaimTemplates", NULL));
    assert_same(at(kept, "spec", "template", "metadata"), at(full, "spec", "template", "metadata"));
    assert_same(at(kept, "status", NULL, NULL), at(full, "status", NULL, NULL));
    assert_string_equal(kube_obj_uid(kept), kube_obj_uid(full));
    assert_string_equal(kube_obj_resource_version(kept), kube_obj_resource_version(full));
    assert_non_null(kube_obj_controller_ref(kept));
    /* What goes: the containers, and with them most of the object. */
    assert_null(
        at(kept, "spec", "template", "spec")
            ? cJSON_GetObjectItemCaseSensitive(at(kept, "spec", "template", "spec"), "containers")
            : NULL);
    assert_non_null(
        cJSON_GetObjectItemCaseSensitive(at(full, "spec", "template", "spec"), "containers"));
    assert_same(at(kept, "spec", "updateStrategy", NULL), at(full, "spec", "updateStrategy", NULL));
    assert_true(text_size(kept) * 5 < text_size(full) * 2); /* under 40% */
    cJSON_Delete(full);
    cJSON_Delete(kept);
}

static void test_cachekeep__a_pod_keeps_its_gates_volumes_conditions_ip_and_restarts(void **state)
{
    cJSON *full = load("cachekeep-pod.json"), *kept = cJSON_Duplicate(full, true);
    const cJSON *st;

    assert_true(cachekeep_pod(NULL, kept));
    assert_null(at(kept, "metadata", "managedFields", NULL));
    cJSON_DeleteItemFromObjectCaseSensitive(cJSON_GetObjectItemCaseSensitive(full, "metadata"),
                                            "managedFields");
    /* Its owner, uid, labels and config-hash annotation, deletionTimestamp when set. */
    assert_same(at(kept, "metadata", NULL, NULL), at(full, "metadata", NULL, NULL));
    assert_non_null(kube_obj_annotation(kept, "nestcp.x-k8s.io/config-hash"));
    assert_same(at(kept, "spec", "volumes", NULL), at(full, "spec", "volumes", NULL));
    st = cJSON_GetObjectItemCaseSensitive(kept, "status");
    assert_same(cJSON_GetObjectItemCaseSensitive(st, "conditions"),
                at(full, "status", "conditions", NULL));
    assert_string_equal(cJSON_GetObjectItemCaseSensitive(st, "podIP")->valuestring,
                        at(full, "status", "podIP", NULL)->valuestring);
    assert_same(cJSON_GetObjectItemCaseSensitive(st, "podIPs"), at(full, "status", "podIPs", NULL));
    assert_string_equal(cJSON_GetObjectItemCaseSensitive(st, "phase")->valuestring, "Running");
    /* The containers' restarts and how their last run ended, for the health of a roll. */
    assert_same(cJSON_GetObjectItemCaseSensitive(st, "containerStatuses"),
                at(full, "status", "containerStatuses", NULL));
    /* Gone: containers, tolerations. */
    assert_null(at(kept, "spec", "containers", NULL));
    assert_null(at(kept, "spec", "tolerations", NULL));
    assert_true(text_size(kept) * 2 < text_size(full));
    cJSON_Delete(full);
    cJSON_Delete(kept);

    /* A gated pod keeps its gates. */
    full = cJSON_Parse("{\"metadata\":{\"name\":\"c-etcd-1\"},\"spec\":{\"schedulingGates\":"
                       "[{\"name\":\"nestcp.x-k8s.io/etcd-member\"}],\"containers\":[]}}");
    assert_true(cachekeep_pod(NULL, full));
    assert_int_equal(cJSON_GetArraySize(at(full, "spec", "schedulingGates", NULL)), 1);
    assert_null(at(full, "spec", "containers", NULL));
    cJSON_Delete(full);
}

static cJSON *secret(const char *name, const char *owner_api_version, const char *owner_kind)
{
    char text[1024];

    snprintf(
        text, sizeof(text),
        "{\"apiVersion\":\"v1\",\"kind\":\"Secret\",\"metadata\":{\"name\":\"%s\","
        "\"namespace\":\"ns1\",\"uid\":\"u\",\"labels\":{\"cluster.x-k8s.io/cluster-name\":"
        "\"c\"},\"managedFields\":[{\"manager\":\"m\"}]%s%s%s%s%s},\"type\":\"kubernetes.io/tls\","
        "\"data\":{\"tls.crt\":\"Y2VydA==\",\"tls.key\":\"a2V5\"}}",
        name, owner_kind ? ",\"ownerReferences\":[{\"apiVersion\":\"" : "",
        owner_kind ? owner_api_version : "", owner_kind ? "\",\"kind\":\"" : "",
        owner_kind ? owner_kind : "",
        owner_kind ? "\",\"name\":\"o\",\"uid\":\"p\",\"controller\":true}]" : "");
    return cJSON_Parse(text);
}

static bool keeps(cJSON *s)
{
    bool kept;

    assert_non_null(s);
    kept = cachekeep_secret(NULL, s);
    cJSON_Delete(s);
    return kept;
}

static void test_cachekeep__secrets_are_cached_when_ours_or_named_like_ours(void **state)
{
    cJSON *s = secret("c-apiserver-certs-0e92b85e84", "controlplane.cluster.x-k8s.io/v1beta1",
                      "NestedAPIServer");

    /* Ours: kept whole but the managedFields. */
    assert_true(cachekeep_secret(NULL, s));
    assert_null(at(s, "metadata", "managedFields", NULL));
    assert_string_equal(at(s, "data", "tls.key", NULL)->valuestring, "a2V5");
    assert_string_equal(at(s, "type", NULL, NULL)->valuestring, "kubernetes.io/tls");
    assert_non_null(kube_obj_controller_ref(s));
    cJSON_Delete(s);

    /* Controlled by one of nestcp's kinds, of any version, whatever the name. */
    assert_true(
        keeps(secret("anything", "controlplane.cluster.x-k8s.io/v1alpha4", "NestedControlPlane")));
    assert_true(keeps(secret("anything", "controlplane.cluster.x-k8s.io/v9", "NestedEtcd")));
    /* Named like ours: CAs and kubeconfigs a user supplies (no owner, or another one), and
     * certificates Secrets. */
    assert_true(keeps(secret("c-ca", NULL, NULL)));
    assert_true(keeps(secret("c-etcd", NULL, NULL)));
    assert_true(keeps(secret("c-proxy", NULL, NULL)));
    assert_true(keeps(secret("c-sa", NULL, NULL)));
    assert_true(keeps(secret("c-kubeconfig", "cluster.x-k8s.io/v1beta1", "Cluster")));
    assert_true(keeps(secret("c-etcd-certs-ad8fee2679", NULL, NULL)));
    /* Not ours: Cluster API's bootstrap data and tokens, and look-alike names. */
    assert_false(
        keeps(secret("c-md-0-x7k2p-4lq9z", "bootstrap.cluster.x-k8s.io/v1beta1", "KubeadmConfig")));
    assert_false(keeps(secret("c-control-plane-x7k2p", "controlplane.cluster.x-k8s.io/v1beta1",
                              "KubeadmControlPlane")));
    assert_false(keeps(secret("ca", NULL, NULL)));
    assert_false(keeps(secret("c-casa", NULL, NULL)));
    assert_false(
        keeps(secret("c-ssh", "infrastructure.cluster.x-k8s.io/v1beta1", "NestedClusterTemplate")));
}

static void test_cachekeep__other_kinds_lose_only_server_bookkeeping(void **state)
{
    cJSON *o = cJSON_Parse(
        "{\"apiVersion\":\"controlplane.cluster.x-k8s.io/v1beta1\",\"kind\":\"NestedControlPlane\","
        "\"metadata\":{\"name\":\"c\",\"annotations\":{\"kubectl.kubernetes.io/"
        "last-applied-configuration\":\"{\\\"spec\\\":{}}\",\"a\":\"b\"},\"managedFields\":[{}]},"
        "\"spec\":{\"version\":\"1.36.3\"},\"status\":{\"ready\":true}}");
    cJSON *want = cJSON_Parse(
        "{\"apiVersion\":\"controlplane.cluster.x-k8s.io/v1beta1\",\"kind\":\"NestedControlPlane\","
        "\"metadata\":{\"name\":\"c\",\"annotations\":{\"a\":\"b\"}},"
        "\"spec\":{\"version\":\"1.36.3\"},\"status\":{\"ready\":true}}");

    assert_true(cachekeep_object(NULL, o));
    assert_true(cJSON_Compare(o, want, true));
    cJSON_Delete(o);
    cJSON_Delete(want);
}

/* A snapshot Job keeps what its state is read from (snapshot_job_state): its status. */
static void test_cachekeep__a_job_keeps_its_status_only(void **state)
{
    cJSON *o = cJSON_Parse(
        "{\"apiVersion\":\"batch/"
        "v1\",\"kind\":\"Job\",\"metadata\":{\"name\":\"c-etcd-snapshot-1\","
        "\"managedFields\":[{}]},\"spec\":{\"template\":{\"spec\":{\"containers\":[{}]}}},"
        "\"status\":{\"conditions\":[{\"type\":\"Complete\",\"status\":\"True\"}]}}");
    cJSON *want =
        cJSON_Parse("{\"apiVersion\":\"batch/"
                    "v1\",\"kind\":\"Job\",\"metadata\":{\"name\":\"c-etcd-snapshot-1\"},"
                    "\"status\":{\"conditions\":[{\"type\":\"Complete\",\"status\":\"True\"}]}}");

    assert_true(cachekeep_transform("Job") == cachekeep_job);
    assert_true(cachekeep_job(NULL, o));
    assert_true(cJSON_Compare(o, want, true));
    cJSON_Delete(o);
    cJSON_Delete(want);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cachekeep__a_statefulset_keeps_what_the_controllers_read),
        cmocka_unit_test(test_cachekeep__a_pod_keeps_its_gates_volumes_conditions_ip_and_restarts),
        cmocka_unit_test(test_cachekeep__secrets_are_cached_when_ours_or_named_like_ours),
        cmocka_unit_test(test_cachekeep__other_kinds_lose_only_server_bookkeeping),
        cmocka_unit_test(test_cachekeep__a_job_keeps_its_status_only),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
