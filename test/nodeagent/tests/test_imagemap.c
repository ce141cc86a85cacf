#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

static void test_imagemap__defaults_map_components_by_repository_suffix(void **state)
{
    struct imagemap *m;
    const char *bin;

    assert_int_equal(imagemap_new(&m), 0);
    assert_int_equal(imagemap_add_defaults(m, "/opt/kube/bin"), 0);
    assert_int_equal(imagemap_resolve_image(m, "registry.k8s.io/etcd:3.4.23-0", &bin), 0);
    assert_string_equal(bin, "/usr/bin/etcd");
    assert_int_equal(imagemap_resolve_image(m, "quay.io/coreos/etcd", &bin), 0);
    assert_string_equal(bin, "/usr/bin/etcd");
    assert_int_equal(imagemap_resolve_image(m, "k8s.gcr.io/kube-apiserver:v1.20.2", &bin), 0);
    assert_string_equal(bin, "/opt/kube/bin/kube-apiserver");
    assert_int_equal(imagemap_resolve_image(m, "k8s.gcr.io/kube-controller-manager:v1.20.2", &bin),
                     0);
    assert_string_equal(bin, "/opt/kube/bin/kube-controller-manager");
    /* Not at a name boundary, and unknown images. */
    assert_int_equal(imagemap_resolve_image(m, "example.com/fetcd:1", &bin), -ENOENT);
    assert_int_equal(imagemap_resolve_image(m, "busybox:1.36", &bin), -ENOENT);
    /* A component's usual command name resolves too, with or without a directory. */
    assert_int_equal(imagemap_resolve_command(m, "kube-apiserver", &bin), 0);
    assert_string_equal(bin, "/opt/kube/bin/kube-apiserver");
    assert_int_equal(imagemap_resolve_command(m, "/usr/local/bin/etcd", &bin), 0);
    assert_string_equal(bin, "/usr/bin/etcd");
    assert_int_equal(imagemap_resolve_command(m, "/bin/sh", &bin), -ENOENT);
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
    assert_int_equal(imagemap_resolve_image(m, "registry.k8s.io/etcd:3.4.23-0", &bin), 0);
    assert_string_equal(bin, "/opt/etcd-3.5/etcd");
    assert_int_equal(imagemap_resolve_image(m, "nestcp.test/shell:latest", &bin), 0);
    assert_string_equal(bin, IMAGEMAP_HOST);
    assert_int_equal(imagemap_resolve_command(m, "shell", &bin), -ENOENT); /* host rules */
    assert_int_equal(imagemap_bin_dirs(m, dirs, sizeof(dirs)), 0);
    assert_string_equal(dirs, "/opt/etcd-3.5:/usr/bin");

    f = fopen(path, "w");
    fputs("etcd /usr/bin/etcd\nbroken-line\n", f);
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
        cmocka_unit_test(test_imagemap__defaults_map_components_by_repository_suffix),
        cmocka_unit_test(test_imagemap__file_rules_override_defaults_and_errors_name_the_line),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
