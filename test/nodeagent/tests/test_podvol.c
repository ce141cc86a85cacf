#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/util/yamlconv.h"
#include "test/nodeagent/podvol.h"

static char root[64];
static cJSON *secret;

static int resolve(void *userdata, const char *kind, const char *ns, const char *name,
                   const cJSON **ret_obj)
{
    if (strcmp(kind, "Secret") != 0 || strcmp(name, "certs") != 0 || !secret)
        return -ENOENT;
    *ret_obj = secret;
    return 0;
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    return remove(path);
}

static int setup(void **state)
{
    snprintf(root, sizeof(root), "/tmp/nodeagent-podvol-XXXXXX");
    assert_non_null(mkdtemp(root));
    return 0;
}

static int teardown(void **state)
{
    nftw(root, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
    cJSON_Delete(secret);
    secret = NULL;
    return 0;
}

static char *slurp(const char *dir, const char *rel)
{
    char path[512], *text = NULL;

    snprintf(path, sizeof(path), "%s/%s", dir, rel);
    if (util_read_file(path, 1 << 20, &text, NULL) < 0)
        return NULL;
    return text;
}

static unsigned mode_of(const char *dir, const char *rel)
{
    char path[512];
    struct stat st;

    snprintf(path, sizeof(path), "%s/%s", dir, rel);
    assert_int_equal(stat(path, &st), 0);
    return st.st_mode & 07777;
}

static const char *pod_json =
    "{\"metadata\":{\"name\":\"etcd-0\",\"namespace\":\"t\"},\"spec\":{"
    "\"volumes\":["
    " {\"name\":\"pki\",\"secret\":{\"secretName\":\"certs\",\"defaultMode\":384}},"
    " {\"name\":\"one\",\"secret\":{\"secretName\":\"certs\",\"items\":[{\"key\":\"ca.crt\","
    "  \"path\":\"sub/ca.pem\",\"mode\":256}]}},"
    " {\"name\":\"scratch\",\"emptyDir\":{}},"
    " {\"name\":\"data\",\"persistentVolumeClaim\":{\"claimName\":\"data-etcd-0\"}}],"
    "\"containers\":[{\"name\":\"etcd\",\"volumeMounts\":["
    " {\"name\":\"pki\",\"mountPath\":\"/etc/kubernetes/pki/etcd\",\"readOnly\":true},"
    " {\"name\":\"one\",\"mountPath\":\"/etc/ca.pem\",\"subPath\":\"sub/ca.pem\"},"
    " {\"name\":\"data\",\"mountPath\":\"/var/lib/etcd\"},"
    " {\"name\":\"scratch\",\"mountPath\":\"/etc/kubernetes\"}]}]}}";

static void test_podvol__secret_files_follow_items_modes_and_updates(void **state)
{
    cJSON *pod = cJSON_Parse(pod_json);
    char pod_dir[128], pvc_dir[128], path[256];
    struct podvol_dirs dirs = {pod_dir, pvc_dir};
    struct err e = {0};
    char *text;

    snprintf(pod_dir, sizeof(pod_dir), "%s/pods/t_etcd-0", root);
    snprintf(pvc_dir, sizeof(pvc_dir), "%s/pvc", root);
    /* Missing Secret: nothing is half-done, the message names the volume. */
    assert_int_equal(podvol_prepare(pod, &dirs, resolve, NULL, &e), -ENOENT);
    assert_non_null(strstr(e.msg, "volume pki"));

    secret = cJSON_Parse("{\"data\":{\"ca.crt\":\"Q0EK\",\"tls.key\":\"S0VZCg==\"}}");
    assert_int_equal(podvol_prepare(pod, &dirs, resolve, NULL, &e), 0);
    snprintf(path, sizeof(path), "%s/volumes/pki", pod_dir);
    assert_non_null(text = slurp(path, "ca.crt"));
    assert_string_equal(text, "CA\n");
    free(text);
    assert_non_null(text = slurp(path, "tls.key"));
    assert_string_equal(text, "KEY\n");
    free(text);
    assert_int_equal(mode_of(path, "tls.key"), 0600);
    snprintf(path, sizeof(path), "%s/volumes/one", pod_dir);
    assert_int_equal(mode_of(path, "sub/ca.pem"), 0400);
    assert_null(slurp(path, "tls.key")); /* items select keys */
    snprintf(path, sizeof(path), "%s/t_data-etcd-0", pvc_dir);
    assert_int_equal(access(path, F_OK), 0);
    snprintf(path, sizeof(path), "%s/volumes/scratch", pod_dir);
    assert_int_equal(access(path, F_OK), 0);

    /* The Secret changes: new data shows, a removed key goes away. */
    cJSON_Delete(secret);
    secret = cJSON_Parse("{\"data\":{\"ca.crt\":\"TkVXCg==\"}}");
    assert_int_equal(podvol_prepare(pod, &dirs, resolve, NULL, &e), 0);
    snprintf(path, sizeof(path), "%s/volumes/pki", pod_dir);
    assert_non_null(text = slurp(path, "ca.crt"));
    assert_string_equal(text, "NEW\n");
    free(text);
    assert_null(slurp(path, "tls.key"));
    cJSON_Delete(pod);
}

static void test_podvol__mounts_are_ordered_parents_first_with_hosts(void **state)
{
    cJSON *pod = cJSON_Parse(pod_json);
    struct podvol_dirs dirs = {"/s/pods/t_etcd-0", "/s/pvc"};
    const cJSON *c =
        cJSON_GetArrayItem(cJSON_GetObjectItem(cJSON_GetObjectItem(pod, "spec"), "containers"), 0);
    struct podvol_mount *m;
    size_t n;
    struct err e = {0};

    assert_int_equal(podvol_mounts(pod, c, &dirs, "/s/pods/t_etcd-0/hosts", &m, &n, &e), 0);
    assert_int_equal(n, 5);
    for (size_t i = 1; i < n; i++) /* /etc/kubernetes before /etc/kubernetes/pki/etcd */
        assert_true(strchr(m[i - 1].target, '/') &&
                    (strlen(m[i - 1].target) <= strlen(m[i].target) ||
                     strncmp(m[i].target, m[i - 1].target, strlen(m[i].target)) != 0));
    for (size_t i = 0; i < n; i++) {
        if (strcmp(m[i].target, "/etc/kubernetes/pki/etcd") == 0) {
            assert_string_equal(m[i].source, "/s/pods/t_etcd-0/volumes/pki");
            assert_true(m[i].readonly);
        } else if (strcmp(m[i].target, "/etc/ca.pem") == 0) {
            assert_string_equal(m[i].source, "/s/pods/t_etcd-0/volumes/one/sub/ca.pem");
        } else if (strcmp(m[i].target, "/var/lib/etcd") == 0) {
            assert_string_equal(m[i].source, "/s/pvc/t_data-etcd-0");
        } else if (strcmp(m[i].target, "/etc/hosts") == 0) {
            assert_string_equal(m[i].source, "/s/pods/t_etcd-0/hosts");
        } else {
            assert_string_equal(m[i].target, "/etc/kubernetes");
        }
    }
    podvol_mounts_free(m, n);
    cJSON_Delete(pod);
}

static void test_podvol__unsupported_volume_and_bad_paths_are_refused(void **state)
{
    cJSON *nfs = cJSON_Parse("{\"metadata\":{\"name\":\"p\"},\"spec\":{\"volumes\":[{\"name\":"
                             "\"n\",\"nfs\":{\"server\":\"x\",\"path\":\"/\"}}]}}");
    cJSON *escape = cJSON_Parse(
        "{\"metadata\":{\"name\":\"p\"},\"spec\":{\"volumes\":[{\"name\":\"s\",\"emptyDir\":{}}],"
        "\"containers\":[{\"name\":\"c\",\"volumeMounts\":[{\"name\":\"s\",\"mountPath\":\"/x\","
        "\"subPath\":\"../../etc\"}]}]}}");
    char pod_dir[128];
    struct podvol_dirs dirs = {pod_dir, root};
    struct podvol_mount *m;
    size_t n;
    struct err e = {0};

    snprintf(pod_dir, sizeof(pod_dir), "%s/pods/p", root);
    assert_int_equal(podvol_prepare(nfs, &dirs, resolve, NULL, &e), -EOPNOTSUPP);
    assert_non_null(strstr(e.msg, "volume n"));
    assert_int_equal(
        podvol_mounts(
            escape,
            cJSON_GetArrayItem(
                cJSON_GetObjectItem(cJSON_GetObjectItem(escape, "spec"), "containers"), 0),
            &dirs, NULL, &m, &n, &e),
        -EINVAL);
    assert_non_null(strstr(e.msg, "subPath"));
    cJSON_Delete(nfs);
    cJSON_Delete(escape);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_podvol__secret_files_follow_items_modes_and_updates,
                                        setup, teardown),
        cmocka_unit_test(test_podvol__mounts_are_ordered_parents_first_with_hosts),
        cmocka_unit_test_setup_teardown(test_podvol__unsupported_volume_and_bad_paths_are_refused,
                                        setup, teardown),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
