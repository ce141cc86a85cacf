#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <string.h>

#include "controllers/brake.h"

#define NOW 1000000.0

static struct brake_input request(const struct brake_peer *peers, size_t n, int limit)
{
    return (struct brake_input){.ns = "ns",
                                .name = "me",
                                .queued_since = NOW,
                                .peers = peers,
                                .n_peers = n,
                                .limit = limit};
}

static void test_brake__limit_parses_counts_and_percentages(void **state)
{
    struct brake_limit l;
    (void)state;

    assert_int_equal(brake_limit_parse("10", &l), 0);
    assert_int_equal(l.value, 10);
    assert_false(l.percent);
    assert_int_equal(brake_limit_parse("5%", &l), 0);
    assert_int_equal(l.value, 5);
    assert_true(l.percent);
    assert_int_equal(brake_limit_parse("100%", &l), 0);
    const char *bad[] = {"", "0", "0%", "101%", "-1", "1.5", "ten", "%", "10 %", "1e3", "9999999"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        assert_int_equal(brake_limit_parse(bad[i], &l), -EINVAL);
    assert_int_equal(brake_limit_parse(NULL, &l), -EINVAL);
}

static void test_brake__percentage_rounds_down_to_at_least_one(void **state)
{
    struct brake_limit pct = {10, true}, count = {3, false};
    (void)state;

    assert_int_equal(brake_limit_resolve(&pct, 500), 50);
    assert_int_equal(brake_limit_resolve(&pct, 19), 1);
    assert_int_equal(brake_limit_resolve(&pct, 5), 1);
    assert_int_equal(brake_limit_resolve(&pct, 0), 1);
    assert_int_equal(brake_limit_resolve(&count, 1), 3);
}

static void test_brake__a_free_slot_lets_the_roll_start(void **state)
{
    struct brake_peer peers[] = {{"ns", "a", true, false, 0}, {"ns", "b", false, false, 0}};
    struct brake_input in = request(peers, 2, 2);
    struct brake_output out;
    (void)state;

    brake_decide(&in, &out);
    assert_true(out.go);
    assert_int_equal(out.rolling, 1);
    assert_int_equal(out.ahead, 0);
}

static void test_brake__no_free_slot_waits_and_says_how_many_roll(void **state)
{
    struct brake_peer peers[] = {{"ns", "a", true, false, 0}};
    struct brake_input in = request(peers, 1, 1);
    struct brake_output out;
    (void)state;

    brake_decide(&in, &out);
    assert_false(out.go);
    assert_int_equal(out.rolling, 1);
    assert_non_null(strstr(out.message, "1 control plane rolling (ns/a), 1 allowed at once"));
    assert_non_null(strstr(out.message, "--max-concurrent-rollouts"));
}

static void test_brake__the_message_names_the_first_rolling_ones(void **state)
{
    struct brake_peer peers[] = {{"n1", "a", true, false, 0},
                                 {"n1", "b", false, true, NOW - 1},
                                 {"n2", "c", true, false, 0},
                                 {"n2", "d", true, false, 0},
                                 {"n3", "e", true, false, 0}};
    struct brake_input in = request(peers, 5, 4);
    struct brake_output out;
    (void)state;

    brake_decide(&in, &out);
    assert_false(out.go);
    assert_string_equal(out.message,
                        "waiting for a rollout slot: 4 control planes rolling (n1/a, n2/c, n2/d, "
                        "...), 4 allowed at once (--max-concurrent-rollouts); 1 waiting ahead of "
                        "this one");
}

static void test_brake__the_oldest_request_goes_first(void **state)
{
    /* One slot free; b has waited since before me, c since after. */
    struct brake_peer peers[] = {{"ns", "a", true, false, 0},
                                 {"ns", "b", false, true, NOW - 60},
                                 {"ns", "c", false, true, NOW + 5}};
    struct brake_input in = request(peers, 3, 2);
    struct brake_output out;
    (void)state;

    brake_decide(&in, &out);
    assert_false(out.go);
    assert_int_equal(out.ahead, 1);
    assert_non_null(strstr(out.message, "1 waiting ahead of this one"));

    /* Once b rolls, the slot after it is mine only when a second frees up. */
    peers[1].rolling = true;
    peers[1].queued = false;
    brake_decide(&in, &out);
    assert_false(out.go);
    peers[0].rolling = false;
    brake_decide(&in, &out);
    assert_true(out.go);
}

static void test_brake__a_tie_goes_by_namespace_then_name(void **state)
{
    struct brake_peer peers[] = {{"ns", "ma", false, true, NOW},
                                 {"ns", "mz", false, true, NOW},
                                 {"aa", "zz", false, true, NOW}};
    struct brake_input in = request(peers, 3, 1);
    struct brake_output out;
    (void)state;

    brake_decide(&in, &out);
    assert_false(out.go);
    assert_int_equal(out.ahead, 2); /* aa/zz and ns/ma, not ns/mz */
}

static void test_brake__a_new_request_waits_behind_every_queued_one(void **state)
{
    /* Two slots free, but two have waited already: a request seen now is third. */
    struct brake_peer peers[] = {{"ns", "b", false, true, NOW - 10},
                                 {"ns", "c", false, true, NOW - 1}};
    struct brake_input in = request(peers, 2, 2);
    struct brake_output out;
    (void)state;

    brake_decide(&in, &out);
    assert_false(out.go);
    assert_int_equal(out.ahead, 2);
    in.limit = 3;
    brake_decide(&in, &out);
    assert_true(out.go);
}

static void test_brake__a_roll_in_progress_keeps_its_slot(void **state)
{
    struct brake_peer peers[] = {{"ns", "a", true, false, 0}, {"ns", "b", true, false, 0}};
    struct brake_input in = request(peers, 2, 1);
    struct brake_output out;
    (void)state;

    in.rolling = true; /* its next wave */
    brake_decide(&in, &out);
    assert_true(out.go);
}

static void test_brake__an_urgent_certificate_renewal_never_waits(void **state)
{
    struct brake_peer peers[] = {{"ns", "a", true, false, 0}, {"ns", "b", false, true, NOW - 3600}};
    struct brake_input in = request(peers, 2, 1);
    struct brake_output out;
    (void)state;

    in.urgent = true;
    brake_decide(&in, &out);
    assert_true(out.go);
    assert_non_null(strstr(out.message, "within 7 days"));
    in.urgent = false;
    brake_decide(&in, &out);
    assert_false(out.go);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_brake__limit_parses_counts_and_percentages),
        cmocka_unit_test(test_brake__percentage_rounds_down_to_at_least_one),
        cmocka_unit_test(test_brake__a_free_slot_lets_the_roll_start),
        cmocka_unit_test(test_brake__no_free_slot_waits_and_says_how_many_roll),
        cmocka_unit_test(test_brake__the_message_names_the_first_rolling_ones),
        cmocka_unit_test(test_brake__the_oldest_request_goes_first),
        cmocka_unit_test(test_brake__a_tie_goes_by_namespace_then_name),
        cmocka_unit_test(test_brake__a_new_request_waits_behind_every_queued_one),
        cmocka_unit_test(test_brake__a_roll_in_progress_keeps_its_slot),
        cmocka_unit_test(test_brake__an_urgent_certificate_renewal_never_waits),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
