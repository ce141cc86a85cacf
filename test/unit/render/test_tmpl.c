#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/render/catalog.h"
#include "lib/render/tmpl.h"
#include "lib/util/buf.h"
#include "lib/util/yamlconv.h"

static const char *values_json =
    "{\"cluster\":{\"name\":\"c1\",\"namespace\":\"ns\"},\"replicas\":3,"
    "\"cidrs\":[\"10.96.0.0/12\",\"fd00::/108\"],\"gates\":{\"B\":false,\"A\":true},"
    "\"members\":[{\"name\":\"m0\"},{\"name\":\"m1\"}],\"empty\":\"\",\"evil\":\"x\\n- y: z\","
    "\"res\":{\"limits\":{\"cpu\":\"1\"}},\"flag\":true}";

/* Renders text with the values above and returns the documents as compact JSON. */
static char *render(const char *text)
{
    cJSON *data = cJSON_Parse(values_json), *docs = NULL;
    struct tmpl *t = NULL;
    struct err e;
    char *out;

    err_clear(&e);
    if (tmpl_parse("t.yaml", text, strlen(text), &t, &e) < 0 ||
        tmpl_execute(t, data, &docs, &e) < 0) {
        print_error("unexpected error: %s\n", e.msg);
        fail();
    }
    out = cJSON_PrintUnformatted(cJSON_GetArraySize(docs) == 1 ? docs->child : docs);
    cJSON_Delete(docs);
    cJSON_Delete(data);
    tmpl_free(t);
    return out;
}

static void check(const char *text, const char *want)
{
    char *got = render(text);

    if (strcmp(got, want) != 0) {
        print_error("template:\n%s\ngot  %s\nwant %s\n", text, got, want);
        free(got);
        fail();
    }
    free(got);
}

/* Expects an error (at parse or execution) whose message is exactly "t.yaml:<line>: ..." and
 * contains what. */
static void check_error(const char *text, int line, const char *what)
{
    cJSON *data = cJSON_Parse(values_json), *docs = NULL;
    struct tmpl *t = NULL;
    struct err e;
    char prefix[64];
    int r;

    err_clear(&e);
    r = tmpl_parse("t.yaml", text, strlen(text), &t, &e);
    if (r == 0)
        r = tmpl_execute(t, data, &docs, &e);
    assert_int_equal(r, -EINVAL);
    assert_null(docs);
    snprintf(prefix, sizeof(prefix), "t.yaml:%d: ", line);
    if (strncmp(e.msg, prefix, strlen(prefix)) != 0 || !strstr(e.msg, what)) {
        print_error("template:\n%s\nmessage \"%s\"\nwant prefix \"%s\" and \"%s\"\n", text, e.msg,
                    prefix, what);
        fail();
    }
    tmpl_free(t);
    cJSON_Delete(data);
}

static void test_tmpl__whole_scalar_keeps_json_type(void **state)
{
    check("replicas: {{ .replicas }}\nres: {{ .res }}\nflag: {{ .flag }}\ncidrs: {{ .cidrs }}\n",
          "{\"replicas\":3,\"res\":{\"limits\":{\"cpu\":\"1\"}},\"flag\":true,"
          "\"cidrs\":[\"10.96.0.0/12\",\"fd00::/108\"]}");
    /* Quoting in the template does not change that; quote does. */
    check("a: \"{{ .replicas }}\"\nb: {{ quote .replicas }}\nc: {{ .replicas | quote }}\n",
          "{\"a\":3,\"b\":\"3\",\"c\":\"3\"}");
}

static void test_tmpl__values_cannot_inject_yaml(void **state)
{
    check("a: {{ .evil }}\nb: pre-{{ .evil }}\n{{ .evil }}: 1\n",
          "{\"a\":\"x\\n- y: z\",\"b\":\"pre-x\\n- y: z\",\"x\\n- y: z\":1}");
}

static void test_tmpl__text_around_an_action_makes_a_string(void **state)
{
    check("args:\n- --service-cluster-ip-range={{ join \",\" .cidrs }}\n"
          "- --feature-gates={{ joinMap \",\" \"=\" .gates }}\n"
          "- --n={{ .replicas }}\n- {{ printf \"--name=%s-%d\" .cluster.name .replicas }}\n",
          "{\"args\":[\"--service-cluster-ip-range=10.96.0.0/12,fd00::/108\","
          "\"--feature-gates=A=true,B=false\",\"--n=3\",\"--name=c1-3\"]}");
}

static void test_tmpl__range_if_and_variables(void **state)
{
    check("peers:\n{{- range $i, $m := .members }}\n- {{ $m.name }}={{ $i }} {{ $.cluster.name }}\n"
          "{{- end }}\n",
          "{\"peers\":[\"m0=0 c1\",\"m1=1 c1\"]}");
    check("l:\n{{- range .members }}\n- {{ .name }}\n{{- end }}\n", "{\"l\":[\"m0\",\"m1\"]}");
    check("{{- $n := .cluster.name }}\nm:\n{{- range $k, $v := .gates }}\n  {{ $k }}: {{ $v }}-{{ "
          "$n }}\n{{- end }}\n",
          "{\"m\":{\"A\":\"true-c1\",\"B\":\"false-c1\"}}");
    check("{{ if .empty }}a: 1{{ else if eq .replicas 3 }}a: 2{{ else }}a: 3{{ end }}\n",
          "{\"a\":2}");
    check("{{ if and .flag (not .empty) }}a: {{ default \"d\" .empty }}{{ end }}\n",
          "{\"a\":\"d\"}");
    check("a: {{ len .members }}\nb: {{ index .cidrs 1 }}\nc: {{ hasKey .gates \"A\" }}\n"
          "d: {{ concat .cidrs (list \"x\") }}\ne: {{ json .gates }}\n{{/* a comment */}}\n",
          "{\"a\":2,\"b\":\"fd00::/108\",\"c\":true,\"d\":[\"10.96.0.0/12\",\"fd00::/108\",\"x\"],"
          "\"e\":\"{\\\"B\\\":false,\\\"A\\\":true}\"}");
}

static void test_tmpl__multiple_documents(void **state)
{
    check("{{ range .members }}---\nkind: {{ .name }}\n{{ end }}",
          "[{\"kind\":\"m0\"},{\"kind\":\"m1\"}]");
}

static void test_tmpl__errors_name_file_and_line(void **state)
{
    check_error("a: 1\nb: {{ .cluster.nmae }}\n", 2, "undefined variable .cluster.nmae");
    check_error("a: 1\n\nb: {{ $nope }}\n", 3, "undefined variable $nope");
    check_error("a: {{ .replicas.x }}\n", 1, "cannot read \"x\" of a number");
    check_error("a: 1\nb: {{ frob .replicas }}\n", 2, "unknown function \"frob\"");
    check_error("a: 1\nb: {{ join \",\" }}\n", 2, "join takes 2 arguments, not 1");
    check_error("a: 1\nb: {{ .replicas\n", 2, "not closed");
    check_error("a: 1\n{{ if .flag }}\nb: 2\n", 2, "if without end");
    check_error("a: 1\n\n{{ end }}\n", 3, "end without if or range");
    check_error("a: {{ \"open }}\n", 1, "not closed");
    check_error("a: {{ `raw }}` | frob }}\n", 1, "unknown function \"frob\"");
    check_error("a: {{ .replicas .replicas }}\n", 1, "only functions take arguments");
    check_error("a: 1\nb: [{{ .replicas }}\nc: 3\n", 3, "not valid YAML");
    check_error("{{ range .members }}\nx: {{ .name }}\n{{ end }}\n", 2, "duplicate key");
    check_error("a: x{{ .cidrs }}\n", 1, "can only be the whole value");
    check_error("a: 1\n\n\nb: __nestcp_v0__\n", 4, "reserved");
    check_error("{{ range .replicas }}{{ end }}\n", 1, "range over a number");
}

static void test_tmpl__output_is_bounded(void **state)
{
    const char *text = "{{ range .members }}{{ range $.members }}{{ range $.members }}"
                       "{{ range $.members }}{{ range $.members }}{{ range $.members }}"
                       "{{ range $.members }}{{ range $.members }}{{ range $.members }}"
                       "{{ range $.members }}{{ range $.members }}{{ range $.members }}"
                       "{{ range $.members }}{{ range $.members }}{{ range $.members }}"
                       "{{ range $.members }}{{ range $.members }}"
                       "# padding padding padding padding\n"
                       "{{ end }}{{ end }}{{ end }}{{ end }}{{ end }}{{ end }}{{ end }}{{ end }}"
                       "{{ end }}{{ end }}{{ end }}{{ end }}{{ end }}{{ end }}{{ end }}{{ end }}"
                       "{{ end }}";
    cJSON *data = cJSON_Parse(values_json), *docs = NULL;
    struct tmpl *t = NULL;
    struct err e;

    assert_int_equal(tmpl_parse("t.yaml", text, strlen(text), &t, &e), 0);
    assert_int_equal(tmpl_execute(t, data, &docs, &e), -ENOBUFS);
    assert_non_null(strstr(e.msg, "output exceeds"));
    assert_null(docs);
    tmpl_free(t);
    cJSON_Delete(data);
}

static void test_tmpl__copied_values_are_bounded(void **state)
{
    /* 2,000 substitutions of a 1,001-value list copy in two million values: refused. */
    const char *text = "l:\n{{- range .big }}{{ range $.pair }}\n- {{ $.big }}{{ end }}{{ end }}\n";
    cJSON *data = cJSON_CreateObject(), *big = cJSON_AddArrayToObject(data, "big"), *docs = NULL;
    struct tmpl *t = NULL;
    struct err e;

    for (int i = 0; i < 1000; i++)
        cJSON_AddItemToArray(big, cJSON_CreateNumber(i));
    cJSON_AddItemToObject(data, "pair", cJSON_Parse("[1,2]"));
    assert_int_equal(tmpl_parse("t.yaml", text, strlen(text), &t, &e), 0);
    assert_int_equal(tmpl_execute(t, data, &docs, &e), -EINVAL);
    assert_non_null(strstr(e.msg, "t.yaml:3: substitutions hold more than 500000 values"));
    assert_null(docs);
    tmpl_free(t);
    cJSON_Delete(data);
}

static void test_tmpl__a_template_of_the_largest_size_parses_and_runs(void **state)
{
    /* As many actions as a package's template may hold, each followed by text: the parsed
     * template grows with the text (6 MB here, a node or two per 17 bytes), not with its square,
     * as it did when each new piece of text copied the list of the pieces seen so far (14 GiB
     * here; 0.55 MB for the packages shipped). */
    static const char item[] = "{{ .replicas }}, ";
    const size_t n = (RENDER_MAX_TEMPLATE_BYTES - 16) / (sizeof(item) - 1);
    cJSON *data = cJSON_Parse(values_json), *docs = NULL;
    const cJSON *list, *it;
    struct buf text = BUF_INIT;
    struct tmpl *t = NULL;
    size_t count = 0;
    struct err e;

    assert_int_equal(buf_append(&text, "l: [", 4), 0);
    for (size_t i = 0; i < n; i++)
        assert_int_equal(buf_append(&text, item, sizeof(item) - 1), 0);
    assert_int_equal(buf_append(&text, "0]\n", 3), 0);
    assert_true(text.len <= RENDER_MAX_TEMPLATE_BYTES);
    assert_int_equal(tmpl_parse("t.yaml", text.data, text.len, &t, &e), 0);
    assert_true(tmpl_bytes(t) < 64 * text.len);
    assert_int_equal(tmpl_execute(t, data, &docs, &e), 0);
    list = cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(docs, 0), "l");
    cJSON_ArrayForEach(it, list)
        count += cJSON_IsNumber(it) && it->valueint == (count < n ? 3 : 0);
    assert_int_equal(count, n + 1);
    cJSON_Delete(docs);
    tmpl_free(t);
    buf_done(&text);
    cJSON_Delete(data);
}

static void test_tmpl__same_input_same_output(void **state)
{
    const char *text = "m:\n{{- range $k, $v := .gates }}\n  {{ $k }}: {{ $v }}\n{{- end }}\n";
    char *a = render(text), *b = render(text);

    assert_string_equal(a, b);
    assert_string_equal(a, "{\"m\":{\"A\":true,\"B\":false}}");
    free(a);
    free(b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tmpl__whole_scalar_keeps_json_type),
        cmocka_unit_test(test_tmpl__values_cannot_inject_yaml),
        cmocka_unit_test(test_tmpl__text_around_an_action_makes_a_string),
        cmocka_unit_test(test_tmpl__range_if_and_variables),
        cmocka_unit_test(test_tmpl__multiple_documents),
        cmocka_unit_test(test_tmpl__errors_name_file_and_line),
        cmocka_unit_test(test_tmpl__output_is_bounded),
        cmocka_unit_test(test_tmpl__copied_values_are_bounded),
        cmocka_unit_test(test_tmpl__a_template_of_the_largest_size_parses_and_runs),
        cmocka_unit_test(test_tmpl__same_input_same_output),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
