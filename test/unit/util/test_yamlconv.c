#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/util/yamlconv.h"

static cJSON *parse1(const char *text)
{
    cJSON *doc = NULL;
    struct err e;

    assert_int_equal(yamlconv_parse_one(text, strlen(text), "t.yaml", &doc, &e), 0);
    return doc;
}

static void test_yamlconv__scalars_resolve_like_kubectl(void **state)
{
    cJSON *d = parse1("a: 1\nb: \"1\"\nc: true\nd: 'yes'\ne: yes\nf: ~\ng: 1.5\nh: 0x10\n"
                      "i: v1.20.2\nj: !!str 42\nk: 10.96.0.0/12\n");

    assert_true(cJSON_IsNumber(cJSON_GetObjectItem(d, "a")));
    assert_string_equal(cJSON_GetObjectItem(d, "b")->valuestring, "1");
    assert_true(cJSON_IsTrue(cJSON_GetObjectItem(d, "c")));
    assert_string_equal(cJSON_GetObjectItem(d, "d")->valuestring, "yes");
    assert_true(cJSON_IsTrue(cJSON_GetObjectItem(d, "e")));
    assert_true(cJSON_IsNull(cJSON_GetObjectItem(d, "f")));
    assert_true(cJSON_GetObjectItem(d, "g")->valuedouble == 1.5);
    assert_int_equal(cJSON_GetObjectItem(d, "h")->valueint, 16);
    assert_string_equal(cJSON_GetObjectItem(d, "i")->valuestring, "v1.20.2");
    assert_string_equal(cJSON_GetObjectItem(d, "j")->valuestring, "42");
    assert_string_equal(cJSON_GetObjectItem(d, "k")->valuestring, "10.96.0.0/12");
    cJSON_Delete(d);
}

static void test_yamlconv__multi_document_skips_empty(void **state)
{
    const char *text = "---\nkind: A\n---\n# nothing\n---\nkind: B\n...\n";
    cJSON *docs = NULL;

    assert_int_equal(yamlconv_parse_all(text, strlen(text), "t", &docs, NULL), 0);
    assert_int_equal(cJSON_GetArraySize(docs), 2);
    assert_string_equal(cJSON_GetObjectItem(cJSON_GetArrayItem(docs, 1), "kind")->valuestring, "B");
    cJSON_Delete(docs);
}

static void test_yamlconv__errors_name_line_and_column(void **state)
{
    const char *bad[] = {"a: [1, 2\n", "a: 1\na: 2\n", "a: &x 1\nb: *x\n", "? [a]\n: 1\n"};
    const char *want[] = {"line", "duplicate key \"a\"", "anchors", "keys must be scalars"};

    for (size_t i = 0; i < 4; i++) {
        cJSON *docs = NULL;
        struct err e;
        err_clear(&e);
        assert_int_equal(yamlconv_parse_all(bad[i], strlen(bad[i]), "in.yaml", &docs, &e), -EINVAL);
        assert_null(docs);
        assert_non_null(strstr(e.msg, "in.yaml: line "));
        assert_non_null(strstr(e.msg, want[i]));
    }
}

/* A duplicate key names key, line and column; at the top of a document, where two objects
 * joined without "---" collide, it also says what is probably missing. */
static void test_yamlconv__duplicate_keys_name_key_and_line(void **state)
{
    const char *joined = "kind: A\nspec: {replicas: 1}\n# b.yaml\nkind: B\n";
    const char *nested = "kind: A\nspec:\n  x: 1\n  x: 2\n";
    cJSON *docs = NULL;
    struct err e;

    err_clear(&e);
    assert_int_equal(yamlconv_parse_all(joined, strlen(joined), "<stdin>", &docs, &e), -EINVAL);
    assert_null(docs);
    assert_non_null(strstr(e.msg, "<stdin>: line 4, column "));
    assert_non_null(strstr(e.msg, "duplicate key \"kind\""));
    assert_non_null(strstr(e.msg, "without a \"---\" line before it"));
    err_clear(&e);
    assert_int_equal(yamlconv_parse_all(nested, strlen(nested), "in.yaml", &docs, &e), -EINVAL);
    assert_non_null(strstr(e.msg, "in.yaml: line 4, column "));
    assert_non_null(strstr(e.msg, "duplicate key \"x\""));
    assert_null(strstr(e.msg, "---"));
}

/* The samples, concatenated as docs/render.md does (`cat a.yaml b.yaml`), are one stream of
 * every object of both: each file starts its documents with "---". */
static void test_yamlconv__concatenated_samples_are_one_stream(void **state)
{
    const char *src = getenv("NESTCP_SOURCE_DIR");
    const char *files[] = {"config/samples/capn-cluster.yaml", "config/samples/standalone.yaml"};
    char *text = NULL, path[1024];
    size_t len = 0;
    cJSON *docs = NULL;
    struct err e;

    assert_non_null(src);
    for (size_t i = 0; i < 2; i++) {
        FILE *f;
        long n;
        snprintf(path, sizeof(path), "%s/%s", src, files[i]);
        assert_non_null(f = fopen(path, "rb"));
        assert_int_equal(fseek(f, 0, SEEK_END), 0);
        assert_true((n = ftell(f)) > 0);
        rewind(f);
        assert_non_null(text = realloc(text, len + (size_t)n + 1));
        assert_int_equal(fread(text + len, 1, (size_t)n, f), (size_t)n);
        len += (size_t)n;
        fclose(f);
    }
    err_clear(&e);
    assert_int_equal(yamlconv_parse_all(text, len, "<stdin>", &docs, &e), 0);
    /* capn-cluster.yaml: Cluster, NestedCluster, the control plane and three components;
     * standalone.yaml: the control plane and three components. */
    assert_int_equal(cJSON_GetArraySize(docs), 10);
    assert_string_equal(cJSON_GetObjectItem(cJSON_GetArrayItem(docs, 6), "kind")->valuestring,
                        "NestedControlPlane");
    cJSON_Delete(docs);
    free(text);
}

static void test_yamlconv__depth_is_bounded(void **state)
{
    char text[1024];
    size_t n = 0;
    struct err e;
    cJSON *docs = NULL;

    for (int i = 0; i < YAMLCONV_MAX_DEPTH + 5; i++)
        text[n++] = '[';
    text[n] = '\0';
    assert_int_equal(yamlconv_parse_all(text, n, "deep", &docs, &e), -EINVAL);
    assert_non_null(strstr(e.msg, "too deep"));
}

static void test_yamlconv__emit_round_trips_types(void **state)
{
    const char *text = "apiVersion: v1\nkind: ConfigMap\ndata:\n  a: 'true'\n  b: '1'\n  c: |\n"
                       "    line1\n    line2\n  d: ''\n  e: '- x'\nlist: []\nobj: {}\nn: 3\n"
                       "f: 2.5\nt: false\nz: null\n";
    cJSON *d = parse1(text), *back;
    struct buf out = BUF_INIT;

    assert_int_equal(yamlconv_emit(d, &out), 0);
    back = parse1(out.data);
    assert_true(cJSON_Compare(d, back, 1));
    assert_non_null(strstr(out.data, "a: 'true'"));
    assert_non_null(strstr(out.data, "kind: ConfigMap"));
    cJSON_Delete(d);
    cJSON_Delete(back);
    buf_done(&out);
}

static void test_yamlconv__emit_all_separates_documents(void **state)
{
    cJSON *docs = cJSON_Parse("[{\"kind\":\"A\"},{\"kind\":\"B\"}]"), *back = NULL;
    struct buf out = BUF_INIT;

    assert_int_equal(yamlconv_emit_all(docs, &out), 0);
    assert_string_equal(out.data, "kind: A\n---\nkind: B\n");
    assert_int_equal(yamlconv_parse_all(out.data, out.len, "o", &back, NULL), 0);
    assert_true(cJSON_Compare(docs, back, 1));
    cJSON_Delete(docs);
    cJSON_Delete(back);
    buf_done(&out);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_yamlconv__scalars_resolve_like_kubectl),
        cmocka_unit_test(test_yamlconv__multi_document_skips_empty),
        cmocka_unit_test(test_yamlconv__errors_name_line_and_column),
        cmocka_unit_test(test_yamlconv__duplicate_keys_name_key_and_line),
        cmocka_unit_test(test_yamlconv__concatenated_samples_are_one_stream),
        cmocka_unit_test(test_yamlconv__depth_is_bounded),
        cmocka_unit_test(test_yamlconv__emit_round_trips_types),
        cmocka_unit_test(test_yamlconv__emit_all_separates_documents),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
