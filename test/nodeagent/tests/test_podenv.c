#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test/nodeagent/podenv.h"

static char *expand(const struct podenv *env, const char *in)
{
    char *out = NULL;

    assert_int_equal(podenv_expand(in, env, &out), 0);
    return out;
}

static void test_podenv__expand_follows_kubernetes_rules(void **state)
{
    struct podenv env = PODENV_INIT;
    static const char *const cases[][2] = {
        {"--listen=http://$(POD_IP):2379", "--listen=http://127.0.5.2:2379"},
        {"$(POD_IP)$(POD_IP)", "127.0.5.2127.0.5.2"},
        {"$$(POD_IP)", "$(POD_IP)"},      /* escaped */
        {"$(UNDEFINED)", "$(UNDEFINED)"}, /* kept as written */
        {"cost $$5 and $x and $", "cost $5 and $x and $"},
        {"$(POD_IP", "$(POD_IP"}, /* no closing parenthesis */
        {"", ""},
    };

    assert_int_equal(podenv_set(&env, "POD_IP", "127.0.5.2"), 0);
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char *out = expand(&env, cases[i][0]);

        assert_string_equal(out, cases[i][1]);
        free(out);
    }
    podenv_done(&env);
}

static cJSON *the_secret;

static int resolve(void *userdata, const char *kind, const char *ns, const char *name,
                   const cJSON **ret_obj)
{
    if (strcmp(kind, "Secret") != 0 || strcmp(ns, "tenant") != 0 || strcmp(name, "creds") != 0)
        return -ENOENT;
    *ret_obj = the_secret;
    return 0;
}

static void test_podenv__build_resolves_downward_api_secrets_and_earlier_vars(void **state)
{
    cJSON *pod = cJSON_Parse(
        "{\"metadata\":{\"name\":\"etcd-0\",\"namespace\":\"tenant\",\"labels\":{\"app\":\"e\"}},"
        "\"spec\":{\"hostname\":\"etcd-0\",\"containers\":[{\"name\":\"etcd\",\"env\":["
        "{\"name\":\"POD_IP\",\"valueFrom\":{\"fieldRef\":{\"fieldPath\":\"status.podIP\"}}},"
        "{\"name\":\"POD_NAME\",\"valueFrom\":{\"fieldRef\":{\"fieldPath\":\"metadata.name\"}}},"
        "{\"name\":\"POD_NAMESPACE\",\"valueFrom\":{\"fieldRef\":{\"fieldPath\":"
        "\"metadata.namespace\"}}},"
        "{\"name\":\"APP\",\"valueFrom\":{\"fieldRef\":{\"fieldPath\":"
        "\"metadata.labels['app']\"}}},"
        "{\"name\":\"URL\",\"value\":\"http://$(POD_NAME).$(POD_NAMESPACE):$(PORT)\"},"
        "{\"name\":\"TOKEN\",\"valueFrom\":{\"secretKeyRef\":{\"name\":\"creds\",\"key\":"
        "\"token\"}}},"
        "{\"name\":\"GONE\",\"valueFrom\":{\"secretKeyRef\":{\"name\":\"creds\",\"key\":"
        "\"nope\",\"optional\":true}}}]}]}}");
    struct podenv_fields f = {.pod_ip = "127.0.5.2", .host_ip = "127.0.0.1"};
    struct podenv env = PODENV_INIT;
    struct err e = {0};

    the_secret = cJSON_Parse("{\"data\":{\"token\":\"czNjcjN0\"}}"); /* "s3cr3t" */
    assert_non_null(pod);
    assert_int_equal(
        podenv_build(pod,
                     cJSON_GetArrayItem(
                         cJSON_GetObjectItem(cJSON_GetObjectItem(pod, "spec"), "containers"), 0),
                     &f, resolve, NULL, &env, &e),
        0);
    assert_string_equal(podenv_get(&env, "POD_IP"), "127.0.5.2");
    assert_string_equal(podenv_get(&env, "POD_NAME"), "etcd-0");
    assert_string_equal(podenv_get(&env, "POD_NAMESPACE"), "tenant");
    assert_string_equal(podenv_get(&env, "APP"), "e");
    assert_string_equal(podenv_get(&env, "URL"), "http://etcd-0.tenant:$(PORT)");
    assert_string_equal(podenv_get(&env, "TOKEN"), "s3cr3t");
    assert_string_equal(podenv_get(&env, "HOSTNAME"), "etcd-0");
    assert_non_null(podenv_get(&env, "PATH"));
    assert_null(podenv_get(&env, "GONE"));
    assert_null(env.vars[env.n]);
    podenv_done(&env);
    cJSON_Delete(pod);
    cJSON_Delete(the_secret);
}

static void test_podenv__missing_secret_key_names_the_variable(void **state)
{
    cJSON *pod = cJSON_Parse(
        "{\"metadata\":{\"name\":\"p\",\"namespace\":\"tenant\"},\"spec\":{\"containers\":[{"
        "\"name\":\"c\",\"env\":[{\"name\":\"TOKEN\",\"valueFrom\":{\"secretKeyRef\":{"
        "\"name\":\"other\",\"key\":\"token\"}}}]}]}}");
    struct podenv_fields f = {.pod_ip = "127.0.5.2"};
    struct podenv env = PODENV_INIT;
    struct err e = {0};
    const cJSON *c =
        cJSON_GetArrayItem(cJSON_GetObjectItem(cJSON_GetObjectItem(pod, "spec"), "containers"), 0);

    assert_int_equal(podenv_build(pod, c, &f, resolve, NULL, &env, &e), -ENOENT);
    assert_non_null(strstr(e.msg, "env TOKEN"));
    assert_non_null(strstr(e.msg, "other"));
    podenv_done(&env);
    cJSON_Delete(pod);
}

static const cJSON *first_container(const cJSON *pod)
{
    return cJSON_GetArrayItem(cJSON_GetObjectItem(cJSON_GetObjectItem(pod, "spec"), "containers"),
                              0);
}

/* fieldPath metadata.annotations['<key>'], as the API server validates it: a quoted qualified
 * name, prefixed (dots, slash) or not; a missing annotation is the empty string. */
static void test_podenv__annotation_field_ref_takes_quoted_prefixed_keys(void **state)
{
    char long_key[320], json[2048];
    struct podenv_fields f = {.pod_ip = "127.0.5.2"};
    struct podenv env = PODENV_INIT;
    struct err e = {0};
    cJSON *pod;

    /* The longest key there is: a 253-character DNS prefix, a slash, a 63-character name. */
    for (int i = 0; i < 253; i++)
        long_key[i] = i % 2 ? '.' : 'a';
    long_key[252] = 'a';
    long_key[253] = '/';
    memset(long_key + 254, 'n', 63);
    long_key[317] = '\0';
    snprintf(json, sizeof(json),
             "{\"metadata\":{\"name\":\"p\",\"namespace\":\"tenant\",\"annotations\":{"
             "\"some.key/name\":\"from the annotation\",\"plain\":\"p1\",\"%s\":\"long\"},"
             "\"labels\":{\"app.kubernetes.io/name\":\"etcd\"}},"
             "\"spec\":{\"containers\":[{\"name\":\"c\",\"env\":["
             "{\"name\":\"ANN\",\"valueFrom\":{\"fieldRef\":{\"apiVersion\":\"v1\",\"fieldPath\":"
             "\"metadata.annotations['some.key/name']\"}}},"
             "{\"name\":\"PLAIN\",\"valueFrom\":{\"fieldRef\":{\"fieldPath\":"
             "\"metadata.annotations['plain']\"}}},"
             "{\"name\":\"LONG\",\"valueFrom\":{\"fieldRef\":{\"fieldPath\":"
             "\"metadata.annotations['%s']\"}}},"
             "{\"name\":\"ABSENT\",\"valueFrom\":{\"fieldRef\":{\"fieldPath\":"
             "\"metadata.annotations['some.key/other']\"}}},"
             "{\"name\":\"LABEL\",\"valueFrom\":{\"fieldRef\":{\"fieldPath\":"
             "\"metadata.labels['app.kubernetes.io/name']\"}}},"
             "{\"name\":\"USES\",\"value\":\"[$(ANN)]\"}]}]}}",
             long_key, long_key);
    pod = cJSON_Parse(json);
    assert_non_null(pod);
    assert_int_equal(podenv_build(pod, first_container(pod), &f, resolve, NULL, &env, &e), 0);
    assert_string_equal(podenv_get(&env, "ANN"), "from the annotation");
    assert_string_equal(podenv_get(&env, "PLAIN"), "p1");
    assert_string_equal(podenv_get(&env, "LONG"), "long");
    assert_string_equal(podenv_get(&env, "ABSENT"), "");
    assert_string_equal(podenv_get(&env, "LABEL"), "etcd");
    assert_string_equal(podenv_get(&env, "USES"), "[from the annotation]");
    podenv_done(&env);

    /* Built again (as for a container restart) from the updated pod: the current value. */
    cJSON_ReplaceItemInObject(
        cJSON_GetObjectItem(cJSON_GetObjectItem(pod, "metadata"), "annotations"), "some.key/name",
        cJSON_CreateString("changed"));
    assert_int_equal(podenv_build(pod, first_container(pod), &f, resolve, NULL, &env, &e), 0);
    assert_string_equal(podenv_get(&env, "ANN"), "changed");
    podenv_done(&env);
    cJSON_Delete(pod);
}

/* Paths the downward API does not have (or this agent does not serve) are refused by name. */
static void test_podenv__malformed_annotation_paths_are_refused(void **state)
{
    static const char *const paths[] = {
        "metadata.annotations",            /* the whole map: downwardAPI volumes only */
        "metadata.annotations['unclosed",  /* no closing quote and bracket */
        "metadata.annotations[\\\"k\\\"]", /* double quotes */
        "metadata.annotation['k']",
    };

    for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++) {
        char json[512];
        struct podenv_fields f = {.pod_ip = "127.0.5.2"};
        struct podenv env = PODENV_INIT;
        struct err e = {0};
        cJSON *pod;

        snprintf(json, sizeof(json),
                 "{\"metadata\":{\"name\":\"p\",\"annotations\":{\"k\":\"v\"}},\"spec\":{"
                 "\"containers\":[{\"name\":\"c\",\"env\":[{\"name\":\"X\",\"valueFrom\":{"
                 "\"fieldRef\":{\"fieldPath\":\"%s\"}}}]}]}}",
                 paths[i]);
        pod = cJSON_Parse(json);
        assert_non_null(pod);
        assert_int_equal(podenv_build(pod, first_container(pod), &f, resolve, NULL, &env, &e),
                         -EINVAL);
        assert_non_null(strstr(e.msg, "env X: unsupported fieldRef"));
        podenv_done(&env);
        cJSON_Delete(pod);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_podenv__expand_follows_kubernetes_rules),
        cmocka_unit_test(test_podenv__build_resolves_downward_api_secrets_and_earlier_vars),
        cmocka_unit_test(test_podenv__missing_secret_key_names_the_variable),
        cmocka_unit_test(test_podenv__annotation_field_ref_takes_quoted_prefixed_keys),
        cmocka_unit_test(test_podenv__malformed_annotation_paths_are_refused),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
