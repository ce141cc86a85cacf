#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "lib/util/jsonpatch.h"

static cJSON *json(const char *text)
{
    cJSON *j = cJSON_Parse(text);

    assert_non_null(j);
    return j;
}

static void assert_json_equal(const cJSON *got, const char *want_text)
{
    cJSON *want = json(want_text);

    if (!cJSON_Compare(got, want, true)) {
        char *s = cJSON_PrintUnformatted(got);
        print_error("got  %s\nwant %s\n", s, want_text);
        free(s);
        fail();
    }
    cJSON_Delete(want);
}

/* Applies an RFC 6902 patch; checks the result or the error code (and a message fragment). */
static void check_patch(const char *doc_text, const char *patch_text, const char *want_text,
                        int want_code, const char *want_msg)
{
    cJSON *doc = json(doc_text), *patch = json(patch_text), *out = NULL;
    char *before = cJSON_PrintUnformatted(doc);
    struct err e;
    int r;

    err_clear(&e);
    r = jsonpatch_apply(doc, patch, &out, &e);
    if (r != want_code)
        print_error("code %d message %s\n", r, e.msg);
    assert_int_equal(r, want_code);
    if (want_code == 0) {
        assert_json_equal(out, want_text);
    } else {
        assert_null(out);
        if (want_msg && !strstr(e.msg, want_msg)) {
            print_error("message \"%s\" lacks \"%s\"\n", e.msg, want_msg);
            fail();
        }
    }
    /* The input document is never modified. */
    char *after = cJSON_PrintUnformatted(doc);
    assert_string_equal(before, after);
    free(before);
    free(after);
    cJSON_Delete(out);
    cJSON_Delete(doc);
    cJSON_Delete(patch);
}

/* RFC 6902 Appendix A.1 - A.16, in order. */
static void test_jsonpatch__rfc6902_appendix_a(void **state)
{
    check_patch("{\"foo\":\"bar\"}", "[{\"op\":\"add\",\"path\":\"/baz\",\"value\":\"qux\"}]",
                "{\"baz\":\"qux\",\"foo\":\"bar\"}", 0, NULL);
    check_patch("{\"foo\":[\"bar\",\"baz\"]}",
                "[{\"op\":\"add\",\"path\":\"/foo/1\",\"value\":\"qux\"}]",
                "{\"foo\":[\"bar\",\"qux\",\"baz\"]}", 0, NULL);
    check_patch("{\"baz\":\"qux\",\"foo\":\"bar\"}", "[{\"op\":\"remove\",\"path\":\"/baz\"}]",
                "{\"foo\":\"bar\"}", 0, NULL);
    check_patch("{\"foo\":[\"bar\",\"qux\",\"baz\"]}", "[{\"op\":\"remove\",\"path\":\"/foo/1\"}]",
                "{\"foo\":[\"bar\",\"baz\"]}", 0, NULL);
    check_patch("{\"baz\":\"qux\",\"foo\":\"bar\"}",
                "[{\"op\":\"replace\",\"path\":\"/baz\",\"value\":\"boo\"}]",
                "{\"baz\":\"boo\",\"foo\":\"bar\"}", 0, NULL);
    check_patch("{\"foo\":{\"bar\":\"baz\",\"waldo\":\"fred\"},\"qux\":{\"corge\":\"grault\"}}",
                "[{\"op\":\"move\",\"from\":\"/foo/waldo\",\"path\":\"/qux/thud\"}]",
                "{\"foo\":{\"bar\":\"baz\"},\"qux\":{\"corge\":\"grault\",\"thud\":\"fred\"}}", 0,
                NULL);
    check_patch("{\"foo\":[\"all\",\"grass\",\"cows\",\"eat\"]}",
                "[{\"op\":\"move\",\"from\":\"/foo/1\",\"path\":\"/foo/3\"}]",
                "{\"foo\":[\"all\",\"cows\",\"eat\",\"grass\"]}", 0, NULL);
    check_patch("{\"baz\":\"qux\",\"foo\":[\"a\",2,\"c\"]}",
                "[{\"op\":\"test\",\"path\":\"/baz\",\"value\":\"qux\"},"
                "{\"op\":\"test\",\"path\":\"/foo/1\",\"value\":2}]",
                "{\"baz\":\"qux\",\"foo\":[\"a\",2,\"c\"]}", 0, NULL);
    check_patch("{\"baz\":\"qux\"}", "[{\"op\":\"test\",\"path\":\"/baz\",\"value\":\"bar\"}]",
                NULL, -EBUSY, "operation 0 (test /baz): test failed");
    check_patch("{\"foo\":\"bar\"}",
                "[{\"op\":\"add\",\"path\":\"/child\",\"value\":{\"grandchild\":{}}}]",
                "{\"foo\":\"bar\",\"child\":{\"grandchild\":{}}}", 0, NULL);
    check_patch("{\"foo\":\"bar\"}",
                "[{\"op\":\"add\",\"path\":\"/baz\",\"value\":\"qux\",\"xyz\":123}]",
                "{\"foo\":\"bar\",\"baz\":\"qux\"}", 0, NULL);
    check_patch("{\"foo\":\"bar\"}", "[{\"op\":\"add\",\"path\":\"/baz/bat\",\"value\":\"qux\"}]",
                NULL, -ENOENT, "path does not exist");
    check_patch("{\"foo\":\"bar\"}",
                "[{\"op\":\"add\",\"path\":\"/baz\",\"value\":\"qux\",\"op\":\"remove\"}]", NULL,
                -EINVAL, "\"op\" appears twice");
    check_patch("{\"/\":9,\"~1\":10}", "[{\"op\":\"test\",\"path\":\"/~01\",\"value\":10}]",
                "{\"/\":9,\"~1\":10}", 0, NULL);
    check_patch("{\"/\":9,\"~1\":10}", "[{\"op\":\"test\",\"path\":\"/~01\",\"value\":\"10\"}]",
                NULL, -EBUSY, "test failed");
    check_patch("{\"foo\":[\"bar\"]}",
                "[{\"op\":\"add\",\"path\":\"/foo/-\",\"value\":[\"abc\",\"def\"]}]",
                "{\"foo\":[\"bar\",[\"abc\",\"def\"]]}", 0, NULL);
}

static void test_jsonpatch__copy_replace_root_and_errors(void **state)
{
    check_patch("{\"a\":{\"b\":[1,2]}}", "[{\"op\":\"copy\",\"from\":\"/a/b\",\"path\":\"/c\"}]",
                "{\"a\":{\"b\":[1,2]},\"c\":[1,2]}", 0, NULL);
    check_patch("{\"a\":1}", "[{\"op\":\"replace\",\"path\":\"\",\"value\":[true]}]", "[true]", 0,
                NULL);
    check_patch("[1,2,3]", "[{\"op\":\"replace\",\"path\":\"/1\",\"value\":null}]", "[1,null,3]", 0,
                NULL);
    /* A failing operation leaves no partial result behind (atomicity). */
    check_patch(
        "{\"a\":1}",
        "[{\"op\":\"add\",\"path\":\"/b\",\"value\":2},{\"op\":\"remove\",\"path\":\"/zz\"}]", NULL,
        -ENOENT, "operation 1 (remove /zz)");
    check_patch("{\"a\":1}", "[{\"op\":\"replace\",\"path\":\"/b\",\"value\":2}]", NULL, -ENOENT,
                NULL);
    check_patch("[1]", "[{\"op\":\"add\",\"path\":\"/2\",\"value\":2}]", NULL, -ENOENT,
                "out of range");
    check_patch("[1]", "[{\"op\":\"add\",\"path\":\"/01\",\"value\":2}]", NULL, -ENOENT, NULL);
    check_patch("{\"a\":{\"b\":1}}", "[{\"op\":\"move\",\"from\":\"/a\",\"path\":\"/a/c\"}]", NULL,
                -EINVAL, "children");
    check_patch("{}", "[{\"op\":\"frobnicate\",\"path\":\"/a\"}]", NULL, -EINVAL, "unknown op");
    check_patch("{}", "[{\"op\":\"add\",\"path\":\"/a\"}]", NULL, -EINVAL, "\"value\" is missing");
    check_patch("{}", "[{\"op\":\"add\",\"path\":\"a\",\"value\":1}]", NULL, -EINVAL,
                "malformed path");
    check_patch("{}", "[{\"op\":\"remove\",\"path\":\"\"}]", NULL, -EINVAL, "whole document");
    check_patch("{}", "{\"op\":\"add\"}", NULL, -EINVAL, "array");
}

static void test_jsonpatch__pointer_get(void **state)
{
    cJSON *doc = json("{\"a\":[{\"b~c\":1},{\"d/e\":2}],\"\":3}");
    const cJSON *v = NULL;

    assert_int_equal(jsonpatch_pointer_get(doc, "/a/1/d~1e", &v), 0);
    assert_int_equal(v->valueint, 2);
    assert_int_equal(jsonpatch_pointer_get(doc, "/a/0/b~0c", &v), 0);
    assert_int_equal(v->valueint, 1);
    assert_int_equal(jsonpatch_pointer_get(doc, "/", &v), 0);
    assert_int_equal(v->valueint, 3);
    assert_int_equal(jsonpatch_pointer_get(doc, "", &v), 0);
    assert_ptr_equal(v, doc);
    assert_int_equal(jsonpatch_pointer_get(doc, "/a/2", &v), -ENOENT);
    assert_int_equal(jsonpatch_pointer_get(doc, "/a/-", &v), -ENOENT);
    assert_int_equal(jsonpatch_pointer_get(doc, "/a/0/b~2c", &v), -EINVAL);
    assert_int_equal(jsonpatch_pointer_get(doc, "a", &v), -EINVAL);
    cJSON_Delete(doc);
}

static void check_merge(const char *doc_text, const char *patch_text, const char *want_text)
{
    cJSON *doc = json(doc_text), *patch = json(patch_text), *out = NULL;

    assert_int_equal(jsonpatch_merge(doc, patch, &out), 0);
    assert_json_equal(out, want_text);
    cJSON_Delete(out);
    cJSON_Delete(doc);
    cJSON_Delete(patch);
}

/* RFC 7386 section 3 example and every row of Appendix A. */
static void test_jsonpatch__rfc7386_examples(void **state)
{
    check_merge(
        "{\"title\":\"Goodbye!\",\"author\":{\"givenName\":\"John\",\"familyName\":\"Doe\"},"
        "\"tags\":[\"example\",\"sample\"],\"content\":\"This will be unchanged\"}",
        "{\"title\":\"Hello!\",\"phoneNumber\":\"+01-123-456-7890\","
        "\"author\":{\"familyName\":null},\"tags\":[\"example\"]}",
        "{\"title\":\"Hello!\",\"author\":{\"givenName\":\"John\"},\"tags\":[\"example\"],"
        "\"content\":\"This will be unchanged\",\"phoneNumber\":\"+01-123-456-7890\"}");
    check_merge("{\"a\":\"b\"}", "{\"a\":\"c\"}", "{\"a\":\"c\"}");
    check_merge("{\"a\":\"b\"}", "{\"b\":\"c\"}", "{\"a\":\"b\",\"b\":\"c\"}");
    check_merge("{\"a\":\"b\"}", "{\"a\":null}", "{}");
    check_merge("{\"a\":\"b\",\"b\":\"c\"}", "{\"a\":null}", "{\"b\":\"c\"}");
    check_merge("{\"a\":[\"b\"]}", "{\"a\":\"c\"}", "{\"a\":\"c\"}");
    check_merge("{\"a\":\"c\"}", "{\"a\":[\"b\"]}", "{\"a\":[\"b\"]}");
    check_merge("{\"a\":{\"b\":\"c\"}}", "{\"a\":{\"b\":\"d\",\"c\":null}}",
                "{\"a\":{\"b\":\"d\"}}");
    check_merge("{\"a\":[{\"b\":\"c\"}]}", "{\"a\":[1]}", "{\"a\":[1]}");
    check_merge("[\"a\",\"b\"]", "[\"c\",\"d\"]", "[\"c\",\"d\"]");
    check_merge("{\"a\":\"b\"}", "[\"c\"]", "[\"c\"]");
    check_merge("{\"a\":\"foo\"}", "null", "null");
    check_merge("{\"a\":\"foo\"}", "\"bar\"", "\"bar\"");
    check_merge("{\"e\":null}", "{\"a\":1}", "{\"e\":null,\"a\":1}");
    check_merge("[1,2]", "{\"a\":\"b\",\"c\":null}", "{\"a\":\"b\"}");
    check_merge("{}", "{\"a\":{\"bb\":{\"ccc\":null}}}", "{\"a\":{\"bb\":{}}}");
}

static void test_jsonpatch__merge_keeps_member_order(void **state)
{
    cJSON *doc = json("{\"x\":1,\"y\":2,\"z\":3}"), *patch = json("{\"y\":{\"k\":1}}"), *out = NULL;
    char *s;

    assert_int_equal(jsonpatch_merge(doc, patch, &out), 0);
    s = cJSON_PrintUnformatted(out);
    assert_string_equal(s, "{\"x\":1,\"y\":{\"k\":1},\"z\":3}");
    free(s);
    cJSON_Delete(out);
    cJSON_Delete(doc);
    cJSON_Delete(patch);
}

static void test_jsonpatch__doubling_copies_hit_the_size_bound(void **state)
{
    /* Each copy doubles the document: 24 of them would need 2^24 values. */
    cJSON *doc = cJSON_Parse("{\"a\":[1,2,3,4,5,6,7,8]}"), *ops = cJSON_CreateArray(), *out = NULL;
    struct err e;

    for (int i = 0; i < 24; i++) {
        cJSON *op = cJSON_CreateObject();
        char path[16];
        snprintf(path, sizeof(path), "/a%d", i);
        cJSON_AddStringToObject(op, "op", "copy");
        cJSON_AddStringToObject(op, "from", "");
        cJSON_AddStringToObject(op, "path", path);
        cJSON_AddItemToArray(ops, op);
    }
    err_clear(&e);
    assert_int_equal(jsonpatch_apply(doc, ops, &out, &e), -E2BIG);
    assert_null(out);
    assert_non_null(strstr(e.msg, "would hold more than 200000 values"));
    cJSON_Delete(doc);
    cJSON_Delete(ops);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_jsonpatch__rfc6902_appendix_a),
        cmocka_unit_test(test_jsonpatch__copy_replace_root_and_errors),
        cmocka_unit_test(test_jsonpatch__pointer_get),
        cmocka_unit_test(test_jsonpatch__rfc7386_examples),
        cmocka_unit_test(test_jsonpatch__merge_keeps_member_order),
        cmocka_unit_test(test_jsonpatch__doubling_copies_hit_the_size_bound),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
