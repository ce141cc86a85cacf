#include "nested_sim.h"

#include "capn_sample.h"

#include <ev.h>

#include "api/conditions.h"
#include "controllers/keypool.h"
#include "controllers/lookup.h"
#include "lib/util/strutil.h"

static const char capn[] = CAPN_SAMPLE("{replicas: 1}");

#define NCP "sample-control-plane"

/* capn with its first `from` replaced by `to`. */
static void capn_with(char *out, size_t size, const char *from, const char *to)
{
    const char *at = strstr(capn, from);

    assert_non_null(at);
    snprintf(out, size, "%.*s%s%s", (int)(at - capn), capn, to, at + strlen(from));
}

static const cJSON *ncp_status(struct sim *s)
{
    return fx_path(fx_get(&s->f, FX_CONTROL_PLANES, NCP), "status");
}

static const char *ncp_condition(struct sim *s, const char *type, const char *field)
{
    return fx_str(fx_condition(ncp_status(s), type), field);
}

static size_t reconcile_ncp(struct sim *s, struct plan *p)
{
    struct err e;

    plan_init(p);
    err_clear(&e);
    assert_int_equal(nestedcontrolplane_reconcile(&s->ctx, &s->f.view, "default", NCP, p, &e), 0);
    return p->n_actions;
}

/* The etcd StatefulSet's status as the StatefulSet controller has it before it has seen the
 * member's pod Ready: nothing ready yet. */
static void etcd_not_ready_yet(struct sim *s)
{
    const cJSON *cur = fx_get(&s->f, FX_STATEFULSETS, "sample-etcd");
    cJSON *sts, *st;

    if (!cur || !(st = (cJSON *)fx_path(cur, "status")))
        return;
    sts = cJSON_Duplicate(cur, true);
    st = (cJSON *)fx_path(sts, "status");
    cJSON_DeleteItemFromObjectCaseSensitive(st, "readyReplicas");
    cJSON_AddNumberToObject(st, "readyReplicas", 0);
    fx_put_json(&s->f, sts);
}

/* On creation the API servers (and the controller manager with them) are created once etcd
 * answers, its cluster ID recorded in the NestedEtcd's status, and not only once the etcd
 * StatefulSet reports its members ready; never before etcd answered. */
static void test_nestedcontrolplane__creation_starts_api_servers_once_etcd_answers(void **state)
{
    struct sim s;
    const cJSON *netcd;
    bool created = false;

    sim_init(&s, capn);
    for (int i = 0; i < 40 && !created; i++) {
        sim_pass(&s);
        s.f.view.now += 1.0;
        sim_kubelet(&s);
        etcd_not_ready_yet(&s);
        netcd = fx_get(&s.f, FX_ETCDS, "sample-nestedetcd");
        created = fx_get(&s.f, FX_STATEFULSETS, "sample-apiserver") != NULL;
        if (created)
            assert_non_null(fx_str(netcd, "status.clusterID"));
    }
    assert_true(created);
    assert_non_null(fx_get(&s.f, FX_STATEFULSETS, "sample-controller-manager"));
    assert_int_equal(
        fx_path(fx_get(&s.f, FX_STATEFULSETS, "sample-etcd"), "status.readyReplicas")->valueint, 0);
    assert_false(cJSON_IsTrue(fx_path(ncp_status(&s), "initialized")));
    sim_done(&s);
}

/* The components, reconciled once: each writes its first status, WaitingForAdoption. */
static void components_wait_for_adoption(struct sim *s)
{
    static const char *const comps[] = {"sample-nestedetcd", "sample-nestedapiserver",
                                        "sample-nestedcontrollermanager"};

    for (int i = 0; i < RENDER_PART__COUNT; i++)
        sim_one(s, i, "default", comps[i]);
}

/* A new control plane's first writes go at once: its finalizer (with the endpoint, conditional
 * on the resourceVersion), its components' adoption and the four CA Secrets; nothing of any
 * component, and no status write that the patch would make conflict. A component not
 * reconciled yet is not adopted: its first status write would meet the adoption with a
 * conflict. Then the kubeconfig and the status. */
static void
test_nestedcontrolplane__first_reconcile_sends_finalizer_adoption_and_cas_at_once(void **state)
{
    static const char *const cas[] = {"sample-ca", "sample-etcd", "sample-proxy", "sample-sa"};
    static const char *const parts[] = {"nestedetcds", "nestedapiservers",
                                        "nestedcontrollermanagers"};
    struct sim s;
    struct plan p;
    const struct plan_action *a;

    (void)state;
    sim_init(&s, capn);
    /* before the components have written a status: the finalizer and the CAs */
    reconcile_ncp(&s, &p);
    assert_int_equal(p.n_actions, 5);
    assert_null(fx_action(&p, KUBE_PATCH, "nestedetcds", NULL));
    assert_non_null(fx_action(&p, KUBE_CREATE, "secrets", "sample-ca"));
    plan_done(&p);
    components_wait_for_adoption(&s);
    s.f.view.now += NESTED_ISSUE_WAIT + 1; /* the CAs above were never made */
    reconcile_ncp(&s, &p);
    assert_int_equal(p.n_actions, 8);
    a = &p.actions[0];
    assert_int_equal(a->verb, KUBE_PATCH);
    assert_int_equal(a->patch_type, KUBE_PATCH_MERGE);
    assert_string_equal(a->name, NCP);
    assert_string_equal(fx_str(a->body, "metadata.resourceVersion"), "1");
    assert_string_equal(cJSON_GetArrayItem(fx_path(a->body, "metadata.finalizers"), 0)->valuestring,
                        NESTED_FINALIZER);
    assert_string_equal(fx_str(a->body, "spec.controlPlaneEndpoint.host"), "sample-apiserver");
    assert_string_equal(
        cJSON_GetObjectItem(fx_path(a->body, "metadata.annotations"), NESTED_BLOCK_MOVE)
            ->valuestring,
        "");
    for (int i = 0; i < 3; i++) {
        a = fx_action(&p, KUBE_PATCH, parts[i], NULL);
        assert_non_null(a);
        assert_int_equal(fx_index(&p, a), 1 + i);
    }
    /* the CA Secrets created (never applied over an existing one) */
    for (int i = 0; i < 4; i++) {
        a = fx_action(&p, KUBE_CREATE, "secrets", cas[i]);
        assert_non_null(a);
        assert_int_equal(fx_index(&p, a), 4 + i);
        assert_string_equal(fx_str(a->body, "type"), "cluster.x-k8s.io/secret");
        assert_string_equal(kube_obj_label(a->body, "cluster.x-k8s.io/cluster-name"), "sample");
        assert_true(lookup_controlled_by_uid(a->body, "ncp-1"));
    }
    /* all eight sent at once */
    for (size_t i = 0; i + 1 < p.n_actions; i++)
        assert_true(p.actions[i].with_next);
    assert_false(p.actions[7].with_next);
    assert_non_null(fx_event(&p, "CreatedCertificateAuthorities"));
    fx_apply_plan(&s.f, &p);
    plan_done(&p);

    /* then the admin kubeconfig and the status; still nothing of any component */
    reconcile_ncp(&s, &p);
    assert_int_equal(p.n_actions, 2);
    assert_int_equal(fx_index(&p, fx_action(&p, KUBE_CREATE, "secrets", "sample-kubeconfig")), 0);
    assert_int_equal(p.actions[1].verb, KUBE_UPDATE);
    assert_string_equal(p.actions[1].resource->resource, "nestedcontrolplanes");
    plan_done(&p);
    sim_done(&s);
}

/* A reconcile that runs before the watch delivers the CA Secrets just created does not make
 * four others (whose creates the API server would answer 409, each then read back): it waits
 * for them, saying the CAs are being created, and goes on once the cache has them; CAs still
 * missing NESTED_ISSUE_WAIT later are created again. */
static void test_nestedcontrolplane__cas_created_but_not_cached_yet_are_not_made_again(void **state)
{
    static const char *const cas[] = {"sample-ca", "sample-etcd", "sample-proxy", "sample-sa"};
    struct sim s;
    struct plan created, p;

    (void)state;
    sim_init(&s, capn);
    reconcile_ncp(&s, &created);
    assert_non_null(fx_action(&created, KUBE_CREATE, "secrets", "sample-ca"));

    /* the creates went through, the cache has not seen them */
    s.f.view.now += 0.2;
    reconcile_ncp(&s, &p);
    for (int i = 0; i < 4; i++)
        assert_null(fx_action(&p, KUBE_CREATE, "secrets", cas[i]));
    assert_true(p.requeue_after > 0 && p.requeue_after <= 1.0);
    plan_done(&p);

    /* once the cache has them, the control plane goes on: its kubeconfig is made */
    fx_apply_plan(&s.f, &created);
    s.f.view.now += 0.2;
    reconcile_ncp(&s, &p);
    assert_null(fx_action(&p, KUBE_CREATE, "secrets", "sample-ca"));
    assert_non_null(fx_action(&p, KUBE_CREATE, "secrets", "sample-kubeconfig"));
    plan_done(&p);
    plan_done(&created);
    sim_done(&s);

    /* CAs that never show up are created again once NESTED_ISSUE_WAIT has passed */
    sim_init(&s, capn);
    reconcile_ncp(&s, &p);
    plan_done(&p);
    s.f.view.now += NESTED_ISSUE_WAIT + 1;
    reconcile_ncp(&s, &p);
    for (int i = 0; i < 4; i++)
        assert_non_null(fx_action(&p, KUBE_CREATE, "secrets", cas[i]));
    plan_done(&p);
    sim_done(&s);
}

/* The admin kubeconfig Secret likewise: created, then a reconcile before the watch delivers it
 * does not create it again (the create would be answered 409), until NESTED_ISSUE_WAIT. */
static void
test_nestedcontrolplane__a_kubeconfig_created_but_not_cached_is_not_made_again(void **state)
{
    struct sim s;
    struct plan created, p;
    int i;

    (void)state;
    sim_init(&s, capn);
    for (i = 0; i < 20; i++) {
        reconcile_ncp(&s, &created);
        if (fx_action(&created, KUBE_CREATE, "secrets", "sample-kubeconfig"))
            break;
        fx_apply_plan(&s.f, &created);
        plan_done(&created);
        s.f.view.now += 0.2;
    }
    assert_true(i < 20);

    /* the create went through, the cache has not seen it */
    s.f.view.now += 0.2;
    reconcile_ncp(&s, &p);
    assert_null(fx_action(&p, KUBE_CREATE, "secrets", "sample-kubeconfig"));
    assert_true(p.requeue_after > 0 && p.requeue_after <= 1.0);
    plan_done(&p);

    /* one that never shows up is created again once NESTED_ISSUE_WAIT has passed */
    s.f.view.now += NESTED_ISSUE_WAIT + 1;
    reconcile_ncp(&s, &p);
    assert_non_null(fx_action(&p, KUBE_CREATE, "secrets", "sample-kubeconfig"));
    plan_done(&p);

    /* once cached, the control plane goes on without waiting for it */
    fx_apply_plan(&s.f, &created);
    s.f.view.now += 0.2;
    reconcile_ncp(&s, &p);
    assert_null(fx_action(&p, KUBE_CREATE, "secrets", "sample-kubeconfig"));
    plan_done(&p);
    plan_done(&created);
    sim_done(&s);
}

/* A control plane deleted before the CA Secrets it created were seen forgets them with its last
 * reconcile, rather than keeping their entry for as long as the manager runs. */
static void
test_nestedcontrolplane__a_deleted_control_plane_forgets_the_cas_it_created(void **state)
{
    struct sim s;
    struct plan p;
    cJSON *old = NULL;

    (void)state;
    sim_init(&s, capn);
    reconcile_ncp(&s, &p);
    assert_non_null(fx_action(&p, KUBE_CREATE, "secrets", "sample-ca"));
    plan_done(&p);
    assert_non_null(strmap_get(&s.ctx.cas_created, "default/" NCP));

    /* deleted within NESTED_ISSUE_WAIT, its finalizer removed: gone from the cache */
    s.f.view.now += 0.2;
    assert_int_equal(kube_store_remove(&s.f.stores[FX_CONTROL_PLANES], "default", NCP, &old), 0);
    cJSON_Delete(old);
    assert_int_equal(reconcile_ncp(&s, &p), 0);
    plan_done(&p);
    assert_null(strmap_get(&s.ctx.cas_created, "default/" NCP));
    assert_int_equal(strmap_size(&s.ctx.cas_created), 0);
    sim_done(&s);
}

/* The controllers' check memo is bounded: past NESTED_MEMO_MAX the check remembered longest
 * ago is forgotten, one at a time, where the memo used to start again empty and have every
 * control plane check again what it had just checked (at N = 1,000, about 15,000 checks). */
static void test_nestedcontrolplane__the_check_memo_forgets_the_oldest_first(void **state)
{
    const struct render_check_memo *m;
    char digest[32];
    int64_t value = 0;
    struct sim s;

    (void)state;
    sim_init(&s, capn);
    m = &s.ctx.memo;
    for (int i = 0; i < NESTED_MEMO_MAX; i++) {
        snprintf(digest, sizeof(digest), "d%d", i);
        m->remember(m->ctx, digest, 1000, i);
    }
    /* remembered again, d0 is the newest */
    m->remember(m->ctx, "d0", 2000, 7);
    m->remember(m->ctx, "new", 1000, 1);
    assert_int_equal(strmap_size(&s.ctx.checked), NESTED_MEMO_MAX);
    assert_false(m->passed(m->ctx, "d1", 0, NULL));
    assert_true(m->passed(m->ctx, "d0", 1500, &value));
    assert_int_equal(value, 7);
    assert_true(m->passed(m->ctx, "d2", 0, &value));
    assert_int_equal(value, 2);
    assert_true(m->passed(m->ctx, "new", 0, NULL));
    /* and expired entries do not pass */
    assert_false(m->passed(m->ctx, "d2", 1000, NULL));
    sim_done(&s);
}

static void
test_nestedcontrolplane__creation_runs_etcd_then_apiserver_then_controller_manager(void **state)
{
    struct sim s;
    const cJSON *st;

    sim_init(&s, capn);
    sim_converge(&s, 40);
    assert_int_equal(s.n_order, 3);
    assert_string_equal(s.order[0], "sample-etcd");
    assert_string_equal(s.order[1], "sample-apiserver");
    assert_string_equal(s.order[2], "sample-controller-manager");
    st = ncp_status(&s);
    assert_true(cJSON_IsTrue(fx_path(st, "ready")));
    assert_true(cJSON_IsTrue(fx_path(st, "initialized")));
    assert_true(cJSON_IsTrue(fx_path(st, "initialization.controlPlaneInitialized")));
    assert_true(cJSON_IsTrue(fx_path(st, "externalManagedControlPlane")));
    assert_string_equal(fx_str(st, "version"), "v1.36.3");
    assert_string_equal(fx_str(st, "phase"), "Ready");
    assert_int_equal(fx_path(st, "replicas")->valueint, 1);
    assert_int_equal(fx_path(st, "readyReplicas")->valueint, 1);
    assert_string_equal(ncp_condition(&s, "Ready", "status"), "True");
    assert_string_equal(ncp_condition(&s, "Upgrading", "status"), "False");
    assert_string_equal(fx_str(st, "apiserver.serviceCidr"), "10.96.0.0/12");
    assert_non_null(fx_str(st, "rollout.components.etcd.configHash"));
    assert_string_equal(fx_str(st, "rollout.components.etcd.version"), "3.6.17");
    assert_string_equal(fx_str(st, "rollout.components.apiserver.version"), "1.36.3");
    /* the NestedCluster follows */
    assert_true(cJSON_IsTrue(fx_path(fx_get(&s.f, FX_NESTED_CLUSTERS, "sample"), "status.ready")));
    /* the components are adopted and report */
    assert_true(lookup_controlled_by_uid(fx_get(&s.f, FX_ETCDS, "sample-nestedetcd"), "ncp-1"));
    assert_string_equal(fx_str(fx_get(&s.f, FX_ETCDS, "sample-nestedetcd"), "status.phase"),
                        "Ready");
    sim_done(&s);
}

static void test_nestedcontrolplane__adopts_its_components_with_optimistic_concurrency(void **state)
{
    struct sim s;
    struct plan p;
    const struct plan_action *a;
    const cJSON *ref;

    sim_init(&s, capn);
    components_wait_for_adoption(&s);
    reconcile_ncp(&s, &p);
    a = fx_action(&p, KUBE_PATCH, "nestedapiservers", "sample-nestedapiserver");
    assert_non_null(a);
    assert_int_equal(a->patch_type, KUBE_PATCH_MERGE);
    /* conditional on the version its status write left */
    assert_string_equal(
        fx_str(a->body, "metadata.resourceVersion"),
        kube_obj_resource_version(fx_get(&s.f, FX_APISERVERS, "sample-nestedapiserver")));
    ref = cJSON_GetArrayItem(fx_path(a->body, "metadata.ownerReferences"), 0);
    assert_string_equal(fx_str(ref, "kind"), "NestedControlPlane");
    assert_string_equal(fx_str(ref, "uid"), "ncp-1");
    assert_true(cJSON_IsTrue(fx_path(ref, "controller")));
    fx_apply_plan(&s.f, &p);
    plan_done(&p);
    /* a component another controller owns is an error, not adopted */
    fx_put(&s.f, "apiVersion: controlplane.cluster.x-k8s.io/v1beta1\n"
                 "kind: NestedAPIServer\n"
                 "metadata:\n"
                 "  name: sample-nestedapiserver\n"
                 "  uid: kas-1\n"
                 "  ownerReferences: [{apiVersion: controlplane.cluster.x-k8s.io/v1beta1, kind: "
                 "NestedControlPlane, name: other, uid: ncp-9, controller: true}]\n");
    reconcile_ncp(&s, &p);
    assert_null(fx_action(&p, KUBE_PATCH, "nestedapiservers", NULL));
    assert_non_null(fx_event(&p, "ComponentControlledElsewhere"));
    fx_apply_plan(&s.f, &p);
    plan_done(&p);
    assert_string_equal(ncp_condition(&s, "Ready", "reason"), "ComponentControlledElsewhere");
    sim_done(&s);
}

static void test_nestedcontrolplane__steady_state_writes_nothing(void **state)
{
    struct sim s;
    struct sim_keys before = {.n = 0}, after = {.n = 0};
    char rv_before[64][32];

    sim_init(&s, capn);
    sim_converge(&s, 40);
    kube_store_foreach(&s.f.stores[FX_SECRETS], sim_collect, &before);
    for (int i = 0; i < before.n; i++)
        snprintf(rv_before[i], sizeof(rv_before[i]), "%s",
                 kube_obj_resource_version(fx_get(&s.f, FX_SECRETS, before.keys[i])));
    s.f.view.now += 7 * 86400.0;
    assert_int_equal(sim_pass(&s), 0);
    kube_store_foreach(&s.f.stores[FX_SECRETS], sim_collect, &after);
    assert_int_equal(after.n, before.n);
    for (int i = 0; i < before.n; i++)
        assert_string_equal(kube_obj_resource_version(fx_get(&s.f, FX_SECRETS, before.keys[i])),
                            rv_before[i]);
    sim_done(&s);
}

/* The control plane without its metadata.<field>, reconciled: the plan is one merge patch,
 * conditional on the resourceVersion, which is returned. */
static const struct plan_action *strip_and_reconcile(struct sim *s, const char *field,
                                                     struct plan *p)
{
    cJSON *obj = cJSON_Duplicate(fx_get(&s->f, FX_CONTROL_PLANES, NCP), true);
    const struct plan_action *a;

    cJSON_DeleteItemFromObject(cJSON_GetObjectItem(obj, "metadata"), field);
    fx_put_json(&s->f, obj);
    reconcile_ncp(s, p);
    assert_int_equal(p->n_actions, 1);
    a = &p->actions[0];
    assert_int_equal(a->patch_type, KUBE_PATCH_MERGE);
    assert_non_null(fx_path(a->body, "metadata.resourceVersion"));
    return a;
}

/* Someone strips what ties the cluster together: the control plane's finalizer is put back
 * (alone, conditional on the resourceVersion), and a component that lost its controller
 * ownerReference is adopted again; nothing else is written meanwhile. */
static void test_nestedcontrolplane__a_stripped_finalizer_or_owner_is_put_back(void **state)
{
    struct sim s;
    struct plan p;
    const struct plan_action *a;
    cJSON *obj;

    sim_init(&s, capn);
    sim_converge(&s, 40);
    a = strip_and_reconcile(&s, "finalizers", &p);
    assert_string_equal(cJSON_GetArrayItem(fx_path(a->body, "metadata.finalizers"), 0)->valuestring,
                        NESTED_FINALIZER);
    plan_done(&p);
    sim_converge(&s, 10);

    obj = cJSON_Duplicate(fx_get(&s.f, FX_ETCDS, "sample-nestedetcd"), true);
    cJSON_DeleteItemFromObject(cJSON_GetObjectItem(obj, "metadata"), "ownerReferences");
    fx_put_json(&s.f, obj);
    reconcile_ncp(&s, &p);
    a = fx_action(&p, KUBE_PATCH, "nestedetcds", "sample-nestedetcd");
    assert_non_null(a);
    assert_string_equal(
        fx_str(cJSON_GetArrayItem(fx_path(a->body, "metadata.ownerReferences"), 0), "uid"),
        "ncp-1");
    assert_null(fx_action(&p, KUBE_PATCH, "statefulsets", NULL));
    plan_done(&p);
    sim_converge(&s, 10);
    assert_true(lookup_controlled_by_uid(fx_get(&s.f, FX_ETCDS, "sample-nestedetcd"), "ncp-1"));
    sim_done(&s);
}

/* Only a status write (and events): no child object is touched. */
static void assert_status_only(const struct plan *p)
{
    for (size_t i = 0; i < p->n_actions; i++) {
        assert_int_equal(p->actions[i].verb, KUBE_UPDATE);
        assert_string_equal(p->actions[i].subresource, "status");
    }
}

static void test_nestedcontrolplane__invalid_input_is_reported_and_creates_nothing(void **state)
{
    /* 1.38 is newer than every line shipped: unknown, not retired. */
    static const char *const bad[][2] = {
        {"  version: 1.36.3\n", "  version: 1.38.0\n"},
        {"  version: 1.36.3\n",
         "  version: 1.36.3\n  clusterNetwork: {services: {cidrBlocks: [10.96.0.0/33]}}\n"},
        {"  version: 1.36.3\n", "  version: 1.36.3\n  featureGates: {NoSuchGate: true}\n"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        char yaml[sizeof(capn) + 256];
        struct sim s;
        struct plan p;

        capn_with(yaml, sizeof(yaml), bad[i][0], bad[i][1]);
        sim_init(&s, yaml);
        reconcile_ncp(&s, &p);
        assert_status_only(&p);
        assert_non_null(fx_event(&p, "InvalidSpec"));
        fx_apply_plan(&s.f, &p);
        plan_done(&p);
        assert_string_equal(ncp_condition(&s, "Ready", "reason"), "InvalidSpec");
        /* kubectl get ncp shows PHASE Failed, as docs/api.md says */
        assert_string_equal(fx_str(ncp_status(&s), "phase"), "Failed");
        /* an unknown version is refused naming the lines there are */
        if (i == 0)
            assert_non_null(strstr(ncp_condition(&s, "Ready", "message"),
                                   "(supported lines: 1.35, 1.36, 1.37)"));
        /* told once */
        reconcile_ncp(&s, &p);
        assert_int_equal(p.n_actions, 0);
        assert_int_equal(p.n_events, 0);
        plan_done(&p);
        sim_done(&s);
    }
}

/* With --allow-privileged-patches the control plane checks a spec under the same rules its
 * components render with: a privileged patch is refused without the flag and applied with it. */
static void test_nestedcontrolplane__privileged_patches_follow_the_admins_flag(void **state)
{
    char yaml[sizeof(capn) + 256];

    capn_with(
        yaml, sizeof(yaml),
        "metadata: {name: sample-nestedapiserver, uid: kas-1, generation: 1, resourceVersion: "
        "'1'}\nspec: {replicas: 1}\n",
        "metadata: {name: sample-nestedapiserver, uid: kas-1, generation: 1, resourceVersion: "
        "'1'}\nspec: {replicas: 1, patches: [{apiVersion: apps/v1, kind: StatefulSet, "
        "metadata: {name: sample-apiserver}, spec: {template: {spec: {containers: [{name: "
        "kube-apiserver, securityContext: {privileged: true}}]}}}}]}\n");
    for (int allow = 0; allow <= 1; allow++) {
        const cJSON *sts;
        struct sim s;

        sim_init(&s, yaml);
        s.ctx.allow_privileged = allow;
        sim_converge(&s, 40);
        sts = fx_get(&s.f, FX_STATEFULSETS, "sample-apiserver");
        if (!allow) {
            assert_string_equal(ncp_condition(&s, "Ready", "reason"), "InvalidSpec");
            assert_non_null(strstr(ncp_condition(&s, "Ready", "message"),
                                   "securityContext.privileged: true is not allowed"));
            assert_null(sts);
        } else {
            assert_string_equal(ncp_condition(&s, "Ready", "status"), "True");
            assert_true(cJSON_IsTrue(
                fx_path(sts, "spec.template.spec.containers.0.securityContext.privileged")));
        }
        sim_done(&s);
    }
}

static void test_nestedcontrolplane__a_bad_user_ca_names_the_secret_and_key(void **state)
{
    struct sim s;
    struct plan p;
    const char *msg;

    sim_init(&s, capn);
    /* base64 of "not a certificate" */
    fx_put(&s.f, "apiVersion: v1\nkind: Secret\n"
                 "metadata: {name: sample-ca, labels: {cluster.x-k8s.io/cluster-name: sample}}\n"
                 "type: cluster.x-k8s.io/secret\n"
                 "data: {tls.crt: bm90IGEgY2VydGlmaWNhdGU=, tls.key: bm90IGEgY2VydGlmaWNhdGU=}\n");
    sim_one(&s, -1, "default", NCP); /* finalizer */
    reconcile_ncp(&s, &p);
    assert_null(fx_action(&p, KUBE_CREATE, "secrets", NULL));
    assert_non_null(fx_event(&p, "InvalidCertificateAuthority"));
    fx_apply_plan(&s.f, &p);
    plan_done(&p);
    msg = ncp_condition(&s, "CertificatesAvailable", "message");
    assert_non_null(strstr(msg, "Secret default/sample-ca: tls.crt"));
    assert_string_equal(ncp_condition(&s, "CertificatesAvailable", "severity"), "Error");
    assert_string_equal(ncp_condition(&s, "Ready", "status"), "False");
    sim_done(&s);
}

/* A CA Secret made with kubectl, without the cluster-name label the cache selects on: creating
 * ours finds it (the runtime reads it, cache_view_found), and it is used and labelled; a bad
 * one is named in the condition and read again later. */
static void test_nestedcontrolplane__an_unlabelled_user_ca_is_used_and_labelled(void **state)
{
    struct strmap found = STRMAP_INIT;
    struct sim s;
    struct plan p;
    const struct plan_action *a;
    cJSON *ca = NULL;

    sim_init(&s, capn);
    s.f.view.found = &found;
    reconcile_ncp(&s, &p);
    for (size_t i = 0; i < p.n_actions; i++) {
        a = &p.actions[i];
        if (a->verb != KUBE_CREATE) {
            fx_apply_action(&s.f, a); /* the finalizer, the adoptions */
            continue;
        }
        assert_true(a->read_if_exists);
        if (strcmp(a->name, "sample-ca") == 0) {
            ca = cJSON_Duplicate(a->body, true); /* the user's, below */
            continue;
        }
        fx_apply_action(&s.f, a);
    }
    assert_non_null(ca);
    plan_done(&p);
    /* The user's: no label, no owner; read live when our create found it. */
    cJSON_DeleteItemFromObject(cJSON_GetObjectItem(ca, "metadata"), "labels");
    cJSON_DeleteItemFromObject(cJSON_GetObjectItem(ca, "metadata"), "ownerReferences");
    cJSON_ReplaceItemInObject(ca, "type", cJSON_CreateString("kubernetes.io/tls"));
    ctrl_note_put(&found, &KUBE_SECRETS, "default", "sample-ca", NULL, ca,
                  s.f.view.now + CACHE_VIEW_CONFLICT_TTL);
    reconcile_ncp(&s, &p);
    assert_null(fx_action(&p, KUBE_CREATE, "secrets", NULL));
    a = fx_action(&p, KUBE_PATCH, "secrets", "sample-ca");
    assert_non_null(a);
    assert_int_equal(a->patch_type, KUBE_PATCH_MERGE);
    assert_string_equal(kube_obj_label(a->body, "cluster.x-k8s.io/cluster-name"), "sample");
    assert_non_null(fx_event(&p, "LabelledCertificateAuthority"));
    plan_done(&p);

    /* A bad one: named, and read again once the note expires. */
    ctrl_note_put(&found, &KUBE_SECRETS, "default", "sample-ca", NULL,
                  cJSON_Parse("{\"apiVersion\":\"v1\",\"kind\":\"Secret\",\"metadata\":"
                              "{\"name\":\"sample-ca\",\"namespace\":\"default\"},"
                              "\"data\":{\"tls.crt\":\"bm90IGEgY2VydGlmaWNhdGU=\","
                              "\"tls.key\":\"bm90IGEgY2VydGlmaWNhdGU=\"}}"),
                  s.f.view.now + CACHE_VIEW_CONFLICT_TTL);
    reconcile_ncp(&s, &p);
    assert_null(fx_action(&p, KUBE_CREATE, "secrets", NULL));
    assert_null(fx_action(&p, KUBE_PATCH, "secrets", NULL));
    assert_true(p.requeue_after > 0 && p.requeue_after <= CACHE_VIEW_CONFLICT_TTL);
    fx_apply_plan(&s.f, &p);
    plan_done(&p);
    assert_non_null(strstr(ncp_condition(&s, "CertificatesAvailable", "message"),
                           "Secret default/sample-ca: tls.crt"));
    assert_string_equal(ncp_condition(&s, "Ready", "status"), "False");
    strmap_done(&found, ctrl_note_free);
    sim_done(&s);
}

/* Component references are same-namespace, as Cluster API's are: one naming another
 * namespace is refused naming the field, with an Event, instead of waiting for an object that
 * is never looked for. */
static void test_nestedcontrolplane__a_reference_to_another_namespace_is_refused(void **state)
{
    char yaml[sizeof(capn) + 64];
    struct sim s;
    struct plan p;

    capn_with(yaml, sizeof(yaml), "kind: NestedEtcd, name: sample-nestedetcd}",
              "kind: NestedEtcd, name: sample-nestedetcd, namespace: other}");
    sim_init(&s, yaml);
    reconcile_ncp(&s, &p);
    assert_status_only(&p);
    assert_non_null(fx_event(&p, "InvalidSpec"));
    fx_apply_plan(&s.f, &p);
    plan_done(&p);
    assert_string_equal(ncp_condition(&s, "Ready", "status"), "False");
    assert_string_equal(ncp_condition(&s, "Ready", "reason"), "InvalidSpec");
    assert_non_null(strstr(ncp_condition(&s, "Ready", "message"),
                           "spec.etcd.namespace: \"other\" is not the control plane's namespace "
                           "\"default\""));
    assert_null(strstr(ncp_condition(&s, "Ready", "message"), "does not exist"));
    assert_string_equal(fx_str(ncp_status(&s), "phase"), "Failed");
    sim_done(&s);

    /* its own namespace, spelt out, is the same as none */
    capn_with(yaml, sizeof(yaml), "kind: NestedEtcd, name: sample-nestedetcd}",
              "kind: NestedEtcd, name: sample-nestedetcd, namespace: default}");
    sim_init(&s, yaml);
    sim_converge(&s, 40);
    assert_string_equal(ncp_condition(&s, "Ready", "status"), "True");
    sim_done(&s);
}

/* A name too long for a cluster name is reported on the name alone, not also on the endpoint
 * derived from it, which the user never set. */
static void test_nestedcontrolplane__a_long_name_is_reported_on_the_name_only(void **state)
{
    char name[254], yaml[1024];
    const cJSON *st;
    struct sim s;
    struct plan p;
    struct err e;

    memset(name, 'a', 253);
    name[253] = '\0';
    snprintf(yaml, sizeof(yaml),
             "apiVersion: controlplane.cluster.x-k8s.io/v1beta1\n"
             "kind: NestedControlPlane\n"
             "metadata: {name: %s, uid: long-1, generation: 1}\n"
             "spec: {version: 1.36.3}\n",
             name);
    sim_init(&s, capn);
    fx_put(&s.f, yaml);
    plan_init(&p);
    err_clear(&e);
    assert_int_equal(nestedcontrolplane_reconcile(&s.ctx, &s.f.view, "default", name, &p, &e), 0);
    assert_status_only(&p);
    st = fx_path(p.actions[0].body, "status");
    assert_string_equal(fx_str(fx_condition(st, "Ready"), "reason"), "InvalidSpec");
    assert_non_null(strstr(fx_str(fx_condition(st, "Ready"), "message"), "metadata.name: \"aaaa"));
    assert_non_null(strstr(fx_str(fx_condition(st, "Ready"), "message"), "is too long"));
    assert_null(strstr(fx_str(fx_condition(st, "Ready"), "message"), "controlPlaneEndpoint"));
    assert_string_equal(fx_str(st, "phase"), "Failed");
    plan_done(&p);
    sim_done(&s);
}

static void test_nestedcontrolplane__a_service_cidr_change_is_refused(void **state)
{
    struct sim s;
    struct plan p;
    char targets[512];
    cJSON *cl;

    sim_init(&s, capn);
    sim_converge(&s, 40);
    snprintf(targets, sizeof(targets), "%s",
             fx_str(ncp_status(&s), "rollout.components.apiserver.configHash"));
    cl = cJSON_Duplicate(fx_get(&s.f, FX_CLUSTERS, "sample"), true);
    cJSON_ReplaceItemInArray((cJSON *)fx_path(cl, "spec.clusterNetwork.services.cidrBlocks"), 0,
                             cJSON_CreateString("10.97.0.0/16"));
    fx_put_json(&s.f, cl);
    reconcile_ncp(&s, &p);
    assert_status_only(&p);
    assert_non_null(fx_event(&p, "ServiceCIDRChangeRefused"));
    fx_apply_plan(&s.f, &p);
    plan_done(&p);
    assert_string_equal(ncp_condition(&s, "Upgrading", "reason"), "ServiceCIDRChangeRefused");
    assert_non_null(strstr(ncp_condition(&s, "Upgrading", "message"), "10.96.0.0/12"));
    assert_string_equal(fx_str(ncp_status(&s), "rollout.components.apiserver.configHash"), targets);
    assert_string_equal(fx_str(ncp_status(&s), "apiserver.serviceCidr"), "10.96.0.0/12");
    sim_done(&s);
}

static void test_nestedcontrolplane__two_minors_and_downgrades_are_refused(void **state)
{
    /* Running at, asked for, and the refusal: both versions have packages, so the rollout
     * rules are what refuse them. */
    static const char *const cases[][3] = {{"1.35.4", "1.37.2", "MinorSkipRefused"},
                                           {"1.36.3", "1.35.4", "DowngradeRefused"}};
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char yaml[sizeof(capn) + 64], from[64];
        struct sim s;
        struct plan p;
        cJSON *ncp;

        snprintf(from, sizeof(from), "  version: %s\n", cases[i][0]);
        capn_with(yaml, sizeof(yaml), "  version: 1.36.3\n", from);
        sim_init(&s, yaml);
        sim_converge(&s, 40);
        assert_string_equal(fx_str(ncp_status(&s), "rollout.components.apiserver.version"),
                            cases[i][0]);
        ncp = cJSON_Duplicate(fx_get(&s.f, FX_CONTROL_PLANES, NCP), true);
        cJSON_ReplaceItemInObject((cJSON *)fx_path(ncp, "spec"), "version",
                                  cJSON_CreateString(cases[i][1]));
        fx_put_json(&s.f, ncp);
        reconcile_ncp(&s, &p);
        assert_status_only(&p);
        assert_non_null(fx_event(&p, cases[i][2]));
        fx_apply_plan(&s.f, &p);
        plan_done(&p);
        assert_string_equal(ncp_condition(&s, "Upgrading", "reason"), cases[i][2]);
        assert_string_equal(ncp_condition(&s, "Ready", "status"), "True");
        /* Ready says that nothing rolls, and why, not that a rollout runs */
        assert_null(strstr(ncp_condition(&s, "Ready", "message"), "rollout runs"));
        assert_non_null(strstr(ncp_condition(&s, "Ready", "message"), "nothing rolls"));
        assert_non_null(strstr(ncp_condition(&s, "Ready", "message"), cases[i][2]));
        assert_string_equal(fx_str(ncp_status(&s), "phase"), "Ready");
        /* nothing rolls: every component stays where it runs */
        sim_converge(&s, 40);
        assert_string_equal(ncp_condition(&s, "Upgrading", "reason"), cases[i][2]);
        assert_string_equal(fx_str(ncp_status(&s), "rollout.components.apiserver.version"),
                            cases[i][0]);
        assert_string_equal(fx_str(ncp_status(&s), "rollout.components.controllerManager.version"),
                            cases[i][0]);
        sim_done(&s);
    }
}

/* Sets spec.version of the object `name` in store `which`. */
static void set_version(struct sim *s, enum fx_store which, const char *name, const char *version)
{
    cJSON *o = cJSON_Duplicate(fx_get(&s->f, which, name), true);
    cJSON *spec = (cJSON *)fx_path(o, "spec");

    cJSON_DeleteItemFromObject(spec, "version");
    cJSON_AddStringToObject(spec, "version", version);
    fx_put_json(&s->f, o);
}

/* A RolloutStep Event says a component's target moved: it goes out only after the status
 * write that records the target (the components read it there), so a write that meets a 409
 * takes its Event with it, and the next reconcile plans both again. */
static void test_nestedcontrolplane__a_rollout_step_is_told_after_its_status_write(void **state)
{
    char yaml[sizeof(capn) + 64];
    struct sim s;
    struct plan p;
    const struct plan_event *ev;
    const struct plan_action *last;

    capn_with(yaml, sizeof(yaml), "  version: 1.36.3\n", "  version: 1.35.4\n");
    sim_init(&s, yaml);
    sim_converge(&s, 40);
    set_version(&s, FX_CONTROL_PLANES, NCP, "1.36.3");
    reconcile_ncp(&s, &p);
    ev = fx_event(&p, "RolloutStep");
    assert_non_null(ev);
    assert_non_null(strstr(ev->message, "etcd: target 3.6.17"));
    assert_true(p.n_actions > 0);
    assert_int_equal(ev->after, p.n_actions);
    last = &p.actions[p.n_actions - 1];
    assert_int_equal(last->verb, KUBE_UPDATE);
    assert_string_equal(last->subresource, "status");
    assert_string_equal(last->name, NCP);
    assert_string_equal(fx_str(last->body, "status.rollout.components.etcd.version"), "3.6.17");
    /* the write did not happen (a 409): the next reconcile plans the step and its Event again */
    plan_done(&p);
    reconcile_ncp(&s, &p);
    assert_non_null(fx_event(&p, "RolloutStep"));
    plan_done(&p);
    sim_done(&s);
}

/* The API server's extraArgs: one flag, or none. */
static void set_api_flag(struct sim *s, const char *value)
{
    cJSON *o = cJSON_Duplicate(fx_get(&s->f, FX_APISERVERS, "sample-nestedapiserver"), true);
    cJSON *spec = (cJSON *)fx_path(o, "spec"), *meta = (cJSON *)fx_path(o, "metadata");
    const cJSON *g = fx_path(o, "metadata.generation");
    double gen = g->valuedouble + 1;

    cJSON_DeleteItemFromObject(spec, "extraArgs");
    if (value)
        cJSON_AddStringToObject(cJSON_AddObjectToObject(spec, "extraArgs"), "max-requests-inflight",
                                value);
    cJSON_DeleteItemFromObject(meta, "generation");
    cJSON_AddNumberToObject(meta, "generation", gen);
    fx_put_json(&s->f, o);
}

/* The API servers' StatefulSet rolling from r1 to r2, with its pod at r2 crash-looping. */
static void crash_loop(struct sim *s)
{
    cJSON *sts = cJSON_Duplicate(fx_get(&s->f, FX_STATEFULSETS, "sample-apiserver"), true);
    cJSON *st;
    char created[32], yaml[1024];

    cJSON_DeleteItemFromObject(sts, "status");
    st = cJSON_AddObjectToObject(sts, "status");
    cJSON_AddNumberToObject(st, "observedGeneration",
                            fx_path(sts, "metadata.generation")->valuedouble);
    cJSON_AddNumberToObject(st, "replicas", 1);
    cJSON_AddNumberToObject(st, "readyReplicas", 0);
    cJSON_AddNumberToObject(st, "updatedReplicas", 1);
    cJSON_AddStringToObject(st, "currentRevision", "sample-apiserver-r1");
    cJSON_AddStringToObject(st, "updateRevision", "sample-apiserver-r2");
    fx_put_json(&s->f, sts);
    time_format_rfc3339(s->f.view.now - 20, created);
    snprintf(yaml, sizeof(yaml),
             "apiVersion: v1\nkind: Pod\n"
             "metadata: {name: sample-apiserver-0, uid: pod-r2, creationTimestamp: '%s', "
             "labels: {controller-revision-hash: sample-apiserver-r2}}\n"
             "status:\n"
             "  conditions: [{type: Ready, status: 'False'}]\n"
             "  containerStatuses:\n"
             "  - name: kube-apiserver\n"
             "    restartCount: 3\n"
             "    lastState: {terminated: {exitCode: 1, reason: Error}}\n",
             created);
    fx_put(&s->f, yaml);
}

/* The API servers' StatefulSet with its pods Ready and `available` of them available. */
static void api_available(struct sim *s, int available)
{
    cJSON *sts = cJSON_Duplicate(fx_get(&s->f, FX_STATEFULSETS, "sample-apiserver"), true);
    cJSON *st = (cJSON *)fx_path(sts, "status");

    cJSON_DeleteItemFromObject(st, "availableReplicas");
    cJSON_AddNumberToObject(st, "availableReplicas", available);
    fx_put_json(&s->f, sts);
}

/* With minReadySeconds, a StatefulSet of Parallel pods replaces every old pod that is not yet
 * available at once: a new API server target waits until its pods are available. */
static void test_nestedcontrolplane__a_roll_waits_for_api_servers_to_be_available(void **state)
{
    struct sim s;
    char *good;

    sim_init(&s, capn);
    sim_converge(&s, 40);
    good = strdup(fx_str(ncp_status(&s), "rollout.components.apiserver.configHash"));
    api_available(&s, 0);
    set_api_flag(&s, "100");
    sim_one(&s, -1, "default", NCP);
    assert_string_equal(fx_str(ncp_status(&s), "rollout.components.apiserver.configHash"), good);
    assert_string_equal(ncp_condition(&s, "Upgrading", "message"),
                        "kube-apiserver waiting for its pods to be available (minReadySeconds)");
    api_available(&s, 1);
    sim_one(&s, -1, "default", NCP);
    assert_string_not_equal(fx_str(ncp_status(&s), "rollout.components.apiserver.configHash"),
                            good);
    free(good);
    sim_done(&s);
}

/* A roll whose new API server pod keeps crashing is held: the control plane records what
 * failed and stops (Upgrading False, RolloutStalled); the component sets the StatefulSet's
 * partition to its replicas and, once the cache shows it, deletes the pod of the failed
 * revision; the spec as it was ends the hold. */
static void test_nestedcontrolplane__a_crashing_roll_is_held_and_rolled_back(void **state)
{
    struct sim s;
    struct plan p;
    const struct plan_action *a;
    const char *good;
    cJSON *sts;
    struct err e;

    sim_init(&s, capn);
    sim_converge(&s, 40);
    good = fx_str(ncp_status(&s), "rollout.components.apiserver.configHash");
    assert_non_null(good);
    good = strdup(good);
    set_api_flag(&s, "not-a-number");
    sim_one(&s, -1, "default", NCP);
    assert_string_not_equal(fx_str(ncp_status(&s), "rollout.components.apiserver.configHash"),
                            good);
    sim_one(&s, RENDER_PART_APISERVER, "default", "sample-nestedapiserver");
    crash_loop(&s);

    sim_one(&s, -1, "default", NCP);
    assert_string_equal(fx_str(ncp_status(&s), "rollout.components.apiserver.rolledBack"),
                        "pod sample-apiserver-0: container kube-apiserver restarted 3 times, "
                        "last exit code 1 (Error)");
    assert_string_equal(ncp_condition(&s, "Upgrading", "status"), "False");
    assert_string_equal(ncp_condition(&s, "Upgrading", "reason"), "RolloutStalled");
    assert_non_null(strstr(ncp_condition(&s, "Upgrading", "message"), "is held back (pod "
                                                                      "sample-apiserver-0"));

    /* The partition first; no pod goes while the cache does not show it. */
    plan_init(&p);
    err_clear(&e);
    assert_int_equal(nestedcomponent_reconcile(&s.ctx.parts[RENDER_PART_APISERVER], &s.f.view,
                                               "default", "sample-nestedapiserver", &p, &e),
                     0);
    a = fx_action(&p, KUBE_PATCH, "statefulsets", "sample-apiserver");
    assert_non_null(a);
    assert_int_equal(fx_path(a->body, "spec.updateStrategy.rollingUpdate.partition")->valueint, 1);
    assert_null(fx_action(&p, KUBE_DELETE, "pods", NULL));
    plan_done(&p);
    sts = cJSON_Duplicate(fx_get(&s.f, FX_STATEFULSETS, "sample-apiserver"), true);
    cJSON_AddNumberToObject(
        cJSON_AddObjectToObject(
            cJSON_AddObjectToObject((cJSON *)fx_path(sts, "spec"), "updateStrategy"),
            "rollingUpdate"),
        "partition", 1);
    fx_put_json(&s.f, sts);
    plan_init(&p);
    assert_int_equal(nestedcomponent_reconcile(&s.ctx.parts[RENDER_PART_APISERVER], &s.f.view,
                                               "default", "sample-nestedapiserver", &p, &e),
                     0);
    a = fx_action(&p, KUBE_DELETE, "pods", "sample-apiserver-0");
    assert_non_null(a);
    assert_string_equal(a->precondition_uid, "pod-r2");
    assert_non_null(fx_event(&p, "RolledBack"));
    assert_non_null(strstr(fx_event(&p, "RolledBack")->message, "recreates it at revision "
                                                                "sample-apiserver-r1"));
    plan_done(&p);

    /* The spec as it was: the target moves back, the hold ends. */
    set_api_flag(&s, NULL);
    sim_one(&s, -1, "default", NCP);
    assert_string_equal(fx_str(ncp_status(&s), "rollout.components.apiserver.configHash"), good);
    assert_null(fx_path(ncp_status(&s), "rollout.components.apiserver.rolledBack"));
    free((char *)good);
    sim_done(&s);
}

/* Another control plane as the cache shows it, with its Upgrading condition. */
static void put_peer(struct sim *s, const char *name, const char *status, const char *reason)
{
    char yaml[1024];

    snprintf(yaml, sizeof(yaml),
             "apiVersion: controlplane.cluster.x-k8s.io/v1beta1\n"
             "kind: NestedControlPlane\n"
             "metadata: {name: %s, uid: peer-%s, generation: 1, resourceVersion: '7'}\n"
             "spec: {version: 1.36.3}\n"
             "status:\n"
             "  initialized: true\n"
             "  conditions:\n"
             "  - {type: Upgrading, status: '%s', reason: %s, lastTransitionTime: "
             "'2026-01-01T00:00:00Z'}\n",
             name, name, status, reason);
    fx_put(&s->f, yaml);
}

/* Collects the names enqueued as " a b ...". */
static void enqueue_name(void *q, const char *ns, const char *name)
{
    size_t n = strlen(q);

    (void)ns;
    snprintf((char *)q + n, 256 - n, " %s", name);
}

/* The brake: under --max-concurrent-rollouts 1, a version change waits while another control
 * plane rolls (no target moves, Upgrading True RolloutQueued naming it), and goes once that
 * roll has ended; the end of a roll wakes it. Creation never waits. */
static void test_nestedcontrolplane__a_roll_waits_for_a_slot_and_creation_does_not(void **state)
{
    char yaml[sizeof(capn) + 64], woken[256] = "";
    const struct plan_action *last;
    struct sim s;
    struct plan p;

    capn_with(yaml, sizeof(yaml), "  version: 1.36.3\n", "  version: 1.35.4\n");
    sim_init(&s, yaml);
    s.ctx.max_rollouts = (struct brake_limit){1, false};
    put_peer(&s, "other", "True", "RollingOut");
    /* creation is not a roll: it completes while the other one rolls */
    assert_true(sim_converge(&s, 40) >= 0);
    assert_string_equal(ncp_condition(&s, "Ready", "status"), "True");

    set_version(&s, FX_CONTROL_PLANES, NCP, "1.36.3");
    reconcile_ncp(&s, &p);
    assert_null(fx_event(&p, "RolloutStep"));
    last = &p.actions[p.n_actions - 1];
    assert_string_equal(last->subresource, "status");
    assert_string_equal(fx_str(last->body, "status.rollout.components.etcd.version"), "3.5.36");
    assert_string_equal(fx_str(fx_condition(fx_path(last->body, "status"), "Upgrading"), "reason"),
                        "RolloutQueued");
    assert_non_null(
        strstr(fx_str(fx_condition(fx_path(last->body, "status"), "Upgrading"), "message"),
               "1 control plane rolling (default/other), 1 allowed at once"));
    assert_string_equal(fx_str(fx_condition(fx_path(last->body, "status"), "Ready"), "status"),
                        "True");
    fx_apply_plan(&s.f, &p);
    plan_done(&p);
    assert_int_equal(strmap_size(&s.ctx.waiting), 1); /* known to wait before the cache says */

    /* the other roll ends: its change of status wakes the waiting one, which goes */
    put_peer(&s, "other", "False", "UpToDate");
    nestedcontrolplane_map(&s.ctx, &s.f.view, &NESTCP_CONTROL_PLANES,
                           fx_get(&s.f, FX_CONTROL_PLANES, "other"), enqueue_name, woken);
    assert_string_equal(woken, " other " NCP); /* itself, and the waiting one */
    reconcile_ncp(&s, &p);
    assert_non_null(fx_event(&p, "RolloutStep"));
    last = &p.actions[p.n_actions - 1];
    assert_string_equal(fx_str(last->body, "status.rollout.components.etcd.version"), "3.6.17");
    assert_string_equal(fx_str(fx_condition(fx_path(last->body, "status"), "Upgrading"), "reason"),
                        "RollingOut");
    plan_done(&p);
    assert_int_equal(strmap_size(&s.ctx.waiting), 0);

    /* the one let start holds its slot even before the cache shows its status write: the
     * end of another roll wakes no waiting one */
    put_peer(&s, "third", "True", "RolloutQueued");
    nestedcontrolplane_map(&s.ctx, &s.f.view, &NESTCP_CONTROL_PLANES,
                           fx_get(&s.f, FX_CONTROL_PLANES, "third"), enqueue_name, woken);
    assert_int_equal(strmap_size(&s.ctx.waiting), 1); /* the cache says it waits */
    woken[0] = '\0';
    nestedcontrolplane_map(&s.ctx, &s.f.view, &NESTCP_CONTROL_PLANES,
                           fx_get(&s.f, FX_CONTROL_PLANES, "other"), enqueue_name, woken);
    assert_string_equal(woken, " other"); /* itself only: no slot is free */
    sim_done(&s);
}

static const char *target_of(struct sim *s, const char *component)
{
    char path[128];

    snprintf(path, sizeof(path), "rollout.components.%s.version", component);
    return fx_str(ncp_status(s), path);
}

/* The snapshot Job of the control plane: the one Job there is. */
static bool first_job(void *ud, const cJSON *job)
{
    *(const cJSON **)ud = job;
    return false;
}

/* Before etcd and the API servers move to new versions, etcd is snapshotted to the claim the
 * NestedEtcd names: nothing moves while the Job runs, and the status names the file once it
 * is written. A change of flags alone takes none. */
static void test_nestedcontrolplane__a_version_change_waits_for_its_etcd_snapshot(void **state)
{
    char yaml[sizeof(capn) + 256], name[64];
    const cJSON *job = NULL, *args;
    struct sim s;

    /* the etcd's spec is the first of its kind in capn */
    capn_with(yaml, sizeof(yaml), "spec: {replicas: 1}\n",
              "spec: {replicas: 1, snapshots: {persistentVolumeClaim: {claimName: "
              "tenant-snapshots}}}\n");
    sim_init(&s, yaml);
    set_version(&s, FX_CONTROL_PLANES, NCP, "1.35.4");
    assert_true(sim_converge(&s, 40) >= 0);
    assert_string_equal(ncp_condition(&s, "Ready", "status"), "True");
    /* creation takes no snapshot: there is nothing to keep yet */
    assert_int_equal(kube_store_count(&s.f.stores[FX_JOBS]), 0);

    s.jobs = SIM_JOBS_RUN;
    s.watch = "RolloutStep";
    set_version(&s, FX_CONTROL_PLANES, NCP, "1.36.3");
    assert_true(sim_converge(&s, 40) >= 0);
    assert_int_equal(s.watch_hits, 0);
    assert_string_equal(target_of(&s, "etcd"), "3.5.36");
    assert_string_equal(target_of(&s, "apiserver"), "1.35.4");
    assert_int_equal(kube_store_count(&s.f.stores[FX_JOBS]), 1);
    kube_store_foreach(&s.f.stores[FX_JOBS], first_job, &job);
    snprintf(name, sizeof(name), "%s", kube_obj_name(job));
    assert_non_null(strstr(name, "sample-etcd-snapshot-"));
    assert_string_equal(fx_str(job, "metadata.ownerReferences.0.kind"), "NestedControlPlane");
    assert_string_equal(fx_str(job, "spec.template.spec.volumes.0.persistentVolumeClaim.claimName"),
                        "tenant-snapshots");
    assert_string_equal(fx_str(job, "spec.template.spec.containers.0.image"),
                        "registry.k8s.io/etcd:3.6.17-0");
    args = fx_path(job, "spec.template.spec.containers.0.args");
    assert_string_equal(cJSON_GetArrayItem(args, 0)->valuestring,
                        "--endpoints=https://sample-etcd-0.sample-etcd.default.svc:2379");
    assert_non_null(strstr(cJSON_GetArrayItem(args, cJSON_GetArraySize(args) - 1)->valuestring,
                           kube_obj_name(job)));
    assert_string_equal(ncp_condition(&s, "Upgrading", "status"), "True");
    assert_non_null(strstr(ncp_condition(&s, "Upgrading", "message"), "taking etcd snapshot"));
    assert_non_null(strstr(ncp_condition(&s, "Upgrading", "message"),
                           "etcd 3.5.36 -> 3.6.17, kube-apiserver 1.35.4 -> 1.36.3"));

    /* the Job completes: the roll goes, and the status names the file */
    s.jobs = SIM_JOBS_COMPLETE;
    s.watch = "SnapshotTaken";
    assert_true(sim_converge(&s, 80) >= 0);
    assert_int_equal(s.watch_hits, 1);
    assert_string_equal(target_of(&s, "apiserver"), "1.36.3");
    assert_string_equal(fx_str(ncp_status(&s), "version"), "v1.36.3");
    assert_string_equal(fx_str(ncp_status(&s), "rollout.snapshot.name"), name);
    assert_string_equal(fx_str(ncp_status(&s), "rollout.snapshot.claimName"), "tenant-snapshots");
    assert_string_equal(fx_str(ncp_status(&s), "rollout.snapshot.takenAt"), "2027-01-15T08:00:00Z");
    assert_string_equal(fx_str(ncp_status(&s), "rollout.snapshot.before"),
                        "etcd 3.5.36 -> 3.6.17, kube-apiserver 1.35.4 -> 1.36.3");
    assert_null(fx_path(ncp_status(&s), "rollout.snapshot.message"));
    /* one snapshot for the whole change: none again before the API servers' step; and its
     * Job, once the status recorded it, is gone (the file stays on the claim) */
    assert_int_equal(s.jobs_created, 1);
    assert_int_equal(kube_store_count(&s.f.stores[FX_JOBS]), 0);
    sim_done(&s);
}

/* A failed snapshot stops the change and says how to go on; without a claim the change goes
 * and says that no snapshot was taken. */
static void test_nestedcontrolplane__a_failed_or_unasked_snapshot_is_told(void **state)
{
    char yaml[sizeof(capn) + 256];
    struct sim s;

    capn_with(yaml, sizeof(yaml), "spec: {replicas: 1}\n",
              "spec: {replicas: 1, snapshots: {persistentVolumeClaim: {claimName: snaps}}}\n");
    sim_init(&s, yaml);
    assert_true(sim_converge(&s, 40) >= 0);
    s.jobs = SIM_JOBS_FAIL;
    set_version(&s, FX_CONTROL_PLANES, NCP, "1.37.2");
    assert_true(sim_converge(&s, 40) >= 0);
    assert_string_equal(target_of(&s, "apiserver"), "1.36.3");
    assert_string_equal(ncp_condition(&s, "Upgrading", "status"), "False");
    assert_string_equal(ncp_condition(&s, "Upgrading", "reason"), "SnapshotFailed");
    assert_non_null(strstr(ncp_condition(&s, "Upgrading", "message"),
                           "(BackoffLimitExceeded: Job has reached the specified backoff limit); "
                           "kube-apiserver 1.36.3 -> 1.37.2 waits. Delete the Job"));
    assert_string_equal(ncp_condition(&s, "Ready", "status"), "True");
    sim_done(&s);

    sim_init(&s, capn);
    assert_true(sim_converge(&s, 40) >= 0);
    set_version(&s, FX_CONTROL_PLANES, NCP, "1.37.2");
    s.jobs = SIM_JOBS_RUN;
    sim_pass(&s); /* the API servers' step starts at once */
    assert_string_equal(target_of(&s, "apiserver"), "1.37.2");
    assert_non_null(strstr(ncp_condition(&s, "Upgrading", "message"),
                           "no etcd snapshot was taken before kube-apiserver 1.36.3 -> 1.37.2: "
                           "NestedEtcd default/sample-nestedetcd names no "
                           "spec.snapshots.persistentVolumeClaim"));
    assert_true(sim_converge(&s, 80) >= 0);
    assert_int_equal(kube_store_count(&s.f.stores[FX_JOBS]), 0);
    assert_string_equal(fx_str(ncp_status(&s), "version"), "v1.37.2");
    assert_non_null(fx_path(ncp_status(&s), "rollout.snapshot.message"));
    sim_done(&s);
}

/* Once etcd was restored from a snapshot, every API server and controller-manager pod that
 * started before is deleted (its StatefulSet starts it again), once: newer pods stay. */
static void test_nestedcontrolplane__pods_older_than_a_restore_restart(void **state)
{
    struct sim s;
    struct plan p;
    cJSON *etcd;

    sim_init(&s, capn);
    assert_true(sim_converge(&s, 40) >= 0);
    fx_put(&s.f, "apiVersion: v1\nkind: Pod\n"
                 "metadata: {name: sample-apiserver-0, namespace: default, uid: kas-pod-0, "
                 "creationTimestamp: '2027-01-15T07:00:00Z'}\n"
                 "---\n"
                 "apiVersion: v1\nkind: Pod\n"
                 "metadata: {name: sample-controller-manager-0, namespace: default, uid: "
                 "kcm-pod-0, creationTimestamp: '2027-01-15T08:30:00Z'}\n");
    etcd = cJSON_Duplicate(fx_get(&s.f, FX_ETCDS, "sample-nestedetcd"), true);
    cJSON_AddItemToObject(cJSON_GetObjectItem(etcd, "status"), "restore",
                          cJSON_Parse("{\"snapshot\":\"s1\",\"phase\":\"Restored\","
                                      "\"restoredAt\":\"2027-01-15T08:00:00Z\"}"));
    fx_put_json(&s.f, etcd);
    reconcile_ncp(&s, &p);
    assert_non_null(fx_action(&p, KUBE_DELETE, "pods", "sample-apiserver-0"));
    assert_string_equal(fx_action(&p, KUBE_DELETE, "pods", "sample-apiserver-0")->precondition_uid,
                        "kas-pod-0");
    assert_null(fx_action(&p, KUBE_DELETE, "pods", "sample-controller-manager-0"));
    assert_non_null(strstr(fx_event(&p, "RestartedAfterRestore")->message,
                           "Pod sample-apiserver-0 deleted: it started before etcd was restored"));
    fx_apply_plan(&s.f, &p);
    plan_done(&p);
    reconcile_ncp(&s, &p);
    assert_null(fx_action(&p, KUBE_DELETE, "pods", NULL));
    plan_done(&p);
    sim_done(&s);
}

/* A roll that renews certificates waits for a slot like any other while they have more than 7
 * days left, and goes at once, past the limit, once they have less. */
static void test_nestedcontrolplane__an_urgent_renewal_never_waits(void **state)
{
    struct sim s;
    char before[RENDER_CLUSTER_HASH_MAX];

    sim_init(&s, capn);
    sim_converge(&s, 40);
    s.ctx.max_rollouts = (struct brake_limit){1, false};
    put_peer(&s, "other", "True", "RollingOut");
    snprintf(before, sizeof(before), "%s",
             fx_str(ncp_status(&s), "rollout.components.etcd.configHash"));
    /* 340 days on, the leaves (365 days) are within renewBeforeDays (30): 25 days left */
    s.f.view.now += 340 * 86400.0;
    sim_converge(&s, 40);
    assert_string_equal(ncp_condition(&s, "Upgrading", "reason"), "RolloutQueued");
    assert_string_equal(fx_str(ncp_status(&s), "rollout.components.etcd.configHash"), before);
    /* 20 days later, 5 days left: the renewal rolls although the other one still rolls */
    s.f.view.now += 20 * 86400.0;
    sim_converge(&s, 60);
    assert_string_equal(ncp_condition(&s, "Upgrading", "reason"), "UpToDate");
    assert_string_not_equal(fx_str(ncp_status(&s), "rollout.components.etcd.configHash"), before);
    assert_string_equal(
        fx_str(
            fx_condition(fx_path(fx_get(&s.f, FX_CONTROL_PLANES, "other"), "status"), "Upgrading"),
            "reason"),
        "RollingOut");
    sim_done(&s);
}

/* nestcp renews leaves, never a CA: a CA in its last year is named in CertificatesAvailable
 * (still True) with a Warning Event, once; before then the control plane is asked back for the
 * moment the first CA enters its last year. */
static void test_nestedcontrolplane__a_ca_in_its_last_year_is_told_once(void **state)
{
    struct sim s;
    struct plan p;
    const struct plan_event *ev;
    const struct plan_action *st;

    sim_init(&s, capn);
    sim_converge(&s, 40);
    assert_string_equal(ncp_condition(&s, "CertificatesAvailable", "reason"), "Available");
    reconcile_ncp(&s, &p);
    assert_true(p.requeue_after > 0);
    plan_done(&p);
    /* 3300 days on: the 10-year CAs have 350 days left */
    s.f.view.now += 3300.0 * 86400;
    reconcile_ncp(&s, &p);
    ev = fx_event(&p, "CertificateAuthorityExpiring");
    assert_non_null(ev);
    assert_int_equal(ev->type, KUBE_EVENT_WARNING);
    assert_non_null(strstr(ev->message, "Secret default/sample-"));
    st = fx_action(&p, KUBE_UPDATE, "nestedcontrolplanes", NCP);
    assert_non_null(st);
    assert_string_equal(
        fx_str(fx_condition(fx_path(st->body, "status"), "CertificatesAvailable"), "status"),
        "True");
    assert_string_equal(
        fx_str(fx_condition(fx_path(st->body, "status"), "CertificatesAvailable"), "reason"),
        "CertificateAuthorityExpiring");
    assert_non_null(strstr(
        fx_str(fx_condition(fx_path(st->body, "status"), "CertificatesAvailable"), "message"),
        "days; nestcp renews leaf certificates, not a CA by itself: rotate "
        "it before then (spec.certificates.rotate.clusterCA"));
    /* the first of the three CAs (all issued at once: the cluster CA), with the days left */
    assert_non_null(strstr(
        fx_str(fx_condition(fx_path(st->body, "status"), "CertificatesAvailable"), "message"),
        "Secret default/sample-ca: the cluster CA expires at "));
    assert_non_null(strstr(
        fx_str(fx_condition(fx_path(st->body, "status"), "CertificatesAvailable"), "message"),
        ", in 349 days;"));
    fx_apply_plan(&s.f, &p);
    plan_done(&p);
    reconcile_ncp(&s, &p);
    assert_null(fx_event(&p, "CertificateAuthorityExpiring"));
    plan_done(&p);
    sim_done(&s);
}

static void test_nestedcontrolplane__controller_manager_held_one_minor_older_rolls(void **state)
{
    char yaml[sizeof(capn) + 64];
    struct sim s;
    const cJSON *sts;

    capn_with(yaml, sizeof(yaml), "  version: 1.36.3\n", "  version: 1.35.4\n");
    sim_init(&s, yaml);
    sim_converge(&s, 40);
    assert_string_equal(fx_str(ncp_status(&s), "rollout.components.etcd.version"), "3.5.36");
    set_version(&s, FX_CONTROLLER_MANAGERS, "sample-nestedcontrollermanager", "1.35.4");
    set_version(&s, FX_CONTROL_PLANES, NCP, "1.36.3");
    sim_converge(&s, 40);
    /* etcd moves to what 1.36 needs and the API servers to 1.36; the controller manager stays */
    assert_string_equal(fx_str(ncp_status(&s), "rollout.components.etcd.version"), "3.6.17");
    assert_string_equal(fx_str(ncp_status(&s), "rollout.components.apiserver.version"), "1.36.3");
    assert_string_equal(fx_str(ncp_status(&s), "rollout.components.controllerManager.version"),
                        "1.35.4");
    /* status.version is the API servers' version. */
    assert_string_equal(fx_str(ncp_status(&s), "version"), "v1.36.3");
    assert_string_equal(ncp_condition(&s, "Upgrading", "reason"), "UpToDate");
    sts = fx_get(&s.f, FX_STATEFULSETS, "sample-controller-manager");
    assert_string_equal(fx_str(fx_path(sts, "spec.template.spec.containers")->child, "image"),
                        "registry.k8s.io/kube-controller-manager:v1.35.4");
    sts = fx_get(&s.f, FX_STATEFULSETS, "sample-apiserver");
    assert_string_equal(fx_str(fx_path(sts, "spec.template.spec.containers")->child, "image"),
                        "registry.k8s.io/kube-apiserver:v1.36.3");
    sts = fx_get(&s.f, FX_STATEFULSETS, "sample-etcd");
    assert_string_equal(fx_str(fx_path(sts, "spec.template.spec.containers")->child, "image"),
                        "registry.k8s.io/etcd:3.6.17-0");
    assert_string_equal(
        fx_str(fx_path(fx_get(&s.f, FX_CONTROLLER_MANAGERS, "sample-nestedcontrollermanager"),
                       "status"),
               "version"),
        "1.35.4");
    sim_done(&s);
}

static void test_nestedcontrolplane__controller_manager_override_newer_is_refused(void **state)
{
    struct sim s;
    struct plan p;
    char hash[128];

    sim_init(&s, capn);
    sim_converge(&s, 40);
    snprintf(hash, sizeof(hash), "%s",
             fx_str(ncp_status(&s), "rollout.components.controllerManager.configHash"));
    set_version(&s, FX_CONTROLLER_MANAGERS, "sample-nestedcontrollermanager", "1.37.2");
    reconcile_ncp(&s, &p);
    assert_status_only(&p);
    assert_non_null(fx_event(&p, "VersionSkewRefused"));
    fx_apply_plan(&s.f, &p);
    plan_done(&p);
    assert_string_equal(ncp_condition(&s, "Upgrading", "status"), "False");
    assert_string_equal(ncp_condition(&s, "Upgrading", "reason"), "VersionSkewRefused");
    assert_string_equal(ncp_condition(&s, "Upgrading", "message"),
                        "kube-controller-manager 1.37.2 would be newer than kube-apiserver "
                        "1.36.3; the version skew policy does not allow it");
    assert_string_equal(ncp_condition(&s, "Ready", "status"), "True");
    assert_string_equal(fx_str(ncp_status(&s), "rollout.components.controllerManager.version"),
                        "1.36.3");
    assert_string_equal(fx_str(ncp_status(&s), "rollout.components.controllerManager.configHash"),
                        hash);
    /* Nothing rolls: the whole system settles with the controller manager as it was. */
    sim_converge(&s, 40);
    assert_string_equal(fx_str(ncp_status(&s), "rollout.components.controllerManager.configHash"),
                        hash);
    sim_done(&s);
}

/* clusterctl move would copy the Cluster API objects and leave the tenant's StatefulSets and
 * etcd data to this cluster's garbage collector: every control plane carries the annotation
 * that makes clusterctl wait, and says why in MoveBlocked; one a user strips is put back
 * alone, and a pause (clusterctl pauses before it waits) keeps the condition. */
static void test_nestedcontrolplane__clusterctl_move_is_blocked_and_says_why(void **state)
{
    struct sim s;
    struct plan p;
    const struct plan_action *a;
    const cJSON *ann;
    cJSON *obj;

    sim_init(&s, capn);
    sim_converge(&s, 40);
    assert_string_equal(
        kube_obj_annotation(fx_get(&s.f, FX_CONTROL_PLANES, NCP), NESTED_BLOCK_MOVE), "");
    assert_string_equal(ncp_condition(&s, "MoveBlocked", "status"), "True");
    assert_string_equal(ncp_condition(&s, "MoveBlocked", "reason"), "TenantDataNotMovable");
    assert_non_null(strstr(ncp_condition(&s, "MoveBlocked", "message"), "etcd data"));

    a = strip_and_reconcile(&s, "annotations", &p);
    ann = fx_path(a->body, "metadata.annotations");
    assert_int_equal(cJSON_GetArraySize(ann), 1);
    assert_non_null(cJSON_GetObjectItem(ann, NESTED_BLOCK_MOVE));
    assert_null(fx_path(a->body, "spec"));
    fx_apply_plan(&s.f, &p);
    plan_done(&p);
    assert_non_null(kube_obj_annotation(fx_get(&s.f, FX_CONTROL_PLANES, NCP), NESTED_BLOCK_MOVE));

    obj = cJSON_Duplicate(fx_get(&s.f, FX_CONTROL_PLANES, NCP), true);
    assert_non_null(cJSON_AddStringToObject(
        cJSON_GetObjectItem(cJSON_GetObjectItem(obj, "metadata"), "annotations"),
        "cluster.x-k8s.io/paused", "true"));
    fx_put_json(&s.f, obj);
    reconcile_ncp(&s, &p);
    fx_apply_plan(&s.f, &p);
    plan_done(&p);
    assert_string_equal(ncp_condition(&s, "Paused", "status"), "True");
    assert_string_equal(ncp_condition(&s, "MoveBlocked", "status"), "True");
    sim_done(&s);
}

static void test_nestedcontrolplane__paused_only_shows_paused(void **state)
{
    struct sim s;
    struct plan p;
    cJSON *ncp;

    sim_init(&s, capn);
    ncp = cJSON_Duplicate(fx_get(&s.f, FX_CONTROL_PLANES, NCP), true);
    cJSON_AddStringToObject(
        cJSON_AddObjectToObject(cJSON_GetObjectItemCaseSensitive(ncp, "metadata"), "annotations"),
        "cluster.x-k8s.io/paused", "true");
    fx_put_json(&s.f, ncp);
    reconcile_ncp(&s, &p);
    assert_status_only(&p);
    fx_apply_plan(&s.f, &p);
    plan_done(&p);
    assert_string_equal(ncp_condition(&s, "Paused", "status"), "True");
    assert_null(ncp_condition(&s, "Ready", "status"));
    sim_done(&s);
}

static void test_nestedcontrolplane__deletion_removes_children_then_the_finalizer(void **state)
{
    struct sim s;
    struct plan p;
    cJSON *ncp;
    const struct plan_action *a;

    sim_init(&s, capn);
    sim_converge(&s, 40);
    ncp = cJSON_Duplicate(fx_get(&s.f, FX_CONTROL_PLANES, NCP), true);
    cJSON_AddStringToObject(cJSON_GetObjectItemCaseSensitive(ncp, "metadata"), "deletionTimestamp",
                            "2027-01-15T09:00:00Z");
    fx_put_json(&s.f, ncp);
    reconcile_ncp(&s, &p);
    assert_null(fx_action(&p, KUBE_CREATE, "secrets", NULL));
    assert_null(fx_action(&p, KUBE_PATCH, "nestedcontrolplanes", NULL));
    assert_non_null(fx_action(&p, KUBE_DELETE, "nestedetcds", "sample-nestedetcd"));
    assert_non_null(fx_action(&p, KUBE_DELETE, "nestedcontrollermanagers", NULL));
    assert_non_null(fx_action(&p, KUBE_DELETE, "statefulsets", "sample-apiserver"));
    assert_string_equal(fx_action(&p, KUBE_DELETE, "nestedetcds", NULL)->precondition_uid,
                        "etcd-1");
    assert_true(p.requeue_after > 0);
    fx_apply_plan(&s.f, &p);
    plan_done(&p);
    reconcile_ncp(&s, &p);
    a = fx_action(&p, KUBE_PATCH, "nestedcontrolplanes", NCP);
    assert_non_null(a);
    assert_int_equal(cJSON_GetArraySize(fx_path(a->body, "metadata.finalizers")), 0);
    assert_non_null(fx_str(a->body, "metadata.resourceVersion"));
    plan_done(&p);
    sim_done(&s);
}

/* Objects of the wrong shape (what a CRD without a schema, or an old API server, lets
 * through) crash nothing and create nothing; the user sees which field is wrong. */
static void
test_nestedcontrolplane__objects_of_the_wrong_shape_are_named_and_create_nothing(void **state)
{
    static const struct {
        const char *yaml;
        const char *field; /* in Ready's message; NULL: nothing is written at all */
    } bad[] = {
        {"apiVersion: controlplane.cluster.x-k8s.io/v1beta1\nkind: NestedControlPlane\n"
         "metadata: {name: sample-control-plane}\nspec: {version: 7, etcd: [1]}\n",
         "spec.etcd: [1] is not an object"},
        /* being deleted, with metadata nobody can read: nothing to do */
        {"apiVersion: controlplane.cluster.x-k8s.io/v1beta1\nkind: NestedControlPlane\n"
         "metadata: {name: sample-control-plane, finalizers: 3, deletionTimestamp: x}\n"
         "status: {rollout: 5, conditions: [1]}\n",
         NULL},
        {"apiVersion: controlplane.cluster.x-k8s.io/v1beta1\nkind: NestedControlPlane\n"
         "metadata: {name: sample-control-plane, uid: u}\n"
         "spec: {etcd: {name: sample-nestedetcd}, certificates: {keyAlgorithm: DSA}}\n",
         "spec.certificates.keyAlgorithm: \"DSA\" is not one of"},
        {"apiVersion: controlplane.cluster.x-k8s.io/v1beta1\nkind: NestedControlPlane\n"
         "metadata: {name: sample-control-plane, uid: u}\n"
         "status: {rollout: {components: {etcd: {configHash: 5}}}, apiserver: {serviceCidr: []}}\n",
         "status.rollout.components.etcd.configHash: 5 is not a string"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        struct sim s;
        struct plan p;

        sim_init(&s, capn);
        fx_put(&s.f, bad[i].yaml);
        reconcile_ncp(&s, &p);
        if (!bad[i].field) {
            assert_int_equal(p.n_actions, 0);
        } else {
            const cJSON *ready;
            assert_int_equal(p.n_actions, 1); /* its status, nothing else */
            assert_string_equal(p.actions[0].subresource, "status");
            ready = fx_condition(fx_path(p.actions[0].body, "status"), "Ready");
            assert_string_equal(fx_str(ready, "status"), "False");
            assert_string_equal(fx_str(ready, "reason"), "InvalidSpec");
            assert_non_null(strstr(fx_str(ready, "message"), bad[i].field));
            assert_string_equal(fx_str(fx_path(p.actions[0].body, "status"), "phase"), "Failed");
        }
        plan_done(&p);
        sim_pass(&s);
        sim_done(&s);
    }
}

/* data[key] of Secret sample-sa as stored (base64), or NULL. */
static const char *secret_data_of(struct sim *s, const char *name, const char *key)
{
    const cJSON *v = fx_path(fx_get(&s->f, FX_SECRETS, name), "data");

    v = cJSON_GetObjectItemCaseSensitive(v, key);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

static const char *sa_data(struct sim *s, const char *key)
{
    return secret_data_of(s, "sample-sa", key);
}

/* spec.certificates.rotate holds field: value alone. */
static void request_ca_rotation(struct sim *s, const char *field, const char *value)
{
    cJSON *ncp = cJSON_Duplicate(fx_get(&s->f, FX_CONTROL_PLANES, NCP), true);
    cJSON *cert = (cJSON *)fx_path(ncp, "spec.certificates"), *gen;

    cJSON_DeleteItemFromObjectCaseSensitive(cert, "rotate");
    cJSON_AddItemToObject(cJSON_AddObjectToObject(cert, "rotate"), field,
                          cJSON_CreateString(value));
    gen = (cJSON *)fx_path(ncp, "metadata.generation");
    cJSON_SetNumberValue(gen, gen->valuedouble + 1);
    fx_put_json(&s->f, ncp);
}

static void request_rotation(struct sim *s, const char *value)
{
    request_ca_rotation(s, "serviceAccountKey", value);
}

static void test_nestedcontrolplane__a_service_account_key_rotation_runs_its_phases(void **state)
{
    char yaml[sizeof(capn) + 256], old_pub[1024], old_key[1024];
    const struct plan_action *a;
    struct sim s;
    struct plan p;

    capn_with(yaml, sizeof(yaml), "renewBeforeDays: 30}",
              "renewBeforeDays: 30, serviceAccountKey: {rotationOverlapSeconds: 600}}");
    sim_init(&s, yaml);
    sim_converge(&s, 40);
    snprintf(old_pub, sizeof(old_pub), "%s", sa_data(&s, "tls.crt"));
    snprintf(old_key, sizeof(old_key), "%s", sa_data(&s, "tls.key"));
    assert_null(ncp_condition(&s, "CertificatesRotating", "reason"));

    /* The request: one conditional patch of <c>-sa with the new pair, then its Event. */
    request_rotation(&s, "r1");
    reconcile_ncp(&s, &p);
    a = fx_action(&p, KUBE_PATCH, "secrets", "sample-sa");
    assert_non_null(a);
    assert_int_equal(a->patch_type, KUBE_PATCH_MERGE);
    assert_non_null(fx_str(a->body, "metadata.resourceVersion"));
    assert_non_null(cJSON_GetObjectItemCaseSensitive(fx_path(a->body, "data"), "next.pub"));
    assert_non_null(fx_event(&p, "ServiceAccountKeyRotationStarted"));
    assert_true(fx_event(&p, "ServiceAccountKeyRotationStarted")->after > (size_t)fx_index(&p, a));
    fx_apply_plan(&s.f, &p);
    plan_done(&p);
    assert_string_equal(ncp_condition(&s, "CertificatesRotating", "status"), "True");
    assert_string_equal(ncp_condition(&s, "CertificatesRotating", "reason"), "TrustingNewKey");
    assert_string_equal(fx_str(ncp_status(&s), "certificates.serviceAccountKey.rotation"), "r1");
    assert_string_equal(sa_data(&s, "tls.crt"), old_pub);

    /* Phases 1 and 2 roll; the old public key then waits out the overlap. */
    sim_converge(&s, 80);
    assert_string_equal(fx_str(ncp_status(&s), "certificates.serviceAccountKey.phase"), "Overlap");
    assert_string_equal(ncp_condition(&s, "CertificatesRotating", "reason"), "Overlap");
    assert_string_not_equal(sa_data(&s, "tls.crt"), old_pub);
    assert_string_not_equal(sa_data(&s, "tls.key"), old_key);
    assert_string_equal(sa_data(&s, "previous.pub"), old_pub);
    assert_null(sa_data(&s, "next.pub"));
    assert_null(sa_data(&s, "next.key"));
    assert_non_null(fx_str(ncp_status(&s), "certificates.serviceAccountKey.dropAfter"));

    /* A second request meanwhile is refused with the reason. */
    request_rotation(&s, "r2");
    reconcile_ncp(&s, &p);
    assert_non_null(fx_event(&p, "RotationInProgress"));
    fx_apply_plan(&s.f, &p);
    plan_done(&p);
    assert_string_equal(ncp_condition(&s, "CertificatesRotating", "reason"), "RotationInProgress");
    request_rotation(&s, "r1");

    /* After the overlap, the old key goes and the API servers roll without it. */
    s.f.view.now += 600;
    sim_converge(&s, 80);
    assert_string_equal(fx_str(ncp_status(&s), "certificates.serviceAccountKey.phase"), "Complete");
    assert_string_equal(ncp_condition(&s, "CertificatesRotating", "status"), "False");
    assert_string_equal(ncp_condition(&s, "CertificatesRotating", "reason"), "Complete");
    assert_null(sa_data(&s, "previous.pub"));
    assert_non_null(cJSON_GetObjectItemCaseSensitive(
        fx_path(fx_get(&s.f, FX_SECRETS, "sample-sa"), "metadata.annotations"),
        "nestcp.x-k8s.io/key-created-at"));
    sim_done(&s);
}

static void test_nestedcontrolplane__a_cluster_ca_rotation_runs_its_phases(void **state)
{
    char old_crt[4096];
    const struct plan_action *a;
    struct sim s;
    struct plan p;

    (void)state;
    sim_init(&s, capn);
    sim_converge(&s, 40);
    snprintf(old_crt, sizeof(old_crt), "%s", secret_data_of(&s, "sample-ca", "tls.crt"));

    /* The request: one conditional patch of <c>-ca with a new CA, then its Event. */
    request_ca_rotation(&s, "clusterCA", "r1");
    reconcile_ncp(&s, &p);
    a = fx_action(&p, KUBE_PATCH, "secrets", "sample-ca");
    assert_non_null(a);
    assert_non_null(fx_str(a->body, "metadata.resourceVersion"));
    assert_non_null(cJSON_GetObjectItemCaseSensitive(fx_path(a->body, "data"), "next.crt"));
    assert_non_null(cJSON_GetObjectItemCaseSensitive(fx_path(a->body, "data"), "next.key"));
    assert_true(fx_event(&p, "ClusterCARotationStarted")->after > (size_t)fx_index(&p, a));
    fx_apply_plan(&s.f, &p);
    plan_done(&p);
    assert_string_equal(ncp_condition(&s, "CertificatesRotating", "status"), "True");
    assert_string_equal(ncp_condition(&s, "CertificatesRotating", "reason"), "TrustingNewCA");
    assert_string_equal(fx_str(ncp_status(&s), "certificates.clusterCA.rotation"), "r1");

    /* A service-account key rotation asked for meanwhile is refused with the reason. */
    request_rotation(&s, "k1");
    reconcile_ncp(&s, &p);
    fx_apply_plan(&s.f, &p);
    plan_done(&p);
    assert_string_equal(ncp_condition(&s, "CertificatesRotating", "reason"), "RotationInProgress");
    assert_null(secret_data_of(&s, "sample-sa", "next.pub"));
    request_ca_rotation(&s, "clusterCA", "r1");

    /* Every phase rolls; the CA Secret ends with the new CA alone. */
    sim_converge(&s, 160);
    assert_string_equal(fx_str(ncp_status(&s), "certificates.clusterCA.phase"), "Complete");
    assert_string_equal(ncp_condition(&s, "CertificatesRotating", "status"), "False");
    assert_string_equal(ncp_condition(&s, "CertificatesRotating", "reason"), "Complete");
    assert_string_not_equal(secret_data_of(&s, "sample-ca", "tls.crt"), old_crt);
    assert_null(secret_data_of(&s, "sample-ca", "next.crt"));
    assert_null(secret_data_of(&s, "sample-ca", "previous.crt"));
    assert_null(secret_data_of(&s, "sample-ca", "previous.key"));
    sim_done(&s);
}

static void tick(struct ev_loop *loop, ev_timer *w, int revents)
{
}

static void test_nestedcontrolplane__rsa_keys_come_from_the_pool_without_blocking(void **state)
{
    struct ev_loop *loop = ev_loop_new(0);
    struct keypool *kp = NULL;
    struct sim s;
    struct plan p;
    ev_timer t;
    double t0;
    char yaml[sizeof(capn) + 64];
    const char *at = strstr(capn, "keyAlgorithm: ECDSA-P256");

    snprintf(yaml, sizeof(yaml), "%.*skeyAlgorithm: RSA-2048%s", (int)(at - capn), capn,
             at + strlen("keyAlgorithm: ECDSA-P256"));
    sim_init(&s, yaml);
    assert_int_equal(keypool_new(loop, &kp, NULL), 0);
    s.ctx.keys = kp;
    sim_one(&s, -1, "default", NCP); /* finalizer */
    t0 = ev_time();
    /* No RSA key is made on this thread: the reconcile creates nothing and comes back soon. */
    reconcile_ncp(&s, &p);
    assert_null(fx_action(&p, KUBE_CREATE, "secrets", NULL));
    assert_true(p.requeue_after > 0 && p.requeue_after <= 1);
    plan_done(&p);
    ev_timer_init(&t, tick, 0.05, 0.05);
    ev_timer_start(loop, &t);
    while (keypool_stock(kp, PKI_KEY_RSA_2048) < 5 && ev_time() - t0 < 120)
        ev_run(loop, EVRUN_ONCE);
    ev_timer_stop(loop, &t);
    reconcile_ncp(&s, &p);
    assert_non_null(fx_action(&p, KUBE_CREATE, "secrets", "sample-ca"));
    assert_non_null(fx_action(&p, KUBE_CREATE, "secrets", "sample-sa"));
    plan_done(&p);
    s.ctx.keys = NULL;
    sim_done(&s);
    keypool_free(kp);
    ev_loop_destroy(loop);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(
            test_nestedcontrolplane__first_reconcile_sends_finalizer_adoption_and_cas_at_once),
        cmocka_unit_test(
            test_nestedcontrolplane__cas_created_but_not_cached_yet_are_not_made_again),
        cmocka_unit_test(
            test_nestedcontrolplane__a_deleted_control_plane_forgets_the_cas_it_created),
        cmocka_unit_test(
            test_nestedcontrolplane__a_kubeconfig_created_but_not_cached_is_not_made_again),
        cmocka_unit_test(test_nestedcontrolplane__the_check_memo_forgets_the_oldest_first),
        cmocka_unit_test(test_nestedcontrolplane__creation_starts_api_servers_once_etcd_answers),
        cmocka_unit_test(
            test_nestedcontrolplane__creation_runs_etcd_then_apiserver_then_controller_manager),
        cmocka_unit_test(
            test_nestedcontrolplane__adopts_its_components_with_optimistic_concurrency),
        cmocka_unit_test(test_nestedcontrolplane__steady_state_writes_nothing),
        cmocka_unit_test(test_nestedcontrolplane__a_stripped_finalizer_or_owner_is_put_back),
        cmocka_unit_test(test_nestedcontrolplane__clusterctl_move_is_blocked_and_says_why),
        cmocka_unit_test(test_nestedcontrolplane__a_roll_waits_for_api_servers_to_be_available),
        cmocka_unit_test(test_nestedcontrolplane__a_crashing_roll_is_held_and_rolled_back),
        cmocka_unit_test(test_nestedcontrolplane__invalid_input_is_reported_and_creates_nothing),
        cmocka_unit_test(test_nestedcontrolplane__privileged_patches_follow_the_admins_flag),
        cmocka_unit_test(test_nestedcontrolplane__a_bad_user_ca_names_the_secret_and_key),
        cmocka_unit_test(test_nestedcontrolplane__an_unlabelled_user_ca_is_used_and_labelled),
        cmocka_unit_test(test_nestedcontrolplane__a_reference_to_another_namespace_is_refused),
        cmocka_unit_test(test_nestedcontrolplane__a_long_name_is_reported_on_the_name_only),
        cmocka_unit_test(test_nestedcontrolplane__a_service_cidr_change_is_refused),
        cmocka_unit_test(test_nestedcontrolplane__two_minors_and_downgrades_are_refused),
        cmocka_unit_test(test_nestedcontrolplane__a_rollout_step_is_told_after_its_status_write),
        cmocka_unit_test(test_nestedcontrolplane__a_roll_waits_for_a_slot_and_creation_does_not),
        cmocka_unit_test(test_nestedcontrolplane__a_version_change_waits_for_its_etcd_snapshot),
        cmocka_unit_test(test_nestedcontrolplane__a_failed_or_unasked_snapshot_is_told),
        cmocka_unit_test(test_nestedcontrolplane__pods_older_than_a_restore_restart),
        cmocka_unit_test(test_nestedcontrolplane__an_urgent_renewal_never_waits),
        cmocka_unit_test(test_nestedcontrolplane__a_ca_in_its_last_year_is_told_once),
        cmocka_unit_test(test_nestedcontrolplane__controller_manager_held_one_minor_older_rolls),
        cmocka_unit_test(test_nestedcontrolplane__controller_manager_override_newer_is_refused),
        cmocka_unit_test(test_nestedcontrolplane__paused_only_shows_paused),
        cmocka_unit_test(test_nestedcontrolplane__a_service_account_key_rotation_runs_its_phases),
        cmocka_unit_test(test_nestedcontrolplane__a_cluster_ca_rotation_runs_its_phases),
        cmocka_unit_test(test_nestedcontrolplane__deletion_removes_children_then_the_finalizer),
        cmocka_unit_test(
            test_nestedcontrolplane__objects_of_the_wrong_shape_are_named_and_create_nothing),
        cmocka_unit_test(test_nestedcontrolplane__rsa_keys_come_from_the_pool_without_blocking),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
