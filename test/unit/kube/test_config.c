#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "lib/kube/config.h"
#include "lib/util/buf.h"

#define CA_PEM "-----BEGIN CERTIFICATE-----\nQ0E=\n-----END CERTIFICATE-----\n"
#define CERT_PEM "-----BEGIN CERTIFICATE-----\nQ0VSVA==\n-----END CERTIFICATE-----\n"
#define KEY_PEM "-----BEGIN EC PRIVATE KEY-----\nS0VZ\n-----END EC PRIVATE KEY-----\n"

static char tmpdir[64];

static char *b64(const char *s)
{
    static const char t[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    size_t n = strlen(s), o = 0;
    char *out = malloc(n / 3 * 4 + 8);

    for (size_t i = 0; i < n; i += 3) {
        unsigned v = (unsigned char)s[i] << 16;
        if (i + 1 < n)
            v |= (unsigned char)s[i + 1] << 8;
        if (i + 2 < n)
            v |= (unsigned char)s[i + 2];
        out[o++] = t[(v >> 18) & 63];
        out[o++] = t[(v >> 12) & 63];
        out[o++] = i + 1 < n ? t[(v >> 6) & 63] : '=';
        out[o++] = i + 2 < n ? t[v & 63] : '=';
    }
    out[o] = '\0';
    return out;
}

/* Two real self-signed certificates (keys thrown away), for the CA reload. */
static const char REAL_CA_ONE[] =
    "-----BEGIN CERTIFICATE-----\n"
    "MIIBejCCAR+gAwIBAgIUKdQdkHnc/hNAUJqIwwRm3srvfsswCgYIKoZIzj0EAwIw\n"
    "ETEPMA0GA1UEAwwGY2Etb25lMCAXDTI2MTIwNDE1NTcyN1oYDzIxMjYxMTEwMTU1\n"
    "NzI3WjARMQ8wDQYDVQQDDAZjYS1vbmUwWTATBgcqhkjOPQIBBggqhkjOPQMBBwNC\n"
    "AAROJngWqNr1gbevERkfBXSwH4MeMYm6gucqrkar2wpGk/gCC9ZXGn6+tujYG3jf\n"
    "J3MLaVw3esif5b8EZkhSqEcdo1MwUTAdBgNVHQ4EFgQUE7T8JrXmCNI3h5YCc6/L\n"
    "1uo+TJswHwYDVR0jBBgwFoAUE7T8JrXmCNI3h5YCc6/L1uo+TJswDwYDVR0TAQH/\n"
    "BAUwAwEB/zAKBggqhkjOPQQDAgNJADBGAiEA2DqjTZZr97LpAVnZbdC5E3bxij45\n"
    "OdYuLS6MoPco7oICIQCt3UfOlKeoVDl6gXvm+P89dQAEFUqROsX6ABQMZU7LDA==\n"
    "-----END CERTIFICATE-----\n";
static const char REAL_CA_TWO[] =
    "-----BEGIN CERTIFICATE-----\n"
    "MIIBeDCCAR+gAwIBAgIUVUvxfYNFsVQ6rm5ukVkvs4hvVCEwCgYIKoZIzj0EAwIw\n"
    "ETEPMA0GA1UEAwwGY2EtdHdvMCAXDTI2MTIwNDE1NTcyN1oYDzIxMjYxMTEwMTU1\n"
    "NzI3WjARMQ8wDQYDVQQDDAZjYS10d28wWTATBgcqhkjOPQIBBggqhkjOPQMBBwNC\n"
    "AATZ9Eyar+uZyrc2s3ZH6z7m6xbHLDuZew0Rkrd7caPkUdW/ZiO2CchrxVA//eU4\n"
    "dU9nxKJauJ1bl14xONrDLlkOo1MwUTAdBgNVHQ4EFgQU7mO85xy+VwzzcDiHNDvq\n"
    "t2RV3IowHwYDVR0jBBgwFoAU7mO85xy+VwzzcDiHNDvqt2RV3IowDwYDVR0TAQH/\n"
    "BAUwAwEB/zAKBggqhkjOPQQDAgNHADBEAiB1MXXy7iagymG16IBFN3ocE3gojaSl\n"
    "Fr502lbg8UdDcAIgWQz1+OlcE/MNP8EDM2/uBe6wzaWTQ5ugnvUzvgH8hOY=\n"
    "-----END CERTIFICATE-----\n";

static void write_file(const char *name, const char *text)
{
    char path[256];
    FILE *f;

    snprintf(path, sizeof(path), "%s/%s", tmpdir, name);
    f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static int setup(void **state)
{
    snprintf(tmpdir, sizeof(tmpdir), "/tmp/nestcp-test-config-XXXXXX");
    assert_non_null(mkdtemp(tmpdir));
    return 0;
}

static int teardown(void **state)
{
    char cmd[128];

    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
    return system(cmd) == 0 ? 0 : -1;
}

/* A kubeconfig whose user section is `user` (YAML lines indented by 4). */
static char *kubeconfig(const char *cluster, const char *user)
{
    struct buf b;

    buf_init(&b, 0);
    buf_printf(&b,
               "apiVersion: v1\nkind: Config\ncurrent-context: dev\n"
               "contexts:\n- name: other\n  context: {cluster: nowhere, user: nobody}\n"
               "- name: dev\n  context:\n    cluster: c1\n    user: u1\n    namespace: team-a\n"
               "clusters:\n- name: c1\n  cluster:\n%s"
               "users:\n- name: u1\n  user:\n%s",
               cluster, user);
    return buf_steal(&b);
}

static int parse(const char *text, struct kube_config **ret, struct err *e)
{
    err_clear(e);
    return kube_config_parse(text, strlen(text), "kc", tmpdir, NULL, ret, e);
}

static void test_config__embedded_data_and_context_namespace(void **state)
{
    char *ca = b64(CA_PEM), *cert = b64(CERT_PEM), *key = b64(KEY_PEM);
    char cl[1024], us[1024], *text;
    struct kube_config *cfg = NULL;
    struct err e;

    snprintf(cl, sizeof(cl),
             "    server: https://127.0.0.1:6443/\n    certificate-authority-data: %s\n", ca);
    snprintf(us, sizeof(us), "    client-certificate-data: %s\n    client-key-data: %s\n", cert,
             key);
    text = kubeconfig(cl, us);
    assert_int_equal(parse(text, &cfg, &e), 0);
    assert_string_equal(cfg->server, "https://127.0.0.1:6443");
    assert_string_equal(cfg->ca_pem, CA_PEM);
    assert_int_equal(cfg->ca_len, strlen(CA_PEM));
    assert_string_equal(cfg->cert_pem, CERT_PEM);
    assert_string_equal(cfg->key_pem, KEY_PEM);
    assert_null(cfg->token);
    assert_string_equal(cfg->namespace_, "team-a");
    kube_config_free(cfg);
    free(text);
    free(ca);
    free(cert);
    free(key);
}

static void test_config__relative_files_resolve_against_kubeconfig_dir(void **state)
{
    char path[256], *text;
    struct kube_config *cfg = NULL;
    struct err e;
    FILE *f;

    write_file("ca.crt", CA_PEM);
    write_file("me.crt", CERT_PEM);
    write_file("me.key", KEY_PEM);
    text = kubeconfig("    server: https://h:1\n    certificate-authority: ca.crt\n",
                      "    client-certificate: me.crt\n    client-key: me.key\n");
    snprintf(path, sizeof(path), "%s/config", tmpdir);
    f = fopen(path, "w");
    fputs(text, f);
    fclose(f);
    assert_int_equal(kube_config_load_file(path, NULL, &cfg, &e), 0);
    assert_string_equal(cfg->ca_pem, CA_PEM);
    assert_string_equal(cfg->cert_pem, CERT_PEM);
    assert_string_equal(cfg->key_pem, KEY_PEM);
    assert_string_equal(cfg->origin, path);
    kube_config_free(cfg);

    /* $KUBECONFIG: missing files are skipped, and none existing is -ENOENT (merging has its
     * own tests in test_config_merge.c). */
    setenv("KUBECONFIG", "/nonexistent/a:", 1);
    setenv("HOME", "/nonexistent", 1);
    unsetenv("KUBERNETES_SERVICE_HOST");
    assert_int_equal(kube_config_load(NULL, &cfg, &e), -ENOENT);
    {
        char env[600];

        snprintf(env, sizeof(env), "/nonexistent/a:%s", path);
        setenv("KUBECONFIG", env, 1);
    }
    assert_int_equal(kube_config_load(NULL, &cfg, &e), 0);
    assert_string_equal(cfg->server, "https://h:1");
    kube_config_free(cfg);
    unsetenv("KUBECONFIG");
    free(text);
}

static void test_config__token_file_is_reread_when_it_changes(void **state)
{
    char *text = kubeconfig("    server: https://h:1\n", "    tokenFile: tok\n");
    struct kube_config *cfg = NULL;
    const char *tok = NULL;
    char path[256];
    struct timespec ts[2] = {{0, 0}, {1000, 0}};
    struct err e;

    write_file("tok", "first-token\n");
    assert_int_equal(parse(text, &cfg, &e), 0);
    assert_int_equal(kube_config_token(cfg, &tok, &e), 0);
    assert_string_equal(tok, "first-token");

    write_file("tok", "second-token\n");
    snprintf(path, sizeof(path), "%s/tok", tmpdir);
    assert_int_equal(utimensat(AT_FDCWD, path, ts, 0), 0);
    assert_int_equal(kube_config_token(cfg, &tok, &e), 0);
    assert_string_equal(tok, "second-token");

    /* A rotation that breaks the file keeps the last good token and reports it. */
    unlink(path);
    assert_int_equal(kube_config_token(cfg, &tok, &e), -ENOENT);
    assert_non_null(strstr(e.msg, "/tok: No such file or directory"));
    kube_config_free(cfg);
    free(text);
}

/* Writes text to name and moves its mtime to `second`, so a rewrite within one clock tick is
 * still a change. */
static void rewrite(const char *name, const char *text, time_t second)
{
    char path[256];
    struct timespec ts[2] = {{second, 0}, {second, 0}};

    write_file(name, text);
    snprintf(path, sizeof(path), "%s/%s", tmpdir, name);
    assert_int_equal(utimensat(AT_FDCWD, path, ts, 0), 0);
}

static void test_config__ca_file_is_reloaded_and_a_bad_one_keeps_the_old(void **state)
{
    char *text = kubeconfig("    server: https://h:1\n    certificate-authority: rot-ca.crt\n",
                            "    token: t\n");
    struct kube_config *cfg = NULL, *copy;
    char path[256], both[4096];
    struct err e;

    rewrite("rot-ca.crt", REAL_CA_ONE, 1000);
    assert_int_equal(parse(text, &cfg, &e), 0);
    snprintf(path, sizeof(path), "%s/rot-ca.crt", tmpdir);
    assert_string_equal(cfg->ca_file, path);
    assert_int_equal(kube_config_ca(cfg, &e), 0); /* unchanged */
    assert_string_equal(cfg->ca_pem, REAL_CA_ONE);

    /* Rotated: the next call loads the new bundle. */
    snprintf(both, sizeof(both), "%s%s", REAL_CA_TWO, REAL_CA_ONE);
    rewrite("rot-ca.crt", both, 2000);
    assert_int_equal(kube_config_ca(cfg, &e), 1);
    assert_string_equal(cfg->ca_pem, both);
    assert_int_equal(kube_config_ca(cfg, &e), 0);

    /* Broken rotations keep the working bundle, are reported once, and not read again. */
    rewrite("rot-ca.crt", "not a certificate\n", 3000);
    assert_int_equal(kube_config_ca(cfg, &e), -EINVAL);
    assert_non_null(strstr(e.msg, "rot-ca.crt: not a PEM bundle of certificates; keeping the "
                                  "previous one"));
    assert_string_equal(cfg->ca_pem, both);
    assert_int_equal(kube_config_ca(cfg, &e), 0);
    /* One good certificate and one damaged one: refused whole. */
    snprintf(both, sizeof(both), "%s%.200s", REAL_CA_TWO, REAL_CA_ONE);
    rewrite("rot-ca.crt", both, 4000);
    assert_int_equal(kube_config_ca(cfg, &e), -EINVAL);
    unlink(path);
    assert_int_equal(kube_config_ca(cfg, &e), -ENOENT);
    assert_int_equal(kube_config_ca(cfg, &e), 0);
    assert_non_null(strstr(cfg->ca_pem, "Fr502lbg8UdDcAIgWQz1"));

    /* Back, and a copy of the configuration follows the file too. */
    rewrite("rot-ca.crt", REAL_CA_TWO, 5000);
    copy = kube_config_dup(cfg);
    assert_non_null(copy);
    assert_int_equal(kube_config_ca(copy, &e), 1);
    assert_string_equal(copy->ca_pem, REAL_CA_TWO);
    kube_config_free(copy);
    kube_config_free(cfg);
    free(text);

    /* Inline certificate-authority-data has no file to follow. */
    {
        char *data = b64(REAL_CA_ONE), cluster[2048];

        snprintf(cluster, sizeof(cluster),
                 "    server: https://h:1\n    certificate-authority-data: %s\n", data);
        text = kubeconfig(cluster, "    token: t\n");
        assert_int_equal(parse(text, &cfg, &e), 0);
        assert_null(cfg->ca_file);
        assert_int_equal(kube_config_ca(cfg, &e), 0);
        assert_string_equal(cfg->ca_pem, REAL_CA_ONE);
        kube_config_free(cfg);
        free(text);
        free(data);
    }
}

static void test_config__static_token(void **state)
{
    char *text = kubeconfig("    server: https://h:1\n", "    token: abc.def\n");
    struct kube_config *cfg = NULL, *copy;
    const char *tok = NULL;
    struct err e;

    assert_int_equal(parse(text, &cfg, &e), 0);
    assert_int_equal(kube_config_token(cfg, &tok, &e), 0);
    assert_string_equal(tok, "abc.def");
    assert_null(cfg->ca_pem);
    copy = kube_config_dup(cfg);
    assert_string_equal(copy->token, "abc.def");
    assert_string_equal(copy->server, "https://h:1");
    kube_config_free(copy);
    kube_config_free(cfg);
    free(text);
}

struct bad_case {
    const char *cluster, *user;
    int code;
    const char *msg;
};

static void test_config__malformed_inputs_name_the_field(void **state)
{
    static const struct bad_case cases[] = {
        {"    server: https://h:1\n", "    exec:\n      command: aws\n", -EOPNOTSUPP,
         "kc: users[0].user.exec: not supported"},
        {"    server: https://h:1\n", "    auth-provider:\n      name: gcp\n", -EOPNOTSUPP,
         "kc: users[0].user.auth-provider: not supported"},
        {"    server: https://h:1\n", "    username: a\n    password: b\n", -EOPNOTSUPP,
         "kc: users[0].user.username: not supported"},
        {"    server: https://h:1\n    insecure-skip-tls-verify: true\n", "    token: t\n",
         -EOPNOTSUPP,
         "kc: clusters[0].cluster.insecure-skip-tls-verify: not supported: TLS is always "
         "verified"},
        {"    server: http://h:1\n", "    token: t\n", -EINVAL,
         "kc: clusters[0].cluster.server: \"http://h:1\" is not an https:// URL"},
        {"    certificate-authority-data: eA==\n", "    token: t\n", -EINVAL,
         "kc: clusters[0].cluster.server: missing"},
        {"    server: [1]\n", "    token: t\n", -EINVAL,
         "kc: clusters[0].cluster.server: must be a string"},
        {"    server: https://h:1\n    certificate-authority-data: '!!notbase64'\n",
         "    token: t\n", -EINVAL,
         "kc: clusters[0].cluster.certificate-authority-data: not valid base64"},
        {"    server: https://h:1\n    certificate-authority-data: aGVsbG8=\n", "    token: t\n",
         -EINVAL, "kc: clusters[0].cluster.certificate-authority-data: no PEM certificate found"},
        {"    server: https://h:1\n    certificate-authority: missing.crt\n", "    token: t\n",
         -ENOENT, NULL},
        {"    server: https://h:1\n", "    client-certificate-data: eA==\n", -EINVAL,
         "kc: users[0].user: client-certificate and client-key must be set together"},
    };

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char *text = kubeconfig(cases[i].cluster, cases[i].user);
        struct kube_config *cfg = NULL;
        struct err e;

        assert_int_equal(parse(text, &cfg, &e), cases[i].code);
        assert_null(cfg);
        if (cases[i].msg)
            assert_string_equal(e.msg, cases[i].msg);
        else
            assert_non_null(
                strstr(e.msg, "kc: clusters[0].cluster.certificate-authority: cannot read "));
        free(text);
    }
}

static void test_config__structural_errors(void **state)
{
    static const struct {
        const char *text;
        const char *msg;
    } cases[] = {
        {"- a\n- b\n", "kc: not a mapping"},
        {"kind: Config\n", "kc: current-context: missing"},
        {"current-context: x\ncontexts: []\n", "kc: contexts: no context named \"x\""},
        {"current-context: x\ncontexts:\n- name: x\n  context: {user: u}\n",
         "kc: contexts[0].context.cluster: missing"},
        {"current-context: x\ncontexts:\n- name: x\n  context: {cluster: c}\n",
         "kc: clusters: no cluster named \"c\""},
        {"current-context: x\ncontexts:\n- name: x\n  context: {cluster: c, user: u}\n"
         "clusters:\n- name: c\n  cluster: {server: 'https://h'}\n",
         "kc: users: no user named \"u\""},
        {"current-context: x\ncontexts:\n- name: x\n  context: {cluster: c}\n"
         "clusters:\n- name: c\n  cluster: 5\n",
         "kc: clusters[0].cluster: missing or not a mapping"},
    };

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct kube_config *cfg = NULL;
        struct err e;

        assert_int_equal(parse(cases[i].text, &cfg, &e), -EINVAL);
        assert_string_equal(e.msg, cases[i].msg);
    }
    {
        struct kube_config *cfg = NULL;
        struct err e;
        const char *bad = "a: [1,\n";

        assert_int_equal(parse(bad, &cfg, &e), -EINVAL);
        assert_non_null(strstr(e.msg, "line"));
    }
}

static void test_config__explicit_context(void **state)
{
    const char *text = "current-context: a\ncontexts:\n- name: a\n  context: {cluster: ca}\n"
                       "- name: b\n  context: {cluster: cb}\n"
                       "clusters:\n- name: ca\n  cluster: {server: 'https://a:1'}\n"
                       "- name: cb\n  cluster: {server: 'https://b:2'}\n";
    struct kube_config *cfg = NULL;
    struct err e;

    assert_int_equal(kube_config_parse(text, strlen(text), "kc", NULL, "b", &cfg, &e), 0);
    assert_string_equal(cfg->server, "https://b:2");
    assert_string_equal(cfg->namespace_, "default");
    kube_config_free(cfg);
}

static void test_config__in_cluster_reads_service_account(void **state)
{
    struct kube_incluster_paths p;
    char tok[256], ca[256], ns[256];
    struct kube_config *cfg = NULL;
    struct err e;

    snprintf(tok, sizeof(tok), "%s/sa-token", tmpdir);
    snprintf(ca, sizeof(ca), "%s/sa-ca.crt", tmpdir);
    snprintf(ns, sizeof(ns), "%s/sa-namespace", tmpdir);
    p = (struct kube_incluster_paths){tok, ca, ns};
    write_file("sa-token", "sa.jwt");
    write_file("sa-ca.crt", CA_PEM);
    write_file("sa-namespace", "kube-system\n");

    unsetenv("KUBERNETES_SERVICE_HOST");
    assert_int_equal(kube_config_in_cluster(&p, &cfg, &e), -ENOENT);
    assert_string_equal(e.msg, "in-cluster: KUBERNETES_SERVICE_HOST/PORT not set");

    setenv("KUBERNETES_SERVICE_HOST", "10.96.0.1", 1);
    setenv("KUBERNETES_SERVICE_PORT", "443x", 1);
    assert_int_equal(kube_config_in_cluster(&p, &cfg, &e), -EINVAL);
    assert_string_equal(e.msg, "in-cluster: KUBERNETES_SERVICE_PORT \"443x\" is not a port");

    setenv("KUBERNETES_SERVICE_PORT", "443", 1);
    assert_int_equal(kube_config_in_cluster(&p, &cfg, &e), 0);
    assert_string_equal(cfg->server, "https://10.96.0.1:443");
    assert_string_equal(cfg->token, "sa.jwt");
    assert_string_equal(cfg->ca_pem, CA_PEM);
    assert_string_equal(cfg->ca_file, ca); /* followed: a rotated ca.crt is picked up */
    assert_string_equal(cfg->namespace_, "kube-system");
    kube_config_free(cfg);

    setenv("KUBERNETES_SERVICE_HOST", "fd00::1", 1);
    assert_int_equal(kube_config_in_cluster(&p, &cfg, &e), 0);
    assert_string_equal(cfg->server, "https://[fd00::1]:443");
    kube_config_free(cfg);

    p.token = "/nonexistent/token";
    assert_int_equal(kube_config_in_cluster(&p, &cfg, &e), -ENOENT);
    assert_string_equal(e.msg,
                        "in-cluster: token file /nonexistent/token: No such file or directory");
    unsetenv("KUBERNETES_SERVICE_HOST");
    unsetenv("KUBERNETES_SERVICE_PORT");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_config__embedded_data_and_context_namespace),
        cmocka_unit_test(test_config__relative_files_resolve_against_kubeconfig_dir),
        cmocka_unit_test(test_config__token_file_is_reread_when_it_changes),
        cmocka_unit_test(test_config__ca_file_is_reloaded_and_a_bad_one_keeps_the_old),
        cmocka_unit_test(test_config__static_token),
        cmocka_unit_test(test_config__malformed_inputs_name_the_field),
        cmocka_unit_test(test_config__structural_errors),
        cmocka_unit_test(test_config__explicit_context),
        cmocka_unit_test(test_config__in_cluster_reads_service_account),
    };

    return cmocka_run_group_tests(tests, setup, teardown);
}
