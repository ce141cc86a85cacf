#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "controllers/sakeyrotation.h"

#define NOW 2000000000
#define OVERLAP 3600

/* A control plane set up long ago, every component rolled, nothing requested. */
static struct sakey_input steady(void)
{
    return (struct sakey_input){
        .owned = true, .initialized = true, .rolled = true, .overlap = OVERLAP, .now = NOW};
}

static void assert_waits(const struct sakey_output *out, const char *phase)
{
    assert_int_equal(out->action, SAKEY_NONE);
    assert_true(out->rotating);
    assert_string_equal(out->reason, phase);
    assert_null(out->refusal);
    assert_null(out->event_reason);
}

static void test_sakeyrotation__nothing_requested_sets_no_condition(void **state)
{
    struct sakey_input in = steady();
    struct sakey_output out;

    (void)state;
    sakey_rotation_step(&in, &out);
    assert_int_equal(out.action, SAKEY_NONE);
    assert_null(out.reason);
    in.requested = "";
    sakey_rotation_step(&in, &out);
    assert_null(out.reason);
}

static void test_sakeyrotation__a_new_request_starts_phase_one(void **state)
{
    struct sakey_input in = steady();
    struct sakey_output out;

    (void)state;
    in.requested = "2026-12-05";
    sakey_rotation_step(&in, &out);
    assert_int_equal(out.action, SAKEY_START);
    assert_string_equal(out.phase, SAKEY_PHASE_TRUSTING);
    assert_true(out.rotating);
    assert_string_equal(out.reason, SAKEY_PHASE_TRUSTING);
    assert_string_equal(out.event_reason, "ServiceAccountKeyRotationStarted");
    assert_non_null(strstr(out.event_message, "2026-12-05"));
    /* The same request again after another rotation completed: nothing. */
    in.taken = "2026-12-05";
    in.phase = SAKEY_PHASE_COMPLETE;
    sakey_rotation_step(&in, &out);
    assert_int_equal(out.action, SAKEY_NONE);
    assert_false(out.rotating);
    assert_string_equal(out.reason, SAKEY_PHASE_COMPLETE);
    assert_string_equal(out.message,
                        "rotation \"2026-12-05\" is complete: tokens signed by the old key are "
                        "refused");
}

static void
test_sakeyrotation__a_control_plane_not_set_up_takes_the_request_without_rotating(void **state)
{
    struct sakey_input in = steady();
    struct sakey_output out;

    (void)state;
    in.initialized = false;
    in.rolled = false;
    in.requested = "a";
    sakey_rotation_step(&in, &out);
    assert_int_equal(out.action, SAKEY_TAKE);
    assert_null(out.event_reason);
    assert_null(out.phase);
    assert_false(out.rotating);
    assert_string_equal(out.reason, SAKEY_PHASE_COMPLETE);
    assert_string_equal(out.message, "rotation \"a\" was taken up while the control plane was "
                                     "being set up: its key was new, so nothing was rotated");
    /* Taken up, with no phase recorded: it still says so, not that a rotation completed. */
    in.taken = "a";
    sakey_rotation_step(&in, &out);
    assert_int_equal(out.action, SAKEY_NONE);
    assert_string_equal(out.reason, SAKEY_PHASE_COMPLETE);
    assert_non_null(strstr(out.message, "\"a\" was taken up"));
    assert_null(strstr(out.message, "complete"));
    /* Once a request was taken, a later one rotates even before it is initialized again. */
    in.taken = "a";
    in.requested = "b";
    in.rolled = true;
    sakey_rotation_step(&in, &out);
    assert_int_equal(out.action, SAKEY_START);
}

static void test_sakeyrotation__refused_during_an_upgrade_and_taken_up_after(void **state)
{
    struct sakey_input in = steady();
    struct sakey_output out;

    (void)state;
    in.requested = "r1";
    in.upgrading = true;
    in.rolled = false;
    sakey_rotation_step(&in, &out);
    assert_int_equal(out.action, SAKEY_NONE);
    assert_string_equal(out.refusal, "UpgradeInProgress");
    assert_string_equal(out.reason, "UpgradeInProgress");
    assert_false(out.rotating);
    assert_non_null(strstr(out.message, "r1"));
    /* Another rollout (no version change): it waits for that one, not refused. */
    in.upgrading = false;
    sakey_rotation_step(&in, &out);
    assert_int_equal(out.action, SAKEY_NONE);
    assert_null(out.refusal);
    assert_string_equal(out.reason, "WaitingForRollout");
    in.rolled = true;
    sakey_rotation_step(&in, &out);
    assert_int_equal(out.action, SAKEY_START);
}

static void test_sakeyrotation__a_supplied_key_is_never_rotated(void **state)
{
    struct sakey_input in = steady();
    struct sakey_output out;

    (void)state;
    in.owned = false;
    sakey_rotation_step(&in, &out);
    assert_null(out.reason); /* nothing asked: nothing said */
    in.requested = "r1";
    sakey_rotation_step(&in, &out);
    assert_int_equal(out.action, SAKEY_NONE);
    assert_string_equal(out.refusal, "ServiceAccountKeySupplied");
    /* Not even when someone put the rotation keys into it. */
    in.requested = NULL;
    in.has_next = true;
    sakey_rotation_step(&in, &out);
    assert_int_equal(out.action, SAKEY_NONE);
    assert_string_equal(out.refusal, "ServiceAccountKeySupplied");
}

static void test_sakeyrotation__phase_one_switches_only_once_every_api_server_rolled(void **state)
{
    struct sakey_input in = steady();
    struct sakey_output out;

    (void)state;
    in.requested = in.taken = "r1";
    in.phase = SAKEY_PHASE_TRUSTING;
    in.has_next = true;
    in.rolled = false;
    sakey_rotation_step(&in, &out);
    assert_waits(&out, SAKEY_PHASE_TRUSTING);
    assert_non_null(strstr(out.message, "phase 1 of 3"));
    in.rolled = true;
    sakey_rotation_step(&in, &out);
    assert_int_equal(out.action, SAKEY_SWITCH);
    assert_string_equal(out.phase, SAKEY_PHASE_SIGNING);
    assert_string_equal(out.reason, SAKEY_PHASE_SIGNING);
    assert_true(out.rotating);
    assert_string_equal(out.event_reason, "ServiceAccountKeyTrusted");
}

static void
test_sakeyrotation__phase_two_records_when_every_component_signs_with_the_new_key(void **state)
{
    struct sakey_input in = steady();
    struct sakey_output out;

    (void)state;
    in.requested = in.taken = "r1";
    in.phase = SAKEY_PHASE_SIGNING;
    in.has_previous = true;
    in.rolled = false;
    sakey_rotation_step(&in, &out);
    assert_waits(&out, SAKEY_PHASE_SIGNING);
    assert_non_null(strstr(out.message, "phase 2 of 3"));
    in.rolled = true;
    sakey_rotation_step(&in, &out);
    assert_int_equal(out.action, SAKEY_SIGNED);
    assert_string_equal(out.phase, SAKEY_PHASE_OVERLAP);
    assert_int_equal(out.drop_after, NOW + OVERLAP);
    assert_string_equal(out.event_reason, "ServiceAccountKeySigning");
    assert_non_null(strstr(out.event_message, "2033-05-18T04:33:20Z"));
    assert_true(out.requeue_after == OVERLAP);
}

static void test_sakeyrotation__the_old_key_is_dropped_only_after_the_overlap(void **state)
{
    struct sakey_input in = steady();
    struct sakey_output out;

    (void)state;
    in.requested = in.taken = "r1";
    in.phase = SAKEY_PHASE_OVERLAP;
    in.has_previous = true;
    in.signing_since = NOW - OVERLAP + 10;
    sakey_rotation_step(&in, &out);
    assert_waits(&out, SAKEY_PHASE_OVERLAP);
    assert_int_equal(out.drop_after, NOW + 10);
    assert_true(out.requeue_after == 10);
    /* Even while something else rolls, the overlap counts from signingSince. */
    in.signing_since = NOW - OVERLAP;
    in.rolled = false;
    sakey_rotation_step(&in, &out);
    assert_int_equal(out.action, SAKEY_DROP);
    assert_string_equal(out.phase, SAKEY_PHASE_DROPPING);
    assert_true(out.rotating);
    assert_string_equal(out.event_reason, "ServiceAccountKeyDropped");
}

static void test_sakeyrotation__phase_three_completes_once_the_api_servers_rolled(void **state)
{
    struct sakey_input in = steady();
    struct sakey_output out;

    (void)state;
    in.requested = in.taken = "r1";
    in.phase = SAKEY_PHASE_DROPPING;
    in.signing_since = NOW - OVERLAP;
    in.rolled = false;
    sakey_rotation_step(&in, &out);
    assert_waits(&out, SAKEY_PHASE_DROPPING);
    in.rolled = true;
    sakey_rotation_step(&in, &out);
    assert_int_equal(out.action, SAKEY_COMPLETE);
    assert_string_equal(out.phase, SAKEY_PHASE_COMPLETE);
    assert_false(out.rotating);
    assert_string_equal(out.reason, SAKEY_PHASE_COMPLETE);
    assert_string_equal(out.event_reason, "ServiceAccountKeyRotated");
    /* The drop was written but the status after it was not: the same. */
    in.phase = SAKEY_PHASE_OVERLAP;
    sakey_rotation_step(&in, &out);
    assert_int_equal(out.action, SAKEY_COMPLETE);
}

static void test_sakeyrotation__a_second_request_waits_for_the_running_rotation(void **state)
{
    static const struct {
        bool next, previous;
        const char *phase;
        int64_t since;
    } phases[] = {
        {true, false, SAKEY_PHASE_TRUSTING, 0},
        {false, true, SAKEY_PHASE_SIGNING, 0},
        {false, true, SAKEY_PHASE_OVERLAP, NOW - 10},
        {false, false, SAKEY_PHASE_DROPPING, NOW - OVERLAP - 10},
    };
    struct sakey_output out;

    (void)state;
    for (size_t i = 0; i < sizeof(phases) / sizeof(phases[0]); i++) {
        struct sakey_input in = steady();
        in.taken = "r1";
        in.requested = "r2";
        in.has_next = phases[i].next;
        in.has_previous = phases[i].previous;
        in.phase = phases[i].phase;
        in.signing_since = phases[i].since;
        in.rolled = false;
        sakey_rotation_step(&in, &out);
        assert_int_equal(out.action, SAKEY_NONE);
        assert_string_equal(out.refusal, "RotationInProgress");
        assert_true(out.rotating);
        assert_non_null(strstr(out.message, "\"r2\""));
        assert_non_null(strstr(out.message, "phase"));
    }
    /* Once the first is complete, the second starts. */
    {
        struct sakey_input in = steady();
        in.taken = "r1";
        in.requested = "r2";
        in.phase = SAKEY_PHASE_COMPLETE;
        sakey_rotation_step(&in, &out);
        assert_int_equal(out.action, SAKEY_START);
    }
}

/* The whole rotation, fed its own outputs: every action once, in order. */
static void test_sakeyrotation__a_rotation_runs_every_step_once_in_order(void **state)
{
    static const enum sakey_action want[] = {SAKEY_START, SAKEY_SWITCH, SAKEY_SIGNED, SAKEY_DROP,
                                             SAKEY_COMPLETE};
    struct sakey_input in = steady();
    struct sakey_output out;
    size_t seen = 0;
    char phase[32] = "";

    (void)state;
    in.requested = "r1";
    for (int step = 0; step < 20 && seen < 5; step++) {
        sakey_rotation_step(&in, &out);
        if (out.phase) {
            snprintf(phase, sizeof(phase), "%s", out.phase);
            in.phase = phase;
        }
        if (out.action == SAKEY_NONE) {
            /* A roll completes, or time passes. */
            in.rolled = true;
            in.now += out.requeue_after > 0 ? (int64_t)out.requeue_after : 1;
            continue;
        }
        assert_int_equal(out.action, want[seen++]);
        in.rolled = false; /* every write changes what the components should run */
        switch (out.action) {
        case SAKEY_START:
            in.taken = in.requested;
            in.has_next = true;
            break;
        case SAKEY_SWITCH:
            in.has_next = false;
            in.has_previous = true;
            break;
        case SAKEY_SIGNED:
            in.signing_since = in.now;
            in.rolled = true; /* recording it changes nothing the components run */
            break;
        case SAKEY_DROP:
            in.has_previous = false;
            break;
        default:
            break;
        }
    }
    assert_int_equal(seen, 5);
    assert_string_equal(phase, SAKEY_PHASE_COMPLETE);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sakeyrotation__nothing_requested_sets_no_condition),
        cmocka_unit_test(test_sakeyrotation__a_new_request_starts_phase_one),
        cmocka_unit_test(
            test_sakeyrotation__a_control_plane_not_set_up_takes_the_request_without_rotating),
        cmocka_unit_test(test_sakeyrotation__refused_during_an_upgrade_and_taken_up_after),
        cmocka_unit_test(test_sakeyrotation__a_supplied_key_is_never_rotated),
        cmocka_unit_test(test_sakeyrotation__phase_one_switches_only_once_every_api_server_rolled),
        cmocka_unit_test(
            test_sakeyrotation__phase_two_records_when_every_component_signs_with_the_new_key),
        cmocka_unit_test(test_sakeyrotation__the_old_key_is_dropped_only_after_the_overlap),
        cmocka_unit_test(test_sakeyrotation__phase_three_completes_once_the_api_servers_rolled),
        cmocka_unit_test(test_sakeyrotation__a_second_request_waits_for_the_running_rotation),
        cmocka_unit_test(test_sakeyrotation__a_rotation_runs_every_step_once_in_order),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
