#include "nested_fixture.h"

#include "api/status.h"
#include "controllers/etcdmembership.h"
#include "controllers/etcdrestore.h"
#include "controllers/etcdsnapshot.h"
#include "controllers/move.h"

/* A 3-member etcd of cluster "t1" that asks for snapshot t1-etcd-snapshot-0123456789, as the
 * etcd reconciler sees it: the NestedEtcd, the rendered StatefulSet, its running members. */
static const char etcd_yaml[] =
    "apiVersion: controlplane.cluster.x-k8s.io/v1beta1\n"
    "kind: NestedEtcd\n"
    "metadata:\n"
    "  name: t1-etcd\n"
    "  namespace: default\n"
    "  uid: etcd-uid\n"
    "  annotations: {etcd.nestcp.x-k8s.io/restore-snapshot: t1-etcd-snapshot-0123456789}\n"
    "spec:\n"
    "  replicas: 3\n"
    "  snapshots: {persistentVolumeClaim: {claimName: t1-snapshots}}\n";

static const char sts_yaml[] =
    "apiVersion: apps/v1\n"
    "kind: StatefulSet\n"
    "metadata: {name: t1-etcd, namespace: default}\n"
    "spec:\n"
    "  replicas: 3\n"
    "  template:\n"
    "    spec:\n"
    "      containers:\n"
    "      - name: etcd\n"
    "        image: registry.k8s.io/etcd:3.6.17-0\n"
    "        args:\n"
    "        - --name=$(POD_NAME)\n"
    "        - --initial-advertise-peer-urls=https://$(POD_NAME).t1-etcd.default.svc:2380\n"
    "        - --initial-cluster-token=default-t1-etcd\n";

struct t {
    struct fixture f;
    cJSON *sts;
    struct api_component_status st;
    struct plan plan, after;
    struct etcd_restore_output out;
};

static void put_member(struct t *t, int i, bool gated)
{
    char yaml[1024];

    snprintf(yaml, sizeof(yaml),
             "apiVersion: v1\nkind: Pod\n"
             "metadata: {name: t1-etcd-%d, namespace: default, uid: pod-%d, "
             "creationTimestamp: '2027-01-15T08:00:00Z'}\n"
             "spec: {schedulingGates: [%s]}\n"
             "---\n"
             "apiVersion: v1\nkind: PersistentVolumeClaim\n"
             "metadata: {name: data-t1-etcd-%d, namespace: default, uid: claim-%d-%s}\n",
             i, i, gated ? "{name: etcd.nestcp.x-k8s.io/member}" : "", i, i, gated ? "new" : "old");
    fx_put(&t->f, yaml);
}

/* The Job `name` completed, as the Job controller marks it. */
static void job_complete(struct t *t, const char *name)
{
    cJSON *j = cJSON_Duplicate(fx_get(&t->f, FX_JOBS, name), true);

    cJSON_DeleteItemFromObjectCaseSensitive(j, "status");
    cJSON_AddItemToObject(
        j, "status", cJSON_Parse("{\"conditions\":[{\"type\":\"Complete\",\"status\":\"True\"}]}"));
    fx_put_json(&t->f, j);
}

static void step(struct t *t)
{
    struct etcd_restore_input in = {
        .view = &t->f.view,
        .etcd = fx_get(&t->f, FX_ETCDS, "t1-etcd"),
        .ns = "default",
        .cluster = "t1",
        .sts = t->sts,
        .now = 1800000000.0,
    };

    plan_done(&t->plan);
    plan_done(&t->after);
    plan_init(&t->plan);
    plan_init(&t->after);
    assert_int_equal(etcd_restore_step(&in, &t->st, &t->plan, &t->after, &t->out), 0);
}

static int setup(void **state)
{
    static struct t t;
    cJSON *docs = NULL;
    struct err e;

    memset(&t, 0, sizeof(t));
    fx_init(&t.f);
    fx_put(&t.f, etcd_yaml);
    assert_int_equal(yamlconv_parse_all(sts_yaml, strlen(sts_yaml), "sts", &docs, &e), 0);
    t.sts = cJSON_DetachItemFromArray(docs, 0);
    cJSON_Delete(docs);
    plan_init(&t.plan);
    plan_init(&t.after);
    t.st.cluster_id = strdup("1234");
    *state = &t;
    return 0;
}

static int teardown(void **state)
{
    struct t *t = *state;

    plan_done(&t->plan);
    plan_done(&t->after);
    cJSON_Delete(t->sts);
    free(t->st.cluster_id);
    free(t->st.adding);
    api_etcd_members_free(t->st.members, t->st.n_members);
    free(t->st.restore_snapshot);
    free(t->st.restore_phase);
    free(t->st.restored_at);
    free(t->st.snapshot_request);
    free(t->st.snapshot_name);
    free(t->st.snapshot_phase);
    free(t->st.snapshot_taken_at);
    fx_done(&t->f);
    return 0;
}

static const char *job_arg(const cJSON *job, const char *prefix)
{
    const cJSON *a;

    cJSON_ArrayForEach(a, fx_path(job, "spec.template.spec.containers.0.args")) {
        if (strncmp(a->valuestring, prefix, strlen(prefix)) == 0)
            return a->valuestring;
    }
    return NULL;
}

/* The whole restore: every member stops and its claim goes, the cluster is forgotten, member
 * 0 comes back on a new claim into which a Job restores the snapshot with its revisions
 * bumped and compacted, and member 0 starts from it alone; then the membership takes over. */
static void test_etcdrestore__stops_restores_into_member_0_and_starts_it(void **state)
{
    struct t *t = *state;
    const struct plan_action *job, *release;
    const cJSON *body;
    char name[64];

    for (int i = 0; i < 3; i++)
        put_member(t, i, false);
    step(t);
    assert_true(t->out.active);
    assert_int_equal(t->out.replicas, 0);
    assert_string_equal(t->st.restore_phase, "Stopping");
    assert_string_equal(t->st.restore_snapshot, "t1-etcd-snapshot-0123456789");
    assert_string_equal(t->out.reason, "Stopping");
    assert_non_null(fx_event(&t->plan, "RestoreStarted"));
    assert_string_equal(t->st.cluster_id, "1234"); /* kept while members run */

    /* the members and their claims are gone: member 0 comes back alone */
    for (int i = 0; i < 3; i++) {
        char pod[32], claim[32];
        cJSON *old = NULL;
        snprintf(pod, sizeof(pod), "t1-etcd-%d", i);
        snprintf(claim, sizeof(claim), "data-t1-etcd-%d", i);
        assert_int_equal(kube_store_remove(&t->f.stores[FX_PODS], "default", pod, &old), 0);
        cJSON_Delete(old);
        assert_int_equal(kube_store_remove(&t->f.stores[FX_CLAIMS], "default", claim, &old), 0);
        cJSON_Delete(old);
    }
    step(t);
    assert_int_equal(t->out.replicas, 1);
    assert_string_equal(t->st.restore_phase, "Restoring");
    assert_null(t->st.cluster_id);
    assert_null(fx_event(&t->plan, "RestoreStarted")); /* told once */
    assert_non_null(strstr(t->out.message, "waiting for pod t1-etcd-0"));

    put_member(t, 0, true);
    step(t);
    job = fx_action(&t->plan, KUBE_CREATE, "jobs", NULL);
    assert_non_null(job);
    body = job->body;
    snprintf(name, sizeof(name), "%s", kube_obj_name(body));
    assert_non_null(strstr(name, "t1-etcd-restore-"));
    assert_string_equal(fx_str(body, "metadata.ownerReferences.0.kind"), "NestedEtcd");
    assert_string_equal(fx_str(body, "spec.template.spec.containers.0.command.0"), "etcdutl");
    assert_string_equal(fx_str(body, "spec.template.spec.containers.0.image"),
                        "registry.k8s.io/etcd:3.6.17-0");
    assert_non_null(job_arg(body, "/snapshots/t1-etcd-snapshot-0123456789.db"));
    assert_string_equal(job_arg(body, "--initial-cluster="),
                        "--initial-cluster=t1-etcd-0=https://t1-etcd-0.t1-etcd.default.svc:2380");
    assert_string_equal(job_arg(body, "--initial-cluster-token="),
                        "--initial-cluster-token=default-t1-etcd");
    assert_string_equal(job_arg(body, "--bump-revision="), "--bump-revision=1000000000");
    assert_non_null(job_arg(body, "--mark-compacted"));
    assert_string_equal(job_arg(body, "--data-dir="), "--data-dir=/var/lib/etcd/data");
    assert_string_equal(
        fx_str(body, "spec.template.spec.volumes.0.persistentVolumeClaim.claimName"),
        "data-t1-etcd-0");
    assert_string_equal(
        fx_str(body, "spec.template.spec.volumes.1.persistentVolumeClaim.claimName"),
        "t1-snapshots");
    fx_apply_plan(&t->f, &t->plan);

    /* a failed Job says so and how to try again */
    {
        cJSON *j = cJSON_Duplicate(fx_get(&t->f, FX_JOBS, name), true);
        cJSON_AddItemToObject(j, "status",
                              cJSON_Parse("{\"conditions\":[{\"type\":\"Failed\",\"status\":"
                                          "\"True\",\"reason\":\"BackoffLimitExceeded\"}]}"));
        fx_put_json(&t->f, j);
    }
    step(t);
    assert_string_equal(t->out.reason, "RestoreFailed");
    assert_true(t->out.warning);
    assert_non_null(strstr(t->out.message, "Delete the Job to try again"));
    assert_int_equal(t->out.replicas, 1);

    /* the Job completes: member 0 starts from the data, alone */
    job_complete(t, name);
    step(t);
    assert_true(t->out.started_cluster);
    assert_string_equal(t->st.restore_phase, "Restored");
    assert_string_equal(t->st.restored_at, "2027-01-15T08:00:00Z");
    assert_int_equal(t->st.n_members, 1);
    assert_string_equal(t->st.members[0].name, "t1-etcd-0");
    assert_string_equal(t->st.members[0].data_uid, "claim-0-new");
    assert_non_null(fx_event(&t->plan, "Restored"));
    release = fx_action(&t->after, KUBE_PATCH, "pods", "t1-etcd-0");
    assert_non_null(release);
    assert_string_equal(fx_str(release->body, "metadata.uid"), "pod-0");
    assert_true(cJSON_IsNull(fx_path(release->body, "spec.schedulingGates")));
    {
        const cJSON *ann = fx_path(release->body, "metadata.annotations");
        assert_string_equal(cJSON_GetObjectItem(ann, ETCD_MEMBERSHIP_INITIAL_CLUSTER)->valuestring,
                            "t1-etcd-0=https://t1-etcd-0.t1-etcd.default.svc:2380");
        assert_string_equal(cJSON_GetObjectItem(ann, ETCD_MEMBERSHIP_INITIAL_STATE)->valuestring,
                            "new");
    }

    /* until the cache shows member 0 started, it stays at 1 replica: the membership step
     * would take the cluster for one never formed and start the others as a new one */
    step(t);
    assert_true(t->out.active);
    assert_int_equal(t->out.replicas, 1);
    assert_non_null(strstr(t->out.message, "waiting for member t1-etcd-0 to start"));
    put_member(t, 0, false);

    /* done: the membership step runs again; once the cache shows the status, the finished
     * Job goes, whose pod would keep the claim it wrote from ever being deleted */
    step(t);
    assert_false(t->out.active);
    assert_null(t->out.reason);
    assert_null(fx_action(&t->plan, KUBE_DELETE, "jobs", NULL));
    {
        cJSON *etcd = cJSON_Duplicate(fx_get(&t->f, FX_ETCDS, "t1-etcd"), true);
        cJSON_AddItemToObject(
            etcd, "status",
            cJSON_Parse("{\"restore\":{\"snapshot\":\"t1-etcd-snapshot-0123456789\","
                        "\"phase\":\"Restored\"}}"));
        fx_put_json(&t->f, etcd);
    }
    step(t);
    assert_non_null(fx_action(&t->plan, KUBE_DELETE, "jobs", name));
}

/* Without a claim to read the snapshot from, nothing stops. */
static void test_etcdrestore__without_a_snapshots_claim_nothing_stops(void **state)
{
    struct t *t = *state;
    cJSON *etcd = cJSON_Duplicate(fx_get(&t->f, FX_ETCDS, "t1-etcd"), true);

    cJSON_DeleteItemFromObject(cJSON_GetObjectItem(etcd, "spec"), "snapshots");
    fx_put_json(&t->f, etcd);
    put_member(t, 0, false);
    step(t);
    assert_false(t->out.active);
    assert_string_equal(t->out.reason, "NoSnapshotClaim");
    assert_non_null(strstr(t->out.message, "names no spec.snapshots.persistentVolumeClaim"));
    assert_null(t->st.restore_phase);
    assert_int_equal(t->plan.n_actions, 0);
}

/* A snapshot asked for by annotation: a Job controlled by the NestedEtcd takes it from a ready
 * member; the status names it once the Job completed, and the same request is not taken
 * again. */
static void test_etcdrestore__a_snapshot_asked_for_is_taken_once(void **state)
{
    struct t *t = *state;
    struct etcd_snapshot_input in = {
        .view = &t->f.view, .ns = "default", .cluster = "t1", .certs = "t1-etcd-certs-1"};
    struct etcd_snapshot_output out;
    const struct plan_action *create;
    cJSON *etcd = cJSON_Duplicate(fx_get(&t->f, FX_ETCDS, "t1-etcd"), true), *job;
    char name[64];

    cJSON_ReplaceItemInObject(cJSON_GetObjectItem(etcd, "metadata"), "annotations",
                              cJSON_Parse("{\"etcd.nestcp.x-k8s.io/snapshot\":\"before-move\"}"));
    cJSON_AddItemToObject(etcd, "status",
                          cJSON_Parse("{\"addresses\":[{\"hostname\":\"t1-etcd-0.t1-etcd.default."
                                      "svc\",\"port\":2379}]}"));
    fx_put_json(&t->f, etcd);
    fx_put(&t->f, "apiVersion: apps/v1\nkind: StatefulSet\n"
                  "metadata: {name: t1-etcd, namespace: default}\nspec: {replicas: 1}\n"
                  "---\n"
                  "apiVersion: v1\nkind: Pod\nmetadata: {name: t1-etcd-0, namespace: default}\n"
                  "status:\n"
                  "  conditions: [{type: Ready, status: 'True'}]\n"
                  "  containerStatuses: [{name: etcd, image: 'registry.k8s.io/etcd:3.6.17-0'}]\n");
    in.etcd = fx_get(&t->f, FX_ETCDS, "t1-etcd");
    assert_int_equal(etcd_snapshot_step(&in, &t->st, &t->plan, &out), 0);
    create = fx_action(&t->plan, KUBE_CREATE, "jobs", NULL);
    assert_non_null(create);
    snprintf(name, sizeof(name), "%s", kube_obj_name(create->body));
    assert_string_equal(t->st.snapshot_name, name);
    assert_string_equal(t->st.snapshot_request, "before-move");
    assert_string_equal(t->st.snapshot_phase, "Taking");
    assert_string_equal(out.reason, "Taking");
    assert_string_equal(fx_str(create->body, "metadata.ownerReferences.0.kind"), "NestedEtcd");
    assert_string_equal(fx_str(create->body, "spec.template.spec.containers.0.args.0"),
                        "--endpoints=https://t1-etcd-0.t1-etcd.default.svc:2379");
    assert_string_equal(fx_str(create->body, "spec.template.spec.volumes.1.secret.secretName"),
                        "t1-etcd-certs-1");
    fx_apply_plan(&t->f, &t->plan);

    job = cJSON_Duplicate(fx_get(&t->f, FX_JOBS, name), true);
    cJSON_AddItemToObject(job, "status",
                          cJSON_Parse("{\"completionTime\":\"2027-01-15T08:01:00Z\",\"conditions\":"
                                      "[{\"type\":\"Complete\",\"status\":\"True\"}]}"));
    fx_put_json(&t->f, job);
    plan_done(&t->plan);
    plan_init(&t->plan);
    assert_int_equal(etcd_snapshot_step(&in, &t->st, &t->plan, &out), 0);
    assert_string_equal(t->st.snapshot_phase, "Complete");
    assert_string_equal(t->st.snapshot_taken_at, "2027-01-15T08:01:00Z");
    assert_string_equal(out.status, "True");
    assert_non_null(fx_event(&t->plan, "SnapshotTaken"));

    /* answered: nothing more for the same request; once the cache shows it, its Job goes */
    plan_done(&t->plan);
    plan_init(&t->plan);
    assert_int_equal(etcd_snapshot_step(&in, &t->st, &t->plan, &out), 0);
    assert_null(out.reason);
    assert_int_equal(t->plan.n_actions + t->plan.n_events, 0);
    etcd = cJSON_Duplicate(fx_get(&t->f, FX_ETCDS, "t1-etcd"), true);
    cJSON_ReplaceItemInObject(etcd, "status",
                              api_component_status_to_json(API_KIND_NESTED_ETCD, &t->st));
    fx_put_json(&t->f, etcd);
    in.etcd = fx_get(&t->f, FX_ETCDS, "t1-etcd");
    assert_int_equal(etcd_snapshot_step(&in, &t->st, &t->plan, &out), 0);
    assert_non_null(fx_action(&t->plan, KUBE_DELETE, "jobs", name));
}

/* The NestedEtcd's annotations replaced by one: key=value. */
static void annotate_only(struct t *t, const char *key, const char *value)
{
    cJSON *etcd = cJSON_Duplicate(fx_get(&t->f, FX_ETCDS, "t1-etcd"), true), *ann;

    ann = cJSON_CreateObject();
    cJSON_AddStringToObject(ann, key, value);
    cJSON_ReplaceItemInObject(cJSON_GetObjectItem(etcd, "metadata"), "annotations", ann);
    fx_put_json(&t->f, etcd);
}

/* A move's target: a NestedEtcd that never formed a cluster here (no cluster ID, no
 * StatefulSet, no member) and carries start-from-snapshot starts from that snapshot instead of
 * empty: member 0 comes up behind its gate, a Job restores the snapshot into its claim, then
 * it starts alone. */
static void test_etcdrestore__start_from_snapshot_when_never_formed(void **state)
{
    struct t *t = *state;
    const struct plan_action *job;
    const struct plan_event *ev;
    char name[64];

    free(t->st.cluster_id);
    t->st.cluster_id = NULL;
    annotate_only(t, MOVE_START_FROM_SNAPSHOT, "t1-etcd-snapshot-0123456789");
    step(t);
    /* nothing to stop: straight to member 0 at 1 replica, told as a start, not a loss */
    assert_true(t->out.active);
    assert_int_equal(t->out.replicas, 1);
    assert_string_equal(t->st.restore_snapshot, "t1-etcd-snapshot-0123456789");
    assert_string_equal(t->st.restore_phase, "Restoring");
    assert_string_equal(t->out.reason, "Restoring");
    ev = fx_event(&t->plan, "RestoreStarted");
    assert_non_null(ev);
    assert_int_equal(ev->type, KUBE_EVENT_NORMAL);
    assert_non_null(strstr(ev->message, MOVE_START_FROM_SNAPSHOT));

    put_member(t, 0, true);
    step(t);
    job = fx_action(&t->plan, KUBE_CREATE, "jobs", NULL);
    assert_non_null(job);
    snprintf(name, sizeof(name), "%s", kube_obj_name(job->body));
    assert_non_null(job_arg(job->body, "/snapshots/t1-etcd-snapshot-0123456789.db"));
    fx_apply_plan(&t->f, &t->plan);
    job_complete(t, name);
    step(t);
    assert_true(t->out.started_cluster);
    assert_string_equal(t->st.restore_phase, "Restored");
    assert_string_equal(t->out.reason, "Restored");
    assert_non_null(fx_event(&t->plan, "Restored"));
    assert_non_null(fx_action(&t->after, KUBE_PATCH, "pods", "t1-etcd-0"));

    /* member 0 started and the membership recorded the cluster: nothing more */
    put_member(t, 0, false);
    t->st.cluster_id = strdup("5678");
    step(t);
    assert_false(t->out.active);
    assert_null(fx_event(&t->plan, "RestoreStarted"));
    assert_null(fx_action(&t->plan, KUBE_CREATE, "jobs", NULL));
}

/* On an etcd whose cluster formed (a cluster ID, or a member that left its gate), the
 * annotation is ignored: no second start from the snapshot, no data lost. */
static void test_etcdrestore__start_from_snapshot_ignored_once_formed(void **state)
{
    struct t *t = *state;

    annotate_only(t, MOVE_START_FROM_SNAPSHOT, "t1-etcd-snapshot-0123456789");
    for (int i = 0; i < 3; i++)
        put_member(t, i, false);
    step(t);
    assert_false(t->out.active);
    assert_null(t->out.reason);
    assert_null(t->st.restore_phase);
    assert_int_equal(t->plan.n_actions + t->plan.n_events, 0);

    /* no cluster ID recorded, but a member ran: formed all the same */
    free(t->st.cluster_id);
    t->st.cluster_id = NULL;
    step(t);
    assert_false(t->out.active);
    assert_null(t->st.restore_phase);
    assert_int_equal(t->plan.n_actions + t->plan.n_events, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(
            test_etcdrestore__stops_restores_into_member_0_and_starts_it, setup, teardown),
        cmocka_unit_test_setup_teardown(test_etcdrestore__without_a_snapshots_claim_nothing_stops,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_etcdrestore__a_snapshot_asked_for_is_taken_once, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_etcdrestore__start_from_snapshot_when_never_formed,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_etcdrestore__start_from_snapshot_ignored_once_formed,
                                        setup, teardown),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
