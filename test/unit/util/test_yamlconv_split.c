/* The YAML reader on a multi-document stream cut at every byte: each prefix either parses or
 * fails with "<origin>: line L, column C: ..." inside the prefix, never crashes or reads past
 * the end (each prefix is an exact-size heap copy, so AddressSanitizer sees an overread), and
 * what a prefix does parse agrees with the whole stream. */

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/util/buf.h"
#include "lib/util/yamlconv.h"

/* Every construct the reader handles, over several documents. */
static const char stream[] =
    "# leading comment\n"
    "apiVersion: controlplane.cluster.x-k8s.io/v1beta1\n"
    "kind: NestedEtcd\n"
    "metadata:\n"
    "  name: c1-etcd\n"
    "  labels: {cluster.x-k8s.io/cluster-name: c1, tier: \"control-plane\"}\n"
    "spec:\n"
    "  replicas: 3\n"
    "  args: [--a=1, '--b=two words', \"--c=\\u00e9\"]\n"
    "  ratio: 0.75\n"
    "  enabled: yes\n"
    "  nothing: ~\n"
    "---\n"
    "kind: ConfigMap\n"
    "data:\n"
    "  script: |\n"
    "    #!/bin/sh\n"
    "    echo \"Grüße ✓\"\n"
    "  folded: >-\n"
    "    one\n"
    "    two\n"
    "  list:\n"
    "  - a\n"
    "  - - nested\n"
    "    - 42\n"
    "  - k: v\n"
    "...\n"
    "---\n"
    "- top-level\n"
    "- [1, {x: y}]\n"
    "--- plain root scalar\n";

static cJSON *parse_prefix(size_t len, int *ret_r, struct err *e)
{
    char *copy = malloc(len ? len : 1);
    cJSON *docs = NULL;

    assert_non_null(copy);
    memcpy(copy, stream, len);
    err_clear(e);
    *ret_r = yamlconv_parse_all(copy, len, "split.yaml", &docs, e);
    free(copy);
    return docs;
}

static size_t lines_in(size_t len)
{
    size_t n = 1;

    for (size_t i = 0; i < len; i++)
        n += stream[i] == '\n';
    return n;
}

static void test_yamlconv_split__every_prefix_parses_or_names_line_and_column(void **state)
{
    size_t len = strlen(stream), parsed = 0, failed = 0;

    for (size_t n = 0; n <= len; n++) {
        struct err e;
        unsigned long line = 0, col = 0;
        int r, got;
        cJSON *docs = parse_prefix(n, &r, &e);

        if (r == 0) {
            assert_true(cJSON_IsArray(docs));
            parsed++;
            cJSON_Delete(docs);
            continue;
        }
        assert_int_equal(r, -EINVAL);
        assert_null(docs);
        got = sscanf(e.msg, "split.yaml: line %lu, column %lu: ", &line, &col);
        if (got != 2) {
            print_error("prefix of %zu bytes: message \"%s\"\n", n, e.msg);
            fail();
        }
        assert_true(line >= 1 && line <= lines_in(n) + 1);
        assert_true(col >= 1);
        assert_true(strlen(e.msg) > strlen("split.yaml: line 1, column 1: "));
        failed++;
    }
    /* Cuts inside a quoted string or a flow collection fail; most cuts parse. */
    assert_true(parsed > len / 2);
    assert_true(failed > 0);
}

/* A prefix holds the whole stream's documents up to its last one, which may be cut short. */
static void test_yamlconv_split__prefix_documents_match_the_whole(void **state)
{
    size_t len = strlen(stream);
    struct err e;
    int r;
    cJSON *whole = parse_prefix(len, &r, &e);
    int total;

    assert_int_equal(r, 0);
    total = cJSON_GetArraySize(whole);
    assert_int_equal(total, 4);
    for (size_t n = 0; n <= len; n++) {
        cJSON *docs = parse_prefix(n, &r, &e);
        int count;

        if (r < 0)
            continue;
        count = cJSON_GetArraySize(docs);
        assert_true(count <= total);
        for (int i = 0; i + 1 < count; i++) {
            if (!cJSON_Compare(cJSON_GetArrayItem(docs, i), cJSON_GetArrayItem(whole, i), 1)) {
                print_error("prefix of %zu bytes: document %d differs\n", n, i);
                fail();
            }
        }
        cJSON_Delete(docs);
    }
    cJSON_Delete(whole);
}

/* Cut right after each document's end, a prefix is exactly the documents before the cut. */
static void test_yamlconv_split__cut_at_document_boundaries(void **state)
{
    static const char *const ends[] = {"  nothing: ~\n", "...\n", "- [1, {x: y}]\n"};
    size_t len = strlen(stream);
    struct err e;
    int r;
    cJSON *whole = parse_prefix(len, &r, &e);

    assert_int_equal(r, 0);
    for (int i = 0; i < 3; i++) {
        const char *at = strstr(stream, ends[i]);
        cJSON *docs;

        assert_non_null(at);
        docs = parse_prefix((size_t)(at - stream) + strlen(ends[i]), &r, &e);
        assert_int_equal(r, 0);
        assert_int_equal(cJSON_GetArraySize(docs), i + 1);
        for (int k = 0; k <= i; k++)
            assert_true(
                cJSON_Compare(cJSON_GetArrayItem(docs, k), cJSON_GetArrayItem(whole, k), 1));
        cJSON_Delete(docs);
    }
    cJSON_Delete(whole);
}

/* A cut inside a multi-byte UTF-8 character is an error, never a string with half a
 * character in it. */
static void test_yamlconv_split__cut_inside_a_utf8_character_fails(void **state)
{
    const char *p = strstr(stream, "ü");
    size_t checked = 0;

    assert_non_null(p);
    for (const char *q = p; q < p + strlen("Grüße ✓"); q++) {
        size_t n = (size_t)(q - stream);
        struct err e;
        int r;
        cJSON *docs;

        if (((unsigned char)*q & 0xc0) != 0x80)
            continue; /* the cut falls between characters */
        docs = parse_prefix(n, &r, &e);
        assert_int_equal(r, -EINVAL);
        assert_null(docs);
        assert_non_null(strstr(e.msg, "split.yaml: line "));
        checked++;
    }
    assert_int_equal(checked, 1 + 1 + 2); /* ü, ß: 1 continuation byte each; ✓: 2 */
}

/* What a prefix parses to survives a write and a read. */
static void test_yamlconv_split__every_parsed_prefix_round_trips(void **state)
{
    size_t len = strlen(stream);

    for (size_t n = 0; n <= len; n++) {
        struct buf out = BUF_INIT;
        struct err e;
        cJSON *docs, *again = NULL;
        int r;

        docs = parse_prefix(n, &r, &e);
        if (r < 0)
            continue;
        assert_int_equal(yamlconv_emit_all(docs, &out), 0);
        r = yamlconv_parse_all(out.data ? out.data : "", out.len, "emitted", &again, &e);
        if (r != 0 || !cJSON_Compare(docs, again, 1)) {
            print_error("prefix of %zu bytes does not round-trip:\n%s\n", n,
                        out.data ? out.data : "");
            fail();
        }
        cJSON_Delete(again);
        cJSON_Delete(docs);
        buf_done(&out);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_yamlconv_split__every_prefix_parses_or_names_line_and_column),
        cmocka_unit_test(test_yamlconv_split__prefix_documents_match_the_whole),
        cmocka_unit_test(test_yamlconv_split__cut_at_document_boundaries),
        cmocka_unit_test(test_yamlconv_split__cut_inside_a_utf8_character_fails),
        cmocka_unit_test(test_yamlconv_split__every_parsed_prefix_round_trips),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
