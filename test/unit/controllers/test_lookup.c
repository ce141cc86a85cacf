#include "nested_fixture.h"

#include <errno.h>

#include "controllers/lookup.h"
#include "lib/render/catalog.h"
#include "lib/render/member.h"

/* CAPN's cluster template shape, as Cluster API's controllers leave it (owner references). */
static const char capn_owned[] =
    "apiVersion: cluster.x-k8s.io/v1beta1\n"
    "kind: Cluster\n"
    "metadata: {name: sample, uid: cl-1}\n"
    "spec:\n"
    "  controlPlaneRef: {apiVersion: controlplane.cluster.x-k8s.io/v1beta1, kind: "
    "NestedControlPlane, name: sample-control-plane}\n"
    "  infrastructureRef: {apiVersion: infrastructure.cluster.x-k8s.io/v1beta1, kind: "
    "NestedCluster, name: sample}\n"
    "---\n"
    "apiVersion: controlplane.cluster.x-k8s.io/v1beta1\n"
    "kind: NestedControlPlane\n"
    "metadata:\n"
    "  name: sample-control-plane\n"
    "  uid: ncp-1\n"
    "  ownerReferences: [{apiVersion: cluster.x-k8s.io/v1beta1, kind: Cluster, name: sample, uid: "
    "cl-1}]\n"
    "spec:\n"
    "  etcd: {kind: NestedEtcd, name: sample-nestedetcd}\n"
    "  apiserver: {kind: NestedAPIServer, name: sample-nestedapiserver}\n"
    "---\n"
    "apiVersion: controlplane.cluster.x-k8s.io/v1beta1\n"
    "kind: NestedEtcd\n"
    "metadata: {name: sample-nestedetcd, uid: etcd-1}\n"
    "---\n"
    "apiVersion: controlplane.cluster.x-k8s.io/v1beta1\n"
    "kind: NestedAPIServer\n"
    "metadata:\n"
    "  name: sample-nestedapiserver\n"
    "  uid: kas-1\n"
    "  ownerReferences: [{apiVersion: controlplane.cluster.x-k8s.io/v1beta1, kind: "
    "NestedControlPlane, name: sample-control-plane, uid: ncp-1, controller: true}]\n"
    "---\n"
    "apiVersion: infrastructure.cluster.x-k8s.io/v1beta1\n"
    "kind: NestedCluster\n"
    "metadata: {name: sample, uid: nc-1}\n";

/* The same without owner references: Cluster API's controllers are not installed. */
static const char capn_unowned[] =
    "apiVersion: cluster.x-k8s.io/v1beta1\n"
    "kind: Cluster\n"
    "metadata: {name: sample, uid: cl-1}\n"
    "spec:\n"
    "  controlPlaneRef: {kind: NestedControlPlane, name: sample-control-plane}\n"
    "  infrastructureRef: {kind: NestedCluster, name: sample}\n"
    "---\n"
    "apiVersion: controlplane.cluster.x-k8s.io/v1beta1\n"
    "kind: NestedControlPlane\n"
    "metadata: {name: sample-control-plane, uid: ncp-1}\n"
    "spec:\n"
    "  etcd: {kind: NestedEtcd, name: sample-nestedetcd}\n"
    "---\n"
    "apiVersion: controlplane.cluster.x-k8s.io/v1beta1\n"
    "kind: NestedEtcd\n"
    "metadata: {name: sample-nestedetcd, uid: etcd-1}\n"
    "---\n"
    "apiVersion: infrastructure.cluster.x-k8s.io/v1beta1\n"
    "kind: NestedCluster\n"
    "metadata: {name: sample, uid: nc-1}\n";

static const char standalone[] =
    "apiVersion: controlplane.cluster.x-k8s.io/v1beta1\n"
    "kind: NestedControlPlane\n"
    "metadata:\n"
    "  name: solo-cp\n"
    "  uid: ncp-2\n"
    "  labels: {cluster.x-k8s.io/cluster-name: solo}\n"
    "spec:\n"
    "  controllerManager: {kind: NestedControllerManager, name: solo-kcm}\n"
    "---\n"
    "apiVersion: controlplane.cluster.x-k8s.io/v1beta1\n"
    "kind: NestedControllerManager\n"
    "metadata: {name: solo-kcm, uid: kcm-2}\n"
    "---\n"
    "apiVersion: infrastructure.cluster.x-k8s.io/v1beta1\n"
    "kind: NestedCluster\n"
    "metadata:\n"
    "  name: solo\n"
    "  labels: {cluster.x-k8s.io/cluster-name: solo}\n";

static void test_lookup__cluster_by_owner_reference(void **state)
{
    struct fixture f;
    const cJSON *ncp, *cl;
    bool by_owner = false;

    fx_init(&f);
    fx_put(&f, capn_owned);
    ncp = fx_get(&f, FX_CONTROL_PLANES, "sample-control-plane");
    cl = lookup_capi_cluster(&f.view, ncp, API_KIND_NESTED_CONTROL_PLANE, &by_owner);
    assert_ptr_equal(cl, fx_get(&f, FX_CLUSTERS, "sample"));
    assert_true(by_owner);
    assert_string_equal(lookup_cluster_name(&f.view, ncp, API_KIND_NESTED_CONTROL_PLANE), "sample");
    fx_done(&f);
}

static void test_lookup__cluster_by_its_references_without_cluster_api(void **state)
{
    struct fixture f;
    const cJSON *ncp, *nc;
    bool by_owner = true;

    fx_init(&f);
    fx_put(&f, capn_unowned);
    ncp = fx_get(&f, FX_CONTROL_PLANES, "sample-control-plane");
    nc = fx_get(&f, FX_NESTED_CLUSTERS, "sample");
    assert_ptr_equal(lookup_capi_cluster(&f.view, ncp, API_KIND_NESTED_CONTROL_PLANE, &by_owner),
                     fx_get(&f, FX_CLUSTERS, "sample"));
    assert_false(by_owner);
    assert_string_equal(lookup_cluster_name(&f.view, ncp, API_KIND_NESTED_CONTROL_PLANE), "sample");
    assert_ptr_equal(lookup_capi_cluster(&f.view, nc, API_KIND_NESTED_CLUSTER, NULL),
                     fx_get(&f, FX_CLUSTERS, "sample"));
    assert_ptr_equal(lookup_control_plane_of_nested_cluster(&f.view, nc), ncp);
    assert_ptr_equal(lookup_nested_cluster_of_control_plane(&f.view, ncp), nc);
    fx_done(&f);
}

/* The cache reads Clusters at v1beta2 when the server serves it: references by apiGroup, and
 * owner references of either version (objects made before Cluster API 1.11 keep v1beta1). */
static const char capi_v1beta2[] =
    "apiVersion: cluster.x-k8s.io/v1beta2\n"
    "kind: Cluster\n"
    "metadata: {name: sample, uid: cl-1}\n"
    "spec:\n"
    "  controlPlaneRef: {apiGroup: controlplane.cluster.x-k8s.io, kind: NestedControlPlane, "
    "name: sample-control-plane}\n"
    "  infrastructureRef: {apiGroup: infrastructure.cluster.x-k8s.io, kind: NestedCluster, "
    "name: sample}\n"
    "---\n"
    "apiVersion: controlplane.cluster.x-k8s.io/v1beta1\n"
    "kind: NestedControlPlane\n"
    "metadata:\n"
    "  name: sample-control-plane\n"
    "  uid: ncp-1\n"
    "  ownerReferences: [{apiVersion: cluster.x-k8s.io/v1beta2, kind: Cluster, name: sample, uid: "
    "cl-1}]\n"
    "spec:\n"
    "  etcd: {kind: NestedEtcd, name: sample-nestedetcd}\n"
    "---\n"
    "apiVersion: controlplane.cluster.x-k8s.io/v1beta1\n"
    "kind: NestedEtcd\n"
    "metadata: {name: sample-nestedetcd, uid: etcd-1}\n"
    "---\n"
    "apiVersion: infrastructure.cluster.x-k8s.io/v1beta1\n"
    "kind: NestedCluster\n"
    "metadata:\n"
    "  name: sample\n"
    "  uid: nc-1\n"
    "  ownerReferences: [{apiVersion: cluster.x-k8s.io/v1beta1, kind: Cluster, name: sample, uid: "
    "cl-1}]\n"
    "---\n"
    "apiVersion: cluster.x-k8s.io/v1beta2\n"
    "kind: Cluster\n"
    "metadata: {name: other, uid: cl-2}\n"
    "spec:\n"
    "  controlPlaneRef: {apiGroup: controlplane.example.com, kind: NestedControlPlane, "
    "name: other-cp}\n"
    "---\n"
    "apiVersion: controlplane.cluster.x-k8s.io/v1beta1\n"
    "kind: NestedControlPlane\n"
    "metadata: {name: other-cp, uid: ncp-3}\n";

static void
test_lookup__v1beta2_clusters_match_by_owner_of_either_version_and_by_group(void **state)
{
    struct fixture f;
    const cJSON *ncp, *nc, *cl, *other_cp;
    bool by_owner = false;

    fx_init(&f);
    fx_put(&f, capi_v1beta2);
    cl = fx_get(&f, FX_CLUSTERS, "sample");
    ncp = fx_get(&f, FX_CONTROL_PLANES, "sample-control-plane");
    nc = fx_get(&f, FX_NESTED_CLUSTERS, "sample");
    assert_ptr_equal(lookup_capi_cluster(&f.view, ncp, API_KIND_NESTED_CONTROL_PLANE, &by_owner),
                     cl);
    assert_true(by_owner);
    by_owner = false;
    assert_ptr_equal(lookup_capi_cluster(&f.view, nc, API_KIND_NESTED_CLUSTER, &by_owner), cl);
    assert_true(by_owner);
    assert_string_equal(lookup_cluster_name(&f.view, ncp, API_KIND_NESTED_CONTROL_PLANE), "sample");
    assert_ptr_equal(lookup_control_plane_of_nested_cluster(&f.view, nc), ncp);
    assert_ptr_equal(lookup_nested_cluster_of_control_plane(&f.view, ncp), nc);
    /* A Cluster whose controlPlaneRef is to another group's kind is not this control plane's. */
    other_cp = fx_get(&f, FX_CONTROL_PLANES, "other-cp");
    assert_null(lookup_capi_cluster(&f.view, other_cp, API_KIND_NESTED_CONTROL_PLANE, &by_owner));
    assert_false(by_owner);
    assert_string_equal(lookup_cluster_name(&f.view, other_cp, API_KIND_NESTED_CONTROL_PLANE),
                        "other-cp");
    fx_done(&f);
}

static void test_lookup__owner_cluster_missing_from_cache_gives_none(void **state)
{
    struct fixture f;
    const cJSON *ncp;
    bool by_owner = false;

    fx_init(&f);
    fx_put(&f, capn_owned);
    ncp = fx_get(&f, FX_CONTROL_PLANES, "sample-control-plane");
    /* A Cluster named by the owner reference that is not cached is not replaced by a guess. */
    cJSON *old = NULL;
    assert_int_equal(kube_store_remove(&f.stores[FX_CLUSTERS], "default", "sample", &old), 0);
    cJSON_Delete(old);
    assert_null(lookup_capi_cluster(&f.view, ncp, API_KIND_NESTED_CONTROL_PLANE, &by_owner));
    assert_true(by_owner);
    assert_string_equal(lookup_cluster_name(&f.view, ncp, API_KIND_NESTED_CONTROL_PLANE), "sample");
    fx_done(&f);
}

static void test_lookup__standalone_cluster_is_named_by_its_label(void **state)
{
    struct fixture f;
    const cJSON *ncp, *nc;

    fx_init(&f);
    fx_put(&f, standalone);
    ncp = fx_get(&f, FX_CONTROL_PLANES, "solo-cp");
    nc = fx_get(&f, FX_NESTED_CLUSTERS, "solo");
    assert_null(lookup_capi_cluster(&f.view, ncp, API_KIND_NESTED_CONTROL_PLANE, NULL));
    assert_string_equal(lookup_cluster_name(&f.view, ncp, API_KIND_NESTED_CONTROL_PLANE), "solo");
    assert_ptr_equal(lookup_control_plane_of_nested_cluster(&f.view, nc), ncp);
    assert_ptr_equal(lookup_nested_cluster_of_control_plane(&f.view, ncp), nc);
    assert_ptr_equal(lookup_component(&f.view, ncp, RENDER_PART_CONTROLLER_MANAGER),
                     fx_get(&f, FX_CONTROLLER_MANAGERS, "solo-kcm"));
    assert_null(lookup_component(&f.view, ncp, RENDER_PART_ETCD));
    fx_done(&f);
}

static void test_lookup__component_and_its_control_plane(void **state)
{
    struct fixture f;
    const cJSON *ncp, *etcd, *kas;

    fx_init(&f);
    fx_put(&f, capn_owned);
    ncp = fx_get(&f, FX_CONTROL_PLANES, "sample-control-plane");
    etcd = fx_get(&f, FX_ETCDS, "sample-nestedetcd");
    kas = fx_get(&f, FX_APISERVERS, "sample-nestedapiserver");
    assert_ptr_equal(lookup_component(&f.view, ncp, RENDER_PART_ETCD), etcd);
    assert_ptr_equal(lookup_component(&f.view, ncp, RENDER_PART_APISERVER), kas);
    /* by the spec reference (not adopted yet) and by the owner reference */
    assert_ptr_equal(lookup_control_plane_of_component(&f.view, etcd, RENDER_PART_ETCD), ncp);
    assert_ptr_equal(lookup_control_plane_of_component(&f.view, kas, RENDER_PART_APISERVER), ncp);
    fx_done(&f);
}

static void collect(void *userdata, const cJSON *ncp)
{
    const char **names = userdata;

    for (int i = 0; i < 4; i++) {
        if (!names[i]) {
            names[i] = kube_obj_name(ncp);
            return;
        }
    }
}

/* A control plane that names none of its components takes the ones labelled with its cluster
 * name (as render finds them); a change to such a component reaches that control plane. One
 * that names another component of the kind does not take a labelled one. */
static void test_lookup__a_labelled_component_finds_a_control_plane_naming_none(void **state)
{
    struct fixture f;
    const cJSON *ncp, *etcd, *kas;
    const char *names[4] = {NULL};

    fx_init(&f);
    fx_put(&f, "apiVersion: controlplane.cluster.x-k8s.io/v1beta1\n"
               "kind: NestedControlPlane\n"
               "metadata: {name: d, uid: ncp-d}\n"
               "spec: {apiserver: {kind: NestedAPIServer, name: d-other}}\n"
               "---\n"
               "apiVersion: controlplane.cluster.x-k8s.io/v1beta1\n"
               "kind: NestedEtcd\n"
               "metadata: {name: d-etcd, uid: etcd-d, labels: {cluster.x-k8s.io/cluster-name: d}}\n"
               "---\n"
               "apiVersion: controlplane.cluster.x-k8s.io/v1beta1\n"
               "kind: NestedAPIServer\n"
               "metadata: {name: d-kas, uid: kas-d, labels: {cluster.x-k8s.io/cluster-name: d}}\n");
    ncp = fx_get(&f, FX_CONTROL_PLANES, "d");
    etcd = fx_get(&f, FX_ETCDS, "d-etcd");
    kas = fx_get(&f, FX_APISERVERS, "d-kas");
    assert_ptr_equal(lookup_control_plane_of_component(&f.view, etcd, RENDER_PART_ETCD), ncp);
    assert_null(lookup_control_plane_of_component(&f.view, kas, RENDER_PART_APISERVER));
    /* Both ways round, as render resolves the control plane's components. */
    assert_ptr_equal(lookup_component(&f.view, ncp, RENDER_PART_ETCD), etcd);
    assert_null(lookup_component(&f.view, ncp, RENDER_PART_APISERVER));
    lookup_control_planes_for(&f.view, &NESTCP_ETCDS, etcd, collect, names);
    assert_string_equal(names[0], "d");
    fx_done(&f);
}

/* A control plane that names no component of a kind takes the one it controls, or the one
 * labelled with its cluster name; two candidates are none (render says which to name). */
static void test_lookup__an_unnamed_component_is_found_as_render_finds_it(void **state)
{
    struct fixture f;
    struct render_source src;
    struct render_catalog *cat = NULL;
    struct render_cluster *rc = NULL;
    struct api_errors errs = API_ERRORS_INIT;
    struct err e = {0};
    const cJSON *ncp, *kcm;
    char dir[4096];

    fx_init(&f);
    fx_put(&f,
           "apiVersion: controlplane.cluster.x-k8s.io/v1beta1\n"
           "kind: NestedControlPlane\n"
           "metadata: {name: e, uid: ncp-e, labels: {cluster.x-k8s.io/cluster-name: t}}\n"
           "spec: {}\n"
           "---\n"
           "apiVersion: controlplane.cluster.x-k8s.io/v1beta1\n"
           "kind: NestedControllerManager\n"
           "metadata:\n"
           "  name: e-kcm\n"
           "  uid: kcm-e\n"
           "  ownerReferences: [{apiVersion: controlplane.cluster.x-k8s.io/v1beta1, kind: "
           "NestedControlPlane, name: e, uid: ncp-e, controller: true}]\n"
           "---\n"
           "apiVersion: controlplane.cluster.x-k8s.io/v1beta1\n"
           "kind: NestedEtcd\n"
           "metadata: {name: t-etcd-1, uid: etcd-1, labels: {cluster.x-k8s.io/cluster-name: t}}\n"
           "---\n"
           "apiVersion: controlplane.cluster.x-k8s.io/v1beta1\n"
           "kind: NestedEtcd\n"
           "metadata: {name: t-etcd-2, uid: etcd-2, labels: {cluster.x-k8s.io/cluster-name: t}}\n");
    ncp = fx_get(&f, FX_CONTROL_PLANES, "e");
    kcm = fx_get(&f, FX_CONTROLLER_MANAGERS, "e-kcm");
    assert_ptr_equal(lookup_component(&f.view, ncp, RENDER_PART_CONTROLLER_MANAGER), kcm);
    assert_ptr_equal(
        lookup_control_plane_of_component(&f.view, kcm, RENDER_PART_CONTROLLER_MANAGER), ncp);
    assert_null(lookup_component(&f.view, ncp, RENDER_PART_ETCD));
    /* The same source gives render the same answer, and the ambiguity as an error. */
    lookup_source(&f.view, &src);
    snprintf(dir, sizeof(dir), "%s/templates",
             getenv("NESTCP_SOURCE_DIR") ? getenv("NESTCP_SOURCE_DIR") : ".");
    assert_int_equal(render_catalog_open(dir, &cat, &e), 0);
    assert_int_equal(render_cluster_resolve(cat, &src, "default", "e", &rc, &errs), -EINVAL);
    assert_int_equal(errs.n, 1);
    assert_non_null(strstr(errs.lines[0], "2 NestedEtcd objects belong to cluster t"));
    api_errors_done(&errs);
    render_cluster_free(rc);
    render_catalog_free(cat);
    fx_done(&f);
}

static void test_lookup__changes_of_related_objects_concern_their_control_plane(void **state)
{
    static const char others[] =
        "apiVersion: v1\nkind: Secret\n"
        "metadata:\n"
        "  name: sample-etcd-certs-abc\n"
        "  labels: {cluster.x-k8s.io/cluster-name: sample}\n"
        "  ownerReferences: [{apiVersion: controlplane.cluster.x-k8s.io/v1beta1, kind: NestedEtcd, "
        "name: sample-nestedetcd, uid: etcd-1, controller: true}]\n"
        "---\n"
        "apiVersion: v1\nkind: Secret\n"
        "metadata: {name: sample-ca, labels: {cluster.x-k8s.io/cluster-name: sample}}\n"
        "---\n"
        "apiVersion: apps/v1\nkind: StatefulSet\n"
        "metadata:\n"
        "  name: sample-etcd\n"
        "  ownerReferences: [{apiVersion: controlplane.cluster.x-k8s.io/v1beta1, kind: NestedEtcd, "
        "name: sample-nestedetcd, uid: etcd-1, controller: true}]\n"
        "---\n"
        "apiVersion: v1\nkind: Pod\n"
        "metadata:\n"
        "  name: sample-etcd-0\n"
        "  ownerReferences: [{apiVersion: apps/v1, kind: StatefulSet, name: sample-etcd, uid: "
        "sts-1, controller: true}]\n"
        "---\n"
        "apiVersion: v1\nkind: Pod\n"
        "metadata:\n"
        "  name: stray-0\n"
        "  ownerReferences: [{apiVersion: apps/v1, kind: StatefulSet, name: stray, uid: sts-2, "
        "controller: true}]\n"
        "---\n"
        "apiVersion: v1\nkind: Secret\n"
        "metadata: {name: unrelated, labels: {cluster.x-k8s.io/cluster-name: other}}\n";
    struct {
        const struct kube_resource *res;
        enum fx_store store;
        const char *name;
        const char *want;
    } cases[] = {
        {&KUBE_SECRETS, FX_SECRETS, "sample-etcd-certs-abc", "sample-control-plane"},
        {&KUBE_SECRETS, FX_SECRETS, "sample-ca", "sample-control-plane"},
        {&KUBE_STATEFULSETS, FX_STATEFULSETS, "sample-etcd", "sample-control-plane"},
        {&KUBE_PODS, FX_PODS, "sample-etcd-0", "sample-control-plane"},
        {&KUBE_PODS, FX_PODS, "stray-0", NULL},
        {&KUBE_SECRETS, FX_SECRETS, "unrelated", NULL},
        {&CAPI_CLUSTERS, FX_CLUSTERS, "sample", "sample-control-plane"},
        {&NESTCP_NESTED_CLUSTERS, FX_NESTED_CLUSTERS, "sample", "sample-control-plane"},
        {&NESTCP_ETCDS, FX_ETCDS, "sample-nestedetcd", "sample-control-plane"},
        {&NESTCP_CONTROL_PLANES, FX_CONTROL_PLANES, "sample-control-plane", "sample-control-plane"},
    };
    struct fixture f;

    fx_init(&f);
    fx_put(&f, capn_unowned);
    fx_put(&f, others);
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const char *names[4] = {NULL};
        const cJSON *obj = fx_get(&f, cases[i].store, cases[i].name);
        assert_non_null(obj);
        lookup_control_planes_for(&f.view, cases[i].res, obj, collect, names);
        if (cases[i].want) {
            assert_non_null(names[0]);
            assert_string_equal(names[0], cases[i].want);
            assert_null(names[1]);
        } else {
            assert_null(names[0]);
        }
    }
    fx_done(&f);
}

/* ---- the caches' indexes give what the namespace walks gave ---- */

struct rng {
    uint64_t s;
};

static unsigned pick(struct rng *r, unsigned n)
{
    r->s ^= r->s << 13;
    r->s ^= r->s >> 7;
    r->s ^= r->s << 17;
    return (unsigned)((r->s >> 11) % n);
}

static const char *const eq_nss[] = {"default", "other"};

static void add_ref(cJSON *parent, const char *field, const char *kind, const char *name)
{
    cJSON *ref = cJSON_AddObjectToObject(parent, field);

    cJSON_AddStringToObject(ref, "kind", kind);
    cJSON_AddStringToObject(ref, "name", name);
}

static void add_owner(cJSON *md, const char *api_version, const char *kind, const char *name,
                      bool controller)
{
    cJSON *refs = cJSON_GetObjectItemCaseSensitive(md, "ownerReferences"), *ref;

    if (!refs)
        refs = cJSON_AddArrayToObject(md, "ownerReferences");
    ref = cJSON_CreateObject();
    cJSON_AddStringToObject(ref, "apiVersion", api_version);
    cJSON_AddStringToObject(ref, "kind", kind);
    cJSON_AddStringToObject(ref, "name", name);
    cJSON_AddStringToObject(ref, "uid", name);
    if (controller)
        cJSON_AddBoolToObject(ref, "controller", true);
    cJSON_AddItemToArray(refs, ref);
}

/* A random object of the fifth kind given; names come from small sets so that they collide. */
static cJSON *random_object(struct rng *r, int kind)
{
    static const char *const kinds[][2] = {
        {"cluster.x-k8s.io/v1beta1", "Cluster"},
        {"controlplane.cluster.x-k8s.io/v1beta1", "NestedControlPlane"},
        {"controlplane.cluster.x-k8s.io/v1beta1", "NestedEtcd"},
        {"controlplane.cluster.x-k8s.io/v1beta1", "NestedAPIServer"},
        {"infrastructure.cluster.x-k8s.io/v1beta1", "NestedCluster"},
    };
    static const char *const prefix[] = {"c", "p", "e", "a", "n"};
    cJSON *o = cJSON_CreateObject(), *md, *spec;
    char name[16], other[16], ts[32];

    cJSON_AddStringToObject(o, "apiVersion", kinds[kind][0]);
    cJSON_AddStringToObject(o, "kind", kinds[kind][1]);
    md = cJSON_AddObjectToObject(o, "metadata");
    snprintf(name, sizeof(name), "%s%u", prefix[kind], pick(r, 6));
    cJSON_AddStringToObject(md, "name", name);
    cJSON_AddStringToObject(md, "namespace", eq_nss[pick(r, 2)]);
    snprintf(ts, sizeof(ts), "2026-01-0%uT00:00:00Z", 1 + pick(r, 3));
    cJSON_AddStringToObject(md, "creationTimestamp", ts);
    if (pick(r, 2)) {
        unsigned v = pick(r, 8);
        snprintf(other, sizeof(other), "%s%u", pick(r, 2) ? "c" : "p", v);
        cJSON_AddStringToObject(cJSON_AddObjectToObject(md, "labels"),
                                "cluster.x-k8s.io/cluster-name", v == 7 ? "" : other);
    }
    spec = cJSON_AddObjectToObject(o, "spec");
    switch (kind) {
    case 0:
        if (pick(r, 4)) {
            snprintf(other, sizeof(other), "p%u", pick(r, 6));
            add_ref(spec, "controlPlaneRef", pick(r, 8) ? "NestedControlPlane" : "NestedEtcd",
                    other);
        }
        if (pick(r, 4)) {
            snprintf(other, sizeof(other), "n%u", pick(r, 6));
            add_ref(spec, "infrastructureRef", "NestedCluster", other);
        }
        break;
    case 1:
    case 4:
        if (pick(r, 3) == 0) {
            snprintf(other, sizeof(other), "c%u", pick(r, 6));
            add_owner(md, "cluster.x-k8s.io/v1beta1", "Cluster", other, false);
        }
        for (int i = 0; kind == 1 && i < RENDER_PART__COUNT; i++) {
            static const char *const fields[][2] = {
                {"etcd", "NestedEtcd"},
                {"apiserver", "NestedAPIServer"},
                {"controllerManager", "NestedControllerManager"}};
            if (pick(r, 3) == 0) {
                snprintf(other, sizeof(other), "%s%u", prefix[2 + i % 2], pick(r, 6));
                add_ref(spec, fields[i][0], fields[i][1], other);
            }
        }
        break;
    default:
        if (pick(r, 2)) {
            snprintf(other, sizeof(other), "p%u", pick(r, 6));
            add_owner(md, "controlplane.cluster.x-k8s.io/v1beta1", "NestedControlPlane", other,
                      pick(r, 4) != 0);
        }
        break;
    }
    return o;
}

static void say(char **out, size_t *left, const char *what, const char *value)
{
    int n = snprintf(*out, *left, "%s=%s ", what, value ? value : "-");

    assert_true(n > 0 && (size_t)n < *left);
    *out += n;
    *left -= (size_t)n;
}

static void say_obj(char **out, size_t *left, const char *what, const cJSON *obj)
{
    say(out, left, what, obj ? kube_obj_name(obj) : NULL);
}

struct said {
    char **out;
    size_t *left;
    const char *cluster;
};

static void say_each(void *userdata, const cJSON *ncp)
{
    struct said *s = userdata;

    say_obj(s->out, s->left, "for", ncp);
}

static bool say_claimant(void *userdata, const cJSON *ncp)
{
    struct said *s = userdata;

    if (strcmp(lookup_claimed_name(ncp), s->cluster) == 0)
        say_obj(s->out, s->left, "claims", ncp);
    return true;
}

/* Every lookup about every object of f, written out. */
static void describe(struct fixture *f, char *out, size_t left)
{
    static const enum fx_store stores[] = {FX_CLUSTERS, FX_CONTROL_PLANES, FX_ETCDS, FX_APISERVERS,
                                           FX_NESTED_CLUSTERS};
    static const struct kube_resource *const res[] = {&CAPI_CLUSTERS, &NESTCP_CONTROL_PLANES,
                                                      &NESTCP_ETCDS, &NESTCP_APISERVERS,
                                                      &NESTCP_NESTED_CLUSTERS};
    static const char *const prefix[] = {"c", "p", "e", "a", "n"};
    struct render_source src;

    lookup_source(&f->view, &src);
    for (int n = 0; n < 2; n++) {
        for (int k = 0; k < 5; k++) {
            for (int i = 0; i < 8; i++) {
                char name[16];
                const cJSON *obj;
                bool by_owner = false;
                int count = -1;
                struct said s = {&out, &left, NULL};

                snprintf(name, sizeof(name), "%s%d", prefix[k], i);
                obj = kube_store_get(&f->stores[stores[k]], eq_nss[n], name);
                say(&out, &left, "obj", obj ? name : NULL);
                if (!obj)
                    continue;
                lookup_control_planes_for(&f->view, res[k], obj, say_each, &s);
                if (k == 1 || k == 4) {
                    enum api_kind kind =
                        k == 1 ? API_KIND_NESTED_CONTROL_PLANE : API_KIND_NESTED_CLUSTER;
                    say_obj(&out, &left, "cluster",
                            member_capi_cluster(&src, obj, kind, &by_owner, &count));
                    say(&out, &left, "by_owner", by_owner ? "y" : "n");
                    say(&out, &left, "count", count == 0 ? "0" : count == 1 ? "1" : "more");
                    say(&out, &left, "name", lookup_cluster_name(&f->view, obj, kind));
                }
                if (k == 4)
                    say_obj(&out, &left, "ncp",
                            lookup_control_plane_of_nested_cluster(&f->view, obj));
                if (k == 1) {
                    say_obj(&out, &left, "nc",
                            lookup_nested_cluster_of_control_plane(&f->view, obj));
                    for (int p = 0; p < RENDER_PART__COUNT; p++) {
                        count = -1;
                        say_obj(&out, &left, "component",
                                member_component(&src, obj, (enum render_part)p, &count));
                        say(&out, &left, "count", count == 0 ? "0" : count == 1 ? "1" : "more");
                    }
                    s.cluster = lookup_claimed_name(obj);
                    lookup_each_claimant(&f->view, eq_nss[n], s.cluster, say_claimant, &s);
                    say_obj(&out, &left, "of-name",
                            member_control_plane_of_cluster_name(&src, eq_nss[n], name));
                }
                if (k == 2 || k == 3)
                    say_obj(&out, &left, "ncp",
                            lookup_control_plane_of_component(
                                &f->view, obj, k == 2 ? RENDER_PART_ETCD : RENDER_PART_APISERVER));
            }
        }
    }
}

/* Random namespaces of clusters whose names, labels, references and owners collide, changed
 * and trimmed at random: with the indexes every lookup gives what the namespace walks give. */
static void test_lookup__indexes_give_what_the_namespace_walks_give(void **state)
{
    static char with[1 << 16], without[1 << 16];
    struct fixture *a = calloc(1, sizeof(*a)), *b = calloc(1, sizeof(*b));
    struct rng r = {88172645463325252ull};

    (void)state;
    assert_non_null(a);
    assert_non_null(b);
    for (int round = 0; round < 40; round++) {
        fx_init(a);
        fx_init_unindexed(b);
        for (int i = 0; i < 120; i++) {
            int kind = (int)pick(&r, 5);
            cJSON *obj = random_object(&r, kind), *old = NULL;

            if (pick(&r, 10) == 0) {
                const char *ns = kube_obj_namespace(obj), *name = kube_obj_name(obj);
                enum fx_store st = fx_store_of(obj);
                int ra = kube_store_remove(&a->stores[st], ns, name, &old);
                cJSON_Delete(old);
                assert_int_equal(kube_store_remove(&b->stores[st], ns, name, &old), ra);
                cJSON_Delete(old);
                cJSON_Delete(obj);
                continue;
            }
            fx_put_json(b, cJSON_Duplicate(obj, true));
            fx_put_json(a, obj);
        }
        describe(a, with, sizeof(with));
        describe(b, without, sizeof(without));
        assert_string_equal(with, without);
        fx_done(a);
        fx_done(b);
    }
    free(a);
    free(b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_lookup__cluster_by_owner_reference),
        cmocka_unit_test(test_lookup__cluster_by_its_references_without_cluster_api),
        cmocka_unit_test(
            test_lookup__v1beta2_clusters_match_by_owner_of_either_version_and_by_group),
        cmocka_unit_test(test_lookup__owner_cluster_missing_from_cache_gives_none),
        cmocka_unit_test(test_lookup__standalone_cluster_is_named_by_its_label),
        cmocka_unit_test(test_lookup__component_and_its_control_plane),
        cmocka_unit_test(test_lookup__a_labelled_component_finds_a_control_plane_naming_none),
        cmocka_unit_test(test_lookup__an_unnamed_component_is_found_as_render_finds_it),
        cmocka_unit_test(test_lookup__changes_of_related_objects_concern_their_control_plane),
        cmocka_unit_test(test_lookup__indexes_give_what_the_namespace_walks_give),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
