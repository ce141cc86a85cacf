#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "controllers/carotation.h"

static const struct carot_kind cluster_ca = {"cluster CA", "ClusterCA"};

/* A control plane set up long ago, every component rolled, nothing requested. */
static struct carot_input steady(void)
{
    return (struct carot_input){
        .kind = &cluster_ca, .owned = true, .initialized = true, .rolled = true};
}

static void assert_waits(const struct carot_output *out, const char *phase)
{
    assert_int_equal(out->action, CAROT_NONE);
    assert_true(out->rotating);
    assert_string_equal(out->reason, phase);
    assert_null(out->refusal);
    assert_string_equal(out->event_reason, "");
}

static void test_carotation__nothing_requested_sets_no_condition(void **state)
{
    struct carot_input in = steady();
    struct carot_output out;

    (void)state;
    carot_step(&in, &out);
    assert_int_equal(out.action, CAROT_NONE);
    assert_null(out.reason);
    assert_false(carot_running(&in));
    in.requested = "";
    carot_step(&in, &out);
    assert_null(out.reason);
}

static void test_carotation__a_new_request_starts_phase_one(void **state)
{
    struct carot_input in = steady();
    struct carot_output out;

    (void)state;
    in.requested = "2026-12-06";
    carot_step(&in, &out);
    assert_int_equal(out.action, CAROT_START);
    assert_string_equal(out.phase, CAROT_PHASE_TRUSTING);
    assert_true(out.rotating);
    assert_string_equal(out.event_reason, "ClusterCARotationStarted");
    assert_non_null(strstr(out.event_message, "cluster CA rotation \"2026-12-06\""));
    assert_non_null(strstr(out.message, "phase 1 of 4"));
    /* The same request once taken up and complete: nothing. */
    in.taken = "2026-12-06";
    in.phase = CAROT_PHASE_COMPLETE;
    carot_step(&in, &out);
    assert_int_equal(out.action, CAROT_NONE);
    assert_string_equal(out.reason, CAROT_PHASE_COMPLETE);
    assert_false(out.rotating);
    assert_string_equal(out.message,
                        "cluster CA rotation \"2026-12-06\" is complete: the old CA is trusted "
                        "nowhere");
}

static void test_carotation__a_control_plane_not_set_up_takes_the_request(void **state)
{
    struct carot_input in = steady();
    struct carot_output out;

    (void)state;
    in.initialized = false;
    in.requested = "r1";
    carot_step(&in, &out);
    assert_int_equal(out.action, CAROT_TAKE);
    assert_null(out.phase);
    assert_false(out.rotating);
    assert_string_equal(out.reason, CAROT_PHASE_COMPLETE);
    assert_string_equal(out.message, "cluster CA rotation \"r1\" was taken up while the control "
                                     "plane was being set up: the CA was new, so nothing was "
                                     "rotated");
    /* Taken up, with no phase recorded: it still says so, not that a rotation completed. */
    in.initialized = true;
    in.taken = "r1";
    carot_step(&in, &out);
    assert_int_equal(out.action, CAROT_NONE);
    assert_string_equal(out.reason, CAROT_PHASE_COMPLETE);
    assert_non_null(strstr(out.message, "\"r1\" was taken up"));
    assert_null(strstr(out.message, "complete"));
}

static void test_carotation__refused_during_an_upgrade_or_another_rotation(void **state)
{
    struct carot_input in = steady();
    struct carot_output out;

    (void)state;
    in.requested = "r1";
    in.upgrading = true;
    carot_step(&in, &out);
    assert_int_equal(out.action, CAROT_NONE);
    assert_string_equal(out.refusal, "UpgradeInProgress");
    assert_false(out.rotating);
    in.upgrading = false;
    in.busy = "the service-account key";
    carot_step(&in, &out);
    assert_int_equal(out.action, CAROT_NONE);
    assert_string_equal(out.refusal, "RotationInProgress");
    assert_non_null(strstr(out.message, "the service-account key"));
    /* A roll of something else: it waits, without refusing. */
    in.busy = NULL;
    in.rolled = false;
    carot_step(&in, &out);
    assert_int_equal(out.action, CAROT_NONE);
    assert_string_equal(out.reason, "WaitingForRollout");
    assert_null(out.refusal);
    /* Once all that has passed it starts. */
    in.rolled = true;
    carot_step(&in, &out);
    assert_int_equal(out.action, CAROT_START);
}

static void test_carotation__a_supplied_ca_is_never_rotated(void **state)
{
    struct carot_input in = steady();
    struct carot_output out;

    (void)state;
    in.owned = false;
    carot_step(&in, &out);
    assert_null(out.reason);
    in.requested = "r1";
    carot_step(&in, &out);
    assert_int_equal(out.action, CAROT_NONE);
    assert_string_equal(out.refusal, "CertificateAuthoritySupplied");
}

/* A supplied CA's owner moves the Secret on; nestcp writes nothing but says where it is. */
static void test_carotation__a_supplied_ca_rotated_by_its_owner_is_followed(void **state)
{
    struct carot_input in = steady();
    struct carot_output out;

    (void)state;
    in.owned = false;
    in.has_next = true;
    in.rolled = false;
    carot_step(&in, &out);
    assert_int_equal(out.action, CAROT_NONE);
    assert_true(out.rotating);
    assert_null(out.refusal);
    assert_string_equal(out.phase, CAROT_PHASE_TRUSTING);
    assert_non_null(strstr(out.message, "once they have, the owner may move tls.* to previous.*"));
    in.rolled = true;
    in.has_next = false;
    in.has_previous = in.has_previous_key = true;
    carot_step(&in, &out);
    assert_int_equal(out.action, CAROT_NONE);
    assert_string_equal(out.phase, CAROT_PHASE_ISSUING);
    assert_non_null(strstr(out.message, "the owner may now remove previous.key"));
    /* The owner removed previous.crt, the last step: complete once every component rolled. */
    in.has_previous = in.has_previous_key = false;
    in.phase = CAROT_PHASE_SERVING;
    carot_step(&in, &out);
    assert_int_equal(out.action, CAROT_COMPLETE);
    assert_string_equal(out.phase, CAROT_PHASE_COMPLETE);
}

static void test_carotation__each_phase_moves_only_once_every_component_rolled(void **state)
{
    static const struct {
        bool next, previous, previous_key;
        const char *phase, *waits, *then, *event;
        enum carot_action action;
    } phases[] = {
        {true, false, false, CAROT_PHASE_TRUSTING, CAROT_PHASE_TRUSTING, CAROT_PHASE_ISSUING,
         "ClusterCATrusted", CAROT_SWITCH},
        {false, true, true, CAROT_PHASE_ISSUING, CAROT_PHASE_ISSUING, CAROT_PHASE_SERVING,
         "ClusterCAClientsReissued", CAROT_SERVE},
        {false, true, false, CAROT_PHASE_SERVING, CAROT_PHASE_SERVING, CAROT_PHASE_DROPPING,
         "ClusterCAServingReissued", CAROT_DROP},
        {false, false, false, CAROT_PHASE_DROPPING, CAROT_PHASE_DROPPING, CAROT_PHASE_COMPLETE,
         "ClusterCARotated", CAROT_COMPLETE},
    };

    (void)state;
    for (size_t i = 0; i < sizeof(phases) / sizeof(phases[0]); i++) {
        struct carot_input in = steady();
        struct carot_output out;

        in.requested = in.taken = "r1";
        in.phase = phases[i].phase;
        in.has_next = phases[i].next;
        in.has_previous = phases[i].previous;
        in.has_previous_key = phases[i].previous_key;
        assert_true(carot_running(&in));
        in.rolled = false;
        carot_step(&in, &out);
        assert_waits(&out, phases[i].waits);
        in.rolled = true;
        carot_step(&in, &out);
        assert_int_equal(out.action, phases[i].action);
        assert_string_equal(out.phase, phases[i].then);
        assert_string_equal(out.event_reason, phases[i].event);
        assert_non_null(strstr(out.event_message, "\"r1\""));
    }
}

static void test_carotation__a_second_request_waits_for_the_running_rotation(void **state)
{
    struct carot_input in = steady();
    struct carot_output out;

    (void)state;
    in.taken = "r1";
    in.requested = "r2";
    in.phase = CAROT_PHASE_ISSUING;
    in.has_previous = in.has_previous_key = true;
    in.rolled = false;
    carot_step(&in, &out);
    assert_int_equal(out.action, CAROT_NONE);
    assert_true(out.rotating);
    assert_string_equal(out.refusal, "RotationInProgress");
    assert_non_null(strstr(out.message, "\"r2\" is refused while rotation \"r1\" runs"));
    assert_non_null(strstr(out.message, "phase 2 of 4"));
    /* It still moves on. */
    in.rolled = true;
    carot_step(&in, &out);
    assert_int_equal(out.action, CAROT_SERVE);
    /* Complete, the new request starts. */
    in.has_previous = in.has_previous_key = false;
    in.phase = CAROT_PHASE_COMPLETE;
    carot_step(&in, &out);
    assert_int_equal(out.action, CAROT_START);
}

/* The Secret as each action leaves it, from request to completion: every action once, in
 * order. */
static void test_carotation__a_rotation_runs_every_step_once_in_order(void **state)
{
    static const enum carot_action want[] = {CAROT_START, CAROT_SWITCH, CAROT_SERVE, CAROT_DROP,
                                             CAROT_COMPLETE};
    struct carot_input in = steady();
    struct carot_output out;
    const char *phase = CAROT_PHASE_COMPLETE;
    size_t n = 0;

    (void)state;
    in.taken = "r0";
    in.requested = "r1";
    for (int round = 0; round < 12; round++) {
        in.phase = phase;
        carot_step(&in, &out);
        if (out.action == CAROT_NONE)
            continue;
        assert_true(n < sizeof(want) / sizeof(want[0]));
        assert_int_equal(out.action, want[n++]);
        switch (out.action) {
        case CAROT_START:
            in.has_next = true;
            in.taken = in.requested;
            break;
        case CAROT_SWITCH:
            in.has_next = false;
            in.has_previous = in.has_previous_key = true;
            break;
        case CAROT_SERVE:
            in.has_previous_key = false;
            break;
        case CAROT_DROP:
            in.has_previous = false;
            break;
        default:
            break;
        }
        if (out.phase)
            phase = out.phase;
    }
    assert_int_equal(n, sizeof(want) / sizeof(want[0]));
    assert_string_equal(phase, CAROT_PHASE_COMPLETE);
    assert_false(carot_running(&in));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_carotation__nothing_requested_sets_no_condition),
        cmocka_unit_test(test_carotation__a_new_request_starts_phase_one),
        cmocka_unit_test(test_carotation__a_control_plane_not_set_up_takes_the_request),
        cmocka_unit_test(test_carotation__refused_during_an_upgrade_or_another_rotation),
        cmocka_unit_test(test_carotation__a_supplied_ca_is_never_rotated),
        cmocka_unit_test(test_carotation__a_supplied_ca_rotated_by_its_owner_is_followed),
        cmocka_unit_test(test_carotation__each_phase_moves_only_once_every_component_rolled),
        cmocka_unit_test(test_carotation__a_second_request_waits_for_the_running_rotation),
        cmocka_unit_test(test_carotation__a_rotation_runs_every_step_once_in_order),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
