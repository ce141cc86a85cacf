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
#include <sys/stat.h>
#include <unistd.h>

#include "lib/render/catalog.h"
#include "lib/render/patch.h"
#include "lib/render/render.h"
#include "lib/render/transform.h"
#include "lib/util/buf.h"
#include "lib/util/jsonpatch.h"
#include "lib/util/yamlconv.h"

static struct render_catalog *catalog;

static int setup(void **state)
{
    const char *src = getenv("NESTCP_SOURCE_DIR"), *me = __FILE__;
    char dir[4096];
    struct err e;

    /* CTest passes the source directory; run by hand, it is found from this file's path. */
    if (src)
        snprintf(dir, sizeof(dir), "%s/templates", src);
    else
        snprintf(
            dir, sizeof(dir), "%.*s/templates",
            (int)(strstr(me, "/test/unit/render/") ? strstr(me, "/test/unit/render/") - me : 1),
            strstr(me, "/test/unit/render/") ? me : ".");
    err_clear(&e);
    if (render_catalog_open(dir, &catalog, &e) < 0) {
        print_error("catalog %s: %s\n", dir, e.msg);
        return -1;
    }
    return 0;
}

static int teardown(void **state)
{
    render_catalog_free(catalog);
    return 0;
}

static cJSON *yaml(const char *text)
{
    cJSON *doc = NULL;
    struct err e;

    err_clear(&e);
    if (yamlconv_parse_one(text, strlen(text), "test", &doc, &e) < 0) {
        print_error("%s\n", e.msg);
        fail();
    }
    return doc;
}

static cJSON *render_ok(const char *values_yaml)
{
    cJSON *values = yaml(values_yaml), *objs = NULL;
    struct err e;

    err_clear(&e);
    if (render_component(catalog, values, &objs, &e) < 0) {
        print_error("render: %s\n", e.msg);
        fail();
    }
    cJSON_Delete(values);
    return objs;
}

static void render_fails(const char *values_yaml, int code, const char *msg)
{
    cJSON *values = yaml(values_yaml), *objs = NULL;
    struct err e;

    err_clear(&e);
    assert_int_equal(render_component(catalog, values, &objs, &e), code);
    assert_null(objs);
    if (!strstr(e.msg, msg)) {
        print_error("message \"%s\" lacks \"%s\"\n", e.msg, msg);
        fail();
    }
    cJSON_Delete(values);
}

static const cJSON *find(const cJSON *objs, const char *kind, const char *name)
{
    const cJSON *o;

    cJSON_ArrayForEach(o, objs) {
        const cJSON *m = cJSON_GetObjectItem(o, "metadata");
        if (!strcmp(cJSON_GetObjectItem(o, "kind")->valuestring, kind) &&
            !strcmp(cJSON_GetObjectItem(m, "name")->valuestring, name))
            return o;
    }
    print_error("no %s %s\n", kind, name);
    fail();
    return NULL;
}

static const cJSON *container(const cJSON *obj, const char *name)
{
    const cJSON *c;

    cJSON_ArrayForEach(c, cJSON_GetObjectItem(render_pod_spec(obj), "containers"))
        if (!strcmp(cJSON_GetObjectItem(c, "name")->valuestring, name))
            return c;
    fail();
    return NULL;
}

/* The value of --flag in the container's args, or NULL; fails if the flag appears twice. */
static const char *flag(const cJSON *c, const char *name)
{
    const cJSON *a;
    const char *found = NULL;
    size_t n = strlen(name);

    cJSON_ArrayForEach(a, cJSON_GetObjectItem(c, "args")) {
        const char *s = a->valuestring;
        if (!strncmp(s, "--", 2) && !strncmp(s + 2, name, n) && s[2 + n] == '=') {
            assert_null(found);
            found = s + 3 + n;
        }
    }
    return found;
}

static const char *str(const cJSON *obj, const char *pointer)
{
    const cJSON *v = NULL;

    assert_int_equal(jsonpatch_pointer_get(obj, pointer, &v), 0);
    assert_true(cJSON_IsString(v));
    return v->valuestring;
}

#define BASE "cluster: {name: c1, namespace: ns1}\n"

/* The value of env var name of container c, which reads fieldPath; fails when absent. */
static const char *env_field(const cJSON *c, const char *name)
{
    const cJSON *e;

    cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(c, "env")) {
        const cJSON *n = cJSON_GetObjectItemCaseSensitive(e, "name");
        if (cJSON_IsString(n) && strcmp(n->valuestring, name) == 0)
            return str(e, "/valueFrom/fieldRef/fieldPath");
    }
    fail_msg("no env %s", name);
    return NULL;
}

static void test_render__etcd_members_learn_their_cluster_from_their_pod(void **state)
{
    cJSON *objs = render_ok(BASE "component: etcd\nversion: 3.6.17\nreplicas: 3\n");
    const cJSON *sts = find(objs, "StatefulSet", "c1-etcd"),
                *svc = find(objs, "Service", "c1-etcd");
    const cJSON *c = container(sts, "etcd");
    const cJSON *gates = NULL, *partition = NULL;

    /* No member list in the pod template, shared by every member: each pod waits behind its
     * gate until nestcp writes how it starts into its annotations. So adding a member changes
     * no running one. */
    assert_string_equal(flag(c, "initial-cluster"), "$(NESTCP_INITIAL_CLUSTER)");
    assert_string_equal(flag(c, "initial-cluster-state"), "$(NESTCP_INITIAL_CLUSTER_STATE)");
    assert_string_equal(env_field(c, "NESTCP_INITIAL_CLUSTER"),
                        "metadata.annotations['etcd.nestcp.x-k8s.io/initial-cluster']");
    assert_string_equal(env_field(c, "NESTCP_INITIAL_CLUSTER_STATE"),
                        "metadata.annotations['etcd.nestcp.x-k8s.io/initial-cluster-state']");
    assert_int_equal(jsonpatch_pointer_get(sts, "/spec/template/spec/schedulingGates", &gates), 0);
    assert_int_equal(cJSON_GetArraySize(gates), 1);
    assert_string_equal(str(gates, "/0/name"), "etcd.nestcp.x-k8s.io/member");
    assert_int_equal(
        jsonpatch_pointer_get(sts, "/spec/updateStrategy/rollingUpdate/partition", &partition), 0);
    assert_int_equal(partition->valueint, 0);
    assert_int_equal(
        cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(sts, "spec"), "replicas")
            ->valueint,
        3);
    assert_string_equal(flag(c, "initial-advertise-peer-urls"),
                        "https://$(POD_NAME).c1-etcd.ns1.svc:2380");
    /* listenLoopback is off by default: pods sharing a host's network would collide. */
    assert_string_equal(flag(c, "listen-client-urls"), "https://$(POD_IP):2379");
    assert_string_equal(flag(c, "listen-peer-urls"), "https://$(POD_IP):2380");
    assert_string_equal(flag(c, "client-cert-auth"), "true");
    assert_string_equal(flag(c, "peer-client-cert-auth"), "true");
    assert_string_equal(flag(c, "trusted-ca-file"), "/etc/etcd/pki/ca.crt");
    assert_string_equal(flag(c, "peer-trusted-ca-file"), "/etc/etcd/pki/ca.crt");
    assert_string_equal(flag(c, "cert-file"), "/etc/etcd/pki/server.crt");
    assert_string_equal(flag(c, "peer-key-file"), "/etc/etcd/pki/peer.key");
    /* 3.6 took the experimental- prefix off: the check is a feature gate, the interval a flag. */
    assert_string_equal(flag(c, "feature-gates"), "InitialCorruptCheck=true");
    assert_string_equal(flag(c, "watch-progress-notify-interval"), "5s");
    assert_null(flag(c, "experimental-initial-corrupt-check"));
    assert_null(flag(c, "experimental-watch-progress-notify-interval"));
    assert_int_equal(cJSON_GetObjectItem(cJSON_GetObjectItem(sts, "spec"), "replicas")->valueint,
                     3);
    assert_string_equal(str(sts, "/spec/podManagementPolicy"), "Parallel");
    assert_string_equal(str(sts, "/spec/serviceName"), "c1-etcd");
    assert_string_equal(str(svc, "/spec/clusterIP"), "None");
    assert_string_equal(str(sts, "/spec/template/spec/containers/0/image"),
                        "registry.k8s.io/etcd:3.6.17-0");
    assert_string_equal(str(sts, "/spec/template/spec/containers/0/livenessProbe/httpGet/path"),
                        "/health?exclude=NOSPACE&serializable=true");
    /* Persistent by default: a claim of 1Gi per member in the default StorageClass, deleted
     * with its member. */
    assert_string_equal(str(sts, "/spec/volumeClaimTemplates/0/metadata/name"), "data");
    assert_string_equal(str(sts, "/spec/volumeClaimTemplates/0/spec/resources/requests/storage"),
                        "1Gi");
    {
        const cJSON *v = NULL;
        assert_int_equal(jsonpatch_pointer_get(sts, "/spec/volumeClaimTemplates/0/spec", &v), 0);
        assert_null(cJSON_GetObjectItem(v, "storageClassName"));
    }
    assert_string_equal(str(sts, "/spec/persistentVolumeClaimRetentionPolicy/whenScaled"),
                        "Delete");
    assert_string_equal(str(sts, "/spec/persistentVolumeClaimRetentionPolicy/whenDeleted"),
                        "Delete");
    assert_string_equal(str(sts, "/spec/template/spec/volumes/0/secret/secretName"),
                        "c1-etcd-certs");
    assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(render_pod_spec(sts), "volumes")), 1);
    assert_string_equal(str(sts, "/metadata/namespace"), "ns1");
    cJSON_Delete(objs);
}

static void test_render__etcd_pvc_storage_uses_claim_templates(void **state)
{
    cJSON *objs = render_ok(BASE "component: etcd\nversion: 3.5.36\nstorage: {type: "
                                 "persistentVolumeClaim, size: 5Gi, storageClassName: fast}\n"
                                 "etcd: {listenLoopback: true}\n");
    const cJSON *sts = find(objs, "StatefulSet", "c1-etcd");

    assert_string_equal(str(sts, "/spec/volumeClaimTemplates/0/metadata/name"), "data");
    assert_string_equal(str(sts, "/spec/volumeClaimTemplates/0/spec/resources/requests/storage"),
                        "5Gi");
    assert_string_equal(str(sts, "/spec/volumeClaimTemplates/0/spec/storageClassName"), "fast");
    assert_string_equal(str(sts, "/spec/template/spec/volumes/0/name"), "certs");
    assert_string_equal(flag(container(sts, "etcd"), "listen-client-urls"),
                        "https://$(POD_IP):2379,https://127.0.0.1:2379");
    /* 3.5 spells them with the experimental- prefix. */
    assert_string_equal(flag(container(sts, "etcd"), "experimental-initial-corrupt-check"), "true");
    assert_string_equal(flag(container(sts, "etcd"), "experimental-watch-progress-notify-interval"),
                        "5s");
    assert_null(flag(container(sts, "etcd"), "feature-gates"));
    assert_string_equal(str(sts, "/spec/template/spec/containers/0/image"),
                        "registry.k8s.io/etcd:3.5.36-0");
    cJSON_Delete(objs);
}

static void test_render__apiserver_136_flags(void **state)
{
    cJSON *objs =
        render_ok(BASE "component: kube-apiserver\nversion: v1.36.3\nreplicas: 2\n"
                       "etcd: {replicas: 3}\n"
                       "network: {serviceCIDRs: [10.96.0.0/12, 'fd00:10:96::/108']}\n"
                       "featureGates: {StorageVersionMigrator: true, OpenAPIEnums: false}\n");
    const cJSON *sts = find(objs, "StatefulSet", "c1-apiserver");
    const cJSON *c = container(sts, "kube-apiserver");

    assert_string_equal(
        flag(c, "etcd-servers"),
        "https://c1-etcd-0.c1-etcd.ns1.svc:2379,https://c1-etcd-1.c1-etcd.ns1.svc:2379,"
        "https://c1-etcd-2.c1-etcd.ns1.svc:2379");
    assert_string_equal(flag(c, "service-cluster-ip-range"), "10.96.0.0/12,fd00:10:96::/108");
    assert_string_equal(flag(c, "feature-gates"), "OpenAPIEnums=false,StorageVersionMigrator=true");
    assert_null(flag(c, "insecure-port"));
    assert_string_equal(flag(c, "advertise-address"), "$(POD_IP)");
    assert_string_equal(flag(c, "bind-address"), "$(POD_IP)");
    assert_string_equal(flag(c, "service-account-issuer"),
                        "https://kubernetes.default.svc.cluster.local");
    assert_non_null(flag(c, "etcd-certfile"));
    assert_non_null(flag(c, "requestheader-client-ca-file"));
    assert_non_null(flag(c, "proxy-client-cert-file"));
    assert_string_equal(str(c, "/image"), "registry.k8s.io/kube-apiserver:v1.36.3");
    assert_string_equal(str(c, "/livenessProbe/httpGet/path"), "/livez");
    assert_string_equal(str(c, "/readinessProbe/httpGet/path"), "/readyz");
    assert_string_equal(str(c, "/readinessProbe/httpGet/scheme"), "HTTPS");
    assert_string_equal(str(find(objs, "Service", "c1-apiserver"), "/spec/type"), "ClusterIP");
    cJSON_Delete(objs);
}

static void test_render__apiserver_137_has_no_insecure_port(void **state)
{
    cJSON *objs = render_ok(BASE "component: kube-apiserver\nversion: 1.37.2\n"
                                 "etcd: {endpoints: ['https://etcd.example:2379']}\n");
    const cJSON *c = container(find(objs, "StatefulSet", "c1-apiserver"), "kube-apiserver");

    assert_null(flag(c, "insecure-port"));
    assert_null(flag(c, "feature-gates"));
    assert_string_equal(flag(c, "etcd-servers"), "https://etcd.example:2379");
    assert_string_equal(str(c, "/image"), "registry.k8s.io/kube-apiserver:v1.37.2");
    cJSON_Delete(objs);
}

static void test_render__controller_manager_flags(void **state)
{
    cJSON *objs =
        render_ok(BASE "component: kube-controller-manager\nversion: 1.36.3\n"
                       "network: {podCIDRs: [10.244.0.0/16], serviceCIDRs: [10.32.0.0/16]}\n");
    const cJSON *sts = find(objs, "StatefulSet", "c1-controller-manager");
    const cJSON *c = container(sts, "kube-controller-manager");

    assert_string_equal(flag(c, "cluster-cidr"), "10.244.0.0/16");
    assert_string_equal(flag(c, "service-cluster-ip-range"), "10.32.0.0/16");
    assert_string_equal(flag(c, "controllers"), "*,bootstrapsigner,tokencleaner");
    assert_string_equal(flag(c, "use-service-account-credentials"), "true");
    assert_string_equal(flag(c, "leader-elect"), "true");
    assert_null(flag(c, "port")); /* the insecure port went in 1.24 */
    assert_string_equal(flag(c, "secure-port"), "10257");
    assert_string_equal(flag(c, "kubeconfig"), "/etc/kubernetes/pki/controller-manager.conf");
    assert_string_equal(str(c, "/image"), "registry.k8s.io/kube-controller-manager:v1.36.3");
    assert_string_equal(str(c, "/livenessProbe/httpGet/path"), "/healthz");
    assert_string_equal(str(sts, "/spec/template/spec/volumes/0/secret/secretName"),
                        "c1-controller-manager-certs");
    cJSON_Delete(objs);

    objs = render_ok(BASE "component: kube-controller-manager\nversion: 1.35.4\n");
    c = container(find(objs, "StatefulSet", "c1-controller-manager"), "kube-controller-manager");
    assert_string_equal(str(c, "/image"), "registry.k8s.io/kube-controller-manager:v1.35.4");
    assert_null(flag(c, "feature-gates"));
    cJSON_Delete(objs);
}

static void test_render__labels_owner_and_hash(void **state)
{
    const char *v = BASE "component: kube-apiserver\nversion: 1.36.3\n"
                         "owner: {apiVersion: controlplane.cluster.x-k8s.io/v1alpha4, kind: "
                         "NestedAPIServer, name: c1-apiserver, uid: 1234-5678}\n";
    cJSON *objs = render_ok(v), *again = render_ok(v), *changed;
    const cJSON *sts = find(objs, "StatefulSet", "c1-apiserver");
    char *a = cJSON_PrintUnformatted(objs), *b = cJSON_PrintUnformatted(again);

    assert_string_equal(a, b); /* same values, byte-identical objects */
    assert_string_equal(str(sts, "/metadata/labels/cluster.x-k8s.io~1cluster-name"), "c1");
    assert_string_equal(str(sts, "/metadata/labels/app.kubernetes.io~1component"), "apiserver");
    assert_string_equal(str(sts, "/metadata/labels/app.kubernetes.io~1name"), "kube-apiserver");
    assert_string_equal(str(sts, "/metadata/labels/app.kubernetes.io~1managed-by"), "nestcp");
    assert_string_equal(str(sts, "/spec/template/metadata/labels/cluster.x-k8s.io~1cluster-name"),
                        "c1");
    assert_string_equal(str(sts, "/spec/selector/matchLabels/app.kubernetes.io~1component"),
                        "apiserver");
    assert_string_equal(str(sts, "/metadata/ownerReferences/0/uid"), "1234-5678");
    assert_string_equal(str(sts, "/metadata/ownerReferences/0/kind"), "NestedAPIServer");
    assert_true(cJSON_IsTrue(cJSON_GetObjectItem(
        cJSON_GetArrayItem(
            cJSON_GetObjectItem(cJSON_GetObjectItem(sts, "metadata"), "ownerReferences"), 0),
        "blockOwnerDeletion")));
    assert_int_equal(
        strlen(str(sts, "/spec/template/metadata/annotations/nestcp.x-k8s.io~1config-hash")), 64);

    /* Another replica count changes the object's hash but not the pods'. */
    changed = render_ok(BASE "component: kube-apiserver\nversion: 1.36.3\nreplicas: 3\n"
                             "owner: {apiVersion: controlplane.cluster.x-k8s.io/v1alpha4, kind: "
                             "NestedAPIServer, name: c1-apiserver, uid: 1234-5678}\n");
    const cJSON *sts2 = find(changed, "StatefulSet", "c1-apiserver");
    assert_string_equal(
        str(sts, "/spec/template/metadata/annotations/nestcp.x-k8s.io~1config-hash"),
        str(sts2, "/spec/template/metadata/annotations/nestcp.x-k8s.io~1config-hash"));
    assert_string_not_equal(str(sts, "/metadata/annotations/nestcp.x-k8s.io~1config-hash"),
                            str(sts2, "/metadata/annotations/nestcp.x-k8s.io~1config-hash"));
    cJSON_Delete(changed);

    /* The etcd reconciler's replicas and partition: the same values keep the object's hash
     * as rendered; others change it, never the pods'. */
    {
        cJSON *e3 = render_ok(BASE "component: etcd\nversion: 3.6.17\nreplicas: 3\n");
        cJSON *e1 = render_ok(BASE "component: etcd\nversion: 3.6.17\nreplicas: 1\n");
        char whole3[65], pod3[65];
        struct err e;
        snprintf(whole3, sizeof(whole3), "%s",
                 str(find(e3, "StatefulSet", "c1-etcd"),
                     "/metadata/annotations/nestcp.x-k8s.io~1config-hash"));
        snprintf(pod3, sizeof(pod3), "%s",
                 str(find(e3, "StatefulSet", "c1-etcd"),
                     "/spec/template/metadata/annotations/nestcp.x-k8s.io~1config-hash"));
        assert_int_equal(render_transform_statefulset_scale(e3, 3, 0, &e), 0);
        assert_string_equal(str(find(e3, "StatefulSet", "c1-etcd"),
                                "/metadata/annotations/nestcp.x-k8s.io~1config-hash"),
                            whole3);
        assert_int_equal(render_transform_statefulset_scale(e1, 3, 0, &e), 0);
        assert_string_equal(str(find(e1, "StatefulSet", "c1-etcd"),
                                "/metadata/annotations/nestcp.x-k8s.io~1config-hash"),
                            whole3);
        assert_int_equal(render_transform_statefulset_scale(e3, 2, 1, &e), 0);
        assert_string_not_equal(str(find(e3, "StatefulSet", "c1-etcd"),
                                    "/metadata/annotations/nestcp.x-k8s.io~1config-hash"),
                                whole3);
        assert_string_equal(str(find(e3, "StatefulSet", "c1-etcd"),
                                "/spec/template/metadata/annotations/nestcp.x-k8s.io~1config-hash"),
                            pod3);
        cJSON_Delete(e3);
        cJSON_Delete(e1);
    }

    /* inputsHash rolls the pods. */
    changed = render_ok(BASE "component: kube-apiserver\nversion: 1.36.3\ninputsHash: abc\n");
    assert_string_not_equal(
        str(sts, "/spec/template/metadata/annotations/nestcp.x-k8s.io~1config-hash"),
        str(find(changed, "StatefulSet", "c1-apiserver"),
            "/spec/template/metadata/annotations/nestcp.x-k8s.io~1config-hash"));
    cJSON_Delete(changed);
    free(a);
    free(b);
    cJSON_Delete(objs);
    cJSON_Delete(again);
}

static void test_render__extra_args_replace_or_append_in_key_order(void **state)
{
    cJSON *objs = render_ok(BASE "component: kube-apiserver\nversion: 1.36.3\n"
                                 "extraArgs: {secure-port: 7443, v: 4, audit-log-path: /tmp/a, "
                                 "audit-log-maxage: 7}\n");
    const cJSON *c = container(find(objs, "StatefulSet", "c1-apiserver"), "kube-apiserver");
    const cJSON *args = cJSON_GetObjectItem(c, "args");
    int n = cJSON_GetArraySize(args);

    assert_string_equal(flag(c, "secure-port"), "7443");
    /* New flags are appended in key order after the template's. */
    assert_string_equal(cJSON_GetArrayItem(args, n - 3)->valuestring, "--audit-log-maxage=7");
    assert_string_equal(cJSON_GetArrayItem(args, n - 2)->valuestring, "--audit-log-path=/tmp/a");
    assert_string_equal(cJSON_GetArrayItem(args, n - 1)->valuestring, "--v=4");
    cJSON_Delete(objs);

    render_fails(BASE "component: kube-apiserver\nversion: 1.37.2\nextraArgs: {insecure-port: 0}\n",
                 -EINVAL,
                 "extraArgs.insecure-port: kube-apiserver 1.37.2 has no flag --insecure-port");
    /* The controller manager has flags of its own; the API server's are not among them. */
    render_fails(BASE "component: kube-controller-manager\nversion: 1.36.3\n"
                      "extraArgs: {audit-log-path: /tmp/a}\n",
                 -EINVAL,
                 "extraArgs.audit-log-path: kube-controller-manager 1.36.3 has no flag "
                 "--audit-log-path");
    render_fails(BASE "component: kube-apiserver\nversion: 1.36.3\nextraArgs: {v: [1]}\n", -EINVAL,
                 "extraArgs.v: must be a string");
}

static void test_render__feature_gates_are_checked(void **state)
{
    render_fails(BASE
                 "component: kube-apiserver\nversion: 1.36.3\nfeatureGates: {NoSuchGate: true}\n",
                 -EINVAL, "featureGates.NoSuchGate: not a feature gate of kube-apiserver 1.36.3");
    /* GA and locked on. */
    render_fails(BASE "component: kube-apiserver\nversion: 1.36.3\n"
                      "featureGates: {InPlacePodVerticalScaling: false}\n",
                 -EINVAL, "featureGates.InPlacePodVerticalScaling: locked to true");
    /* Removed long before 1.35. */
    render_fails(BASE "component: kube-apiserver\nversion: 1.35.4\n"
                      "featureGates: {EphemeralContainers: true}\n",
                 -EINVAL,
                 "featureGates.EphemeralContainers: not a feature gate of kube-apiserver 1.35.4");
    /* MemoryManager is in 1.35 (GA, locked on) and gone from 1.36. */
    render_fails(BASE "component: kube-controller-manager\nversion: 1.36.3\n"
                      "featureGates: {MemoryManager: true}\n",
                 -EINVAL, "not a feature gate of kube-controller-manager 1.36.3");
    cJSON_Delete(render_ok(BASE "component: kube-controller-manager\nversion: 1.35.4\n"
                                "featureGates: {MemoryManager: true, OpenAPIEnums: true}\n"));
}

static void test_render__image_registry_rewrite(void **state)
{
    cJSON *objs = render_ok(BASE "component: etcd\nversion: 3.6.17\n"
                                 "imageRegistry: mirror.local:5000/k8s\n");
    char *img = NULL;

    assert_string_equal(
        str(find(objs, "StatefulSet", "c1-etcd"), "/spec/template/spec/containers/0/image"),
        "mirror.local:5000/k8s/etcd:3.6.17-0");
    cJSON_Delete(objs);
    assert_int_equal(render_image_with_registry("busybox:1", "m.io", &img), 0);
    assert_string_equal(img, "m.io/busybox:1");
    free(img);
    assert_int_equal(render_image_with_registry("library/busybox@sha256:ab", "m.io", &img), 0);
    assert_string_equal(img, "m.io/library/busybox@sha256:ab");
    free(img);
    assert_int_equal(render_image_with_registry("localhost/x/y:2", "m.io", &img), 0);
    assert_string_equal(img, "m.io/x/y:2");
    free(img);
}

static void test_render__patches(void **state)
{
    /* Strategic: container merged by name, args by flag key, a new env appended. */
    cJSON *objs = render_ok(
        BASE
        "component: kube-apiserver\nversion: 1.36.3\npatches:\n"
        "- apiVersion: apps/v1\n  kind: StatefulSet\n  metadata: {name: c1-apiserver}\n"
        "  spec:\n    template:\n      spec:\n        containers:\n"
        "        - name: kube-apiserver\n          args: [--secure-port=8443, --profiling=false]\n"
        "          env: [{name: GODEBUG, value: x509sha1=1}]\n"
        "- target: {kind: Service, name: c1-apiserver}\n  type: merge\n"
        "  patch: {metadata: {annotations: {team: a}}}\n"
        "- target: {apiVersion: apps/v1, kind: StatefulSet, name: c1-apiserver}\n  type: json\n"
        "  patch: [{op: test, path: /spec/replicas, value: 1}, "
        "{op: replace, path: /spec/replicas, value: 2}]\n");
    const cJSON *sts = find(objs, "StatefulSet", "c1-apiserver");
    const cJSON *c = container(sts, "kube-apiserver");

    assert_string_equal(flag(c, "secure-port"), "8443");
    assert_string_equal(flag(c, "profiling"), "false");
    assert_non_null(flag(c, "etcd-servers")); /* the rest of args stays */
    assert_string_equal(str(c, "/env/0/name"), "POD_IP");
    assert_string_equal(str(c, "/env/1/name"), "GODEBUG");
    assert_string_equal(str(c, "/image"), "registry.k8s.io/kube-apiserver:v1.36.3");
    assert_string_equal(str(find(objs, "Service", "c1-apiserver"), "/metadata/annotations/team"),
                        "a");
    assert_int_equal(cJSON_GetObjectItem(cJSON_GetObjectItem(sts, "spec"), "replicas")->valueint,
                     2);
    cJSON_Delete(objs);

    render_fails(BASE "component: kube-apiserver\nversion: 1.36.3\npatches:\n"
                      "- target: {kind: Service, name: c1-apiserver}\n  type: merge\n  patch: {}\n"
                      "- apiVersion: apps/v1\n  kind: StatefulSet\n  metadata: {name: foo}\n",
                 -EINVAL, "spec.patches[1]: matches no object (kind StatefulSet, name foo)");
    render_fails(BASE "component: kube-apiserver\nversion: 1.36.3\npatches:\n"
                      "- target: {kind: StatefulSet, name: c1-apiserver}\n  type: json\n"
                      "  patch: [{op: test, path: /spec/replicas, value: 5}]\n",
                 -EBUSY, "spec.patches[0]: operation 0 (test /spec/replicas): test failed");
    render_fails(BASE "component: kube-apiserver\nversion: 1.36.3\npatches:\n"
                      "- target: {kind: StatefulSet, name: c1-apiserver}\n  type: json\n"
                      "  patch: [{op: replace, path: /metadata/name, value: x}]\n",
                 -EINVAL, "must not change");
}

static void test_render__strategic_merge_directives(void **state)
{
    cJSON *doc = yaml("spec: {containers: [{name: a, image: i, args: [--x=1, run]}, {name: b}],"
                      " ports: [{containerPort: 80, name: http}]}\n");
    cJSON *patch =
        yaml("spec: {containers: [{name: b, $patch: delete}, {name: a, args: [--x=2, "
             "run, --y]}, {name: c, image: j}], ports: [{containerPort: 80, name: web}]}\n");
    cJSON *out = NULL;
    char *s;

    assert_int_equal(render_patch_strategic(doc, patch, &out, NULL), 0);
    s = cJSON_PrintUnformatted(out);
    assert_string_equal(s, "{\"spec\":{\"containers\":[{\"name\":\"a\",\"image\":\"i\",\"args\":"
                           "[\"--x=2\",\"run\",\"--y\"]},{\"name\":\"c\",\"image\":\"j\"}],"
                           "\"ports\":[{\"containerPort\":80,\"name\":\"web\"}]}}");
    free(s);
    cJSON_Delete(out);
    cJSON_Delete(doc);
    cJSON_Delete(patch);
}

static void test_render__version_and_channel_resolution(void **state)
{
    const struct render_package *p = NULL;
    char v[RENDER_VERSION_MAX];
    struct err e;
    cJSON *versions = NULL;

    assert_int_equal(render_catalog_resolve(catalog, "kube-apiserver", "v1.36.3", NULL, &p, v, &e),
                     0);
    assert_string_equal(v, "1.36.3");
    assert_string_equal(render_package_line(p), "1.36");
    assert_int_equal(
        render_catalog_resolve(catalog, "kube-apiserver", "1.35.4", "rapid", &p, v, &e), 0);
    assert_string_equal(v, "1.35.4"); /* an exact version wins over the channel */
    assert_string_equal(render_package_line(p), "1.35");
    assert_int_equal(render_catalog_resolve(catalog, "kube-apiserver", "", "rapid", &p, v, &e), 0);
    assert_string_equal(v, "1.37.2");
    assert_string_equal(render_package_line(p), "1.37");
    assert_int_equal(render_catalog_resolve(catalog, "kube-apiserver", NULL, NULL, &p, v, &e), 0);
    assert_string_equal(v, "1.36.3"); /* default: stable */
    assert_int_equal(render_catalog_resolve(catalog, "etcd", NULL, NULL, &p, v, &e), 0);
    assert_string_equal(v, "3.6.17");
    assert_int_equal(render_catalog_resolve(catalog, "etcd", "3.5.36", NULL, &p, v, &e), 0);
    assert_string_equal(render_package_line(p), "3.5");

    /* Newer than every line: not packaged (yet). Older than every line: retired. */
    err_clear(&e);
    assert_int_equal(render_catalog_resolve(catalog, "kube-apiserver", "1.38.0", NULL, &p, v, &e),
                     -ENOENT);
    assert_non_null(
        strstr(e.msg, "no kube-apiserver package for 1.38 (supported lines: 1.35, 1.36, 1.37)"));
    err_clear(&e);
    assert_int_equal(render_catalog_resolve(catalog, "kube-apiserver", "1.34.9", NULL, &p, v, &e),
                     -EOPNOTSUPP);
    assert_non_null(strstr(e.msg, "kube-apiserver 1.34 is no longer supported (supported lines: "
                                  "1.35, 1.36, 1.37)"));
    err_clear(&e);
    assert_int_equal(render_catalog_resolve(catalog, "etcd", "3.4.23", NULL, &p, v, &e),
                     -EOPNOTSUPP);
    assert_non_null(strstr(e.msg, "etcd 3.4 is no longer supported (supported lines: 3.5, 3.6)"));
    assert_int_equal(render_catalog_resolve(catalog, "kube-apiserver", "", "nightly", &p, v, &e),
                     -ENOENT);
    assert_int_equal(render_catalog_resolve(catalog, "kube-apiserver", "", "../x", &p, v, &e),
                     -EINVAL);
    assert_int_equal(render_catalog_resolve(catalog, "kube-apiserver", "1.36", NULL, &p, v, &e),
                     -EINVAL);
    assert_int_equal(render_catalog_resolve(catalog, "kube-scheduler", "1.36.3", NULL, &p, v, &e),
                     -ENOENT);
    render_fails(BASE "component: kube-apiserver\nversion: 1.38.0\n", -ENOENT,
                 "version: version 1.38.0: no kube-apiserver package for 1.38");
    render_fails(BASE "component: kube-apiserver\nversion: 1.20.2\n", -EOPNOTSUPP,
                 "version: version 1.20.2: kube-apiserver 1.20 is no longer supported");

    assert_int_equal(render_catalog_versions(catalog, &versions), 0);
    assert_string_equal(str(versions, "/kube-apiserver/packages/0"), "1.35");
    assert_string_equal(str(versions, "/kube-apiserver/packages/2"), "1.37");
    assert_string_equal(str(versions, "/kube-apiserver/channels/stable"), "1.36.3");
    assert_string_equal(str(versions, "/etcd/channels/rapid"), "3.6.17");
    cJSON_Delete(versions);

    /* Each package knows its own binary's flags: --tls-curve-preferences is new in 1.36. */
    p = render_catalog_package(catalog, "kube-apiserver", "1.37");
    assert_non_null(p);
    assert_true(render_package_knows_flag(p, "authentication-config"));
    assert_true(render_package_knows_flag(p, "tls-curve-preferences"));
    assert_false(render_package_knows_flag(p, "insecure-port"));
    assert_true(render_package_knows_flag(render_catalog_package(catalog, "kube-apiserver", "1.36"),
                                          "tls-curve-preferences"));
    p = render_catalog_package(catalog, "kube-apiserver", "1.35.4");
    assert_non_null(p);
    assert_true(render_package_knows_flag(p, "authentication-config"));
    assert_false(render_package_knows_flag(p, "tls-curve-preferences"));
}

static void test_render__bad_values_name_the_field(void **state)
{
    render_fails("component: etcd\n", -EINVAL, "cluster.name: required");
    render_fails(BASE "component: kube-scheduler\n", -EINVAL, "component: \"kube-scheduler\"");
    render_fails(BASE "component: etcd\nreplicas: 2\n", -EINVAL, "odd number");
    render_fails(BASE "component: etcd\nstorage: {type: hostPath}\n", -EINVAL, "storage.type");
    render_fails(BASE "component: etcd\nnetwork: {serviceCIDRs: []}\n", -EINVAL,
                 "network.serviceCIDRs: must be a non-empty list");
    render_fails(BASE "component: etcd\nsecrets: {nope: x}\n", -EINVAL, "secrets.nope");
    render_fails("cluster: {name: a-very-long-cluster-name-that-is-too-long, namespace: ns1}\n"
                 "component: etcd\n",
                 -EINVAL, "too long");
}

static void write_text(const char *dir, const char *name, const char *text)
{
    char path[512];
    FILE *f;

    snprintf(path, sizeof(path), "%s/%s", dir, name);
    assert_non_null(f = fopen(path, "w"));
    assert_int_equal(fputs(text, f) >= 0, 1);
    assert_int_equal(fclose(f), 0);
}

/* A templates directory with one etcd package whose package.yaml ends in tail; returns the
 * catalog's error, its message in e. */
static int open_with_package_tail(const char *tail, struct err *e)
{
    char dir[] = "/tmp/nestcp-catalog-XXXXXX", sub[256], meta[1024];
    struct render_catalog *c = NULL;
    int r;

    assert_non_null(mkdtemp(dir));
    write_text(dir, "stable", "manifests:\n- name: etcd\n  version: 3.6.1\n");
    snprintf(sub, sizeof(sub), "%s/packages", dir);
    assert_int_equal(mkdir(sub, 0700), 0);
    snprintf(sub, sizeof(sub), "%s/packages/etcd", dir);
    assert_int_equal(mkdir(sub, 0700), 0);
    snprintf(sub, sizeof(sub), "%s/packages/etcd/3.6", dir);
    assert_int_equal(mkdir(sub, 0700), 0);
    snprintf(meta, sizeof(meta), "component: etcd\nimage: {repository: r/etcd}\n%s", tail);
    write_text(sub, "package.yaml", meta);
    write_text(sub, "manifest.yaml", "kind: ConfigMap\n");
    err_clear(e);
    r = render_catalog_open(dir, &c, e);
    if (r == 0) {
        const struct render_package *p = render_catalog_package(c, "etcd", "3.6");
        const char *const *names;
        int locked = -1;
        assert_int_equal(render_package_names(p, RENDER_FLAGS, &names), 3);
        assert_string_equal(names[0], "a");
        assert_string_equal(names[2], "c");
        assert_true(render_package_knows_flag(p, "b"));
        assert_false(render_package_knows_flag(p, "d"));
        assert_int_equal(render_package_names(p, RENDER_REMOVED_FLAGS, &names), 1);
        assert_string_equal(names[0], "d");
        assert_true(render_package_knows_feature_gate(p, "G", &locked));
        assert_int_equal(locked, 1);
        assert_false(render_package_knows_feature_gate(p, "H", NULL));
    }
    render_catalog_free(c);
    snprintf(sub, sizeof(sub), "rm -r '%s'", dir);
    assert_int_equal(system(sub), 0);
    return r;
}

static void test_render__a_package_with_malformed_lists_is_refused_by_file(void **state)
{
    struct err e;

    assert_int_equal(open_with_package_tail("flags: [c, a, b]\nremovedFlags: [{flag: d}]\n"
                                            "featureGates: {G: {default: true, locked: true}}\n",
                                            &e),
                     0);
    assert_int_equal(open_with_package_tail("flags: {a: b}\n", &e), -EINVAL);
    assert_string_equal(e.msg, "packages/etcd/3.6/package.yaml: flags must be a list");
    assert_int_equal(open_with_package_tail("flags: [a, [b]]\n", &e), -EINVAL);
    assert_string_equal(e.msg, "packages/etcd/3.6/package.yaml: flags: entry 1 is not a flag name");
    assert_int_equal(open_with_package_tail("removedFlags: [{note: x}]\n", &e), -EINVAL);
    assert_string_equal(e.msg,
                        "packages/etcd/3.6/package.yaml: removedFlags: entry 0 is not a flag name");
    assert_int_equal(open_with_package_tail("featureGates: {G: true}\n", &e), -EINVAL);
    assert_string_equal(e.msg, "packages/etcd/3.6/package.yaml: featureGates: entry 0 is not a "
                               "gate {stage, default, locked}");
}

static void test_render__yaml_output_is_golden_friendly(void **state)
{
    cJSON *objs = render_ok(BASE "component: etcd\nversion: 3.6.17\n"), *back = NULL;
    struct buf b;

    buf_init(&b, 0);
    assert_int_equal(render_emit_yaml(objs, &b), 0);
    assert_non_null(strstr(b.data, "kind: StatefulSet"));
    assert_int_equal(yamlconv_parse_all(b.data, b.len, "out", &back, NULL), 0);
    assert_true(cJSON_Compare(objs, back, true));
    buf_done(&b);
    cJSON_Delete(back);
    cJSON_Delete(objs);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_render__etcd_members_learn_their_cluster_from_their_pod),
        cmocka_unit_test(test_render__etcd_pvc_storage_uses_claim_templates),
        cmocka_unit_test(test_render__apiserver_136_flags),
        cmocka_unit_test(test_render__apiserver_137_has_no_insecure_port),
        cmocka_unit_test(test_render__controller_manager_flags),
        cmocka_unit_test(test_render__labels_owner_and_hash),
        cmocka_unit_test(test_render__extra_args_replace_or_append_in_key_order),
        cmocka_unit_test(test_render__feature_gates_are_checked),
        cmocka_unit_test(test_render__image_registry_rewrite),
        cmocka_unit_test(test_render__patches),
        cmocka_unit_test(test_render__strategic_merge_directives),
        cmocka_unit_test(test_render__version_and_channel_resolution),
        cmocka_unit_test(test_render__bad_values_name_the_field),
        cmocka_unit_test(test_render__a_package_with_malformed_lists_is_refused_by_file),
        cmocka_unit_test(test_render__yaml_output_is_golden_friendly),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
