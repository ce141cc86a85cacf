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
/* What the resolver finds: "<kind>/<namespace>/<name>" -> object (namespace "" for volumes). */
static cJSON *world;

static int resolve(void *userdata, const char *kind, const char *ns, const char *name,
                   const cJSON **ret_obj)
{
    char key[256];
    const cJSON *obj;

    snprintf(key, sizeof(key), "%s/%s/%s", kind, ns ? ns : "", name);
    obj = cJSON_GetObjectItemCaseSensitive(world, key);
    if (!obj && strcmp(kind, "ServiceAccountToken") == 0)
        return -EAGAIN; /* requested, not answered yet */
    if (!obj)
        return -ENOENT;
    *ret_obj = obj;
    return 0;
}

static void world_put(const char *key, const char *json)
{
    cJSON *obj = cJSON_Parse(json);

    assert_non_null(obj);
    if (!world)
        assert_non_null(world = cJSON_CreateObject());
    cJSON_DeleteItemFromObjectCaseSensitive(world, key);
    assert_true(cJSON_AddItemToObject(world, key, obj));
}

static void world_drop(const char *key)
{
    cJSON_DeleteItemFromObjectCaseSensitive(world, key);
}

/* The claim t/data-etcd-0 (uid u-1) with that phase and spec.volumeName pv-1. */
static void claim_put(const char *phase, const char *extra_meta)
{
    char json[512];

    snprintf(json, sizeof(json),
             "{\"metadata\":{\"name\":\"data-etcd-0\",\"namespace\":\"t\",\"uid\":\"u-1\"%s},"
             "\"spec\":{\"volumeName\":\"pv-1\"},\"status\":{\"phase\":\"%s\"}}",
             extra_meta, phase);
    world_put("PersistentVolumeClaim/t/data-etcd-0", json);
}

/* The volume pv-1, its claimRef naming claim_ns/claim (uid), with that source. */
static void volume_put(const char *claim_ns, const char *claim, const char *uid, const char *source,
                       const char *extra_meta)
{
    char json[1024];

    snprintf(json, sizeof(json),
             "{\"metadata\":{\"name\":\"pv-1\"%s},\"spec\":{\"claimRef\":{\"namespace\":\"%s\","
             "\"name\":\"%s\",\"uid\":\"%s\"},%s},\"status\":{\"phase\":\"Bound\"}}",
             extra_meta, claim_ns, claim, uid, source);
    world_put("PersistentVolume//pv-1", json);
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
    cJSON_Delete(world);
    world = NULL;
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

static cJSON *claims_of(const cJSON *pod)
{
    cJSON *claims = NULL;
    struct err e = {0};

    assert_int_equal(podvol_claims_resolve(pod, resolve, NULL, &claims, &e), 0);
    return claims;
}

static void test_podvol__secret_files_follow_items_modes_and_updates(void **state)
{
    cJSON *pod = cJSON_Parse(pod_json), *claims;
    char pod_dir[128], pv_dir[128], source[192], path[256];
    struct podvol_dirs dirs = {pod_dir, NULL};
    struct err e = {0};
    char *text;

    snprintf(pod_dir, sizeof(pod_dir), "%s/pods/t_etcd-0", root);
    snprintf(pv_dir, sizeof(pv_dir), "%s/hostpath_pv/1", root);
    assert_int_equal(podvol_mkdir_p(pv_dir, 0750), 0);
    snprintf(source, sizeof(source), "\"hostPath\":{\"path\":\"%s\"}", pv_dir);
    claim_put("Bound", "");
    volume_put("t", "data-etcd-0", "u-1", source, "");
    dirs.claims = claims = claims_of(pod);
    /* Missing Secret: nothing is half-done, the message names the volume. */
    assert_int_equal(podvol_prepare(pod, &dirs, resolve, NULL, &e), -ENOENT);
    assert_non_null(strstr(e.msg, "volume pki"));

    world_put("Secret/t/certs", "{\"data\":{\"ca.crt\":\"Q0EK\",\"tls.key\":\"S0VZCg==\"}}");
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
    snprintf(path, sizeof(path), "%s/volumes/scratch", pod_dir);
    assert_int_equal(access(path, F_OK), 0);
    /* The claim is the PersistentVolume's directory; nothing else is made for it. */
    assert_int_equal(mode_of(pv_dir, ""), 0750);
    snprintf(path, sizeof(path), "%s/volumes/data", pod_dir);
    assert_int_equal(access(path, F_OK), -1);
    snprintf(path, sizeof(path), "%s/pvc", root);
    assert_int_equal(access(path, F_OK), -1);

    /* The Secret changes: new data shows, a removed key goes away. */
    world_put("Secret/t/certs", "{\"data\":{\"ca.crt\":\"TkVXCg==\"}}");
    assert_int_equal(podvol_prepare(pod, &dirs, resolve, NULL, &e), 0);
    snprintf(path, sizeof(path), "%s/volumes/pki", pod_dir);
    assert_non_null(text = slurp(path, "ca.crt"));
    assert_string_equal(text, "NEW\n");
    free(text);
    assert_null(slurp(path, "tls.key"));

    /* The PersistentVolume's directory is gone (the deleter ran): not silently re-created. */
    assert_int_equal(rmdir(pv_dir), 0);
    assert_int_equal(podvol_prepare(pod, &dirs, resolve, NULL, &e), -ENOENT);
    assert_non_null(strstr(e.msg, "volume data: claim data-etcd-0"));
    assert_int_equal(access(pv_dir, F_OK), -1);
    /* Without resolved claims a claim volume is not provided at all. */
    dirs.claims = NULL;
    assert_int_equal(podvol_prepare(pod, &dirs, resolve, NULL, &e), -ENOENT);
    assert_non_null(strstr(e.msg, "claim data-etcd-0 has no bound PersistentVolume"));
    cJSON_Delete(claims);
    cJSON_Delete(pod);
}

/* podvol_claims_resolve on pod_json, expecting code and a message holding want. */
static void expect_claims(int code, const char *want)
{
    cJSON *pod = cJSON_Parse(pod_json), *claims = NULL;
    struct err e = {0};

    assert_int_equal(podvol_claims_resolve(pod, resolve, NULL, &claims, &e), code);
    assert_null(claims);
    if (!strstr(e.msg, want))
        fail_msg("message \"%s\" lacks \"%s\"", e.msg, want);
    assert_non_null(strstr(e.msg, "volume data: "));
    cJSON_Delete(pod);
}

static void test_podvol__claim_is_mounted_only_once_bound_to_its_volume(void **state)
{
    cJSON *pod = cJSON_Parse(pod_json), *claims;
    cJSON *plain = cJSON_Parse("{\"metadata\":{\"name\":\"p\",\"namespace\":\"t\"},"
                               "\"spec\":{\"volumes\":[{\"name\":\"s\",\"emptyDir\":{}}]}}");
    const char *hostpath = "\"hostPath\":{\"path\":\"/tmp/hostpath_pv/1\",\"type\":\"\"}";
    const char *deleting = ",\"deletionTimestamp\":\"2026-01-01T00:00:00Z\"";

    expect_claims(-ENOENT, "PersistentVolumeClaim t/data-etcd-0 not found");
    claim_put("Pending", "");
    expect_claims(-EAGAIN, "PersistentVolumeClaim t/data-etcd-0 is not bound (phase Pending)");
    claim_put("Bound", "");
    expect_claims(-ENOENT, "its PersistentVolume pv-1 not found");
    volume_put("t", "data-etcd-1", "u-1", hostpath, "");
    expect_claims(-EINVAL, "pv-1 is bound to t/data-etcd-1 (uid u-1), not to "
                           "PersistentVolumeClaim t/data-etcd-0");
    volume_put("t", "data-etcd-0", "u-0", hostpath, ""); /* an earlier claim of that name */
    expect_claims(-EINVAL, "not to PersistentVolumeClaim t/data-etcd-0 (uid u-1)");
    volume_put("t", "data-etcd-0", "u-1", "\"nfs\":{\"server\":\"x\",\"path\":\"/\"}", "");
    expect_claims(-EOPNOTSUPP, "pv-1 of PersistentVolumeClaim t/data-etcd-0 is neither hostPath "
                               "nor local");
    volume_put("t", "data-etcd-0", "u-1", "\"local\":{\"path\":\"relative\"}", "");
    expect_claims(-EINVAL, "path relative is not absolute");
    volume_put("t", "data-etcd-0", "u-1", hostpath, deleting);
    expect_claims(-ENOENT, "PersistentVolume pv-1 of claim t/data-etcd-0 is being deleted");
    volume_put("t", "data-etcd-0", "u-1", hostpath, "");
    claim_put("Bound", deleting);
    expect_claims(-ENOENT, "PersistentVolumeClaim t/data-etcd-0 is being deleted");

    claim_put("Bound", "");
    claims = claims_of(pod);
    assert_string_equal(cJSON_GetStringValue(cJSON_GetObjectItem(claims, "data")),
                        "/tmp/hostpath_pv/1");
    assert_int_equal(cJSON_GetArraySize(claims), 1);
    cJSON_Delete(claims);
    volume_put("t", "data-etcd-0", "u-1", "\"local\":{\"path\":\"/mnt/disks/a\"}", "");
    claims = claims_of(pod);
    assert_string_equal(cJSON_GetStringValue(cJSON_GetObjectItem(claims, "data")), "/mnt/disks/a");
    cJSON_Delete(claims);
    world_drop("PersistentVolumeClaim/t/data-etcd-0");
    expect_claims(-ENOENT, "not found");
    claims = claims_of(plain);
    assert_int_equal(cJSON_GetArraySize(claims), 0);
    cJSON_Delete(claims);
    cJSON_Delete(plain);
    cJSON_Delete(pod);
}

static void test_podvol__mounts_are_ordered_parents_first_with_hosts(void **state)
{
    cJSON *pod = cJSON_Parse(pod_json), *claims = cJSON_CreateObject();
    struct podvol_dirs dirs = {"/s/pods/t_etcd-0", claims};
    char pv_dir[128];
    const cJSON *c =
        cJSON_GetArrayItem(cJSON_GetObjectItem(cJSON_GetObjectItem(pod, "spec"), "containers"), 0);
    struct podvol_mount *m;
    size_t n;
    struct err e = {0};

    snprintf(pv_dir, sizeof(pv_dir), "%s/hostpath_pv/1", root);
    assert_int_equal(podvol_mkdir_p(pv_dir, 0750), 0);
    assert_non_null(cJSON_AddStringToObject(claims, "data", pv_dir));
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
            assert_string_equal(m[i].source, pv_dir);
        } else if (strcmp(m[i].target, "/etc/hosts") == 0) {
            assert_string_equal(m[i].source, "/s/pods/t_etcd-0/hosts");
        } else {
            assert_string_equal(m[i].target, "/etc/kubernetes");
        }
    }
    podvol_mounts_free(m, n);

    /* A claim source marked readOnly is mounted read-only, whatever the mount says. */
    cJSON_AddTrueToObject(
        cJSON_GetObjectItem(
            cJSON_GetArrayItem(cJSON_GetObjectItem(cJSON_GetObjectItem(pod, "spec"), "volumes"), 3),
            "persistentVolumeClaim"),
        "readOnly");
    assert_int_equal(podvol_mounts(pod, c, &dirs, NULL, &m, &n, &e), 0);
    for (size_t i = 0; i < n; i++)
        if (strcmp(m[i].target, "/var/lib/etcd") == 0)
            assert_true(m[i].readonly);
        else if (strcmp(m[i].target, "/etc/kubernetes") == 0)
            assert_false(m[i].readonly);
    podvol_mounts_free(m, n);

    /* A volume's directory that went away is not made up by the mount. */
    assert_int_equal(rmdir(pv_dir), 0);
    assert_int_equal(podvol_mounts(pod, c, &dirs, NULL, &m, &n, &e), -ENOENT);
    assert_non_null(strstr(e.msg, "volumeMount data: claim data-etcd-0: "));
    /* An unresolved claim is never mounted from anywhere else. */
    dirs.claims = NULL;
    assert_int_equal(podvol_mounts(pod, c, &dirs, NULL, &m, &n, &e), -ENOENT);
    assert_non_null(strstr(e.msg, "volumeMount data: claim data-etcd-0 has no bound"));
    cJSON_Delete(claims);
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
    struct podvol_dirs dirs = {pod_dir, NULL};
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

/* The volume the API server's ServiceAccount admission gives every pod (kube-api-access-*):
 * a bound token, the cluster's CA and the namespace, as in-cluster clients read them. */
static void test_podvol__service_account_volume_waits_for_its_token(void **state)
{
    cJSON *pod = cJSON_Parse(
        "{\"metadata\":{\"name\":\"capi-0\",\"namespace\":\"capi-system\",\"uid\":\"u-7\","
        "\"labels\":{\"app\":\"capi\"}},"
        "\"spec\":{\"serviceAccountName\":\"capi-manager\",\"volumes\":[{\"name\":\"api\","
        "\"projected\":{\"defaultMode\":420,\"sources\":["
        " {\"serviceAccountToken\":{\"expirationSeconds\":3607,\"path\":\"token\"}},"
        " {\"configMap\":{\"name\":\"kube-root-ca.crt\",\"items\":[{\"key\":\"ca.crt\","
        "  \"path\":\"ca.crt\"}]}},"
        " {\"downwardAPI\":{\"items\":[{\"path\":\"namespace\",\"fieldRef\":{"
        "  \"apiVersion\":\"v1\",\"fieldPath\":\"metadata.namespace\"}},"
        "  {\"path\":\"app\",\"fieldRef\":{\"fieldPath\":\"metadata.labels['app']\"}}]}}]}}],"
        "\"containers\":[{\"name\":\"manager\"}]}}");
    cJSON *node_field = cJSON_Parse(
        "{\"metadata\":{\"name\":\"p\",\"namespace\":\"t\",\"uid\":\"u\"},\"spec\":{\"volumes\":"
        "[{\"name\":\"d\",\"downwardAPI\":{\"items\":[{\"path\":\"node\",\"fieldRef\":{"
        "\"fieldPath\":\"spec.nodeName\"}}]}}]}}");
    char pod_dir[128], vol[160], *text;
    struct podvol_dirs dirs = {pod_dir, NULL};
    struct err e = {0};

    assert_non_null(pod);
    snprintf(pod_dir, sizeof(pod_dir), "%s/pods/capi-system_capi-0", root);
    snprintf(vol, sizeof(vol), "%s/volumes/api", pod_dir);
    world_put("ConfigMap/capi-system/kube-root-ca.crt", "{\"data\":{\"ca.crt\":\"CA PEM\"}}");

    /* No token yet: the pod waits, and says for which ServiceAccount. */
    assert_int_equal(podvol_prepare(pod, &dirs, resolve, NULL, &e), -EAGAIN);
    assert_non_null(strstr(e.msg, "ServiceAccount capi-system/capi-manager"));

    /* The key names the pod, its uid, the account, the lifetime and (empty) audience. */
    world_put("ServiceAccountToken/capi-system/capi-0/u-7/capi-manager/3607/",
              "{\"token\":\"header.claims.signature\"}");
    assert_int_equal(podvol_prepare(pod, &dirs, resolve, NULL, &e), 0);
    assert_non_null(text = slurp(vol, "token"));
    assert_string_equal(text, "header.claims.signature");
    free(text);
    assert_int_equal(mode_of(vol, "token"), 0644);
    assert_non_null(text = slurp(vol, "ca.crt"));
    assert_string_equal(text, "CA PEM");
    free(text);
    assert_non_null(text = slurp(vol, "namespace"));
    assert_string_equal(text, "capi-system");
    free(text);
    assert_non_null(text = slurp(vol, "app"));
    assert_string_equal(text, "capi");
    free(text);

    /* A renewed token replaces the file. */
    world_put("ServiceAccountToken/capi-system/capi-0/u-7/capi-manager/3607/",
              "{\"token\":\"renewed\"}");
    assert_int_equal(podvol_prepare(pod, &dirs, resolve, NULL, &e), 0);
    assert_non_null(text = slurp(vol, "token"));
    assert_string_equal(text, "renewed");
    free(text);

    /* Only the pod's own fields: a volume cannot know the node's or the status's. */
    snprintf(pod_dir, sizeof(pod_dir), "%s/pods/t_p", root);
    assert_int_equal(podvol_prepare(node_field, &dirs, resolve, NULL, &e), -EOPNOTSUPP);
    assert_non_null(strstr(e.msg, "downwardAPI item node"));
    cJSON_Delete(pod);
    cJSON_Delete(node_field);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_podvol__secret_files_follow_items_modes_and_updates,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_podvol__claim_is_mounted_only_once_bound_to_its_volume,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_podvol__mounts_are_ordered_parents_first_with_hosts,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_podvol__unsupported_volume_and_bad_paths_are_refused,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_podvol__service_account_volume_waits_for_its_token,
                                        setup, teardown),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
