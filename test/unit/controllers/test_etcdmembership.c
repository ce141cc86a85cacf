#include "nested_sim.h"

/*
 * The etcd reconciler's membership changes, run by the controller simulation against its
 * model of the StatefulSet controller, kubelet and etcd (sim_etcd.h): what a user of a tenant
 * checks — the members listed, one cluster all along, no running member restarted by a scale,
 * quorum kept, a member that lost its data added again rather than started empty.
 */

static const char three[] =
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
    "kind: NestedAPIServer\n"
    "metadata: {name: c-kas, uid: kas-1, generation: 1, resourceVersion: '1'}\n"
    "spec: {replicas: 1}\n"
    "---\n"
    "apiVersion: controlplane.cluster.x-k8s.io/v1beta1\n"
    "kind: NestedControllerManager\n"
    "metadata: {name: c-kcm, uid: kcm-1, generation: 1, resourceVersion: '1'}\n"
    "spec: {replicas: 1}\n";

static void put_etcd(struct sim *s, int generation, const char *annotations, const char *spec)
{
    char yaml[2048];
    const cJSON *cur = fx_get(&s->f, FX_ETCDS, "c-etcd");
    cJSON *status = cur ? cJSON_Duplicate(fx_path(cur, "status"), true) : NULL;
    cJSON *obj;

    snprintf(yaml, sizeof(yaml),
             "apiVersion: controlplane.cluster.x-k8s.io/v1beta1\n"
             "kind: NestedEtcd\n"
             "metadata:\n"
             "  name: c-etcd\n"
             "  uid: etcd-1\n"
             "  generation: %d\n"
             "  resourceVersion: 'user-%d'\n"
             "  annotations: {%s}\n"
             "%s"
             "spec: %s\n",
             generation, generation, annotations,
             cur ? "  ownerReferences: [{apiVersion: controlplane.cluster.x-k8s.io/v1beta1, "
                   "kind: NestedControlPlane, name: c, uid: ncp-1, controller: true}]\n"
                 : "",
             spec);
    fx_put(&s->f, yaml);
    /* A spec change keeps the status the manager wrote. */
    obj = (cJSON *)fx_get(&s->f, FX_ETCDS, "c-etcd");
    if (status)
        cJSON_AddItemToObject(obj, "status", status);
}

static struct sim_etcd *model(struct sim *s)
{
    return sim_etcd_of(&s->etcds, "c-etcd");
}

static const cJSON *etcd_status(struct sim *s)
{
    return fx_path(fx_get(&s->f, FX_ETCDS, "c-etcd"), "status");
}

static const char *pod_uid(struct sim *s, int i)
{
    char name[32];

    snprintf(name, sizeof(name), "c-etcd-%d", i);
    return kube_obj_uid(fx_get(&s->f, FX_PODS, name));
}

static int sts_replicas(struct sim *s)
{
    return fx_path(fx_get(&s->f, FX_STATEFULSETS, "c-etcd"), "spec.replicas")->valueint;
}

/* The members are exactly c-etcd-0..n-1, all voting and running, in the one cluster. */
static void assert_members(struct sim *s, int n)
{
    struct sim_etcd *e = model(s);
    const cJSON *members = fx_path(etcd_status(s), "members"), *m;
    int k = 0;

    assert_int_equal(e->n, n);
    for (int i = 0; i < n; i++) {
        char url[ETCD_MEMBERS_URL_MAX];
        struct sim_member *sm;
        sim_etcd_url("c-etcd", i, url, sizeof(url));
        sm = sim_member_by_url(e, url);
        assert_non_null(sm);
        assert_false(sm->learner);
        assert_true(sm->running);
    }
    assert_int_equal(sts_replicas(s), n);
    assert_int_equal(e->clusters_formed, 1);
    assert_int_equal(e->quorum_losses, 0);
    assert_int_equal(e->crashes, 0);
    assert_true(e->max_learners <= 1);
    /* What the user reads: status.members and MembersReady. */
    cJSON_ArrayForEach(m, members) {
        char name[32];
        snprintf(name, sizeof(name), "c-etcd-%d", k);
        assert_string_equal(fx_str(m, "name"), name);
        assert_non_null(fx_str(m, "id"));
        assert_false(cJSON_IsTrue(fx_path(m, "learner")));
        k++;
    }
    assert_int_equal(k, n);
    assert_string_equal(fx_str(fx_condition(etcd_status(s), "MembersReady"), "status"), "True");
    assert_string_equal(fx_str(etcd_status(s), "clusterID") ? "set" : "unset", "set");
}

static char *template_hash(struct sim *s)
{
    return strdup(sim_pod_hash(fx_path(fx_get(&s->f, FX_STATEFULSETS, "c-etcd"), "spec.template")));
}

static void assert_template(struct sim *s, const char *want)
{
    char *h = template_hash(s);

    assert_string_equal(h, want);
    free(h);
}

static void test_etcdmembership__scales_1_3_5_3_without_restarting_a_member(void **state)
{
    struct sim s;
    char *hash, uid0[64], uid1[64];
    const char *cid;
    char cluster_id[32];

    (void)state;
    sim_init(&s, three);
    put_etcd(&s, 1, "", "{replicas: 1}");
    sim_converge(&s, 60);
    assert_members(&s, 1);
    hash = template_hash(&s);
    snprintf(uid0, sizeof(uid0), "%s", pod_uid(&s, 0));
    cid = fx_str(etcd_status(&s), "clusterID");
    snprintf(cluster_id, sizeof(cluster_id), "%s", cid);

    put_etcd(&s, 2, "", "{replicas: 3}");
    s.watch = "AddedMember";
    sim_converge(&s, 100);
    assert_members(&s, 3);
    /* Each member etcd confirmed was told once, as an Event of the next reconcile. */
    assert_int_equal(s.watch_hits, 2);
    assert_non_null(strstr(s.watch_msg, "to etcd as a learner"));
    /* The pod template, and so every running member, is untouched by a scale. */
    assert_template(&s, hash);
    assert_string_equal(pod_uid(&s, 0), uid0);
    snprintf(uid1, sizeof(uid1), "%s", pod_uid(&s, 1));
    assert_string_equal(fx_str(etcd_status(&s), "clusterID"), cluster_id);
    /* The API servers follow once every member votes. */
    assert_string_equal(fx_str(fx_get(&s.f, FX_CONTROL_PLANES, "c"), "status.phase"), "Ready");

    put_etcd(&s, 3, "", "{replicas: 5}");
    sim_converge(&s, 150);
    assert_members(&s, 5);
    assert_string_equal(pod_uid(&s, 0), uid0);
    assert_string_equal(pod_uid(&s, 1), uid1);

    put_etcd(&s, 4, "", "{replicas: 3}");
    sim_converge(&s, 150);
    assert_members(&s, 3);
    assert_string_equal(pod_uid(&s, 0), uid0);
    assert_string_equal(pod_uid(&s, 1), uid1);
    /* The claims of removed members went with them. */
    assert_null(fx_get(&s.f, FX_CLAIMS, "data-c-etcd-3"));
    assert_null(fx_get(&s.f, FX_CLAIMS, "data-c-etcd-4"));
    assert_string_equal(fx_str(etcd_status(&s), "clusterID"), cluster_id);
    assert_null(fx_str(etcd_status(&s), "adding"));
    free(hash);
    sim_done(&s);
}

static void test_etcdmembership__a_roll_replaces_one_member_at_a_time(void **state)
{
    struct sim s;
    char *before, *after;

    (void)state;
    sim_init(&s, three);
    put_etcd(&s, 1, "", "{replicas: 3}");
    sim_converge(&s, 80);
    assert_members(&s, 3);
    before = template_hash(&s);
    put_etcd(&s, 2, "", "{replicas: 3, extraArgs: {quota-backend-bytes: '4294967296'}}");
    sim_converge(&s, 200);
    after = template_hash(&s);
    assert_string_not_equal(before, after);
    /* Every pod runs the new template, each member kept its data (its ID). */
    for (int i = 0; i < 3; i++) {
        char name[32];
        snprintf(name, sizeof(name), "c-etcd-%d", i);
        assert_string_equal(sim_pod_hash(fx_get(&s.f, FX_PODS, name)), after);
    }
    assert_members(&s, 3);
    /* Each pod was replaced once: none came back from the old template to be rolled again. */
    for (int i = 0; i < 3; i++)
        assert_int_equal(model(&s)->created[i], 2);
    assert_int_equal(fx_path(fx_get(&s.f, FX_STATEFULSETS, "c-etcd"),
                             "spec.updateStrategy.rollingUpdate.partition")
                         ->valueint,
                     0);
    free(before);
    free(after);
    sim_done(&s);
}

static void test_etcdmembership__emptydir_members_are_added_again_in_a_roll(void **state)
{
    struct sim s;
    uint64_t ids[3];
    char *after;

    (void)state;
    sim_init(&s, three);
    put_etcd(&s, 1, "", "{replicas: 3, storage: {emptyDir: {}}}");
    sim_converge(&s, 80);
    assert_members(&s, 3);
    for (int i = 0; i < 3; i++)
        ids[i] = model(&s)->m[i].id;
    put_etcd(
        &s, 2, "",
        "{replicas: 3, storage: {emptyDir: {}}, extraArgs: {quota-backend-bytes: '4294967296'}}");
    sim_converge(&s, 300);
    after = template_hash(&s);
    assert_members(&s, 3);
    for (int i = 0; i < 3; i++)
        assert_int_equal(model(&s)->created[i], 2);
    /* Each member started empty, so each was removed and added again: new IDs, one cluster. */
    for (int i = 0; i < 3; i++)
        for (int k = 0; k < 3; k++)
            assert_true(model(&s)->m[k].id != ids[i]);
    for (int i = 0; i < 3; i++) {
        char name[32];
        snprintf(name, sizeof(name), "c-etcd-%d", i);
        assert_string_equal(sim_pod_hash(fx_get(&s.f, FX_PODS, name)), after);
    }
    free(after);
    sim_done(&s);
}

static void test_etcdmembership__emptydir_members_move_to_claims_one_at_a_time(void **state)
{
    struct sim s;
    uint64_t ids[3];
    const cJSON *sts;
    char uid[64];

    (void)state;
    sim_init(&s, three);
    put_etcd(&s, 1, "", "{replicas: 3, storage: {emptyDir: {}}}");
    sim_converge(&s, 80);
    assert_members(&s, 3);
    for (int i = 0; i < 3; i++)
        ids[i] = model(&s)->m[i].id;
    snprintf(uid, sizeof(uid), "%s", kube_obj_uid(fx_get(&s.f, FX_STATEFULSETS, "c-etcd")));
    put_etcd(&s, 2, "", "{replicas: 3, storage: {persistentVolumeClaim: {size: 1Gi}}}");
    sim_converge(&s, 300);
    sts = fx_get(&s.f, FX_STATEFULSETS, "c-etcd");
    /* A new StatefulSet, with claims, adopted the pods of the old one. */
    assert_string_not_equal(kube_obj_uid(sts), uid);
    assert_int_equal(cJSON_GetArraySize(fx_path(sts, "spec.volumeClaimTemplates")), 1);
    assert_members(&s, 3);
    /* Every member runs on a claim of its own, each added again: new IDs, one cluster. */
    for (int i = 0; i < 3; i++) {
        char name[32];
        snprintf(name, sizeof(name), "c-etcd-%d", i);
        assert_false(sim_pod_storage_differs(sts, fx_get(&s.f, FX_PODS, name)));
        for (int k = 0; k < 3; k++)
            assert_true(model(&s)->m[k].id != ids[i]);
    }
    assert_string_equal(fx_str(fx_condition(etcd_status(&s), "DataNotPersistent"), "status"),
                        "False");
    assert_string_equal(fx_str(fx_get(&s.f, FX_CONTROL_PLANES, "c"), "status.phase"), "Ready");
    sim_done(&s);
}

static void test_etcdmembership__one_member_on_emptydir_does_not_move_to_a_claim(void **state)
{
    struct sim s;
    const cJSON *up;

    (void)state;
    sim_init(&s, three);
    put_etcd(&s, 1, "", "{replicas: 1, storage: {emptyDir: {}}}");
    sim_converge(&s, 60);
    put_etcd(&s, 2, "", "{replicas: 1, storage: {persistentVolumeClaim: {size: 1Gi}}}");
    sim_converge(&s, 60);
    up = fx_condition(fx_path(fx_get(&s.f, FX_CONTROL_PLANES, "c"), "status"), "Upgrading");
    assert_string_equal(fx_str(up, "reason"), "EtcdStorageChangeRefused");
    assert_non_null(strstr(fx_str(up, "message"), "Scale it to 3 members first"));
    assert_int_equal(cJSON_GetArraySize(fx_path(fx_get(&s.f, FX_STATEFULSETS, "c-etcd"),
                                                "spec.volumeClaimTemplates")),
                     0);
    assert_int_equal(model(&s)->clusters_formed, 1);
    sim_done(&s);
}

static void test_etcdmembership__a_restart_in_the_middle_of_an_add_adds_once(void **state)
{
    struct sim s;
    int passes;

    (void)state;
    sim_init(&s, three);
    put_etcd(&s, 1, "", "{replicas: 1}");
    sim_converge(&s, 60);
    put_etcd(&s, 2, "", "{replicas: 3}");
    /* Until etcd has a learner the manager has not yet seen listed... */
    for (passes = 0; passes < 40; passes++) {
        bool learner = false;
        sim_pass(&s);
        sim_kubelet(&s);
        s.f.view.now += 1.0;
        for (int k = 0; k < model(&s)->n; k++)
            learner = learner || model(&s)->m[k].learner;
        if (learner)
            break;
    }
    assert_true(passes < 40);
    assert_non_null(fx_str(etcd_status(&s), "adding"));
    /* ...then the manager is killed: what it heard from etcd is gone, status remains. */
    etcd_membership_free(s.ctx.members);
    s.ctx.members = NULL;
    sim_converge(&s, 150);
    assert_members(&s, 3);
    sim_done(&s);
}

static void test_etcdmembership__a_member_whose_claim_was_replaced_rejoins(void **state)
{
    struct sim s;
    cJSON *old = NULL;
    uint64_t id1 = 0;
    char url[ETCD_MEMBERS_URL_MAX];

    (void)state;
    sim_init(&s, three);
    put_etcd(&s, 1, "", "{replicas: 3}");
    sim_converge(&s, 80);
    sim_etcd_url("c-etcd", 1, url, sizeof(url));
    id1 = sim_member_by_url(model(&s), url)->id;
    /* Its pod and claim are deleted (a node lost, say): a new, empty claim comes. */
    assert_int_equal(kube_store_remove(&s.f.stores[FX_PODS], "default", "c-etcd-1", &old), 0);
    cJSON_Delete(old);
    sim_member_stop(model(&s), 1);
    assert_int_equal(kube_store_remove(&s.f.stores[FX_CLAIMS], "default", "data-c-etcd-1", &old),
                     0);
    cJSON_Delete(old);
    sim_converge(&s, 150);
    assert_members(&s, 3);
    assert_true(sim_member_by_url(model(&s), url)->id != id1);
    sim_done(&s);
}

static void test_etcdmembership__the_only_member_losing_its_claim_is_told(void **state)
{
    struct sim s;
    cJSON *old = NULL;
    const cJSON *st;

    (void)state;
    sim_init(&s, three);
    put_etcd(&s, 1, "", "{replicas: 1}");
    sim_converge(&s, 60);
    assert_int_equal(kube_store_remove(&s.f.stores[FX_PODS], "default", "c-etcd-0", &old), 0);
    cJSON_Delete(old);
    sim_member_stop(model(&s), 0);
    assert_int_equal(kube_store_remove(&s.f.stores[FX_CLAIMS], "default", "data-c-etcd-0", &old),
                     0);
    cJSON_Delete(old);
    /* Nothing to rejoin: it starts a new cluster, and says every key is lost. */
    s.watch = "MemberDataLost";
    sim_converge(&s, 60);
    assert_int_equal(s.watch_hits, 1);
    assert_non_null(strstr(s.watch_msg, "every key is lost"));
    assert_int_equal(model(&s)->clusters_formed, 2);
    st = etcd_status(&s);
    assert_string_equal(fx_str(fx_condition(st, "MembersReady"), "status"), "True");
    sim_done(&s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_etcdmembership__scales_1_3_5_3_without_restarting_a_member),
        cmocka_unit_test(test_etcdmembership__a_roll_replaces_one_member_at_a_time),
        cmocka_unit_test(test_etcdmembership__emptydir_members_are_added_again_in_a_roll),
        cmocka_unit_test(test_etcdmembership__emptydir_members_move_to_claims_one_at_a_time),
        cmocka_unit_test(test_etcdmembership__one_member_on_emptydir_does_not_move_to_a_claim),
        cmocka_unit_test(test_etcdmembership__a_restart_in_the_middle_of_an_add_adds_once),
        cmocka_unit_test(test_etcdmembership__a_member_whose_claim_was_replaced_rejoins),
        cmocka_unit_test(test_etcdmembership__the_only_member_losing_its_claim_is_told),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
