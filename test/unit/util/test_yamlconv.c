#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
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
    assert_string_equal(cJSON_GetObjectItem(cJSON_GetArrayItem(docs, 1), "kind")->valuestring,
                        "B");
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
        assert_int_equal(yamlconv_parse_all(bad[i], strlen(bad[i]), "in.yaml", &docs, &e),
                         -EINVAL);
        assert_null(docs);
        assert_non_null(strstr(e.msg, "in.yaml: line "));
        assert_non_null(strstr(e.msg, want[i]));
    }
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
        cmocka_unit_test(test_yamlconv__depth_is_bounded),
        cmocka_unit_test(test_yamlconv__emit_round_trips_types),
        cmocka_unit_test(test_yamlconv__emit_all_separates_documents),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
