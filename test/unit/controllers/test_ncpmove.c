/* clusterctl move with an etcd snapshot (controllers/move.h): the five reconcilers in the
 * simulation of nested_sim.h, as a user follows docs/clusterctl.md. */

#include "nested_sim.h"

#include "capn_sample.h"

#include "api/conditions.h"
#include "controllers/etcdrestore.h"
#include "controllers/move.h"

/* CAPN's cluster template shape, its etcd with a snapshots claim. */
static const char capn[] =
    CAPN_SAMPLE("{replicas: 1, snapshots: {persistentVolumeClaim: {claimName: move-snapshots}}}");

#define NCP "sample-control-plane"
#define ETCD "sample-nestedetcd"

static const cJSON *ncp_status(struct sim *s)
{
    return fx_path(fx_get(&s->f, FX_CONTROL_PLANES, NCP), "status");
}

static const char *move_blocked(struct sim *s, const char *field)
{
    return fx_str(fx_condition(ncp_status(s), "MoveBlocked"), field);
}

static const char *annotation(struct sim *s, enum fx_store which, const char *name, const char *key)
{
    return kube_obj_annotation(fx_get(&s->f, which, name), key);
}

/* Sets (value) or removes (NULL) an annotation of the object `name` in store `which`. */
static void annotate(struct sim *s, enum fx_store which, const char *name, const char *key,
                     const char *value)
{
    cJSON *o = cJSON_Duplicate(fx_get(&s->f, which, name), true);
    cJSON *meta = cJSON_GetObjectItem(o, "metadata"),
          *ann = cJSON_GetObjectItem(meta, "annotations");

    if (!ann)
        ann = cJSON_AddObjectToObject(meta, "annotations");
    cJSON_DeleteItemFromObject(ann, key);
    if (value)
        cJSON_AddStringToObject(ann, key, value);
    fx_put_json(&s->f, o);
}

static int replicas_of(struct sim *s, const char *sts)
{
    const cJSON *n = fx_path(fx_get(&s->f, FX_STATEFULSETS, sts), "spec.replicas");

    assert_true(cJSON_IsNumber(n));
    return n->valueint;
}

/* The source: the request stops the API servers and controller managers, a snapshot is taken
 * once they are gone, the NestedEtcd is told to start from it, and only then does the block
 * go. Nothing restarts them while prepared; withdrawing the request puts everything back. */
static void test_ncpmove__prepares_then_unblocks_and_a_withdrawal_restores(void **state)
{
    const char *snapshot;
    char name[64];
    struct sim s;

    sim_init(&s, capn);
    assert_true(sim_converge(&s, 40) >= 0);
    assert_string_equal(move_blocked(&s, "reason"), "TenantDataNotMovable");
    assert_int_equal(replicas_of(&s, "sample-apiserver"), 1);

    /* the snapshot Job runs: the components are stopped, the block stays */
    s.jobs = SIM_JOBS_RUN;
    annotate(&s, FX_CONTROL_PLANES, NCP, MOVE_ANNOTATION, "to-b");
    assert_true(sim_converge(&s, 40) >= 0);
    assert_int_equal(replicas_of(&s, "sample-apiserver"), 0);
    assert_int_equal(replicas_of(&s, "sample-controller-manager"), 0);
    assert_int_equal(replicas_of(&s, "sample-etcd"), 1);
    assert_string_equal(fx_str(ncp_status(&s), "move.request"), "to-b");
    assert_string_equal(fx_str(ncp_status(&s), "move.phase"), "Snapshotting");
    snapshot = fx_str(ncp_status(&s), "move.snapshot");
    assert_non_null(snapshot);
    snprintf(name, sizeof(name), "%s", snapshot);
    assert_non_null(strstr(name, "sample-etcd-snapshot-"));
    assert_string_equal(fx_str(fx_get(&s.f, FX_JOBS, name), "metadata.ownerReferences.0.kind"),
                        "NestedControlPlane");
    assert_string_equal(fx_str(fx_get(&s.f, FX_JOBS, name),
                               "spec.template.spec.volumes.0.persistentVolumeClaim.claimName"),
                        "move-snapshots");
    assert_string_equal(move_blocked(&s, "status"), "True");
    assert_string_equal(move_blocked(&s, "reason"), "PreparingMove");
    assert_non_null(annotation(&s, FX_CONTROL_PLANES, NCP, NESTED_BLOCK_MOVE));
    assert_null(annotation(&s, FX_ETCDS, ETCD, MOVE_START_FROM_SNAPSHOT));

    /* the Job completes: start-from-snapshot, then the block goes, then Ready */
    s.jobs = SIM_JOBS_COMPLETE;
    s.watch = "ReadyToMove";
    assert_true(sim_converge(&s, 40) >= 0);
    assert_int_equal(s.watch_hits, 1);
    assert_string_equal(annotation(&s, FX_ETCDS, ETCD, MOVE_START_FROM_SNAPSHOT), name);
    assert_null(annotation(&s, FX_CONTROL_PLANES, NCP, NESTED_BLOCK_MOVE));
    assert_string_equal(fx_str(ncp_status(&s), "move.phase"), "Ready");
    assert_string_equal(move_blocked(&s, "status"), "False");
    assert_string_equal(move_blocked(&s, "reason"), "ReadyToMove");
    assert_non_null(strstr(move_blocked(&s, "message"), name));
    assert_int_equal(replicas_of(&s, "sample-apiserver"), 0);
    assert_int_equal(replicas_of(&s, "sample-controller-manager"), 0);
    /* not ready, and why: not a rollout */
    assert_string_equal(fx_str(fx_condition(ncp_status(&s), "Ready"), "status"), "False");
    assert_string_equal(fx_str(fx_condition(ncp_status(&s), "Ready"), "reason"), "PreparingMove");
    assert_string_equal(fx_str(fx_condition(ncp_status(&s), "Available"), "status"), "False");
    /* the Job recorded is of no more use; the file stays on the claim */
    assert_int_equal(kube_store_count(&s.f.stores[FX_JOBS]), 0);
    /* the etcd that formed ignores the annotation: no restore in the source */
    assert_null(fx_path(fx_get(&s.f, FX_ETCDS, ETCD), "status.restore"));

    /* withdrawn: the block comes back, start-from-snapshot goes, the components run again */
    annotate(&s, FX_CONTROL_PLANES, NCP, MOVE_ANNOTATION, NULL);
    s.watch = "MoveCancelled";
    s.watch_hits = 0;
    assert_true(sim_converge(&s, 40) >= 0);
    assert_non_null(annotation(&s, FX_CONTROL_PLANES, NCP, NESTED_BLOCK_MOVE));
    assert_null(annotation(&s, FX_ETCDS, ETCD, MOVE_START_FROM_SNAPSHOT));
    assert_null(fx_path(ncp_status(&s), "move"));
    assert_string_equal(move_blocked(&s, "reason"), "TenantDataNotMovable");
    assert_int_equal(replicas_of(&s, "sample-apiserver"), 1);
    assert_int_equal(replicas_of(&s, "sample-controller-manager"), 1);
    assert_int_equal(s.watch_hits, 1);
    sim_done(&s);
}

/* A request withdrawn while its snapshot Job runs: the Job goes with it. */
static void test_ncpmove__a_withdrawal_while_snapshotting_deletes_the_job(void **state)
{
    struct sim s;
    char name[64];

    sim_init(&s, capn);
    assert_true(sim_converge(&s, 40) >= 0);
    s.jobs = SIM_JOBS_RUN;
    annotate(&s, FX_CONTROL_PLANES, NCP, MOVE_ANNOTATION, "to-b");
    assert_true(sim_converge(&s, 40) >= 0);
    snprintf(name, sizeof(name), "%s", fx_str(ncp_status(&s), "move.snapshot"));
    assert_non_null(fx_get(&s.f, FX_JOBS, name));
    annotate(&s, FX_CONTROL_PLANES, NCP, MOVE_ANNOTATION, NULL);
    assert_true(sim_converge(&s, 40) >= 0);
    assert_null(fx_get(&s.f, FX_JOBS, name));
    assert_null(fx_path(ncp_status(&s), "move"));
    assert_int_equal(replicas_of(&s, "sample-apiserver"), 1);
    sim_done(&s);
}

/* Bad input stops nothing: no snapshots claim names the NestedEtcd's field; a failed Job says
 * which, and the components run again. */
static void test_ncpmove__no_claim_or_a_failed_job_is_told_and_stops_nothing(void **state)
{
    char yaml[sizeof(capn)], *at;
    struct sim s;

    snprintf(yaml, sizeof(yaml), "%s", capn);
    at = strstr(yaml, ", snapshots: {persistentVolumeClaim: {claimName: move-snapshots}}");
    assert_non_null(at);
    memmove(at, at + strlen(", snapshots: {persistentVolumeClaim: {claimName: move-snapshots}}"),
            strlen(at) -
                strlen(", snapshots: {persistentVolumeClaim: {claimName: move-snapshots}}") + 1);
    sim_init(&s, yaml);
    assert_true(sim_converge(&s, 40) >= 0);
    annotate(&s, FX_CONTROL_PLANES, NCP, MOVE_ANNOTATION, "to-b");
    assert_true(sim_converge(&s, 40) >= 0);
    assert_string_equal(move_blocked(&s, "status"), "True");
    assert_string_equal(move_blocked(&s, "reason"), "NoSnapshotClaim");
    assert_non_null(strstr(move_blocked(&s, "message"),
                           "NestedEtcd default/sample-nestedetcd names no "
                           "spec.snapshots.persistentVolumeClaim.claimName"));
    assert_string_equal(fx_str(ncp_status(&s), "move.phase"), "Failed");
    assert_int_equal(replicas_of(&s, "sample-apiserver"), 1);
    assert_non_null(annotation(&s, FX_CONTROL_PLANES, NCP, NESTED_BLOCK_MOVE));
    assert_int_equal(kube_store_count(&s.f.stores[FX_JOBS]), 0);
    sim_done(&s);

    sim_init(&s, capn);
    assert_true(sim_converge(&s, 40) >= 0);
    s.jobs = SIM_JOBS_FAIL;
    annotate(&s, FX_CONTROL_PLANES, NCP, MOVE_ANNOTATION, "to-b");
    assert_true(sim_converge(&s, 40) >= 0);
    assert_string_equal(move_blocked(&s, "reason"), "MoveFailed");
    assert_non_null(strstr(move_blocked(&s, "message"), "BackoffLimitExceeded"));
    assert_string_equal(fx_str(ncp_status(&s), "move.phase"), "Failed");
    assert_int_equal(replicas_of(&s, "sample-apiserver"), 1);
    assert_int_equal(replicas_of(&s, "sample-controller-manager"), 1);
    assert_non_null(annotation(&s, FX_CONTROL_PLANES, NCP, NESTED_BLOCK_MOVE));
    assert_null(annotation(&s, FX_ETCDS, ETCD, MOVE_START_FROM_SNAPSHOT));
    sim_done(&s);
}

/* No API server StatefulSet is applied before etcd has started from the snapshot. */
static void apiserver_after_restore(void *ud, const struct plan_action *a)
{
    struct sim *s = ud;

    if (a->verb == KUBE_PATCH && strcmp(a->resource->resource, "statefulsets") == 0 &&
        strcmp(a->name, "sample-apiserver") == 0)
        assert_string_equal(fx_str(fx_get(&s->f, FX_ETCDS, ETCD), "status.restore.phase"),
                            ETCD_RESTORE_RESTORED);
}

/* The target: objects as clusterctl creates them (no status, the move annotation carried
 * along, start-from-snapshot on the NestedEtcd): etcd starts from the snapshot before any API
 * server is made, no new preparation starts, and once it has, both annotations go. */
static void
test_ncpmove__the_target_starts_from_the_snapshot_then_drops_the_annotations(void **state)
{
    struct sim s;

    sim_init(&s, capn);
    annotate(&s, FX_CONTROL_PLANES, NCP, MOVE_ANNOTATION, "to-b");
    annotate(&s, FX_ETCDS, ETCD, MOVE_START_FROM_SNAPSHOT, "sample-etcd-snapshot-0123456789");
    s.on_action = apiserver_after_restore;
    s.on_action_ud = &s;
    s.watch = "Restored";
    assert_true(sim_converge(&s, 80) >= 0);
    assert_int_equal(s.watch_hits, 1);
    /* etcd was made from the snapshot: the restore Job ran, and the status says so */
    assert_string_equal(fx_str(fx_get(&s.f, FX_ETCDS, ETCD), "status.restore.snapshot"),
                        "sample-etcd-snapshot-0123456789");
    assert_string_equal(fx_str(fx_get(&s.f, FX_ETCDS, ETCD), "status.restore.phase"),
                        ETCD_RESTORE_RESTORED);
    assert_int_equal(s.jobs_created, 1);
    assert_int_equal(strcmp(s.order[0], "sample-etcd"), 0);
    /* no preparation in the target: everything runs, the block is on */
    assert_int_equal(replicas_of(&s, "sample-apiserver"), 1);
    assert_int_equal(replicas_of(&s, "sample-controller-manager"), 1);
    assert_non_null(annotation(&s, FX_CONTROL_PLANES, NCP, NESTED_BLOCK_MOVE));
    assert_string_equal(fx_str(ncp_status(&s), "move.phase"), "Moved");
    assert_string_equal(fx_str(ncp_status(&s), "move.snapshot"), "sample-etcd-snapshot-0123456789");
    assert_string_equal(move_blocked(&s, "reason"), "TenantDataNotMovable");
    assert_null(annotation(&s, FX_CONTROL_PLANES, NCP, MOVE_ANNOTATION));
    assert_null(annotation(&s, FX_ETCDS, ETCD, MOVE_START_FROM_SNAPSHOT));
    assert_string_equal(fx_str(fx_condition(ncp_status(&s), "Ready"), "status"), "True");
    assert_int_equal(s.etcds.e[0].clusters_formed, 1);
    sim_done(&s);
}

/* clusterctl's deletion of the source objects: nestcp does no deletion work of its own. */
static void test_ncpmove__delete_for_move_gets_no_deletion_work(void **state)
{
    struct sim s;
    struct plan p;
    struct err e;
    cJSON *o;

    sim_init(&s, capn);
    assert_true(sim_converge(&s, 40) >= 0);
    o = cJSON_Duplicate(fx_get(&s.f, FX_CONTROL_PLANES, NCP), true);
    cJSON_ReplaceItemInObject(cJSON_GetObjectItem(o, "metadata"), "annotations",
                              cJSON_Parse("{\"" MOVE_DELETE_FOR_MOVE "\":\"\"}"));
    cJSON_AddStringToObject(cJSON_GetObjectItem(o, "metadata"), "deletionTimestamp",
                            "2027-01-15T08:00:00Z");
    fx_put_json(&s.f, o);
    plan_init(&p);
    err_clear(&e);
    assert_int_equal(nestedcontrolplane_reconcile(&s.ctx, &s.f.view, "default", NCP, &p, &e), 0);
    assert_int_equal(p.n_actions + p.n_events, 0);
    plan_done(&p);
    annotate(&s, FX_APISERVERS, "sample-nestedapiserver", MOVE_DELETE_FOR_MOVE, "");
    assert_int_equal(sim_one(&s, RENDER_PART_APISERVER, "default", "sample-nestedapiserver"), 0);
    sim_done(&s);
}

/* capn with every uid of its nestcp objects replaced, as clusterctl creates them anew. */
static void capn_moved(char *out, size_t size)
{
    static const char *const from[] = {"uid: ncp-1", "uid: etcd-1", "uid: kas-1", "uid: kcm-1"};
    static const char *const to[] = {"uid: ncp-2", "uid: etcd-2", "uid: kas-2", "uid: kcm-2"};
    char tmp[sizeof(capn) + 64];

    snprintf(out, size, "%s", capn);
    for (size_t i = 0; i < sizeof(from) / sizeof(from[0]); i++) {
        const char *at = strstr(out, from[i]);
        assert_non_null(at);
        snprintf(tmp, sizeof(tmp), "%.*s%s%s", (int)(at - out), out, to[i], at + strlen(from[i]));
        snprintf(out, size, "%s", tmp);
    }
}

struct moved {
    struct sim *to;
    int n;
};

/* A Secret as clusterctl moves it: same content, a new uid, owner references to the new
 * owners (the old uid's last digit 1 becomes 2). */
static bool move_secret(void *ud, const cJSON *secret)
{
    struct moved *m = ud;
    cJSON *c = cJSON_Duplicate(secret, true), *meta = cJSON_GetObjectItem(c, "metadata"), *ref;
    char uid[64];

    cJSON_DeleteItemFromObject(meta, "resourceVersion");
    cJSON_DeleteItemFromObject(meta, "uid");
    snprintf(uid, sizeof(uid), "moved-%d", m->n++);
    cJSON_AddStringToObject(meta, "uid", uid);
    cJSON_ArrayForEach(ref, cJSON_GetObjectItem(meta, "ownerReferences")) {
        cJSON *u = cJSON_GetObjectItem(ref, "uid");
        size_t n = strlen(u->valuestring);
        assert_int_equal(u->valuestring[n - 1], '1');
        u->valuestring[n - 1] = '2';
    }
    fx_put_json(&m->to->f, c);
    return true;
}

static bool count_secret(void *ud, const cJSON *secret)
{
    (void)secret;
    (*(int *)ud)++;
    return true;
}

static char *secret_data(struct sim *s, const char *name)
{
    const cJSON *secret = fx_get(&s->f, FX_SECRETS, name);

    assert_non_null(secret);
    return cJSON_PrintUnformatted(cJSON_GetObjectItem(secret, "data"));
}

/* The target's Secrets are those clusterctl moved: the CAs, the service-account key, the
 * admin kubeconfig and each component's certificates are used as they are, none is made
 * again. */
static void test_ncpmove__moved_secrets_are_used_as_they_are(void **state)
{
    static const char *const kept[] = {"sample-ca", "sample-etcd", "sample-proxy", "sample-sa",
                                       "sample-kubeconfig"};
    char yaml[sizeof(capn) + 64];
    struct sim a, b;
    struct moved m = {&b, 0};
    int before = 0, after = 0;

    sim_init(&a, capn);
    assert_true(sim_converge(&a, 40) >= 0);
    capn_moved(yaml, sizeof(yaml));
    sim_init(&b, yaml);
    kube_store_foreach(&a.f.stores[FX_SECRETS], move_secret, &m);
    kube_store_foreach(&b.f.stores[FX_SECRETS], count_secret, &before);
    b.watch = "IssuedCertificates";
    assert_true(sim_converge(&b, 40) >= 0);
    assert_string_equal(fx_str(fx_condition(ncp_status(&b), "Ready"), "status"), "True");
    kube_store_foreach(&b.f.stores[FX_SECRETS], count_secret, &after);
    assert_int_equal(after, before);
    assert_int_equal(b.watch_hits, 0);
    assert_null(fx_event(&b.last, "CreatedCertificateAuthorities"));
    for (size_t i = 0; i < sizeof(kept) / sizeof(kept[0]); i++) {
        char *was = secret_data(&a, kept[i]), *is = secret_data(&b, kept[i]);
        assert_string_equal(is, was);
        cJSON_free(was);
        cJSON_free(is);
    }
    sim_done(&a);
    sim_done(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ncpmove__prepares_then_unblocks_and_a_withdrawal_restores),
        cmocka_unit_test(test_ncpmove__a_withdrawal_while_snapshotting_deletes_the_job),
        cmocka_unit_test(test_ncpmove__no_claim_or_a_failed_job_is_told_and_stops_nothing),
        cmocka_unit_test(
            test_ncpmove__the_target_starts_from_the_snapshot_then_drops_the_annotations),
        cmocka_unit_test(test_ncpmove__delete_for_move_gets_no_deletion_work),
        cmocka_unit_test(test_ncpmove__moved_secrets_are_used_as_they_are),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
