/* Several kubeconfig files merged as kubectl merges the files of $KUBECONFIG. */

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "lib/kube/config.h"
#include "lib/util/buf.h"

#define CA1_PEM "-----BEGIN CERTIFICATE-----\nQ0Ex\n-----END CERTIFICATE-----\n"
#define CA2_PEM "-----BEGIN CERTIFICATE-----\nQ0Ey\n-----END CERTIFICATE-----\n"
#define CERT_PEM "-----BEGIN CERTIFICATE-----\nQ0VSVA==\n-----END CERTIFICATE-----\n"
#define KEY_PEM "-----BEGIN EC PRIVATE KEY-----\nS0VZ\n-----END EC PRIVATE KEY-----\n"

static char tmpdir[64];

/* Writes text to tmpdir/name and returns the path (static storage, one of four in turn). */
static const char *put(const char *name, const char *text)
{
    static char paths[4][256];
    static int next;
    char *path = paths[next++ % 4];
    FILE *f;

    snprintf(path, 256, "%s/%s", tmpdir, name);
    f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    assert_int_equal(fclose(f), 0);
    return path;
}

/* The ':'-separated list of tmpdir/<name> for each name ("" stays an empty entry). */
static char *list_of(const char *const *names, size_t n)
{
    struct buf b;

    buf_init(&b, 0);
    for (size_t i = 0; i < n; i++) {
        if (i)
            buf_puts(&b, ":");
        if (names[i][0])
            buf_printf(&b, "%s/%s", tmpdir, names[i]);
    }
    return buf_steal(&b);
}

static int load(const char *const *names, size_t n, struct kube_config **ret, struct err *e)
{
    char *list = list_of(names, n);
    int r;

    err_clear(e);
    r = kube_config_load_list(list, NULL, ret, e);
    free(list);
    return r;
}

#define LOAD(names_, ret_, e_) load(names_, sizeof(names_) / sizeof(names_[0]), ret_, e_)

static int setup(void **state)
{
    snprintf(tmpdir, sizeof(tmpdir), "/tmp/nestcp-test-config-merge-XXXXXX");
    assert_non_null(mkdtemp(tmpdir));
    unsetenv("KUBERNETES_SERVICE_HOST");
    return 0;
}

static int teardown(void **state)
{
    char cmd[128];

    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
    return system(cmd) == 0 ? 0 : -1;
}

static void test_config_merge__first_file_to_set_current_context_wins(void **state)
{
    static const char *const names[] = {"cc-none.yaml", "cc-b.yaml", "cc-c.yaml"};
    struct kube_config *cfg = NULL;
    char origin[600];
    struct err e;

    put("cc-none.yaml", "current-context: ''\n"
                        "contexts:\n- name: a\n  context: {cluster: ca}\n"
                        "clusters:\n- name: ca\n  cluster: {server: 'https://a:1'}\n");
    put("cc-b.yaml", "current-context: b\n"
                     "contexts:\n- name: b\n  context: {cluster: cb, namespace: team-b}\n"
                     "clusters:\n- name: cb\n  cluster: {server: 'https://b:2'}\n");
    put("cc-c.yaml", "current-context: a\n");
    assert_int_equal(LOAD(names, &cfg, &e), 0);
    assert_string_equal(cfg->server, "https://b:2");
    assert_string_equal(cfg->namespace_, "team-b");
    snprintf(origin, sizeof(origin), "%s/cc-none.yaml:%s/cc-b.yaml:%s/cc-c.yaml", tmpdir, tmpdir,
             tmpdir);
    assert_string_equal(cfg->origin, origin);
    kube_config_free(cfg);

    /* An explicit context overrides every file's current-context, and may come from any file. */
    {
        char *list = list_of(names, 3);

        assert_int_equal(kube_config_load_list(list, "a", &cfg, &e), 0);
        assert_string_equal(cfg->server, "https://a:1");
        kube_config_free(cfg);
        free(list);
    }
}

static void test_config_merge__first_definition_of_a_name_wins(void **state)
{
    static const char *const names[] = {"def-1.yaml", "def-2.yaml", "def-3.yaml"};
    struct kube_config *cfg = NULL;
    struct err e;

    put("def-1.yaml", "current-context: x\n"
                      "clusters:\n- name: c\n  cluster: {server: 'https://first:1'}\n");
    put("def-2.yaml", "contexts:\n- name: x\n  context: {cluster: c, user: u}\n"
                      "clusters:\n- name: c\n  cluster: {server: 'https://second:2'}\n"
                      "users:\n- name: u\n  user: {token: second-token}\n");
    /* A later definition is ignored whole, even one this loader would refuse. */
    put("def-3.yaml", "contexts:\n- name: x\n  context: {cluster: nowhere}\n"
                      "users:\n- name: u\n  user: {exec: {command: aws}}\n");
    assert_int_equal(LOAD(names, &cfg, &e), 0);
    assert_string_equal(cfg->server, "https://first:1");
    assert_string_equal(cfg->token, "second-token");
    kube_config_free(cfg);
}

static void test_config_merge__relative_paths_resolve_against_each_files_dir(void **state)
{
    static const char *const names[] = {"d1/config", "d2/config"};
    struct kube_config *cfg = NULL;
    char dir[256];
    struct err e;

    snprintf(dir, sizeof(dir), "%s/d1", tmpdir);
    assert_int_equal(mkdir(dir, 0700), 0);
    snprintf(dir, sizeof(dir), "%s/d2", tmpdir);
    assert_int_equal(mkdir(dir, 0700), 0);
    /* Both directories hold a ca.crt: the cluster's is the one next to the file defining it. */
    put("d1/ca.crt", CA1_PEM);
    put("d2/ca.crt", CA2_PEM);
    put("d2/me.crt", CERT_PEM);
    put("d2/me.key", KEY_PEM);
    put("d2/token", "file-token\n");
    put("d1/config", "current-context: x\n"
                     "contexts:\n- name: x\n  context: {cluster: c, user: u}\n"
                     "clusters:\n- name: c\n"
                     "  cluster: {server: 'https://h:1', certificate-authority: ca.crt}\n");
    put("d2/config",
        "users:\n- name: u\n"
        "  user: {client-certificate: me.crt, client-key: me.key, tokenFile: token}\n");
    assert_int_equal(LOAD(names, &cfg, &e), 0);
    assert_string_equal(cfg->ca_pem, CA1_PEM);
    assert_string_equal(cfg->cert_pem, CERT_PEM);
    assert_string_equal(cfg->key_pem, KEY_PEM);
    assert_string_equal(cfg->token, "file-token");
    snprintf(dir, sizeof(dir), "%s/d2/token", tmpdir);
    assert_string_equal(cfg->token_file, dir);
    kube_config_free(cfg);
}

static void test_config_merge__missing_files_empty_entries_and_empty_files_are_skipped(void **state)
{
    static const char *const names[] = {"", "absent.yaml", "", "empty.yaml", "real.yaml", ""};
    struct kube_config *cfg = NULL;
    char origin[600];
    struct err e;

    put("empty.yaml", "");
    put("real.yaml", "current-context: r\ncontexts:\n- name: r\n  context: {cluster: c}\n"
                     "clusters:\n- name: c\n  cluster: {server: 'https://real:443'}\n");
    assert_int_equal(LOAD(names, &cfg, &e), 0);
    assert_string_equal(cfg->server, "https://real:443");
    snprintf(origin, sizeof(origin), "%s/empty.yaml:%s/real.yaml", tmpdir, tmpdir);
    assert_string_equal(cfg->origin, origin);
    kube_config_free(cfg);
}

static void test_config_merge__all_files_missing_is_a_clear_error(void **state)
{
    struct kube_config *cfg = NULL;
    char home[256];
    struct err e;

    assert_int_equal(kube_config_load_list("/nonexistent/a::/nonexistent/b", NULL, &cfg, &e),
                     -ENOENT);
    assert_null(cfg);
    assert_string_equal(e.msg, "kubeconfig list: none of its files exists "
                               "(/nonexistent/a::/nonexistent/b)");
    assert_int_equal(kube_config_load_list("::", NULL, &cfg, &e), -ENOENT);
    assert_string_equal(e.msg, "kubeconfig list: names no file");

    /* Through $KUBECONFIG: no fallback to ~/.kube/config, as with kubectl... */
    snprintf(home, sizeof(home), "%s/home", tmpdir);
    assert_int_equal(mkdir(home, 0700), 0);
    snprintf(home, sizeof(home), "%s/home/.kube", tmpdir);
    assert_int_equal(mkdir(home, 0700), 0);
    put("home/.kube/config", "current-context: h\ncontexts:\n- name: h\n  context: {cluster: c}\n"
                             "clusters:\n- name: c\n  cluster: {server: 'https://home:1'}\n");
    snprintf(home, sizeof(home), "%s/home", tmpdir);
    setenv("HOME", home, 1);
    setenv("KUBECONFIG", "/nonexistent/a:/nonexistent/b", 1);
    assert_int_equal(kube_config_load(NULL, &cfg, &e), -ENOENT);
    assert_string_equal(e.msg,
                        "$KUBECONFIG: none of its files exists (/nonexistent/a:/nonexistent/b)");

    /* ...but a $KUBECONFIG of empty entries only is as if unset. */
    setenv("KUBECONFIG", "::", 1);
    assert_int_equal(kube_config_load(NULL, &cfg, &e), 0);
    assert_string_equal(cfg->server, "https://home:1");
    kube_config_free(cfg);
    unsetenv("KUBECONFIG");
}

static void test_config_merge__explicit_path_is_one_file(void **state)
{
    const char *a = put("one-a.yaml", "current-context: x\n"
                                      "contexts:\n- name: x\n  context: {cluster: c, user: u}\n"
                                      "clusters:\n- name: c\n  cluster: {server: 'https://a:1'}\n");
    const char *b = put("one-b.yaml", "users:\n- name: u\n  user: {token: t}\n");
    struct kube_config *cfg = NULL;
    char env[600], msg[600];
    struct err e;

    snprintf(env, sizeof(env), "%s:%s", a, b);
    setenv("KUBECONFIG", env, 1);
    assert_int_equal(kube_config_load(NULL, &cfg, &e), 0);
    assert_string_equal(cfg->token, "t");
    kube_config_free(cfg);

    cfg = NULL;
    assert_int_equal(kube_config_load(a, &cfg, &e), -EINVAL);
    assert_null(cfg);
    snprintf(msg, sizeof(msg), "%s: users: no user named \"u\"", a);
    assert_string_equal(e.msg, msg);
    unsetenv("KUBECONFIG");
}

static void test_config_merge__errors_name_the_file_and_the_field(void **state)
{
    static const struct {
        const char *second; /* the second file; the first is always ok.yaml */
        int code;
        const char *msg; /* after "<tmpdir>/" */
    } cases[] = {
        {"users:\n- name: u\n  user: {client-certificate: me.crt, client-key: me.key}\n", -ENOENT,
         "bad.yaml: users[0].user.client-certificate: cannot read "},
        {"users:\n- name: u\n  user: {exec: {command: aws}}\n", -EOPNOTSUPP,
         "bad.yaml: users[0].user.exec: not supported"},
        {"users:\n- name: v\n- name: u\n  user: {token: [1]}\n", -EINVAL,
         "bad.yaml: users[1].user.token: must be a string"},
        {"users: {u: {token: t}}\n", -EINVAL, "bad.yaml: users: must be a list"},
        {"current-context: [x]\n", -EINVAL, "bad.yaml: current-context: must be a string"},
        {"users:\n- name: u\n  user: {token: t}\n- name: v\n- name: u\n  user: {token: s}\n",
         -EINVAL, "bad.yaml: users[2].name: \"u\" is defined twice (also users[0])"},
        {"- a\n", -EINVAL, "bad.yaml: not a mapping"},
        {"users: [\n", -EINVAL, "bad.yaml:"},
    };
    static const char *const names[] = {"ok.yaml", "bad.yaml"};
    struct kube_config *cfg = NULL;
    char want[600];
    struct err e;

    put("ok.yaml", "current-context: x\n"
                   "contexts:\n- name: x\n  context: {cluster: c, user: u}\n"
                   "clusters:\n- name: c\n  cluster: {server: 'https://h:1'}\n");
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        put("bad.yaml", cases[i].second);
        snprintf(want, sizeof(want), "%s/%s", tmpdir, cases[i].msg);
        assert_int_equal(LOAD(names, &cfg, &e), cases[i].code);
        assert_null(cfg);
        if (strncmp(e.msg, want, strlen(want)) != 0)
            fail_msg("case %zu: \"%s\" does not start with \"%s\"", i, e.msg, want);
    }

    /* A name that no file defines: the message names every file searched. */
    put("bad.yaml", "kind: Config\n");
    assert_int_equal(LOAD(names, &cfg, &e), -EINVAL);
    snprintf(want, sizeof(want), "%s/ok.yaml:%s/bad.yaml: users: no user named \"u\"", tmpdir,
             tmpdir);
    assert_string_equal(e.msg, want);
}

static void test_config_merge__list_is_bounded(void **state)
{
    struct kube_config *cfg = NULL;
    struct buf b;
    struct err e;

    buf_init(&b, 0);
    for (int i = 0; i <= KUBE_CONFIG_FILES_MAX; i++)
        buf_printf(&b, "%s/nonexistent-%d", i ? ":" : "", i);
    assert_int_equal(kube_config_load_list(b.data, NULL, &cfg, &e), -EINVAL);
    assert_string_equal(e.msg, "kubeconfig list: more than 64 files");
    assert_null(cfg);
    buf_done(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_config_merge__first_file_to_set_current_context_wins),
        cmocka_unit_test(test_config_merge__first_definition_of_a_name_wins),
        cmocka_unit_test(test_config_merge__relative_paths_resolve_against_each_files_dir),
        cmocka_unit_test(
            test_config_merge__missing_files_empty_entries_and_empty_files_are_skipped),
        cmocka_unit_test(test_config_merge__all_files_missing_is_a_clear_error),
        cmocka_unit_test(test_config_merge__explicit_path_is_one_file),
        cmocka_unit_test(test_config_merge__errors_name_the_file_and_the_field),
        cmocka_unit_test(test_config_merge__list_is_bounded),
    };

    return cmocka_run_group_tests(tests, setup, teardown);
}
