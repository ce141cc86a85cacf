#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "api/conditions.h"

static void test_conditions__transition_time_moves_only_on_status_change(void **state)
{
    struct api_conditions cs = {NULL, 0};
    const struct api_condition *c;

    assert_int_equal(api_conditions_set(&cs, "EtcdAvailable", "False", "Provisioning",
                                        "waiting for 1 replica", 1, 1000),
                     1);
    assert_int_equal(api_conditions_set(&cs, "Ready", "False", "Provisioning", NULL, 1, 1000), 1);
    assert_int_equal(api_conditions_set(&cs, "Available", "Unknown", NULL, NULL, 1, 1000), 1);
    assert_string_equal(cs.items[0].type, "Ready");
    assert_string_equal(cs.items[1].type, "Available");
    assert_string_equal(cs.items[2].type, "EtcdAvailable");
    /* A new message without a status change keeps lastTransitionTime. */
    assert_int_equal(api_conditions_set(&cs, "EtcdAvailable", "False", "Provisioning",
                                        "waiting for 0 replicas", 1, 2000),
                     1);
    c = api_conditions_get(&cs, "EtcdAvailable");
    assert_string_equal(c->message, "waiting for 0 replicas");
    assert_string_equal(c->last_transition_time, "1970-01-01T00:16:40Z");
    /* A status change moves it. */
    assert_int_equal(api_conditions_set(&cs, "EtcdAvailable", "True", "AsExpected", NULL, 2, 3000),
                     1);
    c = api_conditions_get(&cs, "EtcdAvailable");
    assert_string_equal(c->last_transition_time, "1970-01-01T00:50:00Z");
    assert_null(c->message);
    assert_true(api_conditions_is_true(&cs, "EtcdAvailable"));
    assert_false(api_conditions_is_true(&cs, "Ready"));
    assert_int_equal(api_conditions_remove(&cs, "Available"), 1);
    assert_int_equal(api_conditions_remove(&cs, "Available"), 0);
    assert_int_equal(cs.n, 2);
    assert_string_equal(cs.items[1].type, "EtcdAvailable");
    api_conditions_done(&cs);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_conditions__transition_time_moves_only_on_status_change),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
