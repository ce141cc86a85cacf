#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>

#include "lib/kube/object.h"

static void test_object__metadata_strings_labels_and_annotations(void **state)
{
    cJSON *o = cJSON_Parse("{\"metadata\":{\"name\":\"n\",\"namespace\":\"ns\",\"uid\":\"u\","
                           "\"resourceVersion\":\"7\",\"labels\":{\"a\":\"1\",\"b\":2},"
                           "\"annotations\":{\"c\":\"3\"}}}");

    assert_non_null(o);
    assert_string_equal(kube_obj_name(o), "n");
    assert_string_equal(kube_obj_namespace(o), "ns");
    assert_string_equal(kube_obj_uid(o), "u");
    assert_string_equal(kube_obj_resource_version(o), "7");
    assert_string_equal(kube_obj_label(o, "a"), "1");
    assert_null(kube_obj_label(o, "b")); /* not a string */
    assert_null(kube_obj_label(o, "c"));
    assert_string_equal(kube_obj_annotation(o, "c"), "3");
    assert_null(kube_obj_owner_refs(o));
    assert_null(kube_obj_controller_ref(o));
    cJSON_Delete(o);
}

static void test_object__missing_or_odd_shapes_read_as_null(void **state)
{
    cJSON *o = cJSON_Parse("{\"metadata\":{\"name\":5,\"labels\":[\"a\"],"
                           "\"ownerReferences\":{\"x\":{\"controller\":true}}}}");

    assert_non_null(o);
    assert_null(kube_obj_name(NULL));
    assert_null(kube_obj_label(NULL, "a"));
    assert_null(kube_obj_name(o));
    assert_null(kube_obj_label(o, "a"));
    assert_null(kube_obj_owner_refs(o));
    assert_null(kube_obj_controller_ref(o));
    assert_null(kube_obj_controller_uid(o));
    cJSON_Delete(o);
}

static void test_object__the_controller_is_the_ref_marked_controller(void **state)
{
    cJSON *o = cJSON_Parse("{\"metadata\":{\"ownerReferences\":["
                           "{\"kind\":\"A\",\"uid\":\"u1\"},"
                           "{\"kind\":\"B\",\"uid\":\"u2\",\"controller\":true}]}}");

    assert_non_null(o);
    assert_int_equal(cJSON_GetArraySize(kube_obj_owner_refs(o)), 2);
    assert_string_equal(
        cJSON_GetObjectItemCaseSensitive(kube_obj_controller_ref(o), "kind")->valuestring, "B");
    assert_string_equal(kube_obj_controller_uid(o), "u2");
    cJSON_Delete(o);
}

/* The selectors the caches use, and the forms the API server also takes: each term must hold;
 * set-based terms are not understood and say so, so that a caller leaves the object to the
 * server. */
static void test_object__a_label_selector_selects_as_the_api_server_would(void **state)
{
    cJSON *o = cJSON_Parse("{\"metadata\":{\"labels\":{\"app.kubernetes.io/managed-by\":"
                           "\"nestcp\",\"cluster.x-k8s.io/cluster-name\":\"c\",\"e\":\"\"}}}");

    (void)state;
    assert_non_null(o);
    assert_int_equal(kube_obj_selected(o, NULL), 1);
    assert_int_equal(kube_obj_selected(o, ""), 1);
    assert_int_equal(kube_obj_selected(o, "app.kubernetes.io/managed-by=nestcp"), 1);
    assert_int_equal(kube_obj_selected(o, "app.kubernetes.io/managed-by==nestcp"), 1);
    assert_int_equal(kube_obj_selected(o, "app.kubernetes.io/managed-by=other"), 0);
    assert_int_equal(kube_obj_selected(o, "app.kubernetes.io/managed-by=nestc"), 0);
    assert_int_equal(kube_obj_selected(o, "app.kubernetes.io/managed-by!=other"), 1);
    assert_int_equal(kube_obj_selected(o, "app.kubernetes.io/managed-by!=nestcp"), 0);
    assert_int_equal(kube_obj_selected(o, "cluster.x-k8s.io/cluster-name"), 1);
    assert_int_equal(kube_obj_selected(o, "app.kubernetes.io/component=etcd,"
                                          "cluster.x-k8s.io/cluster-name"),
                     0);
    assert_int_equal(kube_obj_selected(o, "cluster.x-k8s.io/cluster-name, e="), 1);
    assert_int_equal(kube_obj_selected(o, "absent"), 0);
    assert_int_equal(kube_obj_selected(o, "!absent"), 1);
    assert_int_equal(kube_obj_selected(o, "!e"), 0);
    assert_int_equal(kube_obj_selected(o, "absent!=x"), 1);
    assert_int_equal(kube_obj_selected(o, "e in (a,b)"), -EINVAL);
    assert_int_equal(kube_obj_selected(o, "e notin (a)"), -EINVAL);
    assert_int_equal(kube_obj_selected(o, "a,,b"), -EINVAL);
    assert_int_equal(kube_obj_selected(o, "!e=x"), -EINVAL);
    assert_int_equal(kube_obj_selected(NULL, "e"), 0);
    cJSON_Delete(o);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_object__metadata_strings_labels_and_annotations),
        cmocka_unit_test(test_object__missing_or_odd_shapes_read_as_null),
        cmocka_unit_test(test_object__the_controller_is_the_ref_marked_controller),
        cmocka_unit_test(test_object__a_label_selector_selects_as_the_api_server_would),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
