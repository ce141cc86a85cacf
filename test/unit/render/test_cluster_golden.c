/*
 * Golden tests of the `nestcp render` binary: each test/golden/<name>.input.yaml (or a sample
 * of config/samples) rendered, with key material and the hashes that depend on it replaced by
 * placeholders, must equal test/golden/<name>.yaml. UPDATE_GOLDEN=1 rewrites the golden files
 * instead (review the diff).
 */

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "lib/render/transform.h"
#include "lib/util/buf.h"
#include "lib/util/yamlconv.h"

static char source_dir[4096], bin[4096];

static int setup(void **state)
{
    const char *src = getenv("NESTCP_SOURCE_DIR"), *b = getenv("NESTCP_BIN");
    const char *me = __FILE__, *at = strstr(me, "/test/unit/render/");

    if (src)
        snprintf(source_dir, sizeof(source_dir), "%s", src);
    else
        snprintf(source_dir, sizeof(source_dir), "%.*s", at ? (int)(at - me) : 1, at ? me : ".");
    if (!b) {
        print_error("NESTCP_BIN is not set (run through ctest, or set it to the nestcp binary)\n");
        return -1;
    }
    snprintf(bin, sizeof(bin), "%s", b);
    return 0;
}

struct run {
    int status;
    struct buf out, err;
};

static void run_done(struct run *r)
{
    buf_done(&r->out);
    buf_done(&r->err);
}

static void slurp(const char *path, struct buf *b)
{
    char *text = NULL;
    size_t len = 0;

    buf_init(b, 0);
    if (util_read_file(path, 64 * 1024 * 1024, &text, &len) == 0)
        buf_append(b, text, len);
    free(text);
}

/* Runs `nestcp <args>` with stdin from in_path (may be NULL). */
static void run_nestcp(struct run *r, const char *args, const char *in_path)
{
    char out[] = "/tmp/nestcp-golden-out-XXXXXX", err[] = "/tmp/nestcp-golden-err-XXXXXX";
    char cmd[16384];
    int fo = mkstemp(out), fe = mkstemp(err), st;

    assert_true(fo >= 0 && fe >= 0);
    close(fo);
    close(fe);
    snprintf(cmd, sizeof(cmd), "cd %s && %s %s <%s >%s 2>%s", source_dir, bin, args,
             in_path ? in_path : "/dev/null", out, err);
    st = system(cmd);
    r->status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
    slurp(out, &r->out);
    slurp(err, &r->err);
    unlink(out);
    unlink(err);
}

/* Replaces every "-certs-<10 hex>" with "-certs-HASH" in place. */
static void normalise_names(char *s)
{
    for (char *p = strstr(s, "-certs-"); p; p = strstr(p + 1, "-certs-")) {
        char *h = p + 7;
        size_t n = strspn(h, "0123456789abcdef");
        if (n == 10)
            memcpy(h, "HASH______", 10);
    }
}

static void set_str(cJSON *obj, const char *key, const char *value)
{
    if (cJSON_GetObjectItem(obj, key))
        cJSON_ReplaceItemInObject(obj, key, cJSON_CreateString(value));
}

/* Key material and what depends on it become placeholders: Secret data, certs Secret
 * names, and the config hashes of StatefulSets (their pods mount the certs Secret). */
static char *normalise(const char *yaml)
{
    cJSON *docs = NULL, *d;
    struct err e = {0};
    struct buf b = BUF_INIT;

    if (yamlconv_parse_all(yaml, strlen(yaml), "output", &docs, &e) < 0) {
        print_error("the output is not YAML: %s\n", e.msg);
        fail();
    }
    cJSON_ArrayForEach(d, docs) {
        const char *kind = cJSON_GetObjectItem(d, "kind")->valuestring;
        cJSON *it;
        if (strcmp(kind, "Secret") == 0) {
            cJSON_ArrayForEach(it, cJSON_GetObjectItem(d, "data"))
                cJSON_SetValuestring(it, "KEY-MATERIAL");
        } else if (strcmp(kind, "StatefulSet") == 0) {
            cJSON *tmd = cJSON_GetObjectItem(
                cJSON_GetObjectItem(cJSON_GetObjectItem(d, "spec"), "template"), "metadata");
            set_str(cJSON_GetObjectItem(cJSON_GetObjectItem(d, "metadata"), "annotations"),
                    RENDER_CONFIG_HASH_ANNOTATION, "HASH");
            set_str(cJSON_GetObjectItem(tmd, "annotations"), RENDER_CONFIG_HASH_ANNOTATION, "HASH");
        }
    }
    assert_int_equal(yamlconv_emit_all(docs, &b), 0);
    cJSON_Delete(docs);
    normalise_names(b.data);
    return buf_steal(&b);
}

static void golden(const char *name, const char *args)
{
    char path[8192], *got;
    struct run r = {0};
    struct buf want;

    run_nestcp(&r, args, NULL);
    if (r.status != 0)
        print_error("nestcp %s: exit %d\n%s", args, r.status, r.err.data ? r.err.data : "");
    assert_int_equal(r.status, 0);
    assert_int_equal(r.err.len, 0);
    got = normalise(r.out.data);
    snprintf(path, sizeof(path), "%s/test/golden/%s.yaml", source_dir, name);
    if (getenv("UPDATE_GOLDEN") && strcmp(getenv("UPDATE_GOLDEN"), "1") == 0) {
        FILE *f = fopen(path, "we");
        assert_non_null(f);
        fputs(got, f);
        fclose(f);
    }
    slurp(path, &want);
    if (!want.data || strcmp(want.data, got) != 0) {
        char tmp[] = "/tmp/nestcp-golden-got-XXXXXX";
        int fd = mkstemp(tmp);
        assert_true(fd >= 0);
        assert_int_equal(write(fd, got, strlen(got)), (ssize_t)strlen(got));
        close(fd);
        print_error("%s differs from the output (kept in %s; diff them, or rerun with "
                    "UPDATE_GOLDEN=1)\n",
                    path, tmp);
        fail();
    }
    buf_done(&want);
    free(got);
    run_done(&r);
}

static void test_cluster_golden__capn_sample(void **state)
{
    golden("capn-cluster", "render -f config/samples/capn-cluster.yaml");
}

static void test_cluster_golden__standalone_sample(void **state)
{
    golden("standalone", "render -f config/samples/standalone.yaml");
}

static void test_cluster_golden__multi_member_dual_stack_rapid(void **state)
{
    golden("multi-member", "render -f test/golden/multi-member.input.yaml");
}

/* Both samples from stdin at once: one stream with both clusters, each in apply order. */
static void test_cluster_golden__several_clusters_from_stdin(void **state)
{
    char in[8192];
    struct run r = {0};
    cJSON *docs = NULL, *d;
    struct err e = {0};
    int sample = 0, standalone = 0;

    snprintf(in, sizeof(in), "%s/config/samples/standalone.yaml", source_dir);
    run_nestcp(&r, "render -f config/samples/capn-cluster.yaml -f -", in);
    assert_int_equal(r.status, 0);
    assert_int_equal(yamlconv_parse_all(r.out.data, r.out.len, "out", &docs, &e), 0);
    assert_int_equal(cJSON_GetArraySize(docs), 34);
    cJSON_ArrayForEach(d, docs) {
        const char *n =
            cJSON_GetObjectItem(cJSON_GetObjectItem(d, "metadata"), "name")->valuestring;
        sample += strncmp(n, "sample-", 7) == 0;
        standalone += strncmp(n, "standalone-", 11) == 0;
        /* All of the first cluster comes before the second. */
        if (strncmp(n, "sample-", 7) == 0)
            assert_int_equal(standalone, 0);
    }
    assert_int_equal(sample, 17);
    assert_int_equal(standalone, 17);
    cJSON_Delete(docs);
    run_done(&r);
}

/* Rendering again with the first output as input reuses every Secret: only the workloads
 * come out, and they are the same. */
static void test_cluster_golden__second_render_reuses_secrets(void **state)
{
    char first[] = "/tmp/nestcp-golden-first-XXXXXX", args[8192];
    struct run r = {0}, again = {0};
    int fd = mkstemp(first);

    assert_true(fd >= 0);
    run_nestcp(&r, "render -f config/samples/capn-cluster.yaml", NULL);
    assert_int_equal(r.status, 0);
    assert_int_equal(write(fd, r.out.data, r.out.len), (ssize_t)r.out.len);
    close(fd);
    snprintf(args, sizeof(args), "render -f config/samples/capn-cluster.yaml -f %s", first);
    run_nestcp(&again, args, NULL);
    unlink(first);
    assert_int_equal(again.status, 0);
    assert_null(strstr(again.out.data, "kind: Secret"));
    assert_non_null(strstr(r.out.data, again.out.data)); /* the same workloads, at the end */
    run_done(&r);
    run_done(&again);
}

static void test_cluster_golden__bad_input_prints_nothing_on_stdout(void **state)
{
    char in[] = "/tmp/nestcp-golden-bad-XXXXXX";
    const char *bad = "apiVersion: controlplane.cluster.x-k8s.io/v1beta1\n"
                      "kind: NestedControlPlane\nmetadata: {name: bad}\n"
                      "spec: {clusterNetwork: {services: {cidrBlocks: [10.96.0.0/33]}}}\n";
    struct run r = {0};
    int fd = mkstemp(in);

    assert_true(fd >= 0);
    assert_int_equal(write(fd, bad, strlen(bad)), (ssize_t)strlen(bad));
    close(fd);
    run_nestcp(&r, "render -f -", in);
    unlink(in);
    assert_int_equal(r.status, 1);
    assert_int_equal(r.out.len, 0);
    assert_non_null(strstr(r.err.data, "NestedControlPlane default/bad: "
                                       "spec.clusterNetwork.services.cidrBlocks[0]: "
                                       "\"10.96.0.0/33\" is not a valid CIDR\n"));
    run_done(&r);

    run_nestcp(&r, "render -f /nonexistent.yaml", NULL);
    assert_int_equal(r.status, 1);
    assert_int_equal(r.out.len, 0);
    run_done(&r);
    run_nestcp(&r, "render", NULL); /* empty stdin */
    assert_int_equal(r.status, 1);
    assert_string_equal(r.err.data, "the input holds no NestedControlPlane\n");
    run_done(&r);
}

static void test_cluster_golden__usage(void **state)
{
    struct run r = {0};

    run_nestcp(&r, "render --help", NULL);
    assert_int_equal(r.status, 0);
    assert_non_null(strstr(r.out.data, "Usage: nestcp render"));
    assert_non_null(strstr(r.out.data, "--filename"));
    run_done(&r);
    run_nestcp(&r, "render --frobnicate", NULL);
    assert_int_equal(r.status, 2);
    assert_int_equal(r.out.len, 0);
    run_done(&r);
    run_nestcp(&r, "render -o xml -f config/samples/capn-cluster.yaml", NULL);
    assert_int_equal(r.status, 2);
    run_done(&r);
    run_nestcp(&r, "render -o json -f config/samples/capn-cluster.yaml", NULL);
    assert_int_equal(r.status, 0);
    cJSON *list = cJSON_Parse(r.out.data);
    assert_non_null(list);
    assert_string_equal(cJSON_GetObjectItem(list, "kind")->valuestring, "List");
    assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(list, "items")), 17);
    cJSON_Delete(list);
    run_done(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cluster_golden__capn_sample),
        cmocka_unit_test(test_cluster_golden__standalone_sample),
        cmocka_unit_test(test_cluster_golden__multi_member_dual_stack_rapid),
        cmocka_unit_test(test_cluster_golden__several_clusters_from_stdin),
        cmocka_unit_test(test_cluster_golden__second_render_reuses_secrets),
        cmocka_unit_test(test_cluster_golden__bad_input_prints_nothing_on_stdout),
        cmocka_unit_test(test_cluster_golden__usage),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}
