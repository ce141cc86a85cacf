/* The samples in config/samples/ parse, default and validate cleanly with api/. */

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/defaults.h"
#include "api/validate.h"
#include "lib/util/yamlconv.h"

static cJSON *load(const char *file)
{
    const char *src = getenv("NESTCP_SOURCE_DIR");
    char path[4096];
    char *text = NULL;
    size_t len = 0;
    cJSON *docs = NULL;
    struct err e;

    assert_non_null(src);
    snprintf(path, sizeof(path), "%s/config/samples/%s", src, file);
    assert_int_equal(util_read_file(path, 1 << 20, &text, &len), 0);
    if (yamlconv_parse_all(text, len, path, &docs, &e) < 0)
        fail_msg("%s", e.msg);
    free(text);
    return docs;
}

static const char *kind_of(const cJSON *doc)
{
    return cJSON_GetObjectItem(doc, "kind")->valuestring;
}

static void fail_with(struct api_errors *errs, const char *what)
{
    struct buf b = BUF_INIT;

    api_errors_format(errs, &b);
    fail_msg("%s:\n%s", what, b.data ? b.data : "");
}

/* Parses every document, defaults the control plane against the Cluster (if any) and the
 * components against the control plane, validates everything; returns the object count. */
static int check_file(const char *file)
{
    cJSON *docs = load(file), *d;
    struct api_errors errs = API_ERRORS_INIT;
    struct api_capi_cluster *cl = NULL;
    struct api_control_plane *ncp = NULL;
    int n = 0;

    cJSON_ArrayForEach(d, docs) {
        if (strcmp(kind_of(d), "Cluster") == 0 && api_capi_cluster_from_json(d, &cl, &errs) < 0)
            fail_with(&errs, file);
        if (strcmp(kind_of(d), "NestedControlPlane") == 0 &&
            api_control_plane_from_json(d, &ncp, &errs) < 0)
            fail_with(&errs, file);
    }
    assert_non_null(ncp);
    assert_int_equal(api_control_plane_default(ncp, cl, NULL), 0);
    if (api_control_plane_validate(ncp, NULL, &errs) < 0)
        fail_with(&errs, file);
    assert_string_equal(ncp->spec.version, "1.36.3");
    cJSON_ArrayForEach(d, docs) {
        const char *k = kind_of(d);
        n++;
        if (strcmp(k, "NestedCluster") == 0) {
            struct api_nested_cluster *nc = NULL;
            if (api_nested_cluster_from_json(d, &nc, &errs) < 0 ||
                api_nested_cluster_validate(nc, &errs) < 0)
                fail_with(&errs, file);
            api_nested_cluster_free(nc);
        } else if (strncmp(k, "Nested", 6) == 0 && strcmp(k, "NestedControlPlane") != 0) {
            struct api_component *c = NULL;
            if (api_component_from_json(d, &c, &errs) < 0)
                fail_with(&errs, file);
            assert_int_equal(api_component_default(c, ncp, NULL), 0);
            if (api_component_validate(c, ncp, NULL, &errs) < 0)
                fail_with(&errs, file);
            /* Every component is the one the control plane refers to. */
            const char *ref = c->kind == API_KIND_NESTED_ETCD ? ncp->spec.etcd.name
                              : c->kind == API_KIND_NESTED_APISERVER
                                  ? ncp->spec.apiserver.name
                                  : ncp->spec.controller_manager.name;
            assert_string_equal(ref, c->meta.name);
            api_component_free(c);
        }
    }
    api_control_plane_free(ncp);
    api_capi_cluster_free(cl);
    cJSON_Delete(docs);
    return n;
}

static void test_samples__capn_cluster_is_valid(void **state)
{
    assert_int_equal(check_file("capn-cluster.yaml"), 6);
}

static void test_samples__standalone_is_valid(void **state)
{
    assert_int_equal(check_file("standalone.yaml"), 4);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_samples__capn_cluster_is_valid),
        cmocka_unit_test(test_samples__standalone_is_valid),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
