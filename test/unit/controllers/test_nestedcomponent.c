#include "nested_sim.h"

#include "api/conditions.h"
#include "controllers/lookup.h"

/* A standalone control plane whose components are named in its spec. */
static const char solo[] =
    "apiVersion: controlplane.cluster.x-k8s.io/v1beta1\n"
    "kind: NestedControlPlane\n"
    "metadata: {name: c, uid: ncp-1, generation: 1, resourceVersion: '1'}\n"
    "spec:\n"
    "  version: 1.36.3\n"
    "  etcd: {kind: NestedEtcd, name: c-etcd}\n"
    "  apiserver: {kind: NestedAPIServer, name: c-kas}\n"
    "  controllerManager: {kind: NestedControllerManager, name: c-kcm}\n"
    "---\n"
    "apiVersion: controlplane.cluster.x-k8s.io/v1beta1\n"
    "kind: NestedEtcd\n"
    "metadata: {name: c-etcd, uid: etcd-1, generation: 1, resourceVersion: '1'}\n"
    "spec: {replicas: 1}\n"
    "---\n"
    "apiVersion: controlplane.cluster.x-k8s.io/v1beta1\n"
    "kind: NestedAPIServer\n"
    "metadata: {name: c-kas, uid: kas-1, generation: 1, resourceVersion: '1'}\n"
    "spec: {replicas: 1}\n"
    "---\n"
    "apiVersion: controlplane.cluster.x-k8s.io/v1beta1\n"
    "kind: NestedControllerManager\n"
    "metadata: {name: c-kcm, uid: kcm-1, generation: 1, resourceVersion: '1'}\n"
    "spec: {replicas: 1}\n";

static const char *const names[RENDER_PART__COUNT] = {"c-etcd", "c-kas", "c-kcm"};
static const enum fx_store stores[RENDER_PART__COUNT] = {FX_ETCDS, FX_APISERVERS,
                                                         FX_CONTROLLER_MANAGERS};

static void reconcile(struct sim *s, enum render_part part, struct plan *p)
{
    struct err e;

    plan_init(p);
    err_clear(&e);
    assert_int_equal(
        nestedcomponent_reconcile(&s->ctx.parts[part], &s->f.view, "default", names[part], p, &e),
        0);
}

static const cJSON *comp_status(struct sim *s, enum render_part part)
{
    return fx_path(fx_get(&s->f, stores[part], names[part]), "status");
}

static const char *ready_reason(const struct plan *p)
{
    const struct plan_action *a = p->n_actions ? &p->actions[p->n_actions - 1] : NULL;

    assert_non_null(a);
    assert_int_equal(a->verb, KUBE_UPDATE);
    assert_string_equal(a->subresource, "status");
    return fx_str(fx_condition(fx_path(a->body, "status"), "Ready"), "reason");
}

/* The control plane's first three reconciles (finalizer, CAs, adoption), applied. */
static void set_up_cas_and_adopt(struct sim *s)
{
    for (int i = 0; i < RENDER_PART__COUNT; i++)
        sim_one(s, i, "default", names[i]); /* WaitingForAdoption */
    sim_one(s, -1, "default", "c");         /* finalizer */
    sim_one(s, -1, "default", "c");         /* CAs */
    sim_one(s, -1, "default", "c");         /* adoption */
    assert_true(lookup_controlled_by_uid(fx_get(&s->f, FX_ETCDS, "c-etcd"), "ncp-1"));
}

static size_t count_certs(struct sim *s, const char *prefix)
{
    struct sim_keys k = {.n = 0};
    size_t n = 0;

    kube_store_foreach(&s->f.stores[FX_SECRETS], sim_collect, &k);
    for (int i = 0; i < k.n; i++)
        n += strncmp(k.keys[i], prefix, strlen(prefix)) == 0;
    return n;
}

static void test_nestedcomponent__waits_for_its_control_plane_to_adopt_it(void **state)
{
    struct sim s;
    struct plan p;

    sim_init(&s, solo);
    reconcile(&s, RENDER_PART_ETCD, &p);
    assert_int_equal(p.n_actions, 1); /* status only */
    assert_string_equal(ready_reason(&p), "WaitingForAdoption");
    plan_done(&p);
    /* a component controlled by something else says so */
    fx_put(&s.f, "apiVersion: controlplane.cluster.x-k8s.io/v1beta1\n"
                 "kind: NestedEtcd\n"
                 "metadata:\n"
                 "  name: c-etcd\n"
                 "  uid: etcd-1\n"
                 "  ownerReferences: [{apiVersion: apps/v1, kind: Deployment, name: x, uid: d-1, "
                 "controller: true}]\n");
    reconcile(&s, RENDER_PART_ETCD, &p);
    assert_int_equal(p.n_actions, 1);
    assert_string_equal(ready_reason(&p), "ControlledByAnotherOwner");
    assert_non_null(fx_event(&p, "ControlledByAnotherOwner"));
    plan_done(&p);
    sim_done(&s);
}

static void test_nestedcomponent__issues_its_certs_ahead_and_waits_for_a_target(void **state)
{
    struct sim s;
    struct plan p;
    const struct plan_action *a;

    sim_init(&s, solo);
    set_up_cas_and_adopt(&s);
    /* the control plane has set no target: only the certs Secret is created */
    reconcile(&s, RENDER_PART_APISERVER, &p);
    a = fx_action(&p, KUBE_CREATE, "secrets", NULL);
    assert_non_null(a);
    assert_true(strncmp(a->name, "c-apiserver-certs-", 18) == 0);
    assert_true(cJSON_IsTrue(fx_path(a->body, "immutable")));
    assert_true(lookup_controlled_by_uid(a->body, "kas-1"));
    assert_non_null(cJSON_GetObjectItemCaseSensitive(fx_path(a->body, "data"), "apiserver.crt"));
    assert_null(fx_action(&p, KUBE_PATCH, "statefulsets", NULL));
    assert_null(fx_action(&p, KUBE_PATCH, "services", NULL));
    assert_string_equal(ready_reason(&p), "WaitingForRollout");
    assert_non_null(fx_event(&p, "IssuedCertificates"));
    fx_apply_plan(&s.f, &p);
    plan_done(&p);
    /* seen again, it is kept, not issued twice */
    reconcile(&s, RENDER_PART_APISERVER, &p);
    assert_null(fx_action(&p, KUBE_CREATE, "secrets", NULL));
    plan_done(&p);
    sim_done(&s);
}

/* A component deleted before the certs Secret it issued was seen forgets it with its last
 * reconcile, rather than keeping its entry for as long as the manager runs. */
static void test_nestedcomponent__a_deleted_component_forgets_the_certs_it_issued(void **state)
{
    struct strmap *issued;
    struct sim s;
    struct plan p;
    cJSON *old = NULL;

    (void)state;
    sim_init(&s, solo);
    set_up_cas_and_adopt(&s);
    issued = &s.ctx.parts[RENDER_PART_APISERVER].issued;
    reconcile(&s, RENDER_PART_APISERVER, &p);
    assert_non_null(fx_action(&p, KUBE_CREATE, "secrets", NULL));
    plan_done(&p);
    assert_non_null(strmap_get(issued, "default/c-kas"));

    /* deleted within NESTED_ISSUE_WAIT, before the watch delivered the Secret */
    s.f.view.now += 0.2;
    assert_int_equal(kube_store_remove(&s.f.stores[FX_APISERVERS], "default", "c-kas", &old), 0);
    cJSON_Delete(old);
    reconcile(&s, RENDER_PART_APISERVER, &p);
    assert_int_equal(p.n_actions, 0);
    plan_done(&p);
    assert_null(strmap_get(issued, "default/c-kas"));
    assert_int_equal(strmap_size(issued), 0);
    sim_done(&s);
}

static void test_nestedcomponent__applies_only_at_its_target(void **state)
{
    struct sim s;
    struct plan p;
    const struct plan_action *svc, *sts;

    sim_init(&s, solo);
    set_up_cas_and_adopt(&s);
    sim_one(&s, RENDER_PART_ETCD, "default", "c-etcd"); /* certs */
    sim_one(&s, -1, "default", "c");                    /* the etcd target */
    assert_non_null(
        fx_str(fx_get(&s.f, FX_CONTROL_PLANES, "c"), "status.rollout.components.etcd.configHash"));
    reconcile(&s, RENDER_PART_ETCD, &p);
    svc = fx_action(&p, KUBE_PATCH, "services", "c-etcd");
    sts = fx_action(&p, KUBE_PATCH, "statefulsets", "c-etcd");
    assert_non_null(svc);
    assert_non_null(sts);
    assert_int_equal(sts->patch_type, KUBE_PATCH_APPLY);
    assert_true(fx_index(&p, svc) < fx_index(&p, sts)); /* the Service first */
    assert_true(lookup_controlled_by_uid(sts->body, "etcd-1"));
    assert_string_equal(
        fx_str(fx_get(&s.f, FX_CONTROL_PLANES, "c"), "status.rollout.components.etcd.configHash"),
        kube_obj_annotation(fx_path(sts->body, "spec.template"), "nestcp.x-k8s.io/config-hash"));
    assert_non_null(render_cluster_certs_mounted(sts->body));
    assert_true(strncmp(render_cluster_certs_mounted(sts->body), "c-etcd-certs-", 13) == 0);
    plan_done(&p);
    /* the API server has no target yet (etcd has not rolled out): it creates nothing */
    sim_one(&s, RENDER_PART_APISERVER, "default", "c-kas");
    reconcile(&s, RENDER_PART_APISERVER, &p);
    assert_null(fx_action(&p, KUBE_PATCH, "statefulsets", NULL));
    plan_done(&p);
    sim_done(&s);
}

static void test_nestedcomponent__steady_state_plan_is_empty(void **state)
{
    struct sim s;
    struct plan p;

    sim_init(&s, solo);
    sim_converge(&s, 30);
    s.f.view.now += 86400; /* a day later, nothing is due */
    for (int i = 0; i < RENDER_PART__COUNT; i++) {
        struct etcd_membership_call call;
        reconcile(&s, (enum render_part)i, &p);
        /* etcd's only action: listing the members again, since the last list is old */
        if (i == RENDER_PART_ETCD && p.n_actions == 1 &&
            etcd_membership_call_of(&p.actions[0], &call) == 0 && call.action == ETCD_MEMBERS_LIST)
            plan_done(&p), plan_init(&p);
        assert_int_equal(p.n_actions, 0);
        assert_int_equal(p.n_events, 0);
        assert_string_equal(fx_str(comp_status(&s, (enum render_part)i), "phase"), "Ready");
        plan_done(&p);
    }
    assert_string_equal(fx_str(comp_status(&s, RENDER_PART_ETCD), "version"), "3.6.17");
    assert_int_equal(fx_path(comp_status(&s, RENDER_PART_APISERVER), "readyReplicas")->valueint, 1);
    assert_true(cJSON_IsTrue(fx_path(comp_status(&s, RENDER_PART_APISERVER), "healthy")));
    sim_done(&s);
}

static void test_nestedcomponent__paused_or_deleting_changes_nothing_else(void **state)
{
    struct sim s;
    struct plan p;
    cJSON *ncp, *meta, *ann;

    sim_init(&s, solo);
    set_up_cas_and_adopt(&s);
    /* paused control plane: only the Paused condition */
    ncp = cJSON_Duplicate(fx_get(&s.f, FX_CONTROL_PLANES, "c"), true);
    meta = cJSON_GetObjectItemCaseSensitive(ncp, "metadata");
    ann = cJSON_GetObjectItemCaseSensitive(meta, "annotations"); /* block-move is there */
    assert_non_null(ann);
    cJSON_AddStringToObject(ann, "cluster.x-k8s.io/paused", "");
    fx_put_json(&s.f, ncp);
    reconcile(&s, RENDER_PART_ETCD, &p);
    assert_int_equal(p.n_actions, 1);
    assert_string_equal(
        fx_str(fx_condition(fx_path(p.actions[0].body, "status"), "Paused"), "status"), "True");
    plan_done(&p);
    /* a control plane being deleted: nothing at all */
    ncp = cJSON_Duplicate(fx_get(&s.f, FX_CONTROL_PLANES, "c"), true);
    cJSON_AddStringToObject(cJSON_GetObjectItemCaseSensitive(ncp, "metadata"), "deletionTimestamp",
                            "2027-01-15T08:00:00Z");
    fx_put_json(&s.f, ncp);
    reconcile(&s, RENDER_PART_ETCD, &p);
    assert_int_equal(p.n_actions, 0);
    plan_done(&p);
    sim_done(&s);
}

static void test_nestedcomponent__a_bad_patch_is_reported_and_creates_nothing(void **state)
{
    /* The target as given, and what the message names: the namespace too when one is set. */
    static const char *const cases[][2] = {
        {"{kind: StatefulSet, name: nosuch}",
         "spec.patches[0]: matches no object (kind StatefulSet, name nosuch)"},
        {"{kind: StatefulSet, name: c-apiserver, namespace: other}",
         "spec.patches[0]: matches no object (kind StatefulSet, name c-apiserver, namespace "
         "other)"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char yaml[1024];
        struct sim s;
        struct plan p;

        sim_init(&s, solo);
        set_up_cas_and_adopt(&s);
        snprintf(yaml, sizeof(yaml),
                 "apiVersion: controlplane.cluster.x-k8s.io/v1beta1\n"
                 "kind: NestedAPIServer\n"
                 "metadata:\n"
                 "  name: c-kas\n"
                 "  uid: kas-1\n"
                 "  generation: 2\n"
                 "  ownerReferences: [{apiVersion: controlplane.cluster.x-k8s.io/v1beta1, kind: "
                 "NestedControlPlane, name: c, uid: ncp-1, controller: true}]\n"
                 "spec:\n"
                 "  patches: [{target: %s, type: merge, patch: {}}]\n",
                 cases[i][0]);
        fx_put(&s.f, yaml);
        reconcile(&s, RENDER_PART_APISERVER, &p);
        assert_int_equal(p.n_actions, 1);
        assert_string_equal(ready_reason(&p), "InvalidSpec");
        assert_non_null(
            strstr(fx_str(fx_condition(fx_path(p.actions[0].body, "status"), "Ready"), "message"),
                   cases[i][1]));
        assert_non_null(fx_event(&p, "InvalidSpec"));
        plan_done(&p);
        sim_done(&s);
    }
}

static void test_nestedcomponent__renewal_issues_new_certs_and_rolls_them_out(void **state)
{
    struct sim s;
    char before[RENDER_CLUSTER_HASH_MAX];
    struct plan p;

    sim_init(&s, solo);
    sim_converge(&s, 30);
    snprintf(before, sizeof(before), "%s",
             fx_str(fx_get(&s.f, FX_CONTROL_PLANES, "c"),
                    "status.rollout.components.apiserver.configHash"));
    /* 340 days on, the leaves (365 days) are within renewBeforeDays (30) */
    s.f.view.now += 340 * 86400.0;
    reconcile(&s, RENDER_PART_APISERVER, &p);
    assert_non_null(fx_action(&p, KUBE_CREATE, "secrets", NULL));
    assert_null(fx_action(&p, KUBE_PATCH, "statefulsets", NULL)); /* not before its turn */
    fx_apply_plan(&s.f, &p);
    plan_done(&p);
    sim_converge(&s, 40);
    assert_string_not_equal(fx_str(fx_get(&s.f, FX_CONTROL_PLANES, "c"),
                                   "status.rollout.components.apiserver.configHash"),
                            before);
    /* the superseded Secrets are gone once nothing mounts them */
    assert_int_equal(count_certs(&s, "c-apiserver-certs-"), 1);
    assert_int_equal(count_certs(&s, "c-etcd-certs-"), 1);
    assert_int_equal(count_certs(&s, "c-controller-manager-certs-"), 1);
    assert_string_equal(fx_str(fx_get(&s.f, FX_CONTROL_PLANES, "c"), "status.phase"), "Ready");
    sim_done(&s);
}

/* Nobody touches the control plane: a reconcile that keeps good certificates asks to come back
 * when they are due (the admin's short-lived leaves here), and that reconcile renews them.
 * Long-lived ones are still looked at twice a day. */
static void test_nestedcomponent__comes_back_when_its_certs_are_due(void **state)
{
    struct sim s;
    struct plan p;
    double due;

    sim_init(&s, solo);
    sim_converge(&s, 30);
    reconcile(&s, RENDER_PART_APISERVER, &p);
    assert_int_equal(p.n_actions, 0);
    assert_true(p.requeue_after == NESTED_RENEW_CHECK_MAX);
    plan_done(&p);
    sim_done(&s);

    sim_init(&s, solo);
    s.ctx.cert_validity = 3600; /* renewed with 20 minutes left */
    sim_converge(&s, 30);
    reconcile(&s, RENDER_PART_APISERVER, &p);
    assert_int_equal(p.n_actions, 0);
    due = p.requeue_after;
    assert_true(due > 2400 - 120 && due <= 2400);
    plan_done(&p);
    s.f.view.now += due - 1;
    reconcile(&s, RENDER_PART_APISERVER, &p);
    assert_null(fx_action(&p, KUBE_CREATE, "secrets", NULL));
    assert_true(p.requeue_after <= 1);
    plan_done(&p);
    s.f.view.now += 1;
    reconcile(&s, RENDER_PART_APISERVER, &p);
    assert_non_null(fx_action(&p, KUBE_CREATE, "secrets", NULL));
    plan_done(&p);
    sim_done(&s);
}

/* Ownership before apply: what the cache does not hold is applied only once the runtime has
 * read it and found it absent or the component's (plan_apply_claimed); a same-named object of
 * someone else's is never written, and the component says which object is in the way. */
static void test_nestedcomponent__someone_elses_object_is_left_alone(void **state)
{
    struct sim s;
    struct plan p;
    const struct plan_action *a;
    const cJSON *cond;
    cJSON *svc;

    sim_init(&s, solo);
    sim_converge(&s, 30);
    /* When first created, every rendered object was claimed for the component. */
    {
        cJSON *gone = NULL;
        assert_int_equal(
            kube_store_remove(&s.f.stores[FX_SERVICES], "default", "c-apiserver", &gone), 0);
        cJSON_Delete(gone);
    }
    reconcile(&s, RENDER_PART_APISERVER, &p);
    a = fx_action(&p, KUBE_PATCH, "services", "c-apiserver");
    assert_non_null(a);
    assert_non_null(a->claim_uid);
    assert_string_equal(a->claim_uid, "kas-1");
    fx_apply_plan(&s.f, &p);
    plan_done(&p);
    /* Someone else's Service (our labels, another controller) under the API server's name. */
    svc = cJSON_Duplicate(fx_get(&s.f, FX_SERVICES, "c-apiserver"), true);
    cJSON *ref = cJSON_GetArrayItem(fx_path(svc, "metadata.ownerReferences"), 0);
    cJSON_ReplaceItemInObject(ref, "uid", cJSON_CreateString("someone-else"));
    cJSON_ReplaceItemInObject(ref, "kind", cJSON_CreateString("Deployment"));
    cJSON_ReplaceItemInObject(ref, "name", cJSON_CreateString("web"));
    cJSON_DeleteItemFromObject(cJSON_GetObjectItem(svc, "metadata"), "annotations");
    fx_put_json(&s.f, svc);
    s.f.view.now += 1;
    reconcile(&s, RENDER_PART_APISERVER, &p);
    for (size_t i = 0; i < p.n_actions; i++)
        assert_true(p.actions[i].resource == &NESTCP_APISERVERS); /* its status alone */
    cond = fx_condition(fx_path(p.actions[p.n_actions - 1].body, "status"), "Ready");
    assert_string_equal(fx_str(cond, "reason"), "ObjectConflict");
    assert_non_null(strstr(fx_str(cond, "message"), "Service default/c-apiserver exists and is "
                                                    "controlled by Deployment web"));
    assert_non_null(fx_event(&p, "ObjectConflict"));
    assert_true(p.requeue_after > 0 && p.requeue_after <= CACHE_VIEW_CONFLICT_TTL);
    plan_done(&p);
    sim_done(&s);
}

static const cJSON *etcd_pod_annotations(struct sim *s)
{
    return fx_path(fx_get(&s->f, FX_STATEFULSETS, "c-etcd"), "spec.template.metadata.annotations");
}

static char *etcd_hash_copy(struct sim *s)
{
    const cJSON *h =
        cJSON_GetObjectItemCaseSensitive(etcd_pod_annotations(s), "nestcp.x-k8s.io/config-hash");

    assert_true(cJSON_IsString(h));
    return strdup(h->valuestring);
}

static const cJSON *ncp_condition(struct sim *s, const char *type)
{
    return fx_condition(fx_path(fx_get(&s->f, FX_CONTROL_PLANES, "c"), "status"), type);
}

static void put_etcd(struct sim *s, int generation, const char *annotations, const char *spec)
{
    char yaml[2048];

    snprintf(yaml, sizeof(yaml),
             "apiVersion: controlplane.cluster.x-k8s.io/v1beta1\n"
             "kind: NestedEtcd\n"
             "metadata:\n"
             "  name: c-etcd\n"
             "  uid: etcd-1\n"
             "  generation: %d\n"
             "  annotations: {%s}\n"
             "  ownerReferences: [{apiVersion: controlplane.cluster.x-k8s.io/v1beta1, kind: "
             "NestedControlPlane, name: c, uid: ncp-1, controller: true}]\n"
             "spec: %s\n",
             generation, annotations, spec);
    fx_put(&s->f, yaml);
}

static void test_nestedcomponent__etcd_is_persistent_by_default(void **state)
{
    struct sim s;
    const cJSON *sts, *dnp;

    sim_init(&s, solo);
    sim_converge(&s, 30);
    sts = fx_get(&s.f, FX_STATEFULSETS, "c-etcd");
    assert_string_equal(
        fx_str(fx_path(sts, "spec.volumeClaimTemplates")->child, "spec.resources.requests.storage"),
        "1Gi");
    dnp = fx_condition(comp_status(&s, RENDER_PART_ETCD), "DataNotPersistent");
    assert_string_equal(fx_str(dnp, "status"), "False");
    assert_string_equal(fx_str(dnp, "reason"), "PersistentVolumeClaims");
    /* and a roll goes through: its data is on the claims */
    put_etcd(&s, 2, "", "{replicas: 1, extraArgs: {quota-backend-bytes: '4294967296'}}");
    {
        char *before = etcd_hash_copy(&s), *after;
        sim_converge(&s, 40);
        after = etcd_hash_copy(&s);
        assert_string_not_equal(before, after);
        free(before);
        free(after);
    }
    assert_string_equal(fx_str(ncp_condition(&s, "Upgrading"), "reason"), "UpToDate");
    sim_done(&s);
}

/* While a restore from a snapshot runs, etcd says so: not Ready, its membership not settled,
 * its StatefulSet going to 0. */
static void test_nestedcomponent__a_restoring_etcd_is_not_ready(void **state)
{
    const struct plan_action *sts;
    const cJSON *st;
    struct sim s;
    struct plan p;
    cJSON *etcd;

    sim_init(&s, solo);
    sim_converge(&s, 30);
    assert_string_equal(fx_str(fx_condition(comp_status(&s, RENDER_PART_ETCD), "Ready"), "status"),
                        "True");
    etcd = cJSON_Duplicate(fx_get(&s.f, FX_ETCDS, "c-etcd"), true);
    cJSON_AddItemToObject(cJSON_GetObjectItem(etcd, "metadata"), "annotations",
                          cJSON_Parse("{\"etcd.nestcp.x-k8s.io/restore-snapshot\":\"s1\"}"));
    cJSON_AddItemToObject(cJSON_GetObjectItem(etcd, "spec"), "snapshots",
                          cJSON_Parse("{\"persistentVolumeClaim\":{\"claimName\":\"snaps\"}}"));
    fx_put_json(&s.f, etcd);
    reconcile(&s, RENDER_PART_ETCD, &p);
    sts = fx_action(&p, KUBE_PATCH, "statefulsets", "c-etcd");
    assert_non_null(sts);
    assert_int_equal(fx_path(sts->body, "spec.replicas")->valueint, 0);
    st = fx_path(p.actions[p.n_actions - 1].body, "status");
    assert_string_equal(fx_str(fx_condition(st, "Ready"), "status"), "False");
    assert_string_equal(fx_str(fx_condition(st, "Ready"), "reason"), "Restoring");
    assert_string_equal(fx_str(fx_condition(st, "MembersReady"), "status"), "False");
    assert_string_equal(fx_str(fx_condition(st, "MembersReady"), "reason"), "Restoring");
    assert_string_equal(fx_str(st, "restore.phase"), "Stopping");
    plan_done(&p);
    sim_done(&s);
}

static void test_nestedcomponent__etcd_on_emptydir_is_not_rolled(void **state)
{
    struct sim s;
    struct plan p;
    const cJSON *dnp, *up;
    char *before, *after;

    sim_init(&s, solo);
    put_etcd(&s, 1, "", "{replicas: 1, storage: {emptyDir: {}}}");
    sim_converge(&s, 30);
    assert_null(fx_path(fx_get(&s.f, FX_STATEFULSETS, "c-etcd"), "spec.volumeClaimTemplates"));
    dnp = fx_condition(comp_status(&s, RENDER_PART_ETCD), "DataNotPersistent");
    assert_string_equal(fx_str(dnp, "status"), "True");
    assert_string_equal(fx_str(dnp, "reason"), "EmptyDir");
    before = etcd_hash_copy(&s);

    /* a flag change would replace the only member, and with it every key */
    put_etcd(&s, 2, "",
             "{replicas: 1, storage: {emptyDir: {}}, "
             "extraArgs: {quota-backend-bytes: '4294967296'}}");
    reconcile(&s, RENDER_PART_ETCD, &p);
    assert_non_null(fx_event(&p, "RollRefused"));
    assert_null(fx_action(&p, KUBE_PATCH, "statefulsets", NULL));
    fx_apply_plan(&s.f, &p);
    plan_done(&p);
    sim_converge(&s, 40);
    after = etcd_hash_copy(&s);
    assert_string_equal(before, after);
    free(after);
    dnp = fx_condition(comp_status(&s, RENDER_PART_ETCD), "DataNotPersistent");
    assert_string_equal(fx_str(dnp, "reason"), "RollRefused");
    assert_non_null(strstr(fx_str(dnp, "message"), "emptyDir"));
    assert_non_null(strstr(fx_str(dnp, "message"), "its certificates expire on 20"));
    assert_non_null(strstr(fx_str(dnp, "message"), ETCD_SAFETY_ACCEPT_DATA_LOSS));
    up = ncp_condition(&s, "Upgrading");
    assert_string_equal(fx_str(up, "reason"), "DataNotPersistent");
    assert_string_equal(fx_str(fx_condition(comp_status(&s, RENDER_PART_ETCD), "Ready"), "status"),
                        "True");

    /* the user accepts the loss: it rolls */
    put_etcd(
        &s, 3, "\"" ETCD_SAFETY_ACCEPT_DATA_LOSS "\": \"true\"",
        "{replicas: 1, storage: {emptyDir: {}}, extraArgs: {quota-backend-bytes: '4294967296'}}");
    sim_converge(&s, 40);
    after = etcd_hash_copy(&s);
    assert_string_not_equal(before, after);
    free(after);
    free(before);
    assert_string_equal(fx_str(ncp_condition(&s, "Upgrading"), "reason"), "UpToDate");
    sim_done(&s);
}

static void test_nestedcomponent__an_emptydir_etcd_made_before_the_default_keeps_it(void **state)
{
    struct sim s;
    const cJSON *dnp;
    char *before, *after;

    sim_init(&s, solo);
    put_etcd(&s, 1, "", "{replicas: 1, storage: {emptyDir: {}}}");
    sim_converge(&s, 30);
    before = etcd_hash_copy(&s);
    /* as an object written for an older nestcp reads: no storage at all */
    put_etcd(&s, 2, "", "{replicas: 1}");
    sim_converge(&s, 40);
    after = etcd_hash_copy(&s);
    assert_string_equal(before, after);
    free(after);
    free(before);
    assert_null(fx_path(fx_get(&s.f, FX_STATEFULSETS, "c-etcd"), "spec.volumeClaimTemplates"));
    dnp = fx_condition(comp_status(&s, RENDER_PART_ETCD), "DataNotPersistent");
    assert_string_equal(fx_str(dnp, "status"), "True");
    assert_non_null(strstr(fx_str(dnp, "message"), "spec.storage is unset"));
    assert_string_equal(fx_str(ncp_condition(&s, "Upgrading"), "reason"), "UpToDate");
    /* asking for claims explicitly is refused, not half-applied */
    put_etcd(&s, 3, "", "{replicas: 1, storage: {persistentVolumeClaim: {size: 1Gi}}}");
    sim_converge(&s, 40);
    assert_string_equal(fx_str(ncp_condition(&s, "Upgrading"), "reason"),
                        "EtcdStorageChangeRefused");
    assert_null(fx_path(fx_get(&s.f, FX_STATEFULSETS, "c-etcd"), "spec.volumeClaimTemplates"));
    sim_done(&s);
}

/* Objects of the wrong shape crash nothing; the user sees which field is wrong, and nothing is
 * built on them. */
static void test_nestedcomponent__objects_of_the_wrong_shape_are_named_and_not_used(void **state)
{
    static const struct {
        const char *yaml;
        const char *reason, *message; /* every component's Ready; NULL: see below */
    } bad[] = {
        {"apiVersion: controlplane.cluster.x-k8s.io/v1beta1\nkind: NestedEtcd\n"
         "metadata: {name: c-etcd}\nspec: {replicas: three}\n",
         "InvalidSpec", "spec.replicas: \"three\" is not an integer"},
        {"apiVersion: controlplane.cluster.x-k8s.io/v1beta1\nkind: NestedEtcd\n"
         "metadata: {name: c-etcd, ownerReferences: [1, {controller: true}]}\nspec: [1]\n"
         "status: {conditions: 5}\n",
         "InvalidSpec", "spec: [1] is not an object"},
        /* a StatefulSet of that name nobody could have made: never written to */
        {"apiVersion: apps/v1\nkind: StatefulSet\n"
         "metadata: {name: c-etcd, ownerReferences: {a: 1}}\nspec: 3\nstatus: [x]\n",
         NULL, NULL},
        /* a broken certificates Secret: not used, a new one is issued */
        {"apiVersion: v1\nkind: Secret\n"
         "metadata: {name: c-etcd-certs-x, labels: {cluster.x-k8s.io/cluster-name: c, "
         "nestcp.x-k8s.io/component: etcd}}\ndata: {ca.crt: '!!!', x: 5}\n",
         NULL, NULL},
        {"apiVersion: v1\nkind: Secret\nmetadata: {name: c-ca, labels: "
         "{cluster.x-k8s.io/cluster-name: c}}\n"
         "data: {tls.crt: 7}\n",
         "InvalidCertificateAuthority", "Secret default/c-ca: data.tls.crt is not a string"},
    };
    struct sim s;
    struct plan p;

    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        sim_init(&s, solo);
        set_up_cas_and_adopt(&s);
        fx_put(&s.f, bad[i].yaml);
        for (int part = 0; part < RENDER_PART__COUNT; part++) {
            const cJSON *ready;
            reconcile(&s, (enum render_part)part, &p);
            assert_null(fx_action(&p, KUBE_PATCH, "statefulsets", NULL));
            assert_null(fx_action(&p, KUBE_PATCH, "secrets", "c-etcd-certs-x"));
            if (bad[i].reason) {
                assert_int_equal(p.n_actions, 1); /* its status, nothing else */
                ready = fx_condition(fx_path(p.actions[0].body, "status"), "Ready");
                assert_string_equal(fx_str(ready, "reason"), bad[i].reason);
                assert_non_null(strstr(fx_str(ready, "message"), bad[i].message));
            } else if (i == 3 && part == RENDER_PART_ETCD) {
                const struct plan_action *a = fx_action(&p, KUBE_CREATE, "secrets", NULL);
                assert_non_null(a);
                assert_string_not_equal(a->name, "c-etcd-certs-x");
            }
            plan_done(&p);
        }
        sim_one(&s, -1, "default", "c");
        sim_done(&s);
    }
}

static void enqueued(void *q, const char *ns, const char *name)
{
    snprintf(q, 128, "%s/%s", ns, name);
}

static void test_nestedcomponent__changes_map_to_the_right_component(void **state)
{
    struct sim s;
    char key[128] = "";

    sim_init(&s, solo);
    sim_converge(&s, 30);
    nestedcomponent_map(&s.ctx.parts[RENDER_PART_ETCD], &s.f.view, &KUBE_STATEFULSETS,
                        fx_get(&s.f, FX_STATEFULSETS, "c-etcd"), enqueued, key);
    assert_string_equal(key, "default/c-etcd");
    key[0] = '\0';
    /* the control plane's status (a target) concerns every component */
    nestedcomponent_map(&s.ctx.parts[RENDER_PART_CONTROLLER_MANAGER], &s.f.view,
                        &NESTCP_CONTROL_PLANES, fx_get(&s.f, FX_CONTROL_PLANES, "c"), enqueued,
                        key);
    assert_string_equal(key, "default/c-kcm");
    key[0] = '\0';
    /* a CA Secret concerns the components through their control plane */
    nestedcomponent_map(&s.ctx.parts[RENDER_PART_APISERVER], &s.f.view, &KUBE_SECRETS,
                        fx_get(&s.f, FX_SECRETS, "c-ca"), enqueued, key);
    assert_string_equal(key, "default/c-kas");
    /* a pod concerns the component of its StatefulSet, and no other */
    fx_put(&s.f, "apiVersion: v1\nkind: Pod\n"
                 "metadata:\n"
                 "  name: c-apiserver-0\n"
                 "  labels: {app.kubernetes.io/component: apiserver, "
                 "cluster.x-k8s.io/cluster-name: c}\n");
    key[0] = '\0';
    nestedcomponent_map(&s.ctx.parts[RENDER_PART_APISERVER], &s.f.view, &KUBE_PODS,
                        fx_get(&s.f, FX_PODS, "c-apiserver-0"), enqueued, key);
    assert_string_equal(key, "default/c-kas");
    key[0] = '\0';
    nestedcomponent_map(&s.ctx.parts[RENDER_PART_ETCD], &s.f.view, &KUBE_PODS,
                        fx_get(&s.f, FX_PODS, "c-apiserver-0"), enqueued, key);
    assert_string_equal(key, "");
    sim_done(&s);
}

/* spec.networkPolicy: on by default (etcd's and the API server's NetworkPolicy); switched off,
 * both are deleted and nothing rolls; switched on again, they come back. */
static void test_nestedcomponent__network_policies_follow_the_switch(void **state)
{
    struct sim s;
    cJSON *ncp;
    char *hash;

    sim_init(&s, solo);
    sim_converge(&s, 30);
    assert_non_null(fx_get(&s.f, FX_NETWORKPOLICIES, "c-etcd"));
    assert_non_null(fx_get(&s.f, FX_NETWORKPOLICIES, "c-apiserver"));
    assert_null(fx_get(&s.f, FX_NETWORKPOLICIES, "c-controller-manager"));
    hash = etcd_hash_copy(&s);
    for (int on = 0; on < 2; on++) {
        ncp = cJSON_Duplicate(fx_get(&s.f, FX_CONTROL_PLANES, "c"), true);
        cJSON_DeleteItemFromObjectCaseSensitive(cJSON_GetObjectItemCaseSensitive(ncp, "spec"),
                                                "networkPolicy");
        cJSON_AddBoolToObject(
            cJSON_AddObjectToObject(cJSON_GetObjectItemCaseSensitive(ncp, "spec"), "networkPolicy"),
            "enabled", on);
        fx_put_json(&s.f, ncp);
        sim_converge(&s, 30);
        assert_true(!fx_get(&s.f, FX_NETWORKPOLICIES, "c-etcd") == !on);
        assert_true(!fx_get(&s.f, FX_NETWORKPOLICIES, "c-apiserver") == !on);
        assert_non_null(fx_get(&s.f, FX_STATEFULSETS, "c-etcd"));
        assert_non_null(fx_get(&s.f, FX_SERVICES, "c-apiserver"));
        assert_non_null(fx_get(&s.f, FX_CONFIGMAPS, "c-apiserver-authn"));
    }
    {
        char *now = etcd_hash_copy(&s);
        assert_string_equal(now, hash); /* the pods did not roll */
        free(now);
    }
    free(hash);
    sim_done(&s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_nestedcomponent__waits_for_its_control_plane_to_adopt_it),
        cmocka_unit_test(test_nestedcomponent__issues_its_certs_ahead_and_waits_for_a_target),
        cmocka_unit_test(test_nestedcomponent__a_deleted_component_forgets_the_certs_it_issued),
        cmocka_unit_test(test_nestedcomponent__applies_only_at_its_target),
        cmocka_unit_test(test_nestedcomponent__steady_state_plan_is_empty),
        cmocka_unit_test(test_nestedcomponent__paused_or_deleting_changes_nothing_else),
        cmocka_unit_test(test_nestedcomponent__a_bad_patch_is_reported_and_creates_nothing),
        cmocka_unit_test(test_nestedcomponent__renewal_issues_new_certs_and_rolls_them_out),
        cmocka_unit_test(test_nestedcomponent__comes_back_when_its_certs_are_due),
        cmocka_unit_test(test_nestedcomponent__someone_elses_object_is_left_alone),
        cmocka_unit_test(test_nestedcomponent__etcd_is_persistent_by_default),
        cmocka_unit_test(test_nestedcomponent__a_restoring_etcd_is_not_ready),
        cmocka_unit_test(test_nestedcomponent__etcd_on_emptydir_is_not_rolled),
        cmocka_unit_test(test_nestedcomponent__an_emptydir_etcd_made_before_the_default_keeps_it),
        cmocka_unit_test(test_nestedcomponent__objects_of_the_wrong_shape_are_named_and_not_used),
        cmocka_unit_test(test_nestedcomponent__changes_map_to_the_right_component),
        cmocka_unit_test(test_nestedcomponent__network_policies_follow_the_switch),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
