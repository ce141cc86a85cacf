#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include <cjson/cJSON.h>

#include "controllers/caches.h"

/*
 * What nestcp's manager is made of: its resources, its cache table, the named view reconcilers
 * read, and the refusal of what controllers/access.c does not list.
 */

static void test_caches__resources_name_the_served_kinds(void **state)
{
    assert_string_equal(NESTCP_CONTROL_PLANES.group, "controlplane.cluster.x-k8s.io");
    assert_string_equal(NESTCP_CONTROL_PLANES.version, "v1beta1");
    assert_string_equal(NESTCP_CONTROL_PLANES.resource, "nestedcontrolplanes");
    assert_string_equal(NESTCP_ETCDS.kind, "NestedEtcd");
    assert_string_equal(NESTCP_APISERVERS.resource, "nestedapiservers");
    assert_string_equal(NESTCP_CONTROLLER_MANAGERS.resource, "nestedcontrollermanagers");
    assert_string_equal(NESTCP_NESTED_CLUSTERS.group, "infrastructure.cluster.x-k8s.io");
    assert_string_equal(CAPI_CLUSTERS.group, "cluster.x-k8s.io");
    assert_string_equal(CAPI_CLUSTERS.resource, "clusters");
    assert_true(NESTCP_NESTED_CLUSTERS.namespaced && CAPI_CLUSTERS.namespaced);
}

/* The store of the view that holds res. */
static const struct kube_store *named(const struct cache_view *v, const struct kube_resource *res)
{
    const struct {
        const struct kube_resource *res;
        const struct kube_store *store;
    } names[] = {
        {&NESTCP_CONTROL_PLANES, v->control_planes},
        {&NESTCP_ETCDS, v->etcds},
        {&NESTCP_APISERVERS, v->apiservers},
        {&NESTCP_CONTROLLER_MANAGERS, v->controller_managers},
        {&NESTCP_NESTED_CLUSTERS, v->nested_clusters},
        {&CAPI_CLUSTERS, v->clusters},
        {&KUBE_SECRETS, v->secrets},
        {&KUBE_SERVICES, v->services},
        {&KUBE_STATEFULSETS, v->statefulsets},
        {&KUBE_PODS, v->pods},
        {&KUBE_PVCS, v->claims},
        {&KUBE_CONFIGMAPS, v->configmaps},
        {&KUBE_NETWORKPOLICIES, v->networkpolicies},
        {&KUBE_JOBS, v->jobs},
    };

    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
        if (names[i].res == res)
            return names[i].store;
    fail_msg("%s: no store of the view holds it", res->resource);
    return NULL;
}

/* Each cache the manager keeps is the named store of its resource, selected as documented. */
static void test_caches__the_view_names_each_cache_of_the_table(void **state)
{
    struct manager_opts o = {0};
    struct kube_store stores[32];
    const struct kube_store *ptrs[32];
    struct ctrl_view generic = {.stores = ptrs, .now = 1.7e9};
    struct cache_view view;
    size_t n;

    caches_manager_opts(&o);
    assert_non_null(o.caches);
    assert_in_range(o.n_caches, 14, 32);
    for (n = 0; caches_resource(n); n++) {
        assert_ptr_equal(caches_resource(n), o.caches[n].resource);
        ptrs[n] = &stores[n];
    }
    assert_int_equal(n, o.n_caches);
    generic.n_stores = n;
    cache_view_of(&generic, &view);
    for (size_t i = 0; i < n; i++) {
        const struct ctrl_cache_spec *spec = &o.caches[i];
        assert_ptr_equal(named(&view, spec->resource), &stores[i]);
        assert_non_null(spec->transform);
        assert_true(spec->optional == (spec->resource == &CAPI_CLUSTERS));
        if (spec->resource == &KUBE_SECRETS)
            assert_string_equal(spec->selector, MANAGER_SECRET_SELECTOR);
        else if (spec->resource == &KUBE_PODS)
            assert_string_equal(spec->selector, MANAGER_POD_SELECTOR);
        else if (spec->resource == &KUBE_PVCS)
            assert_string_equal(spec->selector, MANAGER_CLAIM_SELECTOR);
        else if (!spec->resource->group[0] || strcmp(spec->resource->group, "apps") == 0)
            assert_string_equal(spec->selector, MANAGER_OWNED_SELECTOR);
    }
    assert_true(view.now == 1.7e9);
    /* A view without the stores (a smaller table) names none. */
    generic.n_stores = 0;
    cache_view_of(&generic, &view);
    assert_null(view.control_planes);
    assert_null(view.jobs);
}

/* The names and the Lease are nestcp's unless the caller set them; what the access table
 * (controllers/access.c) does not list is refused. */
static void test_caches__manager_opts_fill_in_nestcp_and_its_rights(void **state)
{
    struct manager_opts o = {.leader_election_id = "mine"};
    struct plan p;
    const char *why;

    caches_manager_opts(&o);
    assert_string_equal(o.component, "nestcp");
    assert_string_equal(o.field_manager, "nestcp");
    assert_string_equal(o.metrics_prefix, "nestcp");
    assert_string_equal(o.leader_election_id, "mine");
    assert_string_equal(o.leader_election_default_namespace, MANAGER_LEASE_NAMESPACE);
    assert_non_null(o.refuse);
    o = (struct manager_opts){0};
    caches_manager_opts(&o);
    assert_string_equal(o.leader_election_id, MANAGER_LEASE_NAME);

    plan_init(&p);
    assert_int_equal(plan_apply(&p, &KUBE_SERVICES,
                                cJSON_Parse("{\"metadata\":{\"name\":\"s\","
                                            "\"namespace\":\"n\"}}"),
                                "a Service"),
                     0);
    assert_int_equal(
        plan_create(&p, &KUBE_NODES, cJSON_Parse("{\"metadata\":{\"name\":\"x\"}}"), "a Node"), 0);
    assert_null(o.refuse(&p.actions[0]));
    why = o.refuse(&p.actions[1]);
    assert_non_null(why);
    assert_non_null(strstr(why, "controllers/access.c"));
    plan_done(&p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_caches__resources_name_the_served_kinds),
        cmocka_unit_test(test_caches__the_view_names_each_cache_of_the_table),
        cmocka_unit_test(test_caches__manager_opts_fill_in_nestcp_and_its_rights),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
