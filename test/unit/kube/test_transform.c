#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "lib/kube/transform.h"

/* obj printed without whitespace, for comparisons with expected JSON. */
static void assert_json(const cJSON *obj, const char *want)
{
    char *have = cJSON_PrintUnformatted(obj);
    cJSON *w = cJSON_Parse(want);
    char *want_text = cJSON_PrintUnformatted(w);

    assert_non_null(have);
    assert_non_null(want_text);
    assert_string_equal(have, want_text);
    free(have);
    free(want_text);
    cJSON_Delete(w);
}

static void test_transform__trim_metadata_drops_managed_fields_and_last_applied(void **state)
{
    cJSON *o = cJSON_Parse(
        "{\"kind\":\"NestedEtcd\",\"metadata\":{\"name\":\"c-etcd\",\"uid\":\"u1\","
        "\"resourceVersion\":\"7\",\"generation\":2,\"labels\":{\"a\":\"b\"},"
        "\"annotations\":{\"kubectl.kubernetes.io/last-applied-configuration\":\"{...}\","
        "\"nestcp.x-k8s.io/config-hash\":\"h1\"},\"ownerReferences\":[{\"uid\":\"p\","
        "\"controller\":true}],\"finalizers\":[\"f\"],\"deletionTimestamp\":\"t\","
        "\"managedFields\":[{\"manager\":\"kubectl\"}]},\"spec\":{\"replicas\":3}}");

    kube_transform_trim_metadata(o);
    assert_json(o, "{\"kind\":\"NestedEtcd\",\"metadata\":{\"name\":\"c-etcd\",\"uid\":\"u1\","
                   "\"resourceVersion\":\"7\",\"generation\":2,\"labels\":{\"a\":\"b\"},"
                   "\"annotations\":{\"nestcp.x-k8s.io/config-hash\":\"h1\"},"
                   "\"ownerReferences\":[{\"uid\":\"p\",\"controller\":true}],"
                   "\"finalizers\":[\"f\"],\"deletionTimestamp\":\"t\"},"
                   "\"spec\":{\"replicas\":3}}");
    cJSON_Delete(o);

    /* Annotations left empty go; an object without metadata is left alone. */
    o = cJSON_Parse("{\"metadata\":{\"name\":\"x\",\"annotations\":{"
                    "\"kubectl.kubernetes.io/last-applied-configuration\":\"{}\"}}}");
    kube_transform_trim_metadata(o);
    assert_json(o, "{\"metadata\":{\"name\":\"x\"}}");
    cJSON_Delete(o);
    o = cJSON_Parse("{\"items\":[]}");
    kube_transform_trim_metadata(o);
    assert_json(o, "{\"items\":[]}");
    cJSON_Delete(o);
}

static void test_transform__keep_leaves_only_the_paths_and_what_leads_to_them(void **state)
{
    static const char *const keep[] = {"metadata",
                                       "spec.replicas",
                                       "spec.template.metadata",
                                       "spec.template.spec.volumes",
                                       "status",
                                       NULL};
    cJSON *o = cJSON_Parse(
        "{\"metadata\":{\"name\":\"s\",\"labels\":{\"x\":\"y\"}},"
        "\"spec\":{\"replicas\":3,\"serviceName\":\"s\",\"selector\":{\"matchLabels\":{}},"
        "\"template\":{\"metadata\":{\"annotations\":{\"h\":\"1\"}},"
        "\"spec\":{\"containers\":[{\"name\":\"etcd\",\"command\":[\"etcd\"]}],"
        "\"volumes\":[{\"name\":\"certs\",\"secret\":{\"secretName\":\"c\"}}]}}},"
        "\"status\":{\"replicas\":3,\"readyReplicas\":2}}");

    kube_transform_keep(o, keep);
    assert_json(o, "{\"metadata\":{\"name\":\"s\",\"labels\":{\"x\":\"y\"}},"
                   "\"spec\":{\"replicas\":3,\"template\":{\"metadata\":{\"annotations\":"
                   "{\"h\":\"1\"}},\"spec\":{\"volumes\":[{\"name\":\"certs\",\"secret\":"
                   "{\"secretName\":\"c\"}}]}}},\"status\":{\"replicas\":3,\"readyReplicas\":2}}");
    cJSON_Delete(o);
}

static void test_transform__keep_matches_whole_keys_and_drops_odd_shapes(void **state)
{
    static const char *const keep[] = {"spec.rep", "status.podIP", "spec.template.spec", NULL};
    cJSON *o = cJSON_Parse(
        /* "replicas" is not "rep", "podIPs" is not "podIP"; a template that is not an object
         * cannot hold spec.template.spec. */
        "{\"spec\":{\"replicas\":3,\"rep\":1,\"template\":[1,2]},"
        "\"status\":{\"podIP\":\"10.0.0.1\",\"podIPs\":[{\"ip\":\"10.0.0.1\"}]},\"kind\":\"Pod\"}");

    kube_transform_keep(o, keep);
    assert_json(o, "{\"spec\":{\"rep\":1},\"status\":{\"podIP\":\"10.0.0.1\"}}");
    cJSON_Delete(o);

    /* Nothing to keep: an empty object; not an object: untouched. */
    o = cJSON_Parse("{\"a\":{\"b\":1}}");
    kube_transform_keep(o, (const char *const[]){NULL});
    assert_json(o, "{}");
    cJSON_Delete(o);
    o = cJSON_Parse("[1]");
    kube_transform_keep(o, keep);
    assert_json(o, "[1]");
    cJSON_Delete(o);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_transform__trim_metadata_drops_managed_fields_and_last_applied),
        cmocka_unit_test(test_transform__keep_leaves_only_the_paths_and_what_leads_to_them),
        cmocka_unit_test(test_transform__keep_matches_whole_keys_and_drops_odd_shapes),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
