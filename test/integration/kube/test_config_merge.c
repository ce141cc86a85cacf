/* A $KUBECONFIG of several files, merged as kubectl merges them, reaches the real API server:
 * an empty file, a missing one, a file with its own context and a user whose certificate paths
 * are relative to that file, and the super cluster's kubeconfig that defines the cluster. */

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

#include <cjson/cJSON.h>
#include <ev.h>

#include "lib/kube/client.h"
#include "lib/kube/config.h"
#include "lib/util/yamlconv.h"

static char tmpdir[64];

static void write_file(const char *path, const char *text, size_t len)
{
    FILE *f = fopen(path, "w");

    assert_non_null(f);
    assert_int_equal(fwrite(text, 1, len, f), len);
    assert_int_equal(fclose(f), 0);
}

/* Copies the super cluster's pki/<name> to <dir>/<name>. */
static void copy_pki(const char *env_dir, const char *dir, const char *name)
{
    char from[512], to[512], *text = NULL;
    size_t len = 0;

    snprintf(from, sizeof(from), "%s/pki/%s", env_dir, name);
    snprintf(to, sizeof(to), "%s/%s", dir, name);
    assert_int_equal(util_read_file(from, KUBE_CONFIG_FILE_MAX, &text, &len), 0);
    write_file(to, text, len);
    free(text);
}

static int setup(void **state)
{
    snprintf(tmpdir, sizeof(tmpdir), "/tmp/nestcp-test-config-merge-XXXXXX");
    assert_non_null(mkdtemp(tmpdir));
    return 0;
}

static int teardown(void **state)
{
    char cmd[128];

    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
    return system(cmd) == 0 ? 0 : -1;
}

static void test_config_merge__several_files_reach_the_api_server(void **state)
{
    static const char local_config[] =
        "current-context: merged\n"
        "contexts:\n- name: merged\n"
        "  context: {cluster: nestcp-super, user: local-admin, namespace: kube-system}\n"
        "users:\n- name: local-admin\n"
        "  user: {client-certificate: admin.crt, client-key: admin.key}\n";
    const char *real = getenv("KUBECONFIG"), *env_dir = getenv("NESTCP_KUBE_ENV_DIR");
    char local_dir[128], path[256], list[1024], origin[1024];
    struct ev_loop *loop = ev_loop_new(EVFLAG_AUTO);
    struct kube_config *cfg = NULL;
    struct kube_client *c = NULL;
    cJSON *ns = NULL;
    struct err e;

    if (!real || !real[0] || !env_dir || !env_dir[0])
        fail_msg("KUBECONFIG and NESTCP_KUBE_ENV_DIR are not set: run under ctest or "
                 "eval \"$(hack/kube-env.sh up)\"");
    snprintf(local_dir, sizeof(local_dir), "%s/local", tmpdir);
    assert_int_equal(mkdir(local_dir, 0700), 0);
    copy_pki(env_dir, local_dir, "admin.crt");
    copy_pki(env_dir, local_dir, "admin.key");
    snprintf(path, sizeof(path), "%s/config", local_dir);
    write_file(path, local_config, strlen(local_config));
    snprintf(path, sizeof(path), "%s/empty.yaml", tmpdir);
    write_file(path, "", 0);

    snprintf(list, sizeof(list), "%s/empty.yaml::%s/missing.yaml:%s/config:%s", tmpdir, tmpdir,
             local_dir, real);
    setenv("KUBECONFIG", list, 1);
    assert_int_equal(kube_config_load(NULL, &cfg, &e), 0);
    setenv("KUBECONFIG", real, 1);
    snprintf(origin, sizeof(origin), "%s/empty.yaml:%s/config:%s", tmpdir, local_dir, real);
    assert_string_equal(cfg->origin, origin);
    assert_string_equal(cfg->namespace_, "kube-system");

    assert_int_equal(kube_client_new(loop, cfg, &c, &e), 0);
    assert_int_equal(kube_request_sync(c,
                                       &(struct kube_request){.verb = KUBE_GET,
                                                              .resource = &KUBE_NAMESPACES,
                                                              .name = cfg->namespace_},
                                       &ns, &e),
                     0);
    assert_string_equal(kube_obj_name(ns), "kube-system");
    cJSON_Delete(ns);
    kube_client_free(c);
    kube_config_free(cfg);
    ev_loop_destroy(loop);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_config_merge__several_files_reach_the_api_server),
    };

    return cmocka_run_group_tests(tests, setup, teardown);
}
