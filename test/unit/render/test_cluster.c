/* Assembling a tenant control plane from its API objects (lib/render/cluster.h). */

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
#include <time.h>

#include <openssl/crypto.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include "lib/pki/base64.h"
#include "lib/pki/cert.h"
#include "lib/pki/key.h"
#include "lib/pki/kubeadm.h"
#include "lib/pki/kubeconfig.h"
#include "lib/pki/secret.h"
#include "lib/render/catalog.h"
#include "lib/render/cluster.h"
#include "lib/render/member.h"
#include "lib/render/patch.h"
#include "lib/util/strutil.h"
#include "lib/util/yamlconv.h"

#define DAY ((int64_t)86400)

static struct render_catalog *catalog;
static int64_t T0; /* the wall clock at the start: CAs made here start then */

/* How many certificate specs were built: the link wraps pki_kubeadm_spec (test/CMakeLists.txt). */
static int specs_built;

int __real_pki_kubeadm_spec(const struct pki_cluster *cluster, enum pki_kubeadm_cert which,
                            int member, struct pki_cert_spec *ret_spec, struct err *e);
int __wrap_pki_kubeadm_spec(const struct pki_cluster *cluster, enum pki_kubeadm_cert which,
                            int member, struct pki_cert_spec *ret_spec, struct err *e);

int __wrap_pki_kubeadm_spec(const struct pki_cluster *cluster, enum pki_kubeadm_cert which,
                            int member, struct pki_cert_spec *ret_spec, struct err *e)
{
    specs_built++;
    return __real_pki_kubeadm_spec(cluster, which, member, ret_spec, e);
}

static int setup(void **state)
{
    const char *src = getenv("NESTCP_SOURCE_DIR"), *me = __FILE__;
    const char *at = strstr(me, "/test/unit/render/");
    char dir[4096];
    struct err e = {0};

    T0 = (int64_t)time(NULL);
    if (src)
        snprintf(dir, sizeof(dir), "%s/templates", src);
    else
        snprintf(dir, sizeof(dir), "%.*s/templates", at ? (int)(at - me) : 1, at ? me : ".");
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

/* ---- fixtures ---- */

#define NCP_HEAD                                                                                   \
    "apiVersion: controlplane.cluster.x-k8s.io/v1beta1\nkind: NestedControlPlane\n"                \
    "metadata: {name: c, namespace: ns1, uid: ncp-uid}\n"

#define COMPONENTS_WITH(etcd_spec, api_spec, cm_spec)                                              \
    "---\napiVersion: controlplane.cluster.x-k8s.io/v1beta1\nkind: NestedEtcd\n"                   \
    "metadata: {name: c-etcd, namespace: ns1, uid: etcd-uid, labels: "                             \
    "{cluster.x-k8s.io/cluster-name: c}}\nspec: " etcd_spec "\n"                                   \
    "---\napiVersion: controlplane.cluster.x-k8s.io/v1beta1\nkind: NestedAPIServer\n"              \
    "metadata: {name: c-apiserver, namespace: ns1, uid: api-uid, labels: "                         \
    "{cluster.x-k8s.io/cluster-name: c}}\nspec: " api_spec "\n"                                    \
    "---\napiVersion: controlplane.cluster.x-k8s.io/v1beta1\nkind: NestedControllerManager\n"      \
    "metadata: {name: c-cm, namespace: ns1, uid: cm-uid, labels: "                                 \
    "{cluster.x-k8s.io/cluster-name: c}}\nspec: " cm_spec "\n"

#define COMPONENTS COMPONENTS_WITH("{}", "{}", "{}")

/* A Cluster API cluster in CAPN's shape: the Cluster names the control plane, which names
 * its components; no labels anywhere. */
#define CAPN                                                                                       \
    "apiVersion: cluster.x-k8s.io/v1beta1\nkind: Cluster\nmetadata: {name: capn, namespace: "      \
    "ns1}\nspec:\n  clusterNetwork:\n    services: {cidrBlocks: [10.100.0.0/16]}\n"                \
    "    pods: {cidrBlocks: [10.200.0.0/16]}\n    serviceDomain: tenant.local\n"                   \
    "  controlPlaneEndpoint: {host: capn-apiserver, port: 6443}\n"                                 \
    "  controlPlaneRef: {apiVersion: controlplane.cluster.x-k8s.io/v1alpha4, kind: "               \
    "NestedControlPlane, name: capn-control-plane}\n"                                              \
    "  infrastructureRef: {apiVersion: infrastructure.cluster.x-k8s.io/v1alpha4, kind: "           \
    "NestedCluster, name: capn}\n"                                                                 \
    "---\napiVersion: infrastructure.cluster.x-k8s.io/v1alpha4\nkind: NestedCluster\n"             \
    "metadata: {name: capn, namespace: ns1}\nspec: {controlPlaneEndpoint: {host: capn-apiserver, " \
    "port: 6443}}\n"                                                                               \
    "---\napiVersion: controlplane.cluster.x-k8s.io/v1alpha4\nkind: NestedControlPlane\n"          \
    "metadata: {name: capn-control-plane, namespace: ns1}\nspec:\n  version: 1.36.3\n"             \
    "  etcd: {kind: NestedEtcd, name: capn-nestedetcd}\n"                                          \
    "  apiserver: {kind: NestedAPIServer, name: capn-nestedapiserver}\n"                           \
    "  controllerManager: {kind: NestedControllerManager, name: capn-nestedcontrollermanager}\n"   \
    "---\napiVersion: controlplane.cluster.x-k8s.io/v1alpha4\nkind: NestedEtcd\n"                  \
    "metadata: {name: capn-nestedetcd, namespace: ns1}\nspec: {replicas: 1}\n"                     \
    "---\napiVersion: controlplane.cluster.x-k8s.io/v1alpha4\nkind: NestedAPIServer\n"             \
    "metadata: {name: capn-nestedapiserver, namespace: ns1}\nspec: {replicas: 1}\n"                \
    "---\napiVersion: controlplane.cluster.x-k8s.io/v1alpha4\nkind: NestedControllerManager\n"     \
    "metadata: {name: capn-nestedcontrollermanager, namespace: ns1}\nspec: {replicas: 1}\n"

static cJSON *docs(const char *text)
{
    cJSON *d = NULL;
    struct err e = {0};

    if (yamlconv_parse_all(text, strlen(text), "test", &d, &e) < 0) {
        print_error("%s\n", e.msg);
        fail();
    }
    return d;
}

static struct render_cluster *resolve_ok(const cJSON *objs, const char *name)
{
    struct api_errors errs = API_ERRORS_INIT;
    struct render_source src;
    struct render_cluster *rc = NULL;
    struct buf b = BUF_INIT;

    render_source_from_objects(objs, &src);
    if (render_cluster_resolve(catalog, &src, "ns1", name, &rc, &errs) < 0) {
        api_errors_format(&errs, &b);
        print_error("resolve: %s\n", b.data);
        buf_done(&b);
        fail();
    }
    api_errors_done(&errs);
    return rc;
}

/* Resolving (and, when that works, rendering) fails and one problem reads exactly line. */
static void fails_with(const char *text, const char *line)
{
    struct api_errors errs = API_ERRORS_INIT;
    struct render_source src;
    struct render_cluster *rc = NULL;
    cJSON *objs = docs(text), *out = NULL;
    int r;

    render_source_from_objects(objs, &src);
    r = render_cluster_resolve(catalog, &src, "ns1", "c", &rc, &errs);
    if (r == 0) {
        r = render_cluster_all(catalog, rc, &src, T0, &out, &errs);
        render_cluster_free(rc);
    }
    assert_int_not_equal(r, 0);
    assert_null(out);
    if (!api_errors_contains(&errs, line)) {
        struct buf b = BUF_INIT;
        api_errors_format(&errs, &b);
        print_error("want: %s\ngot:\n%s", line, b.data ? b.data : "(nothing)\n");
        buf_done(&b);
        fail();
    }
    api_errors_done(&errs);
    cJSON_Delete(objs);
}

static struct render_cluster_pki *pki_ok(const struct render_cluster *rc, const cJSON *objs,
                                         int64_t now)
{
    struct api_errors errs = API_ERRORS_INIT;
    struct render_source src;
    struct render_cluster_pki *pki = NULL;

    render_source_from_objects(objs, &src);
    if (render_cluster_pki_load(rc, &src, now, true, &pki, &errs) < 0) {
        struct buf b = BUF_INIT;
        api_errors_format(&errs, &b);
        print_error("pki: %s\n", b.data);
        fail();
    }
    api_errors_done(&errs);
    return pki;
}

/* Moves each CA Secret the pki generated into objs, as the controller's create would. */
static void store_cas(cJSON *objs, const struct render_cluster_pki *pki)
{
    const cJSON *s;

    cJSON_ArrayForEach(s, render_cluster_pki_created(pki))
        cJSON_AddItemToArray(objs, cJSON_Duplicate(s, true));
}

static const cJSON *find(const cJSON *objs, const char *kind, const char *name)
{
    const cJSON *o;

    cJSON_ArrayForEach(o, objs) {
        const cJSON *k = cJSON_GetObjectItem(o, "kind");
        const cJSON *n = cJSON_GetObjectItem(cJSON_GetObjectItem(o, "metadata"), "name");
        if (k && n && strcmp(k->valuestring, kind) == 0 && strcmp(n->valuestring, name) == 0)
            return o;
    }
    return NULL;
}

static const char *container_flag(const cJSON *sts, const char *flag)
{
    const cJSON *c = cJSON_GetObjectItem(render_pod_spec(sts), "containers")->child, *a;
    size_t n = strlen(flag);

    cJSON_ArrayForEach(a, cJSON_GetObjectItem(c, "args")) {
        if (strncmp(a->valuestring, "--", 2) == 0 && strncmp(a->valuestring + 2, flag, n) == 0 &&
            a->valuestring[2 + n] == '=')
            return a->valuestring + 3 + n;
    }
    return NULL;
}

static cJSON *render_part(const struct render_cluster *rc, enum render_part part, const char *certs,
                          char hash[RENDER_CLUSTER_HASH_MAX])
{
    cJSON *objs = NULL;
    struct err e = {0};

    if (render_cluster_component(catalog, rc, part, certs, &objs, hash, &e) < 0) {
        print_error("render: %s\n", e.msg);
        fail();
    }
    return objs;
}

/* The decoded data[key] of a Secret (caller frees). */
static char *secret_data(const cJSON *secret, const char *key)
{
    const cJSON *v = cJSON_GetObjectItem(cJSON_GetObjectItem(secret, "data"), key);
    unsigned char *out = NULL;
    size_t len;

    if (!v || pki_base64_decode(v->valuestring, strlen(v->valuestring), 1 << 20, &out, &len) < 0)
        return NULL;
    return (char *)out;
}

/* Sets data[key] of a Secret to text, base64. */
static void set_b64(cJSON *data, const char *key, const char *text)
{
    char *b = NULL;

    assert_int_equal(pki_base64_encode(text, strlen(text), &b), 0);
    cJSON_DeleteItemFromObject(data, key);
    cJSON_AddStringToObject(data, key, b);
    free(b);
}

/* ---- resolution ---- */

static void test_cluster__capn_shape_takes_name_and_network_from_the_cluster(void **state)
{
    cJSON *objs = docs(CAPN);
    struct render_cluster *rc = resolve_ok(objs, "capn-control-plane");
    const struct api_control_plane *ncp = render_cluster_control_plane(rc);
    char hash[RENDER_CLUSTER_HASH_MAX];
    cJSON *out;

    assert_string_equal(render_cluster_name(rc), "capn");
    assert_non_null(render_cluster_capi_cluster(rc));
    assert_non_null(render_cluster_nested_cluster(rc));
    assert_string_equal(render_cluster_component_object(rc, RENDER_PART_ETCD)->meta.name,
                        "capn-nestedetcd");
    assert_string_equal(ncp->spec.cluster_network.services.items[0], "10.100.0.0/16");
    assert_string_equal(ncp->spec.cluster_network.pods.items[0], "10.200.0.0/16");
    assert_string_equal(ncp->spec.control_plane_endpoint.host, "capn-apiserver");
    assert_string_equal(render_cluster_version(rc, RENDER_PART_APISERVER), "1.36.3");
    assert_string_equal(render_cluster_version(rc, RENDER_PART_ETCD), "3.6.17");

    out = render_part(rc, RENDER_PART_APISERVER, "capn-apiserver-certs-x", hash);
    const cJSON *sts = find(out, "StatefulSet", "capn-apiserver");
    assert_non_null(sts);
    assert_string_equal(container_flag(sts, "service-cluster-ip-range"), "10.100.0.0/16");
    assert_string_equal(container_flag(sts, "service-account-issuer"),
                        "https://kubernetes.default.svc.tenant.local");
    assert_string_equal(container_flag(sts, "etcd-servers"),
                        "https://capn-etcd-0.capn-etcd.ns1.svc:2379");
    assert_string_equal(render_cluster_certs_mounted(sts), "capn-apiserver-certs-x");
    /* No uid in the input: no owner reference to an object that does not exist yet. */
    assert_null(cJSON_GetObjectItem(cJSON_GetObjectItem(sts, "metadata"), "ownerReferences"));
    cJSON_Delete(out);
    out = render_part(rc, RENDER_PART_CONTROLLER_MANAGER, "x", hash);
    assert_string_equal(
        container_flag(find(out, "StatefulSet", "capn-controller-manager"), "cluster-cidr"),
        "10.200.0.0/16");
    cJSON_Delete(out);
    render_cluster_free(rc);
    cJSON_Delete(objs);
}

/* The CAPN shape with the Cluster as Cluster API v1beta2 serves it: references by apiGroup,
 * kind and name, and (as Cluster API 1.14 writes them) owner references of version v1beta2. */
#define CAPN_V1BETA2_CLUSTER                                                                       \
    "apiVersion: cluster.x-k8s.io/v1beta2\nkind: Cluster\nmetadata: {name: capn, namespace: "      \
    "ns1, uid: cl-1}\nspec:\n  clusterNetwork:\n    services: {cidrBlocks: [10.100.0.0/16]}\n"     \
    "    pods: {cidrBlocks: [10.200.0.0/16]}\n    serviceDomain: tenant.local\n"                   \
    "  controlPlaneEndpoint: {host: capn-apiserver, port: 6443}\n"                                 \
    "  controlPlaneRef: {apiGroup: controlplane.cluster.x-k8s.io, kind: NestedControlPlane, "      \
    "name: capn-control-plane}\n"                                                                  \
    "  infrastructureRef: {apiGroup: %s, kind: NestedCluster, name: capn}\n"

static void test_cluster__a_v1beta2_cluster_resolves_as_a_v1beta1_one(void **state)
{
    char text[8192];
    const char *rest = strstr(CAPN, "---\n");
    cJSON *objs;
    struct render_cluster *rc;
    const struct api_control_plane *ncp;
    struct render_source src;

    snprintf(text, sizeof(text), CAPN_V1BETA2_CLUSTER "%s", "infrastructure.cluster.x-k8s.io",
             rest);
    objs = docs(text);
    rc = resolve_ok(objs, "capn-control-plane");
    ncp = render_cluster_control_plane(rc);
    assert_string_equal(render_cluster_name(rc), "capn");
    assert_non_null(render_cluster_capi_cluster(rc));
    assert_non_null(render_cluster_nested_cluster(rc));
    assert_string_equal(ncp->spec.cluster_network.services.items[0], "10.100.0.0/16");
    assert_string_equal(ncp->spec.cluster_network.pods.items[0], "10.200.0.0/16");
    assert_string_equal(ncp->spec.control_plane_endpoint.host, "capn-apiserver");
    render_source_from_objects(objs, &src);
    assert_ptr_equal(
        member_control_plane_of_nested_cluster(&src, find(objs, "NestedCluster", "capn")),
        find(objs, "NestedControlPlane", "capn-control-plane"));
    render_cluster_free(rc);
    cJSON_Delete(objs);
}

/* A v1beta2 reference is to the group it names: one to another group's NestedCluster names
 * none of nestcp's. */
static void test_cluster__a_v1beta2_reference_to_another_group_names_nothing(void **state)
{
    char text[8192];
    const char *rest = strstr(CAPN, "---\n");
    cJSON *objs;
    struct render_cluster *rc;
    struct render_source src;
    const cJSON *nc;

    snprintf(text, sizeof(text), CAPN_V1BETA2_CLUSTER "%s", "infrastructure.example.com", rest);
    objs = docs(text);
    rc = resolve_ok(objs, "capn-control-plane");
    assert_non_null(render_cluster_capi_cluster(rc));
    assert_null(render_cluster_nested_cluster(rc));
    render_source_from_objects(objs, &src);
    nc = find(objs, "NestedCluster", "capn");
    assert_null(member_capi_cluster(&src, nc, API_KIND_NESTED_CLUSTER, NULL, NULL));
    assert_null(member_nested_cluster_of_control_plane(
        &src, find(objs, "NestedControlPlane", "capn-control-plane")));
    render_cluster_free(rc);
    cJSON_Delete(objs);
}

static void test_cluster__control_plane_network_wins_over_the_cluster(void **state)
{
    char text[8192];
    snprintf(text, sizeof(text), "%s", CAPN);
    /* Give the control plane a network of its own. */
    char *at = strstr(text, "  version: 1.36.3\n");
    const char *extra = "  clusterNetwork: {services: {cidrBlocks: [10.32.0.0/16]}}\n";
    memmove(at + strlen(extra), at, strlen(at) + 1);
    memcpy(at, extra, strlen(extra));
    cJSON *objs = docs(text);
    struct render_cluster *rc = resolve_ok(objs, "capn-control-plane");
    const struct api_cluster_network *net = &render_cluster_control_plane(rc)->spec.cluster_network;

    assert_string_equal(net->services.items[0], "10.32.0.0/16");
    assert_int_equal(net->services.n, 1);
    assert_string_equal(net->pods.items[0], "10.200.0.0/16"); /* still the Cluster's */
    assert_string_equal(net->service_domain, "tenant.local");
    render_cluster_free(rc);
    cJSON_Delete(objs);
}

static void test_cluster__standalone_defaults(void **state)
{
    cJSON *objs = docs(NCP_HEAD "spec: {}\n" COMPONENTS);
    struct render_cluster *rc = resolve_ok(objs, "c");
    const struct api_control_plane *ncp = render_cluster_control_plane(rc);

    assert_string_equal(render_cluster_name(rc), "c");
    assert_null(render_cluster_capi_cluster(rc));
    assert_string_equal(ncp->spec.cluster_network.services.items[0], "10.96.0.0/12");
    assert_string_equal(ncp->spec.cluster_network.pods.items[0], "10.244.0.0/16");
    assert_string_equal(ncp->spec.cluster_network.service_domain, "cluster.local");
    assert_string_equal(ncp->spec.control_plane_endpoint.host, "c-apiserver.ns1.svc");
    assert_int_equal(ncp->spec.control_plane_endpoint.port, 6443);
    /* No version anywhere: the stable channel, and the etcd its Kubernetes package names. */
    assert_string_equal(render_cluster_version(rc, RENDER_PART_APISERVER), "1.36.3");
    assert_string_equal(render_cluster_version(rc, RENDER_PART_CONTROLLER_MANAGER), "1.36.3");
    assert_string_equal(render_cluster_version(rc, RENDER_PART_ETCD), "3.6.17");
    render_cluster_free(rc);
    cJSON_Delete(objs);

    /* Dual-stack services get a pod block per family; a default that would overlap the
     * services moves out of the way. */
    objs = docs(NCP_HEAD "spec: {clusterNetwork: {services: {cidrBlocks: [10.96.0.0/12, "
                         "'fd00:10:96::/108']}}}\n" COMPONENTS);
    rc = resolve_ok(objs, "c");
    ncp = render_cluster_control_plane(rc);
    assert_int_equal(ncp->spec.cluster_network.pods.n, 2);
    assert_string_equal(ncp->spec.cluster_network.pods.items[1], "fd00:10:244::/56");
    render_cluster_free(rc);
    cJSON_Delete(objs);
    objs = docs(NCP_HEAD
                "spec: {clusterNetwork: {services: {cidrBlocks: [10.240.0.0/12]}}}\n" COMPONENTS);
    rc = resolve_ok(objs, "c");
    assert_string_equal(render_cluster_control_plane(rc)->spec.cluster_network.pods.items[0],
                        "192.168.0.0/16");
    render_cluster_free(rc);
    cJSON_Delete(objs);
}

static void test_cluster__versions_from_channel_and_component(void **state)
{
    /* The API server on the rapid channel: the controller manager follows it, etcd is what
     * Kubernetes 1.37 needs. */
    cJSON *objs = docs(NCP_HEAD "spec: {}\n" COMPONENTS_WITH("{}", "{channel: rapid}", "{}"));
    struct render_cluster *rc = resolve_ok(objs, "c");

    assert_string_equal(render_cluster_version(rc, RENDER_PART_APISERVER), "1.37.2");
    assert_string_equal(render_cluster_version(rc, RENDER_PART_CONTROLLER_MANAGER), "1.37.2");
    assert_string_equal(render_cluster_version(rc, RENDER_PART_ETCD), "3.6.17");
    render_cluster_free(rc);
    cJSON_Delete(objs);

    /* A component's own version, without one on the control plane; etcd newer than the 3.5.36
     * that 1.35 names is allowed. */
    objs = docs(NCP_HEAD "spec: {}\n" COMPONENTS_WITH("{version: 3.6.17}", "{version: v1.35.4}",
                                                      "{version: 1.35.4}"));
    rc = resolve_ok(objs, "c");
    assert_string_equal(render_cluster_version(rc, RENDER_PART_APISERVER), "1.35.4");
    assert_string_equal(render_cluster_version(rc, RENDER_PART_CONTROLLER_MANAGER), "1.35.4");
    assert_string_equal(render_cluster_version(rc, RENDER_PART_ETCD), "3.6.17");
    render_cluster_free(rc);
    cJSON_Delete(objs);

    /* Left to the control plane's version, etcd is what that version's package names. */
    objs = docs(NCP_HEAD "spec: {version: 1.35.4}\n" COMPONENTS);
    rc = resolve_ok(objs, "c");
    assert_string_equal(render_cluster_version(rc, RENDER_PART_ETCD), "3.5.36");
    render_cluster_free(rc);
    cJSON_Delete(objs);

    /* The control plane's version wins over the channel. */
    objs =
        docs(NCP_HEAD "spec: {version: 1.35.4}\n" COMPONENTS_WITH("{}", "{channel: stable}", "{}"));
    rc = resolve_ok(objs, "c");
    assert_string_equal(render_cluster_version(rc, RENDER_PART_APISERVER), "1.35.4");
    assert_string_equal(render_cluster_version(rc, RENDER_PART_CONTROLLER_MANAGER), "1.35.4");
    render_cluster_free(rc);
    cJSON_Delete(objs);
}

static void test_cluster__version_skew_is_refused(void **state)
{
    /* The versions resolve (the controllers refuse the rollout, VersionSkewRefused); rendering
     * the cluster fails, naming the field that chose the version. */
    fails_with(NCP_HEAD "spec: {}\n" COMPONENTS_WITH("{}", "{version: 1.36.3}", "{channel: rapid}"),
               "NestedControllerManager ns1/c-cm: spec.channel: \"rapid\": kube-controller-manager "
               "1.37.2 would be newer than kube-apiserver 1.36.3; the version skew policy does "
               "not allow it");
    fails_with(NCP_HEAD
               "spec: {}\n" COMPONENTS_WITH("{}", "{version: 1.37.2}", "{version: 1.35.4}"),
               "NestedControllerManager ns1/c-cm: spec.version: \"1.35.4\": "
               "kube-controller-manager 1.35.4 would be more than one minor version older than "
               "kube-apiserver 1.37.2");
    fails_with(NCP_HEAD
               "spec: {version: 1.36.3}\n" COMPONENTS_WITH("{}", "{}", "{version: 1.37.2}"),
               "NestedControllerManager ns1/c-cm: spec.version: \"1.37.2\": "
               "kube-controller-manager 1.37.2 would be newer than kube-apiserver 1.36.3; the "
               "version skew policy does not allow it");
    /* An API server override that leaves the control plane's controller manager behind. */
    fails_with(NCP_HEAD
               "spec: {version: 1.35.4}\n" COMPONENTS_WITH("{}", "{version: 1.37.2}", "{}"),
               "NestedAPIServer ns1/c-apiserver: spec.version: \"1.37.2\": "
               "kube-controller-manager 1.35.4 would be more than one minor version older than "
               "kube-apiserver 1.37.2");
    fails_with(NCP_HEAD
               "spec: {version: 1.36.3}\n" COMPONENTS_WITH("{version: 3.5.36}", "{}", "{}"),
               "NestedEtcd ns1/c-etcd: spec.version: \"3.5.36\" is older than 3.6.17, the etcd "
               "version Kubernetes 1.36.3 needs");
    fails_with(NCP_HEAD
               "spec: {version: 1.36.3}\n" COMPONENTS_WITH("{}", "{}", "{version: 1.38.0}"),
               "NestedControllerManager ns1/c-cm: spec.version: \"1.38.0\" is not a Kubernetes "
               "version the installed packages know (supported lines: 1.35, 1.36, 1.37)");
}

static const char *container_image(const cJSON *sts)
{
    const cJSON *c = cJSON_GetObjectItem(render_pod_spec(sts), "containers")->child;

    return cJSON_GetObjectItem(c, "image")->valuestring;
}

static void test_cluster__component_override_renders_from_its_own_package(void **state)
{
    /* The control plane at 1.36.3, the controller manager held at 1.35.4 (one minor older). */
    cJSON *objs = docs(NCP_HEAD "spec: {version: 1.36.3}\n" COMPONENTS_WITH("{}", "{}",
                                                                            "{version: v1.35.4}")),
          *out = NULL;
    struct render_cluster *rc = resolve_ok(objs, "c");
    struct api_errors errs = API_ERRORS_INIT;
    struct render_source src;

    assert_string_equal(render_cluster_version(rc, RENDER_PART_APISERVER), "1.36.3");
    assert_string_equal(render_cluster_version(rc, RENDER_PART_CONTROLLER_MANAGER), "1.35.4");
    assert_string_equal(render_cluster_version(rc, RENDER_PART_ETCD), "3.6.17");
    assert_null(render_cluster_version_skew(rc));
    /* What `nestcp render` prints: each workload from the package of its own version. */
    render_source_from_objects(objs, &src);
    assert_int_equal(render_cluster_all(catalog, rc, &src, T0, &out, &errs), 0);
    assert_string_equal(container_image(find(out, "StatefulSet", "c-apiserver")),
                        "registry.k8s.io/kube-apiserver:v1.36.3");
    assert_string_equal(container_image(find(out, "StatefulSet", "c-controller-manager")),
                        "registry.k8s.io/kube-controller-manager:v1.35.4");
    assert_string_equal(container_image(find(out, "StatefulSet", "c-etcd")),
                        "registry.k8s.io/etcd:3.6.17-0");
    cJSON_Delete(out);
    api_errors_done(&errs);
    render_cluster_free(rc);
    cJSON_Delete(objs);

    /* An API server override picks etcd too: what its package names (1.36: 3.6.17, where the
     * control plane's 1.35 names 3.5.36). */
    objs = docs(NCP_HEAD "spec: {version: 1.35.4}\n" COMPONENTS_WITH("{}", "{version: 1.36.3}",
                                                                     "{version: 1.36.3}"));
    rc = resolve_ok(objs, "c");
    assert_string_equal(render_cluster_version(rc, RENDER_PART_APISERVER), "1.36.3");
    assert_string_equal(render_cluster_version(rc, RENDER_PART_ETCD), "3.6.17");
    render_cluster_free(rc);
    cJSON_Delete(objs);

    /* A feature gate the control plane sets must exist in the override's version:
     * ShardedListAndWatch is new in 1.36. */
    fails_with(
        NCP_HEAD
        "spec: {version: 1.36.3, featureGates: {ShardedListAndWatch: true}}\n" COMPONENTS_WITH(
            "{}", "{}", "{version: 1.35.4}"),
        "NestedControllerManager ns1/c-cm: spec.version: \"1.35.4\": "
        "kube-controller-manager 1.35.4 has no feature gate \"ShardedListAndWatch\", which "
        "the NestedControlPlane's spec.featureGates sets");
}

static void test_cluster__feature_gates_component_overrides_cluster(void **state)
{
    cJSON *objs = docs(NCP_HEAD "spec: {version: 1.36.3, featureGates: {OpenAPIEnums: true, "
                                "StorageVersionMigrator: false}}\n" COMPONENTS_WITH(
                                    "{}", "{featureGates: {StorageVersionMigrator: true}}", "{}"));
    struct render_cluster *rc = resolve_ok(objs, "c");
    char hash[RENDER_CLUSTER_HASH_MAX];
    cJSON *out;

    out = render_part(rc, RENDER_PART_APISERVER, "x", hash);
    assert_string_equal(container_flag(find(out, "StatefulSet", "c-apiserver"), "feature-gates"),
                        "OpenAPIEnums=true,StorageVersionMigrator=true");
    cJSON_Delete(out);
    out = render_part(rc, RENDER_PART_CONTROLLER_MANAGER, "x", hash);
    assert_string_equal(
        container_flag(find(out, "StatefulSet", "c-controller-manager"), "feature-gates"),
        "OpenAPIEnums=true,StorageVersionMigrator=false");
    cJSON_Delete(out);
    out = render_part(rc, RENDER_PART_ETCD, "x", hash);
    /* etcd 3.6 has gates of its own; the Kubernetes ones are not passed to it. */
    assert_string_equal(container_flag(find(out, "StatefulSet", "c-etcd"), "feature-gates"),
                        "InitialCorruptCheck=true");
    cJSON_Delete(out);
    render_cluster_free(rc);
    cJSON_Delete(objs);
}

static void test_cluster__bad_input_names_object_and_field(void **state)
{
    fails_with(NCP_HEAD
               "spec: {clusterNetwork: {services: {cidrBlocks: [10.96.0.0/33]}}}\n" COMPONENTS,
               "NestedControlPlane ns1/c: spec.clusterNetwork.services.cidrBlocks[0]: "
               "\"10.96.0.0/33\" is not a valid CIDR");
    fails_with(NCP_HEAD "spec: {version: 1.38.0}\n" COMPONENTS,
               "NestedControlPlane ns1/c: spec.version: \"1.38.0\" is not a Kubernetes version "
               "the installed packages know (supported lines: 1.35, 1.36, 1.37)");
    fails_with(NCP_HEAD "spec: {version: 1.36.3, featureGates: {NoSuchGate: true}}\n" COMPONENTS,
               "NestedControlPlane ns1/c: spec.featureGates: \"NoSuchGate\" is not a feature "
               "gate of Kubernetes 1.36.3");
    /* Gone long before 1.35. */
    fails_with(NCP_HEAD
               "spec: {version: 1.36.3, featureGates: {EphemeralContainers: true}}\n" COMPONENTS,
               "NestedControlPlane ns1/c: spec.featureGates: \"EphemeralContainers\" is not a "
               "feature gate of Kubernetes 1.36.3");
    fails_with(NCP_HEAD "spec: {version: 1.37.2}\n" COMPONENTS_WITH(
                   "{}", "{featureGates: {InPlacePodVerticalScaling: false}}", "{}"),
               "NestedAPIServer ns1/c-apiserver: spec.featureGates: \"InPlacePodVerticalScaling\" "
               "is locked to true in kube-apiserver 1.37.2");
    fails_with(NCP_HEAD "spec: {version: 1.37.2}\n" COMPONENTS_WITH(
                   "{}", "{extraArgs: {insecure-port: '0'}}", "{}"),
               "NestedAPIServer ns1/c-apiserver: spec.extraArgs: \"insecure-port\" is not a flag "
               "of kube-apiserver 1.37.2");
    fails_with(NCP_HEAD "spec: {}\n" COMPONENTS_WITH(
                   "{}",
                   "{patches: [{target: {kind: StatefulSet, name: nope}, type: "
                   "merge, patch: {spec: {}}}]}",
                   "{}"),
               "NestedAPIServer ns1/c-apiserver: spec.patches[0]: matches no object (kind "
               "StatefulSet, name nope)");
    fails_with(NCP_HEAD "spec: {}\n" COMPONENTS_WITH("{channel: nightly}", "{}", "{}"),
               "NestedEtcd ns1/c-etcd: spec.channel: channel \"nightly\" does not exist");
    fails_with(
        NCP_HEAD
        "spec: {controllerManager: {kind: NestedControllerManager, name: gone}}\n" COMPONENTS,
        "NestedControlPlane ns1/c: spec.controllerManager.name: NestedControllerManager "
        "ns1/gone does not exist");
    fails_with("apiVersion: controlplane.cluster.x-k8s.io/v1beta1\nkind: NestedControlPlane\n"
               "metadata: {name: c, namespace: ns1, ownerReferences: [{apiVersion: "
               "cluster.x-k8s.io/v1beta1, kind: Cluster, name: gone, uid: u}]}\nspec: {}\n",
               "NestedControlPlane ns1/c: metadata.ownerReferences: Cluster ns1/gone does not "
               "exist");
}

/* A bad network on the Cluster is reported on the Cluster, once. */
static void test_cluster__bad_cluster_network_is_reported_once(void **state)
{
    char text[8192];
    struct api_errors errs = API_ERRORS_INIT;
    struct render_source src;
    struct render_cluster *rc = NULL;
    char *at;
    cJSON *objs;

    snprintf(text, sizeof(text), "%s", CAPN);
    at = strstr(text, "10.100.0.0/16");
    memcpy(at, "10.100.0.1/16", 13);
    objs = docs(text);
    render_source_from_objects(objs, &src);
    assert_int_equal(render_cluster_resolve(catalog, &src, "ns1", "capn-control-plane", &rc, &errs),
                     -EINVAL);
    assert_true(api_errors_contains(&errs, "Cluster ns1/capn: spec.clusterNetwork.services."
                                           "cidrBlocks[0]: \"10.100.0.1/16\" has host bits set; "
                                           "did you mean 10.100.0.0/16?"));
    assert_int_equal(api_errors_count(&errs), 1);
    api_errors_done(&errs);
    cJSON_Delete(objs);
}

/* ---- CAs ---- */

static cJSON *ca_secret(const char *purpose, bool matching_key)
{
    struct pki_cert_spec spec;
    char *crt = NULL, *key = NULL, *other = NULL;
    cJSON *s = NULL;
    struct err e = {0};

    pki_cert_spec_init(&spec);
    spec.is_ca = true;
    assert_int_equal(pki_cert_spec_set_cn(&spec, "my-own-ca", &e), 0);
    assert_int_equal(pki_cert_issue(NULL, NULL, &spec, &crt, &key, &e), 0);
    if (!matching_key)
        assert_int_equal(pki_key_generate(PKI_KEY_ECDSA_P256, &other, &e), 0);
    assert_int_equal(pki_secret_tls_new("c", "ns1", purpose, crt, other ? other : key, &s, &e), 0);
    pki_cert_spec_done(&spec);
    free(crt);
    free(key);
    free(other);
    return s;
}

/* A CA with less validity left than the renewal window could sign nothing that lasts (leaves
 * end with their CA): refused by name, rather than leaves issued again and again. */
static void test_cluster__a_ca_expiring_within_the_renewal_window_is_refused(void **state)
{
    struct pki_cert_spec spec;
    char *crt = NULL, *key = NULL, text[64 * 1024], want[512], when[32];
    struct buf b = BUF_INIT;
    struct err e = {0};
    cJSON *objs = docs(NCP_HEAD "spec: {}\n" COMPONENTS), *s = NULL;
    int64_t not_after;

    pki_cert_spec_init(&spec);
    spec.is_ca = true;
    spec.validity = 20 * DAY; /* renewBeforeDays: 30 */
    assert_int_equal(pki_cert_spec_set_cn(&spec, "short-lived-ca", &e), 0);
    assert_int_equal(pki_cert_issue(NULL, NULL, &spec, &crt, &key, &e), 0);
    assert_int_equal(pki_secret_tls_new("c", "ns1", "ca", crt, key, &s, &e), 0);
    assert_int_equal(pki_cert_not_after(crt, "ca", &not_after, &e), 0);
    time_format_rfc3339((double)not_after, when);
    snprintf(want, sizeof(want),
             "Secret ns1/c-ca: the CA expires at %s, within the renewal window (30 days): every "
             "certificate it signs would be due for renewal at once; supply a CA valid for "
             "longer than the renewal window",
             when);
    cJSON_AddItemToArray(objs, s);
    yamlconv_emit_all(objs, &b);
    snprintf(text, sizeof(text), "%s", b.data);
    buf_done(&b);
    cJSON_Delete(objs);
    pki_cert_spec_done(&spec);
    free(crt);
    free(key);
    fails_with(text, want);
}

static void test_cluster__existing_ca_is_used_as_it_is(void **state)
{
    cJSON *objs = docs(NCP_HEAD "spec: {}\n" COMPONENTS), *ca = ca_secret("ca", true), *certs;
    char *ca_crt = secret_data(ca, "tls.crt"), name[RENDER_CLUSTER_NAME_MAX];
    struct render_cluster *rc;
    struct render_cluster_pki *pki;
    struct render_source src;
    struct pki_cert_info *info = NULL;
    struct err e = {0};

    cJSON_AddItemToArray(objs, ca);
    rc = resolve_ok(objs, "c");
    pki = pki_ok(rc, objs, T0);
    /* The other three are generated; the cluster CA is not. */
    assert_int_equal(cJSON_GetArraySize(render_cluster_pki_created(pki)), 3);
    assert_null(find(render_cluster_pki_created(pki), "Secret", "c-ca"));
    assert_non_null(find(render_cluster_pki_created(pki), "Secret", "c-sa"));
    /* Leaves come from it. */
    render_source_from_objects(objs, &src);
    assert_int_equal(
        render_cluster_certs_issue(rc, pki, &src, RENDER_PART_APISERVER, NULL, &certs, &e), 0);
    char *leaf = secret_data(certs, "apiserver.crt"), *copied = secret_data(certs, "ca.crt");
    assert_string_equal(copied, ca_crt);
    assert_int_equal(pki_cert_info_read(leaf, "apiserver.crt", &info, &e), 0);
    assert_string_equal(info->issuer_common_name, "my-own-ca");
    snprintf(name, sizeof(name), "%s",
             cJSON_GetObjectItem(cJSON_GetObjectItem(certs, "metadata"), "name")->valuestring);
    assert_true(strncmp(name, "c-apiserver-certs-", 18) == 0);
    assert_int_equal(strlen(name), 18 + RENDER_CLUSTER_SECRET_HASH_LEN);
    assert_true(cJSON_IsTrue(cJSON_GetObjectItem(certs, "immutable")));
    assert_string_equal(
        cJSON_GetObjectItem(cJSON_GetObjectItem(cJSON_GetObjectItem(certs, "metadata"), "labels"),
                            "nestcp.x-k8s.io/component")
            ->valuestring,
        "apiserver");
    /* Owned by the component object, whose uid is known. */
    const cJSON *owner =
        cJSON_GetObjectItem(cJSON_GetObjectItem(certs, "metadata"), "ownerReferences")->child;
    assert_string_equal(cJSON_GetObjectItem(owner, "kind")->valuestring, "NestedAPIServer");
    assert_string_equal(cJSON_GetObjectItem(owner, "uid")->valuestring, "api-uid");
    pki_cert_info_free(info);
    free(leaf);
    free(copied);
    free(ca_crt);
    cJSON_Delete(certs);
    render_cluster_pki_free(pki);
    render_cluster_free(rc);
    cJSON_Delete(objs);
}

static void test_cluster__invalid_user_ca_names_secret_and_key(void **state)
{
    cJSON *objs = docs(NCP_HEAD "spec: {}\n" COMPONENTS);
    char text[64 * 1024];
    struct buf b = BUF_INIT;

    cJSON_AddItemToArray(objs, ca_secret("etcd", false));
    yamlconv_emit_all(objs, &b);
    snprintf(text, sizeof(text), "%s", b.data);
    buf_done(&b);
    cJSON_Delete(objs);
    fails_with(text, "Secret ns1/c-etcd: tls.key does not match tls.crt");
}

/* ---- certs Secrets ---- */

static cJSON *issue(const struct render_cluster *rc, const struct render_cluster_pki *pki,
                    const cJSON *objs, enum render_part part)
{
    struct render_source src;
    struct err e = {0};
    cJSON *s = NULL;

    render_source_from_objects(objs, &src);
    if (render_cluster_certs_issue(rc, pki, &src, part, NULL, &s, &e) < 0) {
        print_error("issue: %s\n", e.msg);
        fail();
    }
    return s;
}

static const char *name_of(const cJSON *obj)
{
    return cJSON_GetObjectItem(cJSON_GetObjectItem(obj, "metadata"), "name")->valuestring;
}

static int find_certs(const struct render_cluster *rc, const struct render_cluster_pki *pki,
                      const cJSON *objs, enum render_part part, char *name, struct err *e)
{
    struct render_source src;

    render_source_from_objects(objs, &src);
    return render_cluster_certs_find(rc, pki, &src, part, NULL, name, NULL, e);
}

static void test_cluster__certs_secret_is_reused_while_good(void **state)
{
    cJSON *objs = docs(NCP_HEAD "spec: {}\n" COMPONENTS);
    struct render_cluster *rc = resolve_ok(objs, "c");
    struct render_cluster_pki *pki = pki_ok(rc, objs, T0), *later;
    char name[RENDER_CLUSTER_NAME_MAX];
    struct err e = {0};
    cJSON *s;

    store_cas(objs, pki);
    assert_int_equal(find_certs(rc, pki, objs, RENDER_PART_ETCD, name, &e), -ENOENT);
    for (int p = 0; p < RENDER_PART__COUNT; p++)
        cJSON_AddItemToArray(objs, issue(rc, pki, objs, (enum render_part)p));
    /* The control plane, three components and four CAs come first. */
    for (int p = 0; p < RENDER_PART__COUNT; p++) {
        s = cJSON_GetArrayItem(objs, 8 + p);
        assert_int_equal(find_certs(rc, pki, objs, (enum render_part)p, name, &e), 0);
        assert_string_equal(name, name_of(s));
    }
    /* Half a year on: still good. 340 days on: within the 30 days of renewBeforeDays. */
    later = pki_ok(rc, objs, T0 + 180 * DAY);
    assert_int_equal(find_certs(rc, later, objs, RENDER_PART_APISERVER, name, &e), 0);
    render_cluster_pki_free(later);
    later = pki_ok(rc, objs, T0 + 340 * DAY);
    assert_int_equal(find_certs(rc, later, objs, RENDER_PART_APISERVER, name, &e), -ENOENT);
    assert_non_null(strstr(e.msg, "apiserver.crt"));
    render_cluster_pki_free(later);
    render_cluster_pki_free(pki);
    render_cluster_free(rc);
    cJSON_Delete(objs);
}

/* Only a Secret the component controls is its certificates Secret: one left by an earlier
 * component of the same name (another uid) is not picked up. */
static void test_cluster__certs_secret_of_another_owner_is_not_used(void **state)
{
    cJSON *objs = docs(NCP_HEAD "spec: {}\n" COMPONENTS), *s, *ref;
    struct render_cluster *rc = resolve_ok(objs, "c");
    struct render_cluster_pki *pki = pki_ok(rc, objs, T0);
    char name[RENDER_CLUSTER_NAME_MAX];
    struct err e = {0};

    store_cas(objs, pki);
    s = issue(rc, pki, objs, RENDER_PART_APISERVER);
    cJSON_AddItemToArray(objs, s);
    assert_int_equal(find_certs(rc, pki, objs, RENDER_PART_APISERVER, name, &e), 0);
    assert_string_equal(name, name_of(s));
    ref = cJSON_GetArrayItem(
        cJSON_GetObjectItem(cJSON_GetObjectItem(s, "metadata"), "ownerReferences"), 0);
    cJSON_ReplaceItemInObject(ref, "uid", cJSON_CreateString("old-apiserver-uid"));
    assert_int_equal(find_certs(rc, pki, objs, RENDER_PART_APISERVER, name, &e), -ENOENT);
    render_cluster_pki_free(pki);
    render_cluster_free(rc);
    cJSON_Delete(objs);
}

/* A control plane's renewBeforeDays decides alone unless the manager asks for a longer window. */
static void test_cluster__renew_window_is_the_longer_of_cluster_and_manager(void **state)
{
    cJSON *objs = docs(NCP_HEAD "spec: {certificates: {renewBeforeDays: 10}}\n" COMPONENTS);
    struct render_cluster *rc = resolve_ok(objs, "c");
    struct render_cluster_pki *pki = pki_ok(rc, objs, T0), *later;
    char name[RENDER_CLUSTER_NAME_MAX];
    struct err e = {0};

    store_cas(objs, pki);
    cJSON_AddItemToArray(objs, issue(rc, pki, objs, RENDER_PART_APISERVER));
    /* 25 days left: more than the cluster's 10, so kept. */
    later = pki_ok(rc, objs, T0 + 340 * DAY);
    assert_int_equal(find_certs(rc, later, objs, RENDER_PART_APISERVER, name, &e), 0);
    render_cluster_pki_free(later);
    /* The manager's 60 days is longer: renewed already 55 days before expiry. */
    render_cluster_set_renew_before(rc, 60 * DAY);
    later = pki_ok(rc, objs, T0 + 310 * DAY);
    assert_int_equal(find_certs(rc, later, objs, RENDER_PART_APISERVER, name, &e), -ENOENT);
    assert_non_null(strstr(e.msg, "apiserver.crt"));
    render_cluster_pki_free(later);
    render_cluster_pki_free(pki);
    render_cluster_free(rc);
    cJSON_Delete(objs);
}

/* A memo in the manager's shape: what passed, until when, and the renewal moment with it. */
struct memo_entry {
    char digest[RENDER_CLUSTER_HASH_MAX];
    int64_t until, value;
};
struct memo_table {
    struct memo_entry v[64];
    int n, hits;
};

static bool memo_table_passed(void *ctx, const char *digest, int64_t now, int64_t *ret_value)
{
    struct memo_table *t = ctx;

    for (int i = 0; i < t->n; i++)
        if (strcmp(t->v[i].digest, digest) == 0 && t->v[i].until > now) {
            if (ret_value)
                *ret_value = t->v[i].value;
            t->hits++;
            return true;
        }
    return false;
}

static void memo_table_remember(void *ctx, const char *digest, int64_t until, int64_t value)
{
    struct memo_table *t = ctx;

    assert_true(t->n < 64);
    snprintf(t->v[t->n].digest, sizeof(t->v[t->n].digest), "%s", digest);
    t->v[t->n].until = until;
    t->v[t->n].value = value;
    t->n++;
}

/* Every object of text with metadata.generation gen (0: none). */
static cJSON *docs_at(const char *text, int gen)
{
    cJSON *objs = docs(text), *o;

    cJSON_ArrayForEach(o, objs) {
        cJSON *meta = cJSON_GetObjectItemCaseSensitive(o, "metadata");
        if (gen)
            cJSON_AddNumberToObject(meta, "generation", gen);
    }
    return objs;
}

/* The one document of text. */
static cJSON *doc(const char *text)
{
    cJSON *all = docs(text), *one = cJSON_DetachItemFromArray(all, 0);

    cJSON_Delete(all);
    return one;
}

/* render_cluster_check with a memo and a fresh resolve of objs. */
static int check_at(const cJSON *objs, struct memo_table *memo, int64_t now, struct err *e)
{
    struct render_check_memo m = {memo, memo_table_passed, memo_table_remember};
    struct render_cluster *rc = resolve_ok(objs, "c");
    int r;

    render_cluster_set_check_memo(rc, &m);
    err_clear(e);
    r = render_cluster_check(catalog, rc, RENDER_PART__COUNT, now, e);
    render_cluster_free(rc);
    return r;
}

/* The render check renders once per spec: a pass is remembered by the objects' uid,
 * generation, labels and annotations, a new generation or label renders again, a failure is
 * never remembered, and objects without a generation are rendered every time. */
static void test_cluster__the_render_check_renders_once_per_spec(void **state)
{
    static const char bad_patch[] = "{patches: [{target: {kind: StatefulSet, name: nope}, type: "
                                    "merge, patch: {spec: {}}}]}";
    struct memo_table memo = {0};
    cJSON *objs = docs_at(NCP_HEAD "spec: {}\n" COMPONENTS, 1), *other;
    struct err e;

    (void)state;
    assert_int_equal(check_at(objs, &memo, T0, &e), 0);
    assert_int_equal(memo.n, 1);
    assert_int_equal(memo.hits, 0);
    /* the same objects, resolved again: from the memo */
    assert_int_equal(check_at(objs, &memo, T0 + 1, &e), 0);
    assert_int_equal(memo.hits, 1);
    assert_int_equal(memo.n, 1);

    /* a spec that fails, at its next generation: rendered, refused, not remembered */
    other = docs_at(NCP_HEAD "spec: {}\n" COMPONENTS, 1);
    cJSON_ReplaceItemInObjectCaseSensitive(cJSON_GetArrayItem(other, 2), "spec", doc(bad_patch));
    cJSON_ReplaceItemInObjectCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(other, 2), "metadata"), "generation",
        cJSON_CreateNumber(2));
    assert_int_equal(check_at(other, &memo, T0 + 2, &e), -EINVAL);
    assert_non_null(strstr(e.msg, "spec.patches[0]: matches no object"));
    assert_int_equal(memo.n, 1);
    assert_int_equal(check_at(other, &memo, T0 + 3, &e), -EINVAL);
    assert_int_equal(memo.hits, 1);
    cJSON_Delete(other);

    /* a label of the control plane's: rendered again */
    other = docs_at(NCP_HEAD "spec: {}\n" COMPONENTS, 1);
    cJSON_AddItemToObject(
        cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(other, 0), "metadata"), "labels",
        doc("{team: a}"));
    assert_int_equal(check_at(other, &memo, T0 + 4, &e), 0);
    assert_int_equal(memo.n, 2);
    assert_int_equal(memo.hits, 1);
    cJSON_Delete(other);

    /* once the memo's time is up: rendered and remembered again */
    assert_int_equal(check_at(objs, &memo, T0 + RENDER_CHECK_MEMO_TTL, &e), 0);
    assert_int_equal(memo.hits, 1);
    assert_int_equal(memo.n, 3);
    cJSON_Delete(objs);

    /* no generation: nothing is remembered */
    objs = docs_at(NCP_HEAD "spec: {}\n" COMPONENTS, 0);
    assert_int_equal(check_at(objs, &memo, T0, &e), 0);
    assert_int_equal(check_at(objs, &memo, T0, &e), 0);
    assert_int_equal(memo.n, 3);
    assert_int_equal(memo.hits, 1);
    cJSON_Delete(objs);
}

/* A leaf nestcp issues is remembered as checked when it is issued: its first check after
 * that reads it from the memo, not by parsing it, and tells the same renewal moment a full
 * check tells. */
static void test_cluster__issued_leaves_are_known_checked(void **state)
{
    cJSON *objs = docs(NCP_HEAD "spec: {}\n" COMPONENTS), *s;
    struct render_cluster *rc = resolve_ok(objs, "c");
    struct memo_table memo = {0};
    struct render_check_memo m = {&memo, memo_table_passed, memo_table_remember};
    struct render_cluster_pki *pki;
    char name[RENDER_CLUSTER_NAME_MAX];
    struct render_source src;
    int64_t at = 0, full = 0;
    int remembered;
    struct err e = {0};

    (void)state;
    pki = pki_ok(rc, objs, T0);
    store_cas(objs, pki);
    render_cluster_set_check_memo(rc, &m);
    remembered = memo.n;
    s = issue(rc, pki, objs, RENDER_PART_APISERVER);
    cJSON_AddItemToArray(objs, s);
    assert_true(memo.n > remembered); /* every leaf of it, as it was issued */
    render_source_from_objects(objs, &src);
    assert_int_equal(
        render_cluster_certs_find(rc, pki, &src, RENDER_PART_APISERVER, NULL, name, &at, &e), 0);
    assert_true(memo.hits >= memo.n - remembered);
    /* the moment a full check tells */
    render_cluster_set_check_memo(rc, NULL);
    assert_int_equal(
        render_cluster_certs_find(rc, pki, &src, RENDER_PART_APISERVER, NULL, name, &full, &e), 0);
    assert_true(at > T0);
    assert_int_equal(at, full);
    render_cluster_pki_free(pki);
    render_cluster_free(rc);
    cJSON_Delete(objs);
}

/* A leaf's pass is remembered until the leaf is due for renewal, not only for
 * RENDER_CHECK_MEMO_TTL: its digest covers all its check reads, and only the clock changes the
 * result, at that moment. A control plane still being created after the TTL (at N = 1,000,
 * most were) does not parse its leaves again; its CAs, whose check reads the clock, are. */
static void test_cluster__a_leaf_pass_lasts_until_it_is_due(void **state)
{
    cJSON *objs = docs(NCP_HEAD "spec: {}\n" COMPONENTS), *s;
    struct render_cluster *rc = resolve_ok(objs, "c");
    struct memo_table memo = {0};
    struct render_check_memo m = {&memo, memo_table_passed, memo_table_remember};
    struct render_cluster_pki *pki, *later;
    char name[RENDER_CLUSTER_NAME_MAX];
    struct render_source src;
    int64_t at = 0, again = 0;
    int before, leaves = 0;
    struct err e = {0};

    (void)state;
    pki = pki_ok(rc, objs, T0);
    store_cas(objs, pki);
    render_cluster_set_check_memo(rc, &m);
    s = issue(rc, pki, objs, RENDER_PART_APISERVER);
    cJSON_AddItemToArray(objs, s);
    render_source_from_objects(objs, &src);
    assert_int_equal(
        render_cluster_certs_find(rc, pki, &src, RENDER_PART_APISERVER, NULL, name, &at, &e), 0);
    for (int i = 0; i < memo.n; i++)
        if (memo.v[i].value) {
            assert_int_equal(memo.v[i].until, memo.v[i].value);
            leaves++;
        }
    assert_true(leaves >= 4);
    assert_true(at > T0 + RENDER_CHECK_MEMO_TTL);

    /* Past the TTL: the CAs are checked again, no leaf is. */
    before = memo.n;
    later = pki_ok(rc, objs, T0 + RENDER_CHECK_MEMO_TTL + 60);
    assert_true(memo.n > before);
    for (int i = before; i < memo.n; i++)
        assert_int_equal(memo.v[i].value, 0);
    before = memo.n;
    assert_int_equal(
        render_cluster_certs_find(rc, later, &src, RENDER_PART_APISERVER, NULL, name, &again, &e),
        0);
    assert_int_equal(memo.n, before);
    assert_int_equal(again, at);
    render_cluster_pki_free(later);
    render_cluster_pki_free(pki);
    render_cluster_free(rc);
    cJSON_Delete(objs);
}

/* A leaf the memo knows is not checked again, and its spec (87 names for an etcd server or
 * peer certificate) is not even built: the memo's digest covers what the spec is built from,
 * and the pair as the Secret holds it. Issued while the memo watched, its first check builds
 * none either. */
static void test_cluster__a_remembered_leaf_check_builds_no_spec(void **state)
{
    cJSON *objs = docs(NCP_HEAD "spec: {}\n" COMPONENTS), *api, *data;
    struct render_cluster *rc = resolve_ok(objs, "c");
    struct memo_table memo = {0};
    struct render_check_memo m = {&memo, memo_table_passed, memo_table_remember};
    struct render_cluster_pki *pki = pki_ok(rc, objs, T0);
    char name[RENDER_CLUSTER_NAME_MAX];
    struct err e = {0};
    int before, hits;

    (void)state;
    store_cas(objs, pki);
    /* Issued without a memo: the first check builds each leaf's spec (server, peer and
     * healthcheck-client), the second none. */
    cJSON_AddItemToArray(objs, issue(rc, pki, objs, RENDER_PART_ETCD));
    render_cluster_set_check_memo(rc, &m);
    before = specs_built;
    assert_int_equal(find_certs(rc, pki, objs, RENDER_PART_ETCD, name, &e), 0);
    assert_int_equal(specs_built - before, 3);
    hits = memo.hits;
    before = specs_built;
    assert_int_equal(find_certs(rc, pki, objs, RENDER_PART_ETCD, name, &e), 0);
    assert_int_equal(specs_built, before);
    assert_int_equal(memo.hits - hits, 3);

    /* Issued under the memo: known at once. */
    api = issue(rc, pki, objs, RENDER_PART_APISERVER);
    cJSON_AddItemToArray(objs, api);
    before = specs_built;
    assert_int_equal(find_certs(rc, pki, objs, RENDER_PART_APISERVER, name, &e), 0);
    assert_int_equal(specs_built, before);

    /* Without the memo every check builds its spec again. */
    render_cluster_set_check_memo(rc, NULL);
    assert_int_equal(find_certs(rc, pki, objs, RENDER_PART_APISERVER, name, &e), 0);
    assert_int_equal(specs_built - before, 4);

    /* The memo knows the pair by the Secret's data as it is: another certificate there (and
     * its key) is checked, and refused. */
    render_cluster_set_check_memo(rc, &m);
    data = cJSON_GetObjectItem(api, "data");
    cJSON_ReplaceItemInObject(
        data, "apiserver.crt",
        cJSON_CreateString(cJSON_GetObjectItem(data, "apiserver-kubelet-client.crt")->valuestring));
    cJSON_ReplaceItemInObject(
        data, "apiserver.key",
        cJSON_CreateString(cJSON_GetObjectItem(data, "apiserver-kubelet-client.key")->valuestring));
    before = specs_built;
    assert_int_equal(find_certs(rc, pki, objs, RENDER_PART_APISERVER, name, &e), -ENOENT);
    assert_non_null(
        strstr(e.msg, "apiserver.crt: kube-apiserver-kubelet-client: commonName differs"));
    assert_int_equal(specs_built - before, 1);
    render_cluster_pki_free(pki);
    render_cluster_free(rc);
    cJSON_Delete(objs);
}

/* A change to what the apiserver certificate's spec is built from (an extra SAN, the service
 * CIDR, the endpoint) misses the memo that knew the certificate: it is checked again, found
 * stale, and issued anew with the new name. */
static void test_cluster__a_changed_spec_input_misses_the_memo(void **state)
{
    static const struct {
        const char *spec, *name; /* the control plane's new spec, and the name it adds */
    } changes[] = {
        {"spec: {certificates: {extraSANs: [b.example.com]}}", "b.example.com"},
        {"spec: {clusterNetwork: {services: {cidrBlocks: [10.100.0.0/16]}}}", "10.100.0.1"},
        {"spec: {controlPlaneEndpoint: {host: tenant.example.com, port: 6443}}",
         "tenant.example.com"},
    };

    (void)state;
    for (size_t i = 0; i < sizeof(changes) / sizeof(changes[0]); i++) {
        cJSON *objs =
                  docs(NCP_HEAD "spec: {certificates: {extraSANs: [a.example.com]}}\n" COMPONENTS),
              *old, *renewed, *spec;
        struct memo_table memo = {0};
        struct render_check_memo m = {&memo, memo_table_passed, memo_table_remember};
        struct render_cluster *rc = resolve_ok(objs, "c");
        struct render_cluster_pki *pki = pki_ok(rc, objs, T0);
        char name[RENDER_CLUSTER_NAME_MAX];
        struct pki_cert_info *info = NULL;
        struct err e = {0};
        bool named = false;
        int before;
        char *crt;

        store_cas(objs, pki);
        render_cluster_set_check_memo(rc, &m);
        old = issue(rc, pki, objs, RENDER_PART_APISERVER);
        cJSON_AddItemToArray(objs, old);
        assert_int_equal(find_certs(rc, pki, objs, RENDER_PART_APISERVER, name, &e), 0);
        render_cluster_pki_free(pki);
        render_cluster_free(rc);

        spec = doc(changes[i].spec);
        cJSON_ReplaceItemInObject(cJSON_GetArrayItem(objs, 0), "spec",
                                  cJSON_DetachItemFromObject(spec, "spec"));
        cJSON_Delete(spec);
        rc = resolve_ok(objs, "c");
        render_cluster_set_check_memo(rc, &m);
        pki = pki_ok(rc, objs, T0);
        before = specs_built;
        assert_int_equal(find_certs(rc, pki, objs, RENDER_PART_APISERVER, name, &e), -ENOENT);
        assert_non_null(strstr(e.msg, "apiserver.crt"));
        assert_non_null(strstr(e.msg, "subject alternative names differ"));
        assert_true(specs_built > before);

        renewed = issue(rc, pki, objs, RENDER_PART_APISERVER);
        assert_string_not_equal(name_of(renewed), name_of(old));
        crt = secret_data(renewed, "apiserver.crt");
        assert_int_equal(pki_cert_info_read(crt, "apiserver.crt", &info, &e), 0);
        for (size_t j = 0; j < info->dns_names.n; j++)
            named |= strcmp(info->dns_names.v[j], changes[i].name) == 0;
        for (size_t j = 0; j < info->ips.n; j++)
            named |= strcmp(info->ips.v[j], changes[i].name) == 0;
        assert_true(named);
        pki_cert_info_free(info);
        free(crt);
        cJSON_AddItemToArray(objs, renewed);
        assert_int_equal(find_certs(rc, pki, objs, RENDER_PART_APISERVER, name, &e), 0);
        assert_string_equal(name, name_of(renewed));
        render_cluster_pki_free(pki);
        render_cluster_free(rc);
        cJSON_Delete(objs);
    }
}

/* The admin's short-lived certificates: leaves valid for an hour, renewed when a third is left,
 * and the moment that happens is told to the caller (to come back then), from a full check and
 * from the memo alike. */
static void test_cluster__short_lived_leaves_say_when_they_are_due(void **state)
{
    cJSON *objs = docs(NCP_HEAD "spec: {}\n" COMPONENTS), *s;
    struct render_cluster *rc = resolve_ok(objs, "c");
    struct render_cluster_pki *pki, *later;
    struct memo_table memo = {0};
    struct render_check_memo m = {&memo, memo_table_passed, memo_table_remember};
    char name[RENDER_CLUSTER_NAME_MAX], *crt;
    struct render_source src;
    int64_t not_after, at = 0, again = 0;
    struct err e = {0};

    render_cluster_set_leaf_validity(rc, 3600);
    pki = pki_ok(rc, objs, T0);
    store_cas(objs, pki);
    s = issue(rc, pki, objs, RENDER_PART_APISERVER);
    cJSON_AddItemToArray(objs, s);
    crt = secret_data(s, "apiserver.crt");
    assert_int_equal(pki_cert_not_after(crt, "apiserver.crt", &not_after, &e), 0);
    free(crt);
    assert_true(not_after >= T0 + 3600 && not_after <= T0 + 3600 + 60);
    /* The CAs keep their years. */
    crt = secret_data(find(objs, "Secret", "c-ca"), "tls.crt");
    int64_t ca_not_after;
    assert_int_equal(pki_cert_not_after(crt, "ca", &ca_not_after, &e), 0);
    assert_true(ca_not_after > T0 + 365 * DAY);
    free(crt);

    render_source_from_objects(objs, &src);
    render_cluster_set_check_memo(rc, &m);
    assert_int_equal(
        render_cluster_certs_find(rc, pki, &src, RENDER_PART_APISERVER, NULL, name, &at, &e), 0);
    assert_int_equal(at, not_after - 1200);
    assert_int_equal(memo.hits, 0);
    /* Remembered: the same moment, with no certificate parsed. */
    assert_int_equal(
        render_cluster_certs_find(rc, pki, &src, RENDER_PART_APISERVER, NULL, name, &again, &e), 0);
    assert_true(memo.hits > 0);
    assert_int_equal(again, at);
    /* At that moment it is due, memo or not. */
    later = pki_ok(rc, objs, at);
    assert_int_equal(
        render_cluster_certs_find(rc, later, &src, RENDER_PART_APISERVER, NULL, name, NULL, &e),
        -ENOENT);
    assert_non_null(strstr(e.msg, "apiserver"));
    render_cluster_pki_free(later);
    later = pki_ok(rc, objs, at - 1);
    assert_int_equal(
        render_cluster_certs_find(rc, later, &src, RENDER_PART_APISERVER, NULL, name, NULL, &e), 0);
    render_cluster_pki_free(later);

    /* The admin's window wins, but never more than half the validity. */
    render_cluster_set_check_memo(rc, NULL);
    render_cluster_set_renew_before(rc, 600);
    later = pki_ok(rc, objs, T0);
    assert_int_equal(
        render_cluster_certs_find(rc, later, &src, RENDER_PART_APISERVER, NULL, name, &at, &e), 0);
    assert_int_equal(at, not_after - 600);
    render_cluster_pki_free(later);
    render_cluster_set_renew_before(rc, 30 * DAY);
    later = pki_ok(rc, objs, T0);
    assert_int_equal(
        render_cluster_certs_find(rc, later, &src, RENDER_PART_APISERVER, NULL, name, &at, &e), 0);
    assert_int_equal(at, not_after - 1800);
    render_cluster_pki_free(later);

    /* The admin kubeconfig tells its moment the same way. */
    cJSON *kc = NULL;
    assert_int_equal(render_cluster_kubeconfig(rc, pki, &src, &kc, &at, &e), 0);
    assert_non_null(kc);
    cJSON_AddItemToArray(objs, kc);
    render_source_from_objects(objs, &src);
    kc = NULL;
    assert_int_equal(render_cluster_kubeconfig(rc, pki, &src, &kc, &at, &e), 0);
    assert_null(kc);
    assert_true(at >= T0 + 2400 && at <= T0 + 2400 + 60); /* pki: a third */
    render_cluster_pki_free(pki);
    render_cluster_free(rc);
    cJSON_Delete(objs);
}

/* Asserts that an etcd server or peer certificate names exactly what docs/certificates.md
 * lists for cluster c in ns1 with ordinals 0 to ordinals - 1, in that order. */
static void assert_etcd_names(const char *crt, int ordinals)
{
    static const char *const forms[] = {"", ".c-etcd", ".c-etcd.ns1", ".c-etcd.ns1.svc",
                                        ".c-etcd.ns1.svc.cluster.local"};
    static const char *const rest[] = {"c-etcd", "c-etcd.ns1", "c-etcd.ns1.svc",
                                       "c-etcd.ns1.svc.cluster.local", "localhost"};
    struct pki_cert_info *info = NULL;
    struct err e = {0};
    size_t n = 0;
    char want[96];

    assert_int_equal(pki_cert_info_read(crt, "crt", &info, &e), 0);
    assert_string_equal(info->common_name, "c-etcd");
    assert_int_equal(info->dns_names.n, (size_t)ordinals * 5 + 5);
    for (int i = 0; i < ordinals; i++)
        for (int f = 0; f < 5; f++) {
            snprintf(want, sizeof(want), "c-etcd-%d%s", i, forms[f]);
            assert_string_equal(info->dns_names.v[n++], want);
        }
    for (int f = 0; f < 5; f++)
        assert_string_equal(info->dns_names.v[n++], rest[f]);
    assert_int_equal(info->ips.n, 2);
    assert_string_equal(info->ips.v[0], "127.0.0.1");
    assert_string_equal(info->ips.v[1], "::1");
    pki_cert_info_free(info);
}

static void test_cluster__etcd_certs_cover_every_ordinal_so_a_scale_keeps_them(void **state)
{
    cJSON *objs = docs(NCP_HEAD "spec: {}\n" COMPONENTS_WITH("{replicas: 1}", "{}", "{}")), *one;
    struct render_cluster *rc = resolve_ok(objs, "c");
    struct render_cluster_pki *pki = pki_ok(rc, objs, T0);
    char name[RENDER_CLUSTER_NAME_MAX];
    struct err e = {0};
    char *crt;

    store_cas(objs, pki);
    one = issue(rc, pki, objs, RENDER_PART_ETCD);
    /* server, peer and healthcheck-client: three keys, whatever the member count */
    assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(one, "data")), 7);
    assert_null(cJSON_GetObjectItem(cJSON_GetObjectItem(one, "data"), "c-etcd-0-server.crt"));
    /* Every ordinal a NestedEtcd may have, 0 to 6, and no other. */
    for (int k = 0; k < 2; k++) {
        crt = secret_data(one, k ? "peer.crt" : "server.crt");
        assert_etcd_names(crt, API_ETCD_MAX_MEMBERS);
        free(crt);
    }
    cJSON_AddItemToArray(objs, one);
    render_cluster_pki_free(pki);
    render_cluster_free(rc);

    /* Scaled to five members, then seven, the Secret is still good: no member restarts for new
     * certs. */
    for (int replicas = 5; replicas <= API_ETCD_MAX_MEMBERS; replicas += 2) {
        cJSON *spec = cJSON_GetObjectItem(cJSON_GetArrayItem(objs, 1), "spec");
        cJSON_ReplaceItemInObject(spec, "replicas", cJSON_CreateNumber(replicas));
        rc = resolve_ok(objs, "c");
        pki = pki_ok(rc, objs, T0);
        assert_int_equal(find_certs(rc, pki, objs, RENDER_PART_ETCD, name, &e), 0);
        assert_string_equal(name, name_of(one));
        render_cluster_pki_free(pki);
        render_cluster_free(rc);
    }
    cJSON_Delete(objs);
}

/* An etcd server or peer pair for cluster c in ns1 as another version of nestcp issued it:
 * the shared spec naming `ordinals` ordinals, plus extra (a DNS name; NULL: none), signed by
 * the etcd CA in objs. The Secret's pair is replaced by it. */
static void put_etcd_pair(const cJSON *objs, cJSON *secret, enum pki_kubeadm_cert which,
                          int ordinals, const char *extra)
{
    const cJSON *ca = find(objs, "Secret", "c-etcd");
    char *ca_crt = secret_data(ca, "tls.crt"), *ca_key = secret_data(ca, "tls.key");
    struct pki_cluster pc = {.name = "c", .ns = "ns1", .etcd_members = ordinals, .now = T0};
    const char *stem = which == PKI_KUBEADM_ETCD_SERVER ? "server" : "peer";
    cJSON *data = cJSON_GetObjectItem(secret, "data");
    struct pki_cert_spec spec;
    char *crt = NULL, *key = NULL, k[32];
    struct err e = {0};

    assert_int_equal(pki_kubeadm_spec(&pc, which, -1, &spec, &e), 0);
    if (extra)
        assert_int_equal(pki_cert_spec_add_dns(&spec, extra, &e), 0);
    assert_int_equal(pki_cert_issue(ca_crt, ca_key, &spec, &crt, &key, &e), 0);
    pki_cert_spec_done(&spec);
    snprintf(k, sizeof(k), "%s.crt", stem);
    set_b64(data, k, crt);
    snprintf(k, sizeof(k), "%s.key", stem);
    set_b64(data, k, key);
    free(crt);
    free(key);
    free(ca_crt);
    free(ca_key);
}

/* The etcd server and peer certificates of a cluster made by an earlier nestcp name the 16
 * ordinals 0 to 15. They are kept, with or without the check memo, until they are due for
 * renewal (a new pair would restart every member); then the new pair names 0 to 6. */
static void test_cluster__a_legacy_etcd_pair_naming_16_ordinals_is_kept_until_due(void **state)
{
    cJSON *objs = docs(NCP_HEAD "spec: {}\n" COMPONENTS_WITH("{replicas: 3}", "{}", "{}")), *s,
          *renewed;
    struct render_cluster *rc = resolve_ok(objs, "c");
    struct memo_table memo = {0};
    struct render_check_memo m = {&memo, memo_table_passed, memo_table_remember};
    struct render_cluster_pki *pki = pki_ok(rc, objs, T0), *later;
    char name[RENDER_CLUSTER_NAME_MAX], *crt;
    struct err e = {0};
    int hits;

    (void)state;
    store_cas(objs, pki);
    s = issue(rc, pki, objs, RENDER_PART_ETCD);
    put_etcd_pair(objs, s, PKI_KUBEADM_ETCD_SERVER, 16, NULL);
    put_etcd_pair(objs, s, PKI_KUBEADM_ETCD_PEER, 16, NULL);
    cJSON_AddItemToArray(objs, s);
    crt = secret_data(s, "server.crt");
    assert_etcd_names(crt, 16);
    free(crt);

    assert_int_equal(find_certs(rc, pki, objs, RENDER_PART_ETCD, name, &e), 0);
    assert_string_equal(name, name_of(s));
    render_cluster_set_check_memo(rc, &m);
    assert_int_equal(find_certs(rc, pki, objs, RENDER_PART_ETCD, name, &e), 0);
    hits = memo.hits;
    assert_int_equal(find_certs(rc, pki, objs, RENDER_PART_ETCD, name, &e), 0);
    assert_int_equal(memo.hits - hits, 3);
    /* Half a year on, still kept; within the renewal window, renewed in the new form. */
    render_cluster_set_check_memo(rc, NULL);
    later = pki_ok(rc, objs, T0 + 180 * DAY);
    assert_int_equal(find_certs(rc, later, objs, RENDER_PART_ETCD, name, &e), 0);
    render_cluster_pki_free(later);
    later = pki_ok(rc, objs, T0 + 340 * DAY);
    assert_int_equal(find_certs(rc, later, objs, RENDER_PART_ETCD, name, &e), -ENOENT);
    /* (What the check of today's spec says: the legacy pair is kept only while it is not due.) */
    assert_non_null(strstr(e.msg, "server.crt: c-etcd: subject alternative names differ"));
    renewed = issue(rc, later, objs, RENDER_PART_ETCD);
    for (int k = 0; k < 2; k++) {
        crt = secret_data(renewed, k ? "peer.crt" : "server.crt");
        assert_etcd_names(crt, API_ETCD_MAX_MEMBERS);
        free(crt);
    }
    cJSON_Delete(renewed);
    render_cluster_pki_free(later);
    render_cluster_pki_free(pki);
    render_cluster_free(rc);
    cJSON_Delete(objs);
}

/* Only exactly the legacy names are kept: a pair with one more name, or naming 8 ordinals (as
 * neither version issued), is reissued. */
static void test_cluster__an_etcd_pair_with_other_names_is_refused(void **state)
{
    static const struct {
        int ordinals;
        const char *extra;
    } odd[] = {{16, "evil.example.com"}, {API_ETCD_MAX_MEMBERS, "evil.example.com"}, {8, NULL}};

    (void)state;
    for (size_t i = 0; i < sizeof(odd) / sizeof(odd[0]); i++) {
        for (int k = 0; k < 2; k++) {
            enum pki_kubeadm_cert which = k ? PKI_KUBEADM_ETCD_PEER : PKI_KUBEADM_ETCD_SERVER;
            cJSON *objs = docs(NCP_HEAD "spec: {}\n" COMPONENTS), *s;
            struct render_cluster *rc = resolve_ok(objs, "c");
            struct render_cluster_pki *pki = pki_ok(rc, objs, T0);
            char name[RENDER_CLUSTER_NAME_MAX], want[64];
            struct err e = {0};

            store_cas(objs, pki);
            s = issue(rc, pki, objs, RENDER_PART_ETCD);
            put_etcd_pair(objs, s, which, odd[i].ordinals, odd[i].extra);
            cJSON_AddItemToArray(objs, s);
            assert_int_equal(find_certs(rc, pki, objs, RENDER_PART_ETCD, name, &e), -ENOENT);
            snprintf(want, sizeof(want), "%s.crt: c-etcd: subject alternative names differ",
                     k ? "peer" : "server");
            assert_non_null(strstr(e.msg, want));
            render_cluster_pki_free(pki);
            render_cluster_free(rc);
            cJSON_Delete(objs);
        }
    }
}

static void test_cluster__new_ca_regenerates_every_leaf(void **state)
{
    cJSON *objs = docs(NCP_HEAD "spec: {}\n" COMPONENTS), *old, *renewed;
    struct render_cluster *rc = resolve_ok(objs, "c");
    struct render_cluster_pki *pki = pki_ok(rc, objs, T0);
    char name[RENDER_CLUSTER_NAME_MAX];
    struct err e = {0};

    store_cas(objs, pki);
    old = issue(rc, pki, objs, RENDER_PART_APISERVER);
    cJSON_AddItemToArray(objs, old);
    render_cluster_pki_free(pki);
    /* Replace the cluster CA. */
    cJSON_Delete(cJSON_DetachItemViaPointer(objs, (cJSON *)find(objs, "Secret", "c-ca")));
    assert_null(find(objs, "Secret", "c-ca"));
    cJSON_AddItemToArray(objs, ca_secret("ca", true));
    pki = pki_ok(rc, objs, T0);
    assert_int_equal(find_certs(rc, pki, objs, RENDER_PART_APISERVER, name, &e), -ENOENT);
    renewed = issue(rc, pki, objs, RENDER_PART_APISERVER);
    const cJSON *d0 = cJSON_GetObjectItem(old, "data"), *d1 = cJSON_GetObjectItem(renewed, "data");
    /* Signed by the cluster CA: new. Signed by the etcd and front-proxy CAs: kept. */
    assert_string_not_equal(cJSON_GetObjectItem(d1, "apiserver.key")->valuestring,
                            cJSON_GetObjectItem(d0, "apiserver.key")->valuestring);
    assert_string_not_equal(cJSON_GetObjectItem(d1, "apiserver-kubelet-client.key")->valuestring,
                            cJSON_GetObjectItem(d0, "apiserver-kubelet-client.key")->valuestring);
    assert_string_equal(cJSON_GetObjectItem(d1, "apiserver-etcd-client.key")->valuestring,
                        cJSON_GetObjectItem(d0, "apiserver-etcd-client.key")->valuestring);
    char *ca = secret_data(find(objs, "Secret", "c-ca"), "tls.crt"), *copy;
    copy = secret_data(renewed, "ca.crt");
    assert_string_equal(copy, ca);
    free(ca);
    free(copy);
    cJSON_Delete(renewed);
    render_cluster_pki_free(pki);
    render_cluster_free(rc);
    cJSON_Delete(objs);
}

/* ---- kubeconfigs ---- */

static void test_cluster__kubeconfigs(void **state)
{
    cJSON *objs = docs(NCP_HEAD "spec: {controlPlaneEndpoint: {host: tenant.example.com, port: "
                                "443}}\n" COMPONENTS),
          *kc = NULL, *cm;
    struct render_cluster *rc = resolve_ok(objs, "c");
    struct render_cluster_pki *pki = pki_ok(rc, objs, T0), *later;
    struct pki_kubeconfig_creds *creds = NULL;
    struct render_source src;
    struct pki_cert_info *info = NULL;
    struct err e = {0};
    char *text;

    store_cas(objs, pki);
    render_source_from_objects(objs, &src);
    assert_int_equal(render_cluster_kubeconfig(rc, pki, &src, &kc, NULL, &e), 0);
    assert_non_null(kc);
    assert_string_equal(name_of(kc), "c-kubeconfig");
    assert_string_equal(cJSON_GetObjectItem(kc, "type")->valuestring, "cluster.x-k8s.io/secret");
    text = secret_data(kc, "value");
    assert_int_equal(pki_kubeconfig_read(text, strlen(text), "kc", &creds, &e), 0);
    assert_string_equal(creds->server, "https://tenant.example.com:443");
    assert_int_equal(pki_cert_info_read(creds->client_cert_pem, "admin", &info, &e), 0);
    assert_string_equal(info->common_name, "kubernetes-admin");
    assert_string_equal(info->orgs.v[0], "system:masters");
    pki_cert_info_free(info);
    pki_kubeconfig_creds_free(creds);
    free(text);
    cJSON_AddItemToArray(objs, kc);
    /* Kept while good, renewed within renewBeforeDays. */
    assert_int_equal(render_cluster_kubeconfig(rc, pki, &src, &kc, NULL, &e), 0);
    assert_null(kc);
    later = pki_ok(rc, objs, T0 + 350 * DAY);
    assert_int_equal(render_cluster_kubeconfig(rc, later, &src, &kc, NULL, &e), 0);
    assert_non_null(kc);
    cJSON_Delete(kc);
    render_cluster_pki_free(later);

    /* The controller manager's: in-cluster server, its own identity. */
    cm = issue(rc, pki, objs, RENDER_PART_CONTROLLER_MANAGER);
    text = secret_data(cm, "controller-manager.conf");
    assert_int_equal(pki_kubeconfig_read(text, strlen(text), "cm", &creds, &e), 0);
    assert_string_equal(creds->server, "https://c-apiserver.ns1.svc:6443");
    assert_int_equal(pki_cert_info_read(creds->client_cert_pem, "cm", &info, &e), 0);
    assert_string_equal(info->common_name, "system:kube-controller-manager");
    free(text);
    text = secret_data(cm, "ca.key");
    assert_non_null(strstr(text, "PRIVATE KEY"));
    free(text);
    pki_cert_info_free(info);
    pki_kubeconfig_creds_free(creds);
    cJSON_Delete(cm);
    render_cluster_pki_free(pki);
    render_cluster_free(rc);
    cJSON_Delete(objs);
}

/* ---- config hash ---- */

static void hash_of(const char *text, const char *certs, char out[RENDER_CLUSTER_HASH_MAX],
                    enum render_part part)
{
    cJSON *objs = docs(text), *r;
    struct render_cluster *rc = resolve_ok(objs, "c");

    r = render_part(rc, part, certs, out);
    assert_int_equal(strlen(out), 64);
    assert_string_equal(render_cluster_config_hash(r), out);
    cJSON_Delete(r);
    render_cluster_free(rc);
    cJSON_Delete(objs);
}

static void test_cluster__config_hash_tracks_what_pods_run(void **state)
{
    char a[RENDER_CLUSTER_HASH_MAX], b[RENDER_CLUSTER_HASH_MAX];
    const char *base = NCP_HEAD "spec: {version: 1.36.3}\n" COMPONENTS;

    hash_of(base, "c-apiserver-certs-1", a, RENDER_PART_APISERVER);
    hash_of(base, "c-apiserver-certs-1", b, RENDER_PART_APISERVER);
    assert_string_equal(a, b);
    hash_of(NCP_HEAD "spec: {version: 1.36.3, featureGates: {OpenAPIEnums: false}}\n" COMPONENTS,
            "c-apiserver-certs-1", b, RENDER_PART_APISERVER);
    assert_string_not_equal(a, b);
    hash_of(NCP_HEAD "spec: {version: 1.37.2}\n" COMPONENTS, "c-apiserver-certs-1", b,
            RENDER_PART_APISERVER);
    assert_string_not_equal(a, b);
    hash_of(NCP_HEAD
            "spec: {version: 1.36.3}\n" COMPONENTS_WITH("{}", "{extraArgs: {v: '4'}}", "{}"),
            "c-apiserver-certs-1", b, RENDER_PART_APISERVER);
    assert_string_not_equal(a, b);
    hash_of(base, "c-apiserver-certs-2", b, RENDER_PART_APISERVER);
    assert_string_not_equal(a, b);
    /* More API servers do not restart the running ones. */
    hash_of(NCP_HEAD "spec: {version: 1.36.3}\n" COMPONENTS_WITH("{}", "{replicas: 3}", "{}"),
            "c-apiserver-certs-1", b, RENDER_PART_APISERVER);
    assert_string_equal(a, b);
}

/* The NestedControlPlane controller's view: unknown until a certs Secret exists. */
static void test_cluster__desired_needs_a_certs_secret(void **state)
{
    cJSON *objs = docs(NCP_HEAD "spec: {}\n" COMPONENTS);
    struct render_cluster *rc = resolve_ok(objs, "c");
    struct render_cluster_pki *pki = pki_ok(rc, objs, T0);
    struct render_cluster_desired d;
    struct render_source src;
    char hash[RENDER_CLUSTER_HASH_MAX];
    struct err e = {0};
    cJSON *s, *r;

    store_cas(objs, pki);
    render_source_from_objects(objs, &src);
    assert_int_equal(render_cluster_desired(catalog, rc, pki, &src, RENDER_PART_ETCD, NULL, &d, &e),
                     0);
    assert_false(d.known);
    assert_string_equal(d.version, "3.6.17");
    s = issue(rc, pki, objs, RENDER_PART_ETCD);
    cJSON_AddItemToArray(objs, s);
    assert_int_equal(render_cluster_desired(catalog, rc, pki, &src, RENDER_PART_ETCD, NULL, &d, &e),
                     0);
    assert_true(d.known);
    assert_string_equal(d.certs_name, name_of(s));
    r = render_part(rc, RENDER_PART_ETCD, name_of(s), hash);
    assert_string_equal(d.config_hash, hash);
    cJSON_Delete(r);
    render_cluster_pki_free(pki);
    render_cluster_free(rc);
    cJSON_Delete(objs);
}

/* ---- the whole cluster ---- */

static void test_cluster__all_in_apply_order_and_owned(void **state)
{
    cJSON *objs = docs(NCP_HEAD "spec: {}\n" COMPONENTS_WITH(
              "{replicas: 3, storage: {emptyDir: {sizeLimit: 2Gi}}}", "{}", "{}")),
          *out = NULL, *again = NULL;
    static const char *const order[][2] = {
        {"Secret", "c-ca"},
        {"Secret", "c-etcd"},
        {"Secret", "c-proxy"},
        {"Secret", "c-sa"},
        {"Secret", "c-etcd-certs-"},
        {"Secret", "c-apiserver-certs-"},
        {"Secret", "c-controller-manager-certs-"},
        {"Secret", "c-kubeconfig"},
        {"Service", "c-etcd"},
        {"StatefulSet", "c-etcd"},
        {"NetworkPolicy", "c-etcd"},
        {"ConfigMap", "c-apiserver-authn"},
        {"Service", "c-apiserver"},
        {"StatefulSet", "c-apiserver"},
        {"NetworkPolicy", "c-apiserver"},
        {"Service", "c-controller-manager"},
        {"StatefulSet", "c-controller-manager"},
    };
    struct api_errors errs = API_ERRORS_INIT;
    struct render_cluster *rc = resolve_ok(objs, "c");
    struct render_source src;
    const cJSON *o;
    int i = 0;

    render_source_from_objects(objs, &src);
    assert_int_equal(render_cluster_all(catalog, rc, &src, T0, &out, &errs), 0);
    assert_int_equal(cJSON_GetArraySize(out), 17);
    cJSON_ArrayForEach(o, out) {
        assert_string_equal(cJSON_GetObjectItem(o, "kind")->valuestring, order[i][0]);
        assert_true(strncmp(name_of(o), order[i][1], strlen(order[i][1])) == 0);
        i++;
    }
    const cJSON *sts = find(out, "StatefulSet", "c-etcd");
    const cJSON *own =
        cJSON_GetObjectItem(cJSON_GetObjectItem(sts, "metadata"), "ownerReferences")->child;
    assert_string_equal(cJSON_GetObjectItem(own, "kind")->valuestring, "NestedEtcd");
    assert_true(cJSON_IsTrue(cJSON_GetObjectItem(own, "controller")));
    own = cJSON_GetObjectItem(cJSON_GetObjectItem(find(out, "Secret", "c-ca"), "metadata"),
                              "ownerReferences")
              ->child;
    assert_string_equal(cJSON_GetObjectItem(own, "kind")->valuestring, "NestedControlPlane");
    assert_string_equal(cJSON_GetObjectItem(own, "uid")->valuestring, "ncp-uid");
    assert_string_equal(container_flag(find(out, "StatefulSet", "c-apiserver"), "etcd-servers"),
                        "https://c-etcd-0.c-etcd.ns1.svc:2379,https://c-etcd-1.c-etcd.ns1.svc:2379,"
                        "https://c-etcd-2.c-etcd.ns1.svc:2379");
    assert_string_equal(
        cJSON_GetObjectItem(
            cJSON_GetObjectItem(render_pod_spec(sts), "volumes")->child->child->next, "sizeLimit")
            ->valuestring,
        "2Gi");
    /* Given back what it made, it makes nothing new and renders the same workloads. */
    cJSON_ArrayForEach(o, out)
        cJSON_AddItemToArray(objs, cJSON_Duplicate(o, true));
    render_source_from_objects(objs, &src);
    assert_int_equal(render_cluster_all(catalog, rc, &src, T0, &again, &errs), 0);
    assert_int_equal(cJSON_GetArraySize(again), 9);
    char *a = cJSON_PrintUnformatted(cJSON_GetArrayItem(again, 5)),
         *b = cJSON_PrintUnformatted(cJSON_GetArrayItem(out, 13));
    assert_string_equal(a, b);
    free(a);
    free(b);
    cJSON_Delete(again);
    cJSON_Delete(out);
    api_errors_done(&errs);
    render_cluster_free(rc);
    cJSON_Delete(objs);
}

/* The newest certs Secret of a component among objs (name prefix), or NULL. */
static const cJSON *new_certs(const cJSON *out, const char *prefix)
{
    const cJSON *o, *found = NULL;

    cJSON_ArrayForEach(o, out) {
        if (strcmp(cJSON_GetObjectItem(o, "kind")->valuestring, "Secret") == 0 &&
            strncmp(name_of(o), prefix, strlen(prefix)) == 0)
            found = o;
    }
    return found;
}

/* Renders objs and keeps what it made in objs, as a cluster would; returns the output. */
static cJSON *render_into(const struct render_cluster *rc, cJSON *objs)
{
    struct api_errors errs = API_ERRORS_INIT;
    struct render_source src;
    cJSON *out = NULL;
    const cJSON *o;

    render_source_from_objects(objs, &src);
    if (render_cluster_all(catalog, rc, &src, T0, &out, &errs) < 0) {
        struct buf b = BUF_INIT;
        api_errors_format(&errs, &b);
        print_error("render: %s\n", b.data);
        fail();
    }
    api_errors_done(&errs);
    cJSON_ArrayForEach(o, out) {
        if (strcmp(cJSON_GetObjectItem(o, "kind")->valuestring, "Secret") == 0 &&
            !find(objs, "Secret", name_of(o)))
            cJSON_AddItemToArray(objs, cJSON_Duplicate(o, true));
    }
    return out;
}

static void test_cluster__a_rotating_service_account_key_renders_its_phase(void **state)
{
    cJSON *objs = docs(NCP_HEAD "spec: {}\n" COMPONENTS), *out, *data;
    struct render_cluster *rc = resolve_ok(objs, "c");
    char *old_pub, *old_key, *new_key = NULL, *new_pub = NULL, *v;
    const cJSON *certs;
    struct err e = {0};

    (void)state;
    cJSON_Delete(render_into(rc, objs));
    data = cJSON_GetObjectItem((cJSON *)find(objs, "Secret", "c-sa"), "data");
    old_pub = secret_data(find(objs, "Secret", "c-sa"), "tls.crt");
    old_key = secret_data(find(objs, "Secret", "c-sa"), "tls.key");
    assert_int_equal(pki_key_generate(PKI_KEY_ECDSA_P256, &new_key, &e), 0);
    assert_int_equal(pki_key_public_pem(new_key, &new_pub, &e), 0);

    /* Phase 1: the API servers verify with both keys and sign with the old one; the
     * controller manager is untouched. */
    set_b64(data, PKI_SECRET_SA_NEXT_PUB, new_pub);
    set_b64(data, PKI_SECRET_SA_NEXT_KEY, new_key);
    out = render_into(rc, objs);
    certs = new_certs(out, "c-apiserver-certs-");
    assert_non_null(certs);
    assert_null(new_certs(out, "c-controller-manager-certs-"));
    v = secret_data(certs, "sa.pub");
    assert_true(strncmp(v, old_pub, strlen(old_pub)) == 0);
    assert_string_equal(v + strlen(old_pub), new_pub);
    free(v);
    v = secret_data(certs, "sa.key");
    assert_string_equal(v, old_key);
    free(v);
    assert_string_equal(container_flag(find(out, "StatefulSet", "c-apiserver"),
                                       "service-account-max-token-expiration"),
                        "86400s");
    assert_string_equal(container_flag(find(out, "StatefulSet", "c-apiserver"),
                                       "service-account-extend-token-expiration"),
                        "false");
    cJSON_Delete(out);

    /* Phase 2: both sign with the new key; the old one still verifies. */
    set_b64(data, "tls.crt", new_pub);
    set_b64(data, "tls.key", new_key);
    set_b64(data, PKI_SECRET_SA_PREVIOUS_PUB, old_pub);
    cJSON_DeleteItemFromObject(data, PKI_SECRET_SA_NEXT_PUB);
    cJSON_DeleteItemFromObject(data, PKI_SECRET_SA_NEXT_KEY);
    out = render_into(rc, objs);
    v = secret_data(new_certs(out, "c-apiserver-certs-"), "sa.pub");
    assert_true(strncmp(v, new_pub, strlen(new_pub)) == 0);
    assert_string_equal(v + strlen(new_pub), old_pub);
    free(v);
    v = secret_data(new_certs(out, "c-apiserver-certs-"), "sa.key");
    assert_string_equal(v, new_key);
    free(v);
    v = secret_data(new_certs(out, "c-controller-manager-certs-"), "sa.key");
    assert_string_equal(v, new_key);
    free(v);
    cJSON_Delete(out);

    /* Phase 3: the old public key is gone. */
    cJSON_DeleteItemFromObject(data, PKI_SECRET_SA_PREVIOUS_PUB);
    out = render_into(rc, objs);
    assert_null(new_certs(out, "c-controller-manager-certs-"));
    v = secret_data(new_certs(out, "c-apiserver-certs-"), "sa.pub");
    assert_string_equal(v, new_pub);
    free(v);
    cJSON_Delete(out);

    /* A next key that is not the next public key's half is refused by name. */
    set_b64(data, PKI_SECRET_SA_NEXT_PUB, old_pub);
    set_b64(data, PKI_SECRET_SA_NEXT_KEY, new_key);
    {
        struct api_errors errs = API_ERRORS_INIT;
        struct render_source src;
        cJSON *bad = NULL;
        render_source_from_objects(objs, &src);
        assert_int_equal(render_cluster_all(catalog, rc, &src, T0, &bad, &errs), -EINVAL);
        assert_true(
            api_errors_contains(&errs, "Secret ns1/c-sa: next.key does not match next.pub"));
        api_errors_done(&errs);
    }
    free(old_pub);
    OPENSSL_clear_free(old_key, strlen(old_key));
    OPENSSL_clear_free(new_key, strlen(new_key));
    free(new_pub);
    render_cluster_free(rc);
    cJSON_Delete(objs);
}

/* True when the first certificate of leaf_pem verifies with the key of ca_pem's first. */
static bool signed_by(const char *leaf_pem, const char *ca_pem)
{
    BIO *lb = BIO_new_mem_buf(leaf_pem, -1), *cb = BIO_new_mem_buf(ca_pem, -1);
    X509 *leaf = PEM_read_bio_X509(lb, NULL, NULL, NULL);
    X509 *ca = PEM_read_bio_X509(cb, NULL, NULL, NULL);
    EVP_PKEY *k = ca ? X509_get0_pubkey(ca) : NULL;
    bool ok = leaf && k && X509_verify(leaf, k) == 1;

    X509_free(leaf);
    X509_free(ca);
    BIO_free(lb);
    BIO_free(cb);
    return ok;
}

/* What a certs Secret of out holds under key, decoded; the Secret must be new in out. */
static char *new_value(const cJSON *out, const char *prefix, const char *key)
{
    const cJSON *s = new_certs(out, prefix);

    assert_non_null(s);
    return secret_data(s, key);
}

/* Both CAs, in this order, and nothing else. */
static void assert_bundle(const char *v, const char *first, const char *second)
{
    assert_true(strncmp(v, first, strlen(first)) == 0);
    assert_string_equal(v + strlen(first), second ? second : "");
}

/* A rendered cluster c and a new CA for the CA Secret c-<purpose>, both CAs as PEM. */
struct ca_rot {
    cJSON *objs, *data, *made;
    struct render_cluster *rc;
    char *old_crt, *old_key, *new_crt, *new_key;
};

static void ca_rot_begin(struct ca_rot *f, const char *purpose)
{
    char name[64];

    snprintf(name, sizeof(name), "c-%s", purpose);
    f->objs = docs(NCP_HEAD "spec: {}\n" COMPONENTS);
    f->rc = resolve_ok(f->objs, "c");
    cJSON_Delete(render_into(f->rc, f->objs));
    f->data = cJSON_GetObjectItem((cJSON *)find(f->objs, "Secret", name), "data");
    f->old_crt = secret_data(find(f->objs, "Secret", name), "tls.crt");
    f->old_key = secret_data(find(f->objs, "Secret", name), "tls.key");
    f->made = ca_secret(purpose, true);
    f->new_crt = secret_data(f->made, "tls.crt");
    f->new_key = secret_data(f->made, "tls.key");
}

/* The Secret as phase 2 leaves it: the new CA signs, the old one is kept with its key. */
static void ca_rot_switch(struct ca_rot *f)
{
    set_b64(f->data, "tls.crt", f->new_crt);
    set_b64(f->data, "tls.key", f->new_key);
    set_b64(f->data, PKI_SECRET_CA_PREVIOUS_CRT, f->old_crt);
    set_b64(f->data, PKI_SECRET_CA_PREVIOUS_KEY, f->old_key);
    cJSON_DeleteItemFromObject(f->data, PKI_SECRET_CA_NEXT_CRT);
    cJSON_DeleteItemFromObject(f->data, PKI_SECRET_CA_NEXT_KEY);
}

static void ca_rot_end(struct ca_rot *f)
{
    cJSON_Delete(f->made);
    free(f->old_crt);
    OPENSSL_clear_free(f->old_key, strlen(f->old_key));
    free(f->new_crt);
    OPENSSL_clear_free(f->new_key, strlen(f->new_key));
    render_cluster_free(f->rc);
    cJSON_Delete(f->objs);
}

static void test_cluster__a_rotating_cluster_ca_renders_its_phase(void **state)
{
    struct ca_rot f;
    cJSON *objs, *out, *data;
    struct render_cluster *rc;
    const char *old_crt, *new_crt;
    char *v;
    struct pki_kubeconfig_creds *kc = NULL;
    struct err e = {0};

    (void)state;
    ca_rot_begin(&f, "ca");
    objs = f.objs;
    data = f.data;
    rc = f.rc;
    old_crt = f.old_crt;
    new_crt = f.new_crt;

    /* Phase 1: every component trusts both; every certificate still from the old CA. */
    set_b64(data, PKI_SECRET_CA_NEXT_CRT, new_crt);
    set_b64(data, PKI_SECRET_CA_NEXT_KEY, f.new_key);
    out = render_into(rc, objs);
    v = new_value(out, "c-apiserver-certs-", "ca.crt");
    assert_bundle(v, old_crt, new_crt);
    free(v);
    v = new_value(out, "c-controller-manager-certs-", "ca-bundle.crt");
    assert_bundle(v, old_crt, new_crt);
    free(v);
    v = new_value(out, "c-controller-manager-certs-", "ca.crt");
    assert_string_equal(v, old_crt); /* --cluster-signing-cert-file holds exactly one */
    free(v);
    v = new_value(out, "c-apiserver-certs-", "apiserver-kubelet-client.crt");
    assert_true(signed_by(v, old_crt));
    free(v);
    assert_null(new_certs(out, "c-etcd-certs-"));
    v = secret_data(find(out, "Secret", "c-kubeconfig"), "value");
    assert_int_equal(pki_kubeconfig_read(v, strlen(v), "kubeconfig", &kc, &e), 0);
    assert_bundle(kc->ca_cert_pem, old_crt, new_crt);
    assert_true(signed_by(kc->client_cert_pem, old_crt));
    pki_kubeconfig_creds_free(kc);
    free(v);
    cJSON_Delete(out);

    /* Phase 2: clients from the new CA, the serving certificate still from the old one. */
    ca_rot_switch(&f);
    out = render_into(rc, objs);
    v = new_value(out, "c-apiserver-certs-", "ca.crt");
    assert_bundle(v, new_crt, old_crt);
    free(v);
    v = new_value(out, "c-apiserver-certs-", "apiserver-kubelet-client.crt");
    assert_true(signed_by(v, new_crt));
    free(v);
    v = new_value(out, "c-apiserver-certs-", "apiserver.crt");
    assert_true(signed_by(v, old_crt));
    free(v);
    v = new_value(out, "c-controller-manager-certs-", "ca.crt");
    assert_string_equal(v, new_crt);
    free(v);
    v = secret_data(find(out, "Secret", "c-kubeconfig"), "value");
    assert_int_equal(pki_kubeconfig_read(v, strlen(v), "kubeconfig", &kc, &e), 0);
    assert_bundle(kc->ca_cert_pem, new_crt, old_crt);
    assert_true(signed_by(kc->client_cert_pem, new_crt));
    pki_kubeconfig_creds_free(kc);
    free(v);
    cJSON_Delete(out);

    /* Phase 3: the serving certificate from the new CA too; both still trusted. */
    cJSON_DeleteItemFromObject(data, PKI_SECRET_CA_PREVIOUS_KEY);
    out = render_into(rc, objs);
    v = new_value(out, "c-apiserver-certs-", "apiserver.crt");
    assert_true(signed_by(v, new_crt));
    free(v);
    v = new_value(out, "c-apiserver-certs-", "ca.crt");
    assert_bundle(v, new_crt, old_crt);
    free(v);
    assert_null(new_certs(out, "c-controller-manager-certs-"));
    cJSON_Delete(out);

    /* Phase 4: the old CA is trusted nowhere. */
    cJSON_DeleteItemFromObject(data, PKI_SECRET_CA_PREVIOUS_CRT);
    out = render_into(rc, objs);
    v = new_value(out, "c-apiserver-certs-", "ca.crt");
    assert_string_equal(v, new_crt);
    free(v);
    v = new_value(out, "c-controller-manager-certs-", "ca-bundle.crt");
    assert_string_equal(v, new_crt);
    free(v);
    v = secret_data(find(out, "Secret", "c-kubeconfig"), "value");
    assert_int_equal(pki_kubeconfig_read(v, strlen(v), "kubeconfig", &kc, &e), 0);
    assert_string_equal(kc->ca_cert_pem, new_crt);
    pki_kubeconfig_creds_free(kc);
    free(v);
    cJSON_Delete(out);

    /* A previous key without its certificate is refused by name. */
    set_b64(data, PKI_SECRET_CA_PREVIOUS_KEY, f.old_key);
    {
        struct api_errors errs = API_ERRORS_INIT;
        struct render_source src;
        cJSON *bad = NULL;
        render_source_from_objects(objs, &src);
        assert_int_equal(render_cluster_all(catalog, rc, &src, T0, &bad, &errs), -EINVAL);
        assert_true(api_errors_contains(
            &errs, "Secret ns1/c-ca: previous.key is present without previous.crt"));
        api_errors_done(&errs);
    }
    ca_rot_end(&f);
}

/* A rotating CA's next.* and previous.* are checked with its tls.*, under the memo: a Secret
 * that passed is not checked again while it stays the same, and a changed rotation key is
 * checked again and refused naming the Secret and the key. */
static void test_cluster__a_rotating_cas_keys_are_checked_under_the_memo(void **state)
{
    struct memo_table memo = {0};
    struct render_check_memo m = {&memo, memo_table_passed, memo_table_remember};
    struct api_errors errs = API_ERRORS_INIT;
    struct render_cluster_pki *pki = NULL;
    struct render_source src;
    struct ca_rot f;
    char *other = NULL;
    cJSON *out;
    char *v;
    struct err e = {0};

    (void)state;
    ca_rot_begin(&f, "ca");
    ca_rot_switch(&f);
    render_cluster_set_check_memo(f.rc, &m);
    render_cluster_pki_free(pki_ok(f.rc, f.objs, T0));
    assert_int_equal(memo.hits, 0);
    /* Loaded again: each of the four CA Secrets from the memo, the rotation still read. */
    render_cluster_pki_free(pki_ok(f.rc, f.objs, T0));
    assert_int_equal(memo.hits, 4);
    out = render_into(f.rc, f.objs);
    v = new_value(out, "c-apiserver-certs-", "ca.crt");
    assert_bundle(v, f.new_crt, f.old_crt);
    free(v);
    v = new_value(out, "c-apiserver-certs-", "apiserver.crt");
    assert_true(signed_by(v, f.old_crt));
    free(v);
    cJSON_Delete(out);

    /* previous.key replaced by a key of no CA: a new digest, checked, refused by name. */
    assert_int_equal(pki_key_generate(PKI_KEY_ECDSA_P256, &other, &e), 0);
    set_b64(f.data, PKI_SECRET_CA_PREVIOUS_KEY, other);
    render_source_from_objects(f.objs, &src);
    assert_int_equal(render_cluster_pki_load(f.rc, &src, T0, true, &pki, &errs), -EINVAL);
    assert_true(
        api_errors_contains(&errs, "Secret ns1/c-ca: previous.key does not match previous.crt"));
    api_errors_done(&errs);
    OPENSSL_clear_free(other, strlen(other));
    render_cluster_set_check_memo(f.rc, NULL);
    ca_rot_end(&f);
}

/* The etcd CA's serving certificate (etcd's server pair) follows the same phases. */
static void
test_cluster__a_rotating_etcd_ca_keeps_serving_from_the_old_ca_until_phase_three(void **state)
{
    struct ca_rot f;
    const char *old_crt, *new_crt;
    cJSON *out;
    char *v;

    (void)state;
    ca_rot_begin(&f, "etcd");
    old_crt = f.old_crt;
    new_crt = f.new_crt;
    ca_rot_switch(&f);
    out = render_into(f.rc, f.objs);
    v = new_value(out, "c-etcd-certs-", "ca.crt");
    assert_bundle(v, new_crt, old_crt);
    free(v);
    v = new_value(out, "c-etcd-certs-", "server.crt");
    assert_true(signed_by(v, old_crt));
    free(v);
    v = new_value(out, "c-etcd-certs-", "peer.crt");
    assert_true(signed_by(v, new_crt));
    free(v);
    v = new_value(out, "c-apiserver-certs-", "apiserver-etcd-client.crt");
    assert_true(signed_by(v, new_crt));
    free(v);
    v = new_value(out, "c-apiserver-certs-", "etcd-ca.crt");
    assert_bundle(v, new_crt, old_crt);
    free(v);
    cJSON_Delete(out);
    cJSON_DeleteItemFromObject(f.data, PKI_SECRET_CA_PREVIOUS_KEY);
    out = render_into(f.rc, f.objs);
    v = new_value(out, "c-etcd-certs-", "server.crt");
    assert_true(signed_by(v, new_crt));
    free(v);
    cJSON_Delete(out);
    ca_rot_end(&f);
}

/* The front-proxy CA signs one client certificate; both its verifiers trust both CAs. */
static void test_cluster__a_rotating_front_proxy_ca_reissues_its_client_in_phase_two(void **state)
{
    struct ca_rot f;
    const char *old_crt, *new_crt;
    cJSON *out;
    char *v;

    (void)state;
    ca_rot_begin(&f, "proxy");
    old_crt = f.old_crt;
    new_crt = f.new_crt;
    ca_rot_switch(&f);
    out = render_into(f.rc, f.objs);
    v = new_value(out, "c-apiserver-certs-", "front-proxy-client.crt");
    assert_true(signed_by(v, new_crt));
    free(v);
    v = new_value(out, "c-apiserver-certs-", "front-proxy-ca.crt");
    assert_bundle(v, new_crt, old_crt);
    free(v);
    v = new_value(out, "c-controller-manager-certs-", "front-proxy-ca.crt");
    assert_bundle(v, new_crt, old_crt);
    free(v);
    assert_null(new_certs(out, "c-etcd-certs-"));
    cJSON_Delete(out);
    ca_rot_end(&f);
}

static void test_cluster__control_plane_of_a_component(void **state)
{
    cJSON *objs = docs(CAPN "---\n" NCP_HEAD "spec: {}\n" COMPONENTS);
    struct render_source src;
    const cJSON *ncp;

    render_source_from_objects(objs, &src);
    ncp = member_control_plane_of_component(&src, find(objs, "NestedEtcd", "capn-nestedetcd"),
                                            RENDER_PART_ETCD);
    assert_non_null(ncp);
    assert_string_equal(name_of(ncp), "capn-control-plane");
    ncp = member_control_plane_of_component(&src, find(objs, "NestedAPIServer", "c-apiserver"),
                                            RENDER_PART_APISERVER);
    assert_non_null(ncp);
    assert_string_equal(name_of(ncp), "c");
    cJSON_Delete(objs);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cluster__capn_shape_takes_name_and_network_from_the_cluster),
        cmocka_unit_test(test_cluster__a_v1beta2_cluster_resolves_as_a_v1beta1_one),
        cmocka_unit_test(test_cluster__a_v1beta2_reference_to_another_group_names_nothing),
        cmocka_unit_test(test_cluster__control_plane_network_wins_over_the_cluster),
        cmocka_unit_test(test_cluster__standalone_defaults),
        cmocka_unit_test(test_cluster__versions_from_channel_and_component),
        cmocka_unit_test(test_cluster__version_skew_is_refused),
        cmocka_unit_test(test_cluster__component_override_renders_from_its_own_package),
        cmocka_unit_test(test_cluster__feature_gates_component_overrides_cluster),
        cmocka_unit_test(test_cluster__bad_input_names_object_and_field),
        cmocka_unit_test(test_cluster__bad_cluster_network_is_reported_once),
        cmocka_unit_test(test_cluster__existing_ca_is_used_as_it_is),
        cmocka_unit_test(test_cluster__a_ca_expiring_within_the_renewal_window_is_refused),
        cmocka_unit_test(test_cluster__invalid_user_ca_names_secret_and_key),
        cmocka_unit_test(test_cluster__certs_secret_is_reused_while_good),
        cmocka_unit_test(test_cluster__renew_window_is_the_longer_of_cluster_and_manager),
        cmocka_unit_test(test_cluster__short_lived_leaves_say_when_they_are_due),
        cmocka_unit_test(test_cluster__issued_leaves_are_known_checked),
        cmocka_unit_test(test_cluster__a_leaf_pass_lasts_until_it_is_due),
        cmocka_unit_test(test_cluster__a_remembered_leaf_check_builds_no_spec),
        cmocka_unit_test(test_cluster__a_changed_spec_input_misses_the_memo),
        cmocka_unit_test(test_cluster__certs_secret_of_another_owner_is_not_used),
        cmocka_unit_test(test_cluster__etcd_certs_cover_every_ordinal_so_a_scale_keeps_them),
        cmocka_unit_test(test_cluster__a_legacy_etcd_pair_naming_16_ordinals_is_kept_until_due),
        cmocka_unit_test(test_cluster__an_etcd_pair_with_other_names_is_refused),
        cmocka_unit_test(test_cluster__new_ca_regenerates_every_leaf),
        cmocka_unit_test(test_cluster__kubeconfigs),
        cmocka_unit_test(test_cluster__config_hash_tracks_what_pods_run),
        cmocka_unit_test(test_cluster__desired_needs_a_certs_secret),
        cmocka_unit_test(test_cluster__all_in_apply_order_and_owned),
        cmocka_unit_test(test_cluster__a_rotating_service_account_key_renders_its_phase),
        cmocka_unit_test(test_cluster__a_rotating_cluster_ca_renders_its_phase),
        cmocka_unit_test(test_cluster__a_rotating_cas_keys_are_checked_under_the_memo),
        cmocka_unit_test(
            test_cluster__a_rotating_etcd_ca_keeps_serving_from_the_old_ca_until_phase_three),
        cmocka_unit_test(test_cluster__a_rotating_front_proxy_ca_reissues_its_client_in_phase_two),
        cmocka_unit_test(test_cluster__control_plane_of_a_component),
        cmocka_unit_test(test_cluster__the_render_check_renders_once_per_spec),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
