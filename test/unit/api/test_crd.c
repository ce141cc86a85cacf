#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/crd.h"

static const cJSON *at(const cJSON *o, const char *path)
{
    char key[128];

    while (o && *path) {
        size_t n = strcspn(path, ".");
        snprintf(key, sizeof(key), "%.*s", (int)n, path);
        if (cJSON_IsArray(o))
            o = cJSON_GetArrayItem(o, atoi(key));
        else
            o = cJSON_GetObjectItemCaseSensitive(o, key);
        path += n + (path[n] == '.');
    }
    return o;
}

static const char *str_at(const cJSON *o, const char *path)
{
    const cJSON *v = at(o, path);

    return cJSON_IsString(v) ? v->valuestring : NULL;
}

static void test_crd__every_kind_serves_both_versions_with_one_schema(void **state)
{
    for (int k = 0; k < API_KIND_CLUSTER; k++) {
        cJSON *crd = NULL;
        assert_int_equal(api_crd_build((enum api_kind)k, &crd), 0);
        const cJSON *versions = at(crd, "spec.versions");
        assert_int_equal(cJSON_GetArraySize(versions), 2);
        assert_string_equal(str_at(versions, "0.name"), "v1alpha4");
        assert_string_equal(str_at(versions, "1.name"), "v1beta1");
        assert_true(cJSON_IsFalse(at(versions, "0.storage")));
        assert_true(cJSON_IsTrue(at(versions, "1.storage")));
        assert_true(cJSON_IsTrue(at(versions, "0.served")));
        assert_true(cJSON_Compare(at(versions, "0.schema"), at(versions, "1.schema"), true));
        assert_true(cJSON_Compare(at(versions, "0.additionalPrinterColumns"),
                                  at(versions, "1.additionalPrinterColumns"), true));
        assert_non_null(at(versions, "1.subresources.status"));
        const cJSON *labels = at(crd, "metadata.labels");
        assert_string_equal(
            cJSON_GetObjectItemCaseSensitive(labels, "cluster.x-k8s.io/v1beta1")->valuestring,
            "v1alpha4_v1beta1");
        assert_string_equal(str_at(crd, "spec.names.categories.2"), "nestcp");
        assert_string_equal(str_at(crd, "spec.scope"), "Namespaced");
        cJSON_Delete(crd);
    }
}

static void test_crd__names_match_capn(void **state)
{
    const char *want[][3] = {
        {"nestedclusters.infrastructure.cluster.x-k8s.io", "nc", "NestedCluster"},
        {"nestedcontrolplanes.controlplane.cluster.x-k8s.io", "ncp", "NestedControlPlane"},
        {"nestedetcds.controlplane.cluster.x-k8s.io", "netcd", "NestedEtcd"},
        {"nestedapiservers.controlplane.cluster.x-k8s.io", "nkas", "NestedAPIServer"},
        {"nestedcontrollermanagers.controlplane.cluster.x-k8s.io", "nkcm",
         "NestedControllerManager"},
    };
    char file[256];

    for (int k = 0; k < API_KIND_CLUSTER; k++) {
        cJSON *crd = NULL;
        assert_int_equal(api_crd_build((enum api_kind)k, &crd), 0);
        assert_string_equal(str_at(crd, "metadata.name"), want[k][0]);
        assert_string_equal(str_at(crd, "spec.names.shortNames.0"), want[k][1]);
        assert_string_equal(str_at(crd, "spec.names.kind"), want[k][2]);
        cJSON_Delete(crd);
    }
    api_crd_file_name(API_KIND_NESTED_ETCD, file, sizeof(file));
    assert_string_equal(file, "controlplane.cluster.x-k8s.io_nestedetcds.yaml");
}

static void test_crd__control_plane_printer_columns(void **state)
{
    cJSON *crd = NULL;
    const char *shown[8];
    int n = 0;
    const cJSON *c;

    assert_int_equal(api_crd_build(API_KIND_NESTED_CONTROL_PLANE, &crd), 0);
    cJSON_ArrayForEach(c, at(crd, "spec.versions.1.additionalPrinterColumns")) {
        if (!cJSON_GetObjectItem(c, "priority") && n < 8)
            shown[n++] = cJSON_GetObjectItem(c, "name")->valuestring;
    }
    assert_int_equal(n, 4);
    assert_string_equal(shown[0], "Version");
    assert_string_equal(shown[1], "Ready");
    assert_string_equal(shown[2], "Phase");
    assert_string_equal(shown[3], "Age");
    cJSON_Delete(crd);
}

/* Every property a user can ask kubectl explain about has a description: in every served
 * version of every CRD, at any depth (object properties, list items, map values). Each gap is
 * printed as "<crd> <version>: <path>", all of them before the test fails. The root metadata is
 * the one exception: the API server publishes ObjectMeta, with its description, in its place
 * (test/integration/api/test_api_explain.sh checks that through kubectl explain). */
static int walk_descriptions(const cJSON *s, const char *crd, const char *version, const char *path)
{
    const cJSON *p, *d;
    char sub[512];
    int missing = 0;

    if (!s)
        return 0;
    cJSON_ArrayForEach(p, cJSON_GetObjectItemCaseSensitive(s, "properties")) {
        snprintf(sub, sizeof(sub), "%s%s%s", path, *path ? "." : "", p->string);
        d = cJSON_GetObjectItemCaseSensitive(p, "description");
        if (!(*path == '\0' && strcmp(p->string, "metadata") == 0) &&
            (!cJSON_IsString(d) || strspn(d->valuestring, " \t\n") == strlen(d->valuestring))) {
            print_error("%s %s: %s has no description\n", crd, version, sub);
            missing++;
        }
        missing += walk_descriptions(p, crd, version, sub);
    }
    snprintf(sub, sizeof(sub), "%s[]", path);
    missing += walk_descriptions(cJSON_GetObjectItemCaseSensitive(s, "items"), crd, version, sub);
    snprintf(sub, sizeof(sub), "%s{}", path);
    missing += walk_descriptions(cJSON_GetObjectItemCaseSensitive(s, "additionalProperties"), crd,
                                 version, sub);
    return missing;
}

static void test_crd__every_field_of_every_version_is_documented(void **state)
{
    int missing = 0, versions = 0;

    for (int k = 0; k < API_KIND_COUNT; k++) {
        cJSON *crd = NULL;
        const cJSON *v;
        assert_int_equal(api_crd_build((enum api_kind)k, &crd), 0);
        cJSON_ArrayForEach(v, at(crd, "spec.versions")) {
            assert_non_null(at(v, "schema.openAPIV3Schema.properties.spec"));
            missing += walk_descriptions(at(v, "schema.openAPIV3Schema"),
                                         str_at(crd, "metadata.name"), str_at(v, "name"), "");
            versions++;
        }
        cJSON_Delete(crd);
    }
    /* Five kinds in v1alpha4 and v1beta1, and Cluster API's Cluster in both. */
    assert_int_equal(versions, 12);
    assert_int_equal(missing, 0);
}

/* The walk above finds a gap where there is one: a property deep in a list item, and a
 * description that is only blanks. */
static void test_crd__a_missing_description_is_found(void **state)
{
    cJSON *s = cJSON_Parse("{\"properties\": {\"spec\": {\"description\": \"d\", \"properties\":"
                           " {\"list\": {\"description\": \"d\", \"items\": {\"properties\":"
                           " {\"x\": {\"description\": \" \"}}}}}}}}");

    assert_non_null(s);
    assert_int_equal(walk_descriptions(s, "test", "v1", ""), 1);
    cJSON_Delete(s);
}

static void test_crd__structural_details(void **state)
{
    cJSON *crd = NULL;
    const cJSON *spec;

    assert_int_equal(api_crd_build(API_KIND_NESTED_ETCD, &crd), 0);
    spec = at(crd, "spec.versions.1.schema.openAPIV3Schema.properties.spec.properties");
    assert_true(cJSON_IsTrue(at(spec, "patches.items.x-kubernetes-preserve-unknown-fields")));
    assert_true(cJSON_IsTrue(
        at(spec, "resources.properties.limits.additionalProperties.x-kubernetes-int-or-string")));
    assert_int_equal(at(spec, "replicas.default")->valueint, 1);
    assert_int_equal(at(spec, "replicas.maximum")->valueint, 7);
    assert_string_equal(str_at(spec, "storage.properties.persistentVolumeClaim.properties.size."
                                     "default"),
                        "1Gi");
    cJSON_Delete(crd);

    assert_int_equal(api_crd_build(API_KIND_NESTED_CONTROL_PLANE, &crd), 0);
    spec = at(crd, "spec.versions.1.schema.openAPIV3Schema.properties.spec.properties");
    assert_string_equal(str_at(spec, "certificates.properties.keyAlgorithm.default"), "ECDSA-P256");
    assert_int_equal(cJSON_GetArraySize(at(spec, "certificates.properties.keyAlgorithm.enum")), 5);
    assert_true(cJSON_IsObject(at(spec, "certificates.default")));
    assert_string_equal(str_at(spec, "featureGates.additionalProperties.type"), "boolean");
    assert_int_equal(at(spec, "clusterNetwork.properties.services.properties.cidrBlocks."
                              "maxItems")
                         ->valueint,
                     2);
    cJSON_Delete(crd);

    assert_int_equal(api_crd_build(API_KIND_CLUSTER, &crd), 0);
    assert_null(at(crd, "metadata.labels"));
    assert_true(cJSON_IsTrue(at(crd, "spec.versions.1.schema.openAPIV3Schema.properties.spec."
                                     "x-kubernetes-preserve-unknown-fields")));
    assert_true(cJSON_IsTrue(at(crd, "spec.versions.1.schema.openAPIV3Schema.properties.status."
                                     "x-kubernetes-preserve-unknown-fields")));
    assert_true(cJSON_IsTrue(at(crd, "spec.versions.1.storage")));
    cJSON_Delete(crd);
}

/* A default in the table must itself pass the table's type check. */
static void check_defaults(const struct api_schema *s, const char *path)
{
    char sub[512];

    if (s->def) {
        struct api_errors errs = API_ERRORS_INIT;
        cJSON *d = cJSON_Parse(s->def);
        assert_non_null(d);
        if (api_schema_check(s, d, path, &errs) != 0)
            fail_msg("default of %s does not pass its own schema: %s", path, errs.lines[0]);
        cJSON_Delete(d);
        api_errors_done(&errs);
    }
    for (const struct api_schema *p = s->props; p && p->name; p++) {
        snprintf(sub, sizeof(sub), "%s.%s", path, p->name);
        check_defaults(p, sub);
    }
    if (s->items)
        check_defaults(s->items, path);
}

static void test_crd__defaults_pass_their_schema(void **state)
{
    for (int k = 0; k < API_KIND_COUNT; k++) {
        check_defaults(api_kind_info((enum api_kind)k)->spec, "spec");
        check_defaults(api_kind_info((enum api_kind)k)->status, "status");
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_crd__every_kind_serves_both_versions_with_one_schema),
        cmocka_unit_test(test_crd__names_match_capn),
        cmocka_unit_test(test_crd__control_plane_printer_columns),
        cmocka_unit_test(test_crd__every_field_of_every_version_is_documented),
        cmocka_unit_test(test_crd__a_missing_description_is_found),
        cmocka_unit_test(test_crd__structural_details),
        cmocka_unit_test(test_crd__defaults_pass_their_schema),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
