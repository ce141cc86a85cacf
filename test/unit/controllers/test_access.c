/*
 * Least RBAC that keeps up with the code: config/rbac grants exactly the rows of the access
 * table (controllers/access.c), and the table is what the manager does: its caches list and
 * watch, a whole create / upgrade / renew / delete cycle of a control plane sends exactly its
 * plan verbs, and every kind any package line renders is one the component controllers write,
 * with the verbs that takes.
 */

#include "nested_sim.h"

#include "controllers/access.h"
#include "lib/render/render.h"

#define MAX_RIGHTS 256

/* A set of rights, each "group|resource|verb|name". */
struct rights {
    char v[MAX_RIGHTS][160];
    int n;
};

static bool rights_has(const struct rights *r, const char *s)
{
    for (int i = 0; i < r->n; i++)
        if (strcmp(r->v[i], s) == 0)
            return true;
    return false;
}

static void rights_add(struct rights *r, const char *group, const char *resource, const char *verb,
                       const char *name)
{
    char s[160];

    snprintf(s, sizeof(s), "%s|%s|%s|%s", group, resource, verb, name ? name : "");
    if (rights_has(r, s))
        return;
    assert_true(r->n < MAX_RIGHTS);
    snprintf(r->v[r->n++], sizeof(r->v[0]), "%s", s);
}

/* Every verb of a space-separated list. */
static void rights_add_words(struct rights *r, const char *group, const char *resource,
                             const char *verbs, const char *name)
{
    char verb[32];

    while (*verbs) {
        size_t n = strcspn(verbs, " ");
        snprintf(verb, sizeof(verb), "%.*s", (int)n, verbs);
        rights_add(r, group, resource, verb, name);
        verbs += n + (verbs[n] == ' ');
    }
}

/* The rights an RBAC Role or ClusterRole file grants. */
static void rights_of_role(const char *file, struct rights *r)
{
    const char *src = getenv("NESTCP_SOURCE_DIR");
    char path[4096], *text = NULL;
    cJSON *role = NULL;
    const cJSON *rule;
    struct err e = {0};

    snprintf(path, sizeof(path), "%s/config/rbac/%s", src ? src : ".", file);
    if (util_read_file(path, 1 << 20, &text, NULL) < 0)
        fail_msg("cannot read %s", path);
    assert_int_equal(yamlconv_parse_one(text, strlen(text), path, &role, &e), 0);
    free(text);
    cJSON_ArrayForEach(rule, cJSON_GetObjectItem(role, "rules")) {
        const cJSON *g, *res, *verb, *name;
        cJSON_ArrayForEach(g, cJSON_GetObjectItem(rule, "apiGroups"))
            cJSON_ArrayForEach(res, cJSON_GetObjectItem(rule, "resources"))
                cJSON_ArrayForEach(verb, cJSON_GetObjectItem(rule, "verbs")) {
                    const cJSON *names = cJSON_GetObjectItem(rule, "resourceNames");
                    if (cJSON_GetArraySize(names) == 0) {
                        rights_add(r, g->valuestring, res->valuestring, verb->valuestring, NULL);
                        continue;
                    }
                    cJSON_ArrayForEach(name, names)
                        rights_add(r, g->valuestring, res->valuestring, verb->valuestring,
                                   name->valuestring);
                }
    }
    cJSON_Delete(role);
}

/* Every right of want is in got and the other way round; the differences, one per line. */
static void rights_equal(const struct rights *want, const char *want_name, const struct rights *got,
                         const char *got_name)
{
    char diff[4096] = "";
    size_t len = 0;

    for (int i = 0; i < want->n; i++)
        if (!rights_has(got, want->v[i]))
            len += (size_t)snprintf(diff + len, sizeof(diff) - len, "  in %s, not in %s: %s\n",
                                    want_name, got_name, want->v[i]);
    for (int i = 0; i < got->n && len < sizeof(diff); i++)
        if (!rights_has(want, got->v[i]))
            len += (size_t)snprintf(diff + len, sizeof(diff) - len, "  in %s, not in %s: %s\n",
                                    got_name, want_name, got->v[i]);
    if (len)
        fail_msg("\n%s", diff);
}

/* The role file that grants a row of the table. */
static const char *role_file(enum access_use use)
{
    switch (use) {
    case ACCESS_LEADER:
        return "leader_election_role.yaml";
    case ACCESS_METRICS:
        return "metrics_auth_role.yaml";
    default:
        return "role.yaml";
    }
}

/* The rights of the table's rows granted by file (NULL: any), of use (-1: any). */
static void table_rights(const char *file, int use, struct rights *r)
{
    for (const struct access_rule *a = access_rules; a->resource; a++)
        if ((!file || strcmp(role_file(a->use), file) == 0) && (use < 0 || (int)a->use == use))
            rights_add_words(r, a->group, a->resource, a->verbs, a->resource_name);
}

static void test_access__config_rbac_grants_exactly_the_table(void **state)
{
    static const char *const files[] = {"role.yaml", "leader_election_role.yaml",
                                        "metrics_auth_role.yaml"};
    static struct rights role, table;
    char name[128];

    for (size_t i = 0; i < sizeof(files) / sizeof(*files); i++) {
        memset(&role, 0, sizeof(role));
        memset(&table, 0, sizeof(table));
        rights_of_role(files[i], &role);
        table_rights(files[i], -1, &table);
        snprintf(name, sizeof(name), "config/rbac/%s", files[i]);
        rights_equal(&table, "controllers/access.c", &role, name);
    }
}

/* The reviews of secure metrics are the two resources the table grants create on. */
static void test_access__metrics_reviews_are_granted(void **state)
{
    static struct rights table, used;

    memset(&table, 0, sizeof(table));
    memset(&used, 0, sizeof(used));
    table_rights(NULL, ACCESS_METRICS, &table);
    rights_add(&used, KUBE_TOKENREVIEWS.group, KUBE_TOKENREVIEWS.resource, "create", NULL);
    rights_add(&used, KUBE_SUBJECTACCESSREVIEWS.group, KUBE_SUBJECTACCESSREVIEWS.resource, "create",
               NULL);
    rights_equal(&table, "the table's metrics rows", &used, "lib/ctrl/httpserver.c's reviews");
}

static void test_access__caches_list_and_watch_what_the_table_says(void **state)
{
    static struct rights cached, table;
    const struct kube_resource *res;

    memset(&cached, 0, sizeof(cached));
    memset(&table, 0, sizeof(table));
    for (size_t i = 0; (res = caches_resource(i)); i++)
        rights_add_words(&cached, res->group, res->resource, "list watch", NULL);
    table_rights(NULL, ACCESS_CACHE, &table);
    rights_equal(&table, "the table's cache rows", &cached, "the manager's caches");
}

static void record(void *ud, const struct plan_action *a)
{
    char resource[128];

    snprintf(resource, sizeof(resource), "%s%s%s", a->resource->resource, a->subresource ? "/" : "",
             a->subresource ? a->subresource : "");
    rights_add(ud, a->resource->group, resource, access_action_verb(a), NULL);
    /* A server-side apply creates what does not exist yet (every one does, the first time). */
    if (a->verb == KUBE_PATCH && a->patch_type == KUBE_PATCH_APPLY)
        rights_add(ud, a->resource->group, resource, "create", NULL);
    /* One the cache does not hold is read first (lib/ctrl/executor.c's claim check). */
    if (a->claim_uid || a->read_if_exists)
        rights_add(ud, a->resource->group, resource, "get", NULL);
}

static const char capn[] =
    "apiVersion: cluster.x-k8s.io/v1beta1\n"
    "kind: Cluster\n"
    "metadata: {name: sample, uid: cl-1}\n"
    "spec:\n"
    "  controlPlaneEndpoint: {host: sample-apiserver, port: 6443}\n"
    "  infrastructureRef: {apiVersion: infrastructure.cluster.x-k8s.io/v1beta1, kind: "
    "NestedCluster, name: sample}\n"
    "  controlPlaneRef: {apiVersion: controlplane.cluster.x-k8s.io/v1beta1, kind: "
    "NestedControlPlane, name: sample-control-plane}\n"
    "---\n"
    "apiVersion: infrastructure.cluster.x-k8s.io/v1beta1\n"
    "kind: NestedCluster\n"
    "metadata: {name: sample, uid: nc-1, generation: 1}\n"
    "spec: {}\n"
    "---\n"
    "apiVersion: controlplane.cluster.x-k8s.io/v1beta1\n"
    "kind: NestedControlPlane\n"
    "metadata: {name: sample-control-plane, uid: ncp-1, generation: 1, resourceVersion: '1'}\n"
    "spec:\n"
    "  version: 1.36.3\n"
    "  etcd: {kind: NestedEtcd, name: sample-etcd}\n"
    "  apiserver: {kind: NestedAPIServer, name: sample-apiserver}\n"
    "  controllerManager: {kind: NestedControllerManager, name: sample-controller-manager}\n"
    "  certificates: {keyAlgorithm: ECDSA-P256, validityDays: 365, renewBeforeDays: 30}\n"
    "---\n"
    "apiVersion: controlplane.cluster.x-k8s.io/v1beta1\n"
    "kind: NestedEtcd\n"
    "metadata: {name: sample-etcd, uid: etcd-1, generation: 1, resourceVersion: '1'}\n"
    "spec:\n"
    "  replicas: 3\n"
    "  storage: {emptyDir: {}}\n"
    "  snapshots: {persistentVolumeClaim: {claimName: sample-snapshots}}\n"
    "---\n"
    "apiVersion: controlplane.cluster.x-k8s.io/v1beta1\n"
    "kind: NestedAPIServer\n"
    "metadata: {name: sample-apiserver, uid: kas-1, generation: 1, resourceVersion: '1'}\n"
    "spec: {replicas: 1}\n"
    "---\n"
    "apiVersion: controlplane.cluster.x-k8s.io/v1beta1\n"
    "kind: NestedControllerManager\n"
    "metadata: {name: sample-controller-manager, uid: kcm-1, generation: 1, resourceVersion: "
    "'1'}\n"
    "spec: {replicas: 1}\n";

#define NCP "sample-control-plane"

/* Replaces the control plane with a copy changed by fn. */
static void edit_ncp(struct sim *s, void (*fn)(cJSON *ncp))
{
    cJSON *ncp = cJSON_Duplicate(fx_get(&s->f, FX_CONTROL_PLANES, NCP), true);

    fn(ncp);
    fx_put_json(&s->f, ncp);
}

static void upgrade(cJSON *ncp)
{
    cJSON *spec = cJSON_GetObjectItem(ncp, "spec"), *meta = cJSON_GetObjectItem(ncp, "metadata");

    cJSON_ReplaceItemInObject(spec, "version", cJSON_CreateString("1.37.2"));
    cJSON_ReplaceItemInObject(meta, "generation", cJSON_CreateNumber(2));
}

/* The etcd's members move from emptyDir to claims. */
static void to_claims(cJSON *etcd)
{
    cJSON *spec = cJSON_GetObjectItem(etcd, "spec"), *meta = cJSON_GetObjectItem(etcd, "metadata");
    const cJSON *g = cJSON_GetObjectItem(meta, "generation");

    cJSON_ReplaceItemInObject(spec, "storage",
                              cJSON_Parse("{\"persistentVolumeClaim\": {\"size\": \"1Gi\"}}"));
    cJSON_ReplaceItemInObject(meta, "generation", cJSON_CreateNumber(g->valuedouble + 1));
}

static void delete_it(cJSON *ncp)
{
    cJSON_AddStringToObject(cJSON_GetObjectItem(ncp, "metadata"), "deletionTimestamp",
                            "2027-01-15T09:00:00Z");
}

/* A control plane's life in the simulation (nested_sim.h): created from CAPN's shape (with 3
 * etcd members on emptyDir), upgraded one minor after an etcd snapshot, its etcd moved to claims,
 * its certificates renewed 340 days on, then deleted. Every action applied is a right the table
 * grants (nested_fixture.h checks each one), and every plan verb of the table is used on the way.
 */
static void test_access__a_control_planes_life_sends_exactly_the_plan_verbs(void **state)
{
    static struct rights seen, table;
    struct sim s;

    memset(&seen, 0, sizeof(seen));
    memset(&table, 0, sizeof(table));
    sim_init(&s, capn);
    s.on_action = record;
    s.on_action_ud = &seen;
    sim_converge(&s, 80);
    assert_string_equal(fx_str(fx_get(&s.f, FX_CONTROL_PLANES, NCP), "status.phase"), "Ready");
    edit_ncp(&s, upgrade);
    sim_converge(&s, 200);
    assert_string_equal(fx_str(fx_get(&s.f, FX_CONTROL_PLANES, NCP), "status.version"), "v1.37.2");
    {
        cJSON *etcd = cJSON_Duplicate(fx_get(&s.f, FX_ETCDS, "sample-etcd"), true);
        to_claims(etcd);
        fx_put_json(&s.f, etcd);
    }
    sim_converge(&s, 300);
    assert_int_equal(cJSON_GetArraySize(fx_path(fx_get(&s.f, FX_STATEFULSETS, "sample-etcd"),
                                                "spec.volumeClaimTemplates")),
                     1);
    s.f.view.now += 340 * 86400.0;
    sim_converge(&s, 200);
    edit_ncp(&s, delete_it);
    for (int i = 0; i < 10 && fx_get(&s.f, FX_CONTROL_PLANES, NCP); i++) {
        sim_pass(&s);
        if (cJSON_GetArraySize(
                fx_path(fx_get(&s.f, FX_CONTROL_PLANES, NCP), "metadata.finalizers")) == 0)
            break;
    }
    assert_null(fx_get(&s.f, FX_STATEFULSETS, "sample-etcd"));
    assert_null(fx_get(&s.f, FX_ETCDS, "sample-etcd"));
    assert_int_equal(
        cJSON_GetArraySize(fx_path(fx_get(&s.f, FX_CONTROL_PLANES, NCP), "metadata.finalizers")),
        0);
    table_rights(NULL, ACCESS_PLAN, &table);
    rights_equal(&table, "the table's plan rows", &seen, "the plans of the cycle");
    sim_done(&s);
}

/* Every kind that any line of any component renders is written by the component controllers
 * (server-side apply: patch, and create the first time), cached (list, watch) and deleted with
 * its control plane: the table, and so config/rbac, grants each of those verbs for it. A
 * package that starts rendering a new kind fails here before it fails with a 403 in a
 * cluster. */
static void test_access__every_kind_every_package_renders_is_granted(void **state)
{
    struct render_catalog *cat = sim_catalog();
    cJSON *versions = NULL, *comp, *line;
    int kinds = 0;

    assert_int_equal(render_catalog_versions(cat, &versions), 0);
    cJSON_ArrayForEach(comp, versions) {
        cJSON_ArrayForEach(line, cJSON_GetObjectItem(comp, "packages")) {
            char values[512];
            cJSON *v = NULL, *objs = NULL;
            const cJSON *o;
            struct err e = {0};

            snprintf(values, sizeof(values),
                     "cluster: {name: c1, namespace: ns1}\ncomponent: %s\nversion: %s.0\n",
                     comp->string, line->valuestring);
            assert_int_equal(yamlconv_parse_one(values, strlen(values), "t", &v, &e), 0);
            if (render_component(cat, v, &objs, &e) < 0)
                fail_msg("%s %s: %s", comp->string, line->valuestring, e.msg);
            cJSON_ArrayForEach(o, objs) {
                const char *kind = cJSON_GetStringValue(cJSON_GetObjectItem(o, "kind"));
                const struct kube_resource *res = nestedcomponent_rendered_resource(kind);
                static const char *const verbs[] = {"create", "patch", "delete", "list", "watch"};

                if (!res)
                    fail_msg("%s %s renders a %s, which the component controllers do not write",
                             comp->string, line->valuestring, kind);
                for (size_t i = 0; i < 5; i++)
                    if (!access_allows(res->group, res->resource, verbs[i]))
                        fail_msg("%s %s renders a %s: the access table does not grant %s on %s",
                                 comp->string, line->valuestring, kind, verbs[i], res->resource);
                kinds++;
            }
            cJSON_Delete(objs);
            cJSON_Delete(v);
        }
    }
    cJSON_Delete(versions);
    render_catalog_free(cat);
    assert_true(kinds >= 16);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_access__config_rbac_grants_exactly_the_table),
        cmocka_unit_test(test_access__caches_list_and_watch_what_the_table_says),
        cmocka_unit_test(test_access__metrics_reviews_are_granted),
        cmocka_unit_test(test_access__a_control_planes_life_sends_exactly_the_plan_verbs),
        cmocka_unit_test(test_access__every_kind_every_package_renders_is_granted),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
