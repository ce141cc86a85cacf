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
#include <unistd.h>

#include "test/nodeagent/imagemap.h"

static void test_imagemap__repository_drops_tag_and_digest_keeps_registry_port(void **state)
{
    char repo[256];

    assert_int_equal(imagemap_repository("registry.k8s.io/etcd:3.4.23-0", repo, sizeof(repo)), 0);
    assert_string_equal(repo, "registry.k8s.io/etcd");
    assert_int_equal(
        imagemap_repository("localhost:5000/kube-apiserver@sha256:abc", repo, sizeof(repo)), 0);
    assert_string_equal(repo, "localhost:5000/kube-apiserver");
    assert_int_equal(imagemap_repository("localhost:5000/etcd", repo, sizeof(repo)), 0);
    assert_string_equal(repo, "localhost:5000/etcd");
    assert_int_equal(imagemap_repository(":v1", repo, sizeof(repo)), -EINVAL);
    assert_int_equal(imagemap_repository("a/very/long/name", repo, 4), -ENAMETOOLONG);
}

/* A fake cache of hack/kube-build.sh: every release named gets its binaries (empty files). */
static void make_release(const char *root, const char *release, const char *const *names)
{
    char path[512];

    snprintf(path, sizeof(path), "%s/%s", root, release);
    assert_int_equal(mkdir(path, 0755), 0);
    snprintf(path, sizeof(path), "%s/%s/bin", root, release);
    assert_int_equal(mkdir(path, 0755), 0);
    for (size_t i = 0; names[i]; i++) {
        int fd;

        snprintf(path, sizeof(path), "%s/%s/bin/%s", root, release, names[i]);
        fd = open(path, O_CREAT | O_WRONLY, 0755);
        assert_true(fd >= 0);
        close(fd);
    }
}

static void test_imagemap__defaults_run_each_image_tag_on_its_own_release(void **state)
{
    static const char *const kube[] = {"kube-apiserver", "kube-controller-manager", "kubectl",
                                       NULL};
    static const char *const etcd[] = {"etcd", "etcdctl", "etcdutl", NULL};
    static const char *const capi[] = {"manager", "clusterctl", NULL};
    char root[] = "/tmp/nodeagent-bins-XXXXXX", want[512], cmd[600];
    struct imagemap *m;
    const char *bin;

    assert_non_null(mkdtemp(root));
    make_release(root, "kubernetes-1.36.3", kube);
    make_release(root, "kubernetes-1.37.2", kube);
    make_release(root, "kubernetes-1.36.1", kube);
    make_release(root, "etcd-3.5.36", etcd);
    make_release(root, "etcd-3.6.17", etcd);
    make_release(root, "cluster-api-1.14.2", capi);
    assert_int_equal(imagemap_new(&m), 0);
    assert_int_equal(imagemap_add_defaults(m, root), 0);

    /* Cluster API's core manager, as clusterctl's components name its image (which holds it
     * as /manager). */
    assert_int_equal(imagemap_resolve_image(
                         m, "registry.k8s.io/cluster-api/cluster-api-controller:v1.14.2", &bin),
                     0);
    snprintf(want, sizeof(want), "%s/cluster-api-1.14.2/bin/manager", root);
    assert_string_equal(bin, want);

    /* An exact release runs itself. */
    assert_int_equal(imagemap_resolve_image(m, "registry.k8s.io/kube-apiserver:v1.36.1", &bin), 0);
    snprintf(want, sizeof(want), "%s/kubernetes-1.36.1/bin/kube-apiserver", root);
    assert_string_equal(bin, want);
    assert_int_equal(imagemap_resolve_image(m, "registry.k8s.io/kube-apiserver:v1.37.2", &bin), 0);
    snprintf(want, sizeof(want), "%s/kubernetes-1.37.2/bin/kube-apiserver", root);
    assert_string_equal(bin, want);
    /* Another patch of a line runs the line's newest release (1.36.3, not 1.36.1). */
    assert_int_equal(
        imagemap_resolve_image(m, "registry.k8s.io/kube-controller-manager:v1.36.9", &bin), 0);
    snprintf(want, sizeof(want), "%s/kubernetes-1.36.3/bin/kube-controller-manager", root);
    assert_string_equal(bin, want);
    /* etcd's image tags carry a build suffix; quay's have a leading v. */
    assert_int_equal(imagemap_resolve_image(m, "registry.k8s.io/etcd:3.5.36-0", &bin), 0);
    snprintf(want, sizeof(want), "%s/etcd-3.5.36/bin/etcd", root);
    assert_string_equal(bin, want);
    assert_int_equal(imagemap_resolve_image(m, "quay.io/coreos/etcd:v3.6.17", &bin), 0);
    snprintf(want, sizeof(want), "%s/etcd-3.6.17/bin/etcd", root);
    assert_string_equal(bin, want);
    /* No tag, or a line nothing was built for: the newest release. "v1.361" is not 1.36. */
    assert_int_equal(imagemap_resolve_image(m, "quay.io/coreos/etcd", &bin), 0);
    assert_string_equal(bin, want);
    assert_int_equal(imagemap_resolve_image(m, "k8s.gcr.io/kube-apiserver:v1.361.0", &bin), 0);
    snprintf(want, sizeof(want), "%s/kubernetes-1.37.2/bin/kube-apiserver", root);
    assert_string_equal(bin, want);
    /* Not at a name boundary, and unknown images. */
    assert_int_equal(imagemap_resolve_image(m, "example.com/fetcd:1", &bin), -ENOENT);
    assert_int_equal(imagemap_resolve_image(m, "busybox:1.36", &bin), -ENOENT);
    /* A component's usual command name resolves too, with or without a directory. */
    assert_int_equal(imagemap_resolve_command(m, "kube-apiserver", &bin), 0);
    assert_string_equal(bin, want);
    assert_int_equal(imagemap_resolve_command(m, "/usr/local/bin/etcd", &bin), 0);
    snprintf(want, sizeof(want), "%s/etcd-3.6.17/bin/etcd", root);
    assert_string_equal(bin, want);
    assert_int_equal(imagemap_resolve_command(m, "/bin/sh", &bin), -ENOENT);
    imagemap_free(m);

    /* A root that does not exist adds nothing. */
    assert_int_equal(imagemap_new(&m), 0);
    assert_int_equal(imagemap_add_defaults(m, "/nonexistent/nestcp-bins"), 0);
    assert_int_equal(imagemap_resolve_image(m, "registry.k8s.io/etcd:3.6.17-0", &bin), -ENOENT);
    imagemap_free(m);
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
    assert_int_equal(system(cmd), 0);
}

static void test_imagemap__tagged_file_rules(void **state)
{
    struct imagemap *m;
    const char *bin;

    assert_int_equal(imagemap_new(&m), 0);
    assert_int_equal(imagemap_add(m, "etcd", "/opt/etcd-new/etcd"), 0);
    assert_int_equal(imagemap_add(m, "etcd:3.5", "/opt/etcd-3.5/etcd"), 0);
    assert_int_equal(imagemap_add(m, "etcd:", "/opt/x"), -EINVAL);
    assert_int_equal(imagemap_add(m, ":3.5", "/opt/x"), -EINVAL);
    assert_int_equal(imagemap_resolve_image(m, "registry.k8s.io/etcd:3.5.21-0", &bin), 0);
    assert_string_equal(bin, "/opt/etcd-3.5/etcd");
    assert_int_equal(imagemap_resolve_image(m, "registry.k8s.io/etcd:3.6.1-0", &bin), 0);
    assert_string_equal(bin, "/opt/etcd-new/etcd");
    assert_int_equal(imagemap_resolve_image(m, "registry.k8s.io/etcd", &bin), 0);
    assert_string_equal(bin, "/opt/etcd-new/etcd");
    imagemap_free(m);
}

static void test_imagemap__file_rules_override_defaults_and_errors_name_the_line(void **state)
{
    char path[] = "/tmp/nodeagent-imagemap-XXXXXX";
    int fd = mkstemp(path);
    struct imagemap *m;
    struct err e = {0};
    const char *bin;
    char dirs[256];
    FILE *f;

    assert_true(fd >= 0);
    f = fdopen(fd, "w");
    fputs("# test images\n\netcd   /opt/etcd-3.5/etcd\nnestcp.test/shell host\n", f);
    fclose(f);
    assert_int_equal(imagemap_new(&m), 0);
    assert_int_equal(imagemap_add_defaults(m, NULL), 0);
    assert_int_equal(imagemap_load_file(m, path, &e), 0);
    assert_int_equal(imagemap_resolve_image(m, "registry.k8s.io/etcd:3.6.17-0", &bin), 0);
    assert_string_equal(bin, "/opt/etcd-3.5/etcd");
    assert_int_equal(imagemap_resolve_image(m, "nestcp.test/shell:latest", &bin), 0);
    assert_string_equal(bin, IMAGEMAP_HOST);
    assert_int_equal(imagemap_resolve_command(m, "shell", &bin), -ENOENT); /* host rules */
    assert_int_equal(imagemap_bin_dirs(m, dirs, sizeof(dirs)), 0);
    assert_string_equal(dirs, "/opt/etcd-3.5");

    f = fopen(path, "w");
    fputs("etcd /opt/etcd/etcd\nbroken-line\n", f);
    fclose(f);
    assert_int_equal(imagemap_load_file(m, path, &e), -EINVAL);
    assert_non_null(strstr(e.msg, ":2:"));
    f = fopen(path, "w");
    fputs("etcd relative/etcd\n", f);
    fclose(f);
    assert_int_equal(imagemap_load_file(m, path, &e), -EINVAL);
    assert_non_null(strstr(e.msg, ":1:"));
    unlink(path);
    assert_int_equal(imagemap_load_file(m, path, &e), -ENOENT);
    imagemap_free(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_imagemap__repository_drops_tag_and_digest_keeps_registry_port),
        cmocka_unit_test(test_imagemap__defaults_run_each_image_tag_on_its_own_release),
        cmocka_unit_test(test_imagemap__tagged_file_rules),
        cmocka_unit_test(test_imagemap__file_rules_override_defaults_and_errors_name_the_line),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
