#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "controllers/rollout.h"

enum { E = ROLLOUT_ETCD, A = ROLLOUT_APISERVER, M = ROLLOUT_CONTROLLER_MANAGER };

/* A control plane running 1.20.2 (etcd 3.4.23) everywhere, complete, 3 replicas each. */
static struct rollout_input steady(void)
{
    struct rollout_input in = {.initialized = true};
    const char *versions[] = {"3.4.23", "1.20.2", "1.20.2"};
    const char *hashes[] = {"e1", "a1", "m1"};

    for (int i = 0; i < ROLLOUT__COUNT; i++) {
        in.c[i].desired.version = in.c[i].target.version = versions[i];
        in.c[i].desired.hash = in.c[i].target.hash = hashes[i];
        in.c[i].complete = true;
        in.c[i].replicas = in.c[i].ready_replicas = in.c[i].updated_replicas = 3;
    }
    return in;
}

/* A control plane that was just created: desired known, nothing targeted, nothing running. */
static struct rollout_input fresh(void)
{
    struct rollout_input in = steady();

    in.initialized = false;
    for (int i = 0; i < ROLLOUT__COUNT; i++) {
        in.c[i].target.version = in.c[i].target.hash = NULL;
        in.c[i].complete = false;
        in.c[i].replicas = in.c[i].ready_replicas = in.c[i].updated_replicas = 0;
    }
    return in;
}

static void assert_moved(const struct rollout_output *out, int which)
{
    for (int i = 0; i < ROLLOUT__COUNT; i++)
        assert_int_equal(out->target_changed[i], i == which);
}

/* Marks component i as having rolled out completely at its (new) target. */
static void complete(struct rollout_input *in, const struct rollout_output *out, int i)
{
    in->c[i].target = out->target[i];
    in->c[i].complete = true;
    in->c[i].replicas = in->c[i].ready_replicas = in->c[i].updated_replicas = 3;
}

static void assert_moved2(const struct rollout_output *out, int a, int b)
{
    for (int i = 0; i < ROLLOUT__COUNT; i++)
        assert_int_equal(out->target_changed[i], i == a || i == b);
}

static void test_rollout__creation_goes_etcd_then_apiserver_with_controller_manager(void **state)
{
    struct rollout_input in = fresh();
    struct rollout_output out;

    rollout_step(&in, &out);
    assert_moved(&out, E);
    assert_int_equal(out.phase, ROLLOUT_PHASE_PROVISIONING);
    assert_string_equal(
        out.message, "etcd 0/0 updated; kube-apiserver waiting; kube-controller-manager waiting");
    assert_false(out.initialized);

    /* etcd targeted but not yet complete: nothing else moves (kube-apiserver exits when etcd
     * does not answer within 20 s) */
    in.c[E].target = out.target[E];
    in.c[E].replicas = 3;
    in.c[E].updated_replicas = 1;
    rollout_step(&in, &out);
    assert_moved(&out, -1);
    assert_string_equal(
        out.message, "etcd 1/3 updated; kube-apiserver waiting; kube-controller-manager waiting");

    /* the controller manager is created with the API servers: it waits for them itself */
    complete(&in, &out, E);
    rollout_step(&in, &out);
    assert_moved2(&out, A, M);
    assert_string_equal(out.target[A].hash, "a1");
    assert_string_equal(out.target[M].hash, "m1");
    assert_int_equal(out.phase, ROLLOUT_PHASE_PROVISIONING);
    assert_string_equal(out.message, "kube-apiserver 0/0 updated; kube-controller-manager 0/0 "
                                     "updated");

    in.c[A].target = out.target[A];
    in.c[M].target = out.target[M];
    in.c[A].replicas = in.c[M].replicas = 1;
    rollout_step(&in, &out);
    assert_moved(&out, -1);
    assert_string_equal(out.message, "kube-apiserver 0/1 updated; kube-controller-manager 0/1 "
                                     "updated");

    complete(&in, &out, M); /* in either order */
    rollout_step(&in, &out);
    assert_moved(&out, -1);
    assert_int_equal(out.phase, ROLLOUT_PHASE_PROVISIONING);
    assert_string_equal(out.message, "kube-apiserver 0/1 updated");

    complete(&in, &out, A);
    rollout_step(&in, &out);
    assert_moved(&out, -1);
    assert_int_equal(out.phase, ROLLOUT_PHASE_READY);
    assert_true(out.initialized);
    assert_true(out.serving);
}

static void test_rollout__creation_controller_manager_without_certificates_waits(void **state)
{
    struct rollout_input in = fresh();
    struct rollout_output out;

    complete(&in, &out, E);
    in.c[E].target = in.c[E].desired;
    in.c[M].desired.hash = NULL;
    rollout_step(&in, &out);
    assert_moved(&out, A);
    assert_int_equal(out.phase, ROLLOUT_PHASE_PROVISIONING);
    assert_string_equal(out.reason, "Provisioning");
    assert_string_equal(out.message,
                        "kube-apiserver 0/0 updated; kube-controller-manager waiting for its "
                        "certificates");

    in.c[A].target = out.target[A];
    in.c[M].desired.hash = "m1";
    rollout_step(&in, &out);
    assert_moved(&out, M);
}

/* An API server that cannot start during creation (here: a bad flag) is mended by a new spec:
 * the controller manager made with it, which cannot become ready without it, does not hold the
 * change back. */
static void
test_rollout__creation_api_server_change_is_not_held_by_its_controller_manager(void **state)
{
    struct rollout_input in = fresh();
    struct rollout_output out;

    complete(&in, &out, E);
    in.c[E].target = in.c[E].desired;
    in.c[A].target = in.c[A].desired;
    in.c[M].target = in.c[M].desired;
    in.c[A].replicas = in.c[M].replicas = 1;
    in.c[A].desired.hash = "a2";
    rollout_step(&in, &out);
    assert_moved(&out, A);
    assert_string_equal(out.target[A].hash, "a2");
    assert_int_equal(out.phase, ROLLOUT_PHASE_PROVISIONING);
}

/* A change of a controller manager that has a target, during creation, keeps the waves: it
 * waits for every API server (the version skew rule). */
static void test_rollout__creation_controller_manager_change_waits_for_api_servers(void **state)
{
    struct rollout_input in = fresh();
    struct rollout_output out;

    complete(&in, &out, E);
    in.c[E].target = in.c[E].desired;
    in.c[A].target = in.c[A].desired;
    in.c[M].target = in.c[M].desired;
    in.c[A].replicas = in.c[M].replicas = 1;
    in.c[M].desired.hash = "m2";
    rollout_step(&in, &out);
    assert_moved(&out, -1);
    assert_string_equal(out.message, "kube-apiserver 0/1 updated; kube-controller-manager waiting");

    complete(&in, &out, A);
    rollout_step(&in, &out);
    assert_moved(&out, M);
}

/* On creation the API servers (and with them the controller manager) start once etcd answers
 * at its target, not once every member is ready: the members that join later are already in
 * the API servers' flags. */
static void test_rollout__creation_starts_api_servers_once_etcd_answers(void **state)
{
    struct rollout_input in = fresh();
    struct rollout_output out;

    rollout_step(&in, &out);
    assert_moved(&out, E);
    in.c[E].target = out.target[E];
    in.c[E].replicas = 3;
    in.c[E].updated_replicas = 1;

    /* etcd's pod runs, but etcd has not answered: kube-apiserver would give up after 20 s */
    rollout_step(&in, &out);
    assert_moved(&out, -1);

    /* member 0 answered (its cluster ID recorded); the others are still joining */
    in.c[E].answers = true;
    in.c[E].ready_replicas = 1;
    rollout_step(&in, &out);
    assert_moved2(&out, A, M);
    assert_int_equal(out.phase, ROLLOUT_PHASE_PROVISIONING);
    assert_string_equal(out.message, "etcd 1/3 updated; kube-apiserver 0/0 updated; "
                                     "kube-controller-manager 0/0 updated");

    /* nothing moves again until every member is ready and the API servers are */
    in.c[A].target = out.target[A];
    in.c[M].target = out.target[M];
    in.c[A].replicas = in.c[M].replicas = 1;
    rollout_step(&in, &out);
    assert_moved(&out, -1);
    complete(&in, &out, A);
    complete(&in, &out, M);
    rollout_step(&in, &out);
    assert_moved(&out, -1);
    assert_int_equal(out.phase, ROLLOUT_PHASE_PROVISIONING);
    complete(&in, &out, E);
    rollout_step(&in, &out);
    assert_int_equal(out.phase, ROLLOUT_PHASE_READY);
    assert_true(out.initialized);
}

/* An etcd that answers at a target other than its desired state (its spec changed before it
 * came up) does not start the API servers: they start with the etcd they will keep. */
static void test_rollout__creation_waits_for_etcd_at_its_desired_state(void **state)
{
    struct rollout_input in = fresh();
    struct rollout_output out;

    in.c[E].target.version = "3.4.23";
    in.c[E].target.hash = "e0";
    in.c[E].replicas = 1;
    in.c[E].answers = true;
    rollout_step(&in, &out);
    assert_moved(&out, E);
    assert_string_equal(out.target[E].hash, "e1");
}

/* During creation a component being created does not hold a change of one before it: etcd's
 * change goes ahead while the API servers it started are not ready (they may wait for exactly
 * that change). Once the control plane was complete, the waves hold (the next test). */
static void test_rollout__creation_etcd_change_is_not_held_by_api_servers(void **state)
{
    struct rollout_input in = fresh();
    struct rollout_output out;

    in.c[E].target = in.c[E].desired;
    in.c[E].replicas = 1;
    in.c[E].answers = true;
    in.c[A].target = in.c[A].desired;
    in.c[M].target = in.c[M].desired;
    in.c[A].replicas = in.c[M].replicas = 1;
    in.c[E].desired.hash = "e2";
    rollout_step(&in, &out);
    assert_moved(&out, E);
    assert_string_equal(out.target[E].hash, "e2");
}

/* Once the control plane was complete, an etcd that answers does not start anything early:
 * every roll keeps the waves. */
static void test_rollout__upgrade_keeps_waves_when_etcd_answers(void **state)
{
    struct rollout_input in = steady();
    struct rollout_output out;

    in.c[E].desired.version = "3.5.0";
    in.c[E].desired.hash = "e2";
    in.c[A].desired.version = in.c[M].desired.version = "1.21.0";
    in.c[A].desired.hash = "a2";
    in.c[M].desired.hash = "m2";
    rollout_step(&in, &out);
    assert_moved(&out, E);
    in.c[E].target = out.target[E];
    in.c[E].complete = false;
    in.c[E].updated_replicas = 1;
    in.c[E].answers = true;
    rollout_step(&in, &out);
    assert_moved(&out, -1);
}

static void test_rollout__steady_state_moves_nothing(void **state)
{
    struct rollout_input in = steady();
    struct rollout_output out;

    rollout_step(&in, &out);
    assert_moved(&out, -1);
    assert_int_equal(out.phase, ROLLOUT_PHASE_READY);
    assert_string_equal(out.reason, "Ready");
}

static void test_rollout__version_bump_rolls_in_dependency_order(void **state)
{
    struct rollout_input in = steady();
    struct rollout_output out;

    in.c[E].desired = (struct rollout_target){"3.4.23", "e2"}; /* new flags for etcd too */
    in.c[A].desired = (struct rollout_target){"1.21.0", "a2"};
    in.c[M].desired = (struct rollout_target){"1.21.0", "m2"};

    rollout_step(&in, &out);
    assert_moved(&out, E);
    assert_int_equal(out.phase, ROLLOUT_PHASE_UPGRADING);
    in.c[E].target = out.target[E];
    in.c[E].complete = false;
    in.c[E].updated_replicas = 2;
    rollout_step(&in, &out);
    assert_moved(&out, -1);
    assert_string_equal(
        out.message, "etcd 2/3 updated; kube-apiserver waiting; kube-controller-manager waiting");

    complete(&in, &out, E);
    rollout_step(&in, &out);
    assert_moved(&out, A);
    assert_string_equal(out.target[A].version, "1.21.0");
    assert_string_equal(out.target[M].version, "1.20.2"); /* never newer than an API server */

    in.c[A].target = out.target[A];
    in.c[A].complete = false;
    in.c[A].updated_replicas = 1;
    rollout_step(&in, &out);
    assert_moved(&out, -1);
    assert_string_equal(out.message, "kube-apiserver 1/3 updated; kube-controller-manager waiting");

    complete(&in, &out, A);
    rollout_step(&in, &out);
    assert_moved(&out, M);
    complete(&in, &out, M);
    rollout_step(&in, &out);
    assert_int_equal(out.phase, ROLLOUT_PHASE_READY);
}

static void test_rollout__flag_change_of_one_component_rolls_only_it(void **state)
{
    struct rollout_input in = steady();
    struct rollout_output out;

    in.c[M].desired.hash = "m2";
    rollout_step(&in, &out);
    assert_moved(&out, M);
    assert_string_equal(out.target[M].hash, "m2");
}

static void test_rollout__earlier_change_waits_for_a_later_rollout_in_progress(void **state)
{
    struct rollout_input in = steady();
    struct rollout_output out;

    in.c[A].target.hash = in.c[A].desired.hash = "a2"; /* API servers rolling */
    in.c[A].complete = false;
    in.c[A].updated_replicas = 1;
    in.c[E].desired.hash = "e2"; /* and now etcd changes */
    rollout_step(&in, &out);
    assert_moved(&out, -1);
    assert_string_equal(out.message,
                        "kube-apiserver 1/3 updated; etcd waiting for kube-apiserver to finish");
}

static void test_rollout__downgrade_is_refused_and_moves_nothing(void **state)
{
    struct rollout_input in = steady();
    struct rollout_output out;

    in.c[E].desired.hash = "e2";
    in.c[A].desired = (struct rollout_target){"1.19.7", "a2"};
    in.c[M].desired = (struct rollout_target){"1.19.7", "m2"};
    rollout_step(&in, &out);
    assert_moved(&out, -1);
    assert_int_equal(out.phase, ROLLOUT_PHASE_REFUSED);
    assert_string_equal(out.reason, "DowngradeRefused");
    assert_string_equal(out.message,
                        "kube-apiserver: downgrade from 1.20.2 to 1.19.7 is not supported");
    assert_true(out.serving);
}

static void test_rollout__skipping_a_minor_is_refused(void **state)
{
    struct rollout_input in = steady();
    struct rollout_output out;

    in.c[A].desired = (struct rollout_target){"1.22.0", "a2"};
    in.c[M].desired = (struct rollout_target){"1.22.0", "m2"};
    rollout_step(&in, &out);
    assert_moved(&out, -1);
    assert_string_equal(out.reason, "MinorSkipRefused");
    assert_string_equal(out.message, "kube-apiserver: 1.20.2 to 1.22.0 skips a minor version; "
                                     "upgrade one minor version at a time");
}

static void test_rollout__patch_downgrade_is_refused_too(void **state)
{
    struct rollout_input in = steady();
    struct rollout_output out;

    in.c[E].desired = (struct rollout_target){"3.4.13", "e2"};
    rollout_step(&in, &out);
    assert_string_equal(out.reason, "DowngradeRefused");
    assert_moved(&out, -1);
}

static void test_rollout__controller_manager_newer_than_apiserver_is_refused(void **state)
{
    struct rollout_input in = steady();
    struct rollout_output out;

    in.c[M].desired = (struct rollout_target){"1.21.0", "m2"};
    rollout_step(&in, &out);
    assert_moved(&out, -1);
    assert_string_equal(out.reason, "VersionSkewRefused");
    assert_non_null(strstr(out.message, "kube-controller-manager 1.21.0 would be newer than "
                                        "kube-apiserver 1.20.2"));
}

static void test_rollout__apiserver_alone_may_lead_by_one_minor(void **state)
{
    struct rollout_input in = steady();
    struct rollout_output out;

    in.c[A].desired = (struct rollout_target){"1.21.0", "a2"};
    rollout_step(&in, &out);
    assert_moved(&out, A);
    assert_int_equal(out.phase, ROLLOUT_PHASE_UPGRADING);
}

static void test_rollout__unknown_desired_state_waits(void **state)
{
    struct rollout_input in = fresh();
    struct rollout_output out;

    in.c[E].desired.hash = NULL;
    rollout_step(&in, &out);
    assert_moved(&out, -1);
    assert_int_equal(out.phase, ROLLOUT_PHASE_WAITING);
    assert_string_equal(out.message, "etcd waiting for its certificates; kube-apiserver waiting; "
                                     "kube-controller-manager waiting");
}

static void test_rollout__serving_needs_etcd_quorum_and_one_of_each(void **state)
{
    struct rollout_input in = steady();
    struct rollout_output out;

    in.c[E].ready_replicas = 2;
    in.c[A].ready_replicas = 1;
    rollout_step(&in, &out);
    assert_true(out.serving);
    in.c[E].ready_replicas = 1;
    rollout_step(&in, &out);
    assert_false(out.serving);
}

/* Component-level version overrides: a NestedAPIServer or NestedControllerManager that sets its
 * own spec.version makes that its desired version; the same rules hold. */

static void test_rollout__controller_manager_override_one_minor_older_stays_put(void **state)
{
    /* The control plane goes to 1.21.14 while the controller manager keeps 1.20.2. */
    struct rollout_input in = steady();
    struct rollout_output out;

    in.c[A].desired = (struct rollout_target){"1.21.14", "a2"};
    rollout_step(&in, &out);
    assert_moved(&out, A);
    assert_string_equal(out.target[A].version, "1.21.14");
    complete(&in, &out, A);
    rollout_step(&in, &out);
    assert_moved(&out, -1);
    assert_int_equal(out.phase, ROLLOUT_PHASE_READY);
    assert_string_equal(out.target[M].version, "1.20.2");

    /* Created that way: etcd, then the API servers with the controller manager at its own
     * version. */
    in = fresh();
    in.c[A].desired = (struct rollout_target){"1.21.14", "a2"};
    rollout_step(&in, &out);
    assert_moved(&out, E);
    complete(&in, &out, E);
    rollout_step(&in, &out);
    assert_moved2(&out, A, M);
    complete(&in, &out, A);
    complete(&in, &out, M);
    rollout_step(&in, &out);
    assert_int_equal(out.phase, ROLLOUT_PHASE_READY);
    assert_string_equal(out.target[A].version, "1.21.14");
    assert_string_equal(out.target[M].version, "1.20.2");
}

static void test_rollout__controller_manager_override_newer_than_apiserver_is_refused(void **state)
{
    struct rollout_input in = steady();
    struct rollout_output out;

    in.c[M].desired = (struct rollout_target){"1.21.14", "m2"};
    rollout_step(&in, &out);
    assert_moved(&out, -1);
    assert_int_equal(out.phase, ROLLOUT_PHASE_REFUSED);
    assert_string_equal(out.reason, "VersionSkewRefused");
    assert_string_equal(out.message, "kube-controller-manager 1.21.14 would be newer than "
                                     "kube-apiserver 1.20.2; the version skew policy does not "
                                     "allow it");
    assert_string_equal(out.target[M].version, "1.20.2");
    assert_true(out.serving);
}

static void test_rollout__override_below_the_running_version_is_a_downgrade(void **state)
{
    /* Everything runs 1.21.14; pinning the controller manager to 1.20.2 would downgrade it,
     * although 1.20.2 keeps the skew policy. */
    struct rollout_input in = steady();
    struct rollout_output out;

    in.c[A].desired.version = in.c[A].target.version = "1.21.14";
    in.c[M].desired.version = in.c[M].target.version = "1.21.14";
    in.c[M].desired = (struct rollout_target){"1.20.2", "m2"};
    rollout_step(&in, &out);
    assert_moved(&out, -1);
    assert_string_equal(out.reason, "DowngradeRefused");
    assert_string_equal(out.message, "kube-controller-manager: downgrade from 1.21.14 to 1.20.2 "
                                     "is not supported");

    /* An API server override that skips a minor is refused like a control plane's. */
    in = steady();
    in.c[A].desired = (struct rollout_target){"1.22.0", "a2"};
    rollout_step(&in, &out);
    assert_moved(&out, -1);
    assert_string_equal(out.reason, "MinorSkipRefused");
}

static void test_rollout__apiserver_may_not_leave_running_controller_manager_behind(void **state)
{
    /* The API servers run 1.21.0 and the controller manager 1.20.2 (an override). Raising the
     * override to 1.21.0 and the control plane to 1.22.0 at once would have the API servers at
     * 1.22 while the controller manager still runs 1.20 during their wave. */
    struct rollout_input in = steady();
    struct rollout_output out;

    in.c[A].desired.version = in.c[A].target.version = "1.21.0";
    in.c[A].desired = (struct rollout_target){"1.22.0", "a2"};
    in.c[M].desired = (struct rollout_target){"1.21.0", "m2"};
    rollout_step(&in, &out);
    assert_moved(&out, -1);
    assert_string_equal(out.reason, "VersionSkewRefused");
    assert_string_equal(out.message,
                        "kube-controller-manager 1.20.2 would be more than one minor version "
                        "older than kube-apiserver 1.22.0; kube-controller-manager runs 1.20.2 "
                        "until kube-apiserver has rolled out; upgrade kube-controller-manager "
                        "first");

    /* The override alone first: the controller manager rolls up to the API servers'. */
    in.c[A].desired = in.c[A].target;
    in.c[M].desired = (struct rollout_target){"1.21.0", "m2"};
    rollout_step(&in, &out);
    assert_moved(&out, M);
    assert_string_equal(out.target[M].version, "1.21.0");
    complete(&in, &out, M);

    /* Then the API servers may take the next minor; the controller manager follows. */
    in.c[A].desired = (struct rollout_target){"1.22.0", "a3"};
    in.c[M].desired = (struct rollout_target){"1.22.0", "m3"};
    rollout_step(&in, &out);
    assert_moved(&out, A);
    complete(&in, &out, A);
    rollout_step(&in, &out);
    assert_moved(&out, M);
}

/* A failed roll of the API servers, held back: nothing moves, the controller managers wait,
 * the message says what failed; a new desired state rolls again. */
static void test_rollout__a_held_roll_stops_until_the_spec_changes(void **state)
{
    struct rollout_input in = steady();
    struct rollout_output out;

    in.c[A].target.hash = in.c[A].desired.hash = "a2";
    in.c[A].complete = false;
    in.c[A].held = "pod c-apiserver-2: container kube-apiserver restarted 3 times";
    in.c[M].desired.hash = "m2";
    rollout_step(&in, &out);
    assert_moved(&out, -1);
    assert_int_equal(out.phase, ROLLOUT_PHASE_STALLED);
    assert_string_equal(out.reason, "RolloutStalled");
    assert_string_equal(out.message,
                        "kube-apiserver: the roll to config a2 failed and is held back (pod "
                        "c-apiserver-2: container kube-apiserver restarted 3 times): its pods go "
                        "back to the last good revision; change the spec to roll again; "
                        "kube-controller-manager waiting");
    assert_true(out.serving);

    in.c[A].desired.hash = "a3";
    rollout_step(&in, &out);
    assert_moved(&out, A);
    assert_string_equal(out.target[A].hash, "a3");
    assert_int_equal(out.phase, ROLLOUT_PHASE_UPGRADING);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rollout__creation_goes_etcd_then_apiserver_with_controller_manager),
        cmocka_unit_test(test_rollout__creation_controller_manager_without_certificates_waits),
        cmocka_unit_test(
            test_rollout__creation_api_server_change_is_not_held_by_its_controller_manager),
        cmocka_unit_test(test_rollout__creation_controller_manager_change_waits_for_api_servers),
        cmocka_unit_test(test_rollout__creation_starts_api_servers_once_etcd_answers),
        cmocka_unit_test(test_rollout__creation_waits_for_etcd_at_its_desired_state),
        cmocka_unit_test(test_rollout__creation_etcd_change_is_not_held_by_api_servers),
        cmocka_unit_test(test_rollout__upgrade_keeps_waves_when_etcd_answers),
        cmocka_unit_test(test_rollout__steady_state_moves_nothing),
        cmocka_unit_test(test_rollout__version_bump_rolls_in_dependency_order),
        cmocka_unit_test(test_rollout__flag_change_of_one_component_rolls_only_it),
        cmocka_unit_test(test_rollout__earlier_change_waits_for_a_later_rollout_in_progress),
        cmocka_unit_test(test_rollout__downgrade_is_refused_and_moves_nothing),
        cmocka_unit_test(test_rollout__skipping_a_minor_is_refused),
        cmocka_unit_test(test_rollout__patch_downgrade_is_refused_too),
        cmocka_unit_test(test_rollout__controller_manager_newer_than_apiserver_is_refused),
        cmocka_unit_test(test_rollout__apiserver_alone_may_lead_by_one_minor),
        cmocka_unit_test(test_rollout__unknown_desired_state_waits),
        cmocka_unit_test(test_rollout__serving_needs_etcd_quorum_and_one_of_each),
        cmocka_unit_test(test_rollout__controller_manager_override_one_minor_older_stays_put),
        cmocka_unit_test(test_rollout__controller_manager_override_newer_than_apiserver_is_refused),
        cmocka_unit_test(test_rollout__override_below_the_running_version_is_a_downgrade),
        cmocka_unit_test(test_rollout__apiserver_may_not_leave_running_controller_manager_behind),
        cmocka_unit_test(test_rollout__a_held_roll_stops_until_the_spec_changes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
