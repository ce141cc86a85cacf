#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <string.h>

#include "lib/ctrl/plan.h"

static void add_events(struct plan *p, const char *const *reasons, size_t n)
{
    for (size_t i = 0; i < n; i++)
        assert_int_equal(plan_event(p, KUBE_EVENT_NORMAL, reasons[i], "%s happened", reasons[i]),
                         0);
}

static void create_secret(struct plan *p, const char *name)
{
    cJSON *o = cJSON_CreateObject();

    assert_non_null(o);
    cJSON_AddStringToObject(o, "apiVersion", "v1");
    cJSON_AddStringToObject(o, "kind", "Secret");
    cJSON_AddItemToObject(o, "metadata", cJSON_CreateObject());
    cJSON_AddStringToObject(cJSON_GetObjectItem(o, "metadata"), "name", name);
    cJSON_AddStringToObject(cJSON_GetObjectItem(o, "metadata"), "namespace", "default");
    assert_int_equal(plan_create(p, &KUBE_SECRETS, o, "test"), 0);
}

/* An Event is recorded after the actions planned before it; held, after all of them. */
static void test_plan__held_events_wait_for_every_action(void **state)
{
    static const char *const reasons[] = {"A", "B", "C"};
    struct plan p;

    plan_init(&p);
    create_secret(&p, "one");
    add_events(&p, reasons, 3);
    create_secret(&p, "two");
    create_secret(&p, "three");
    assert_int_equal(p.events[1].after, 1);
    plan_events_after_all(&p, 1, 2);
    assert_int_equal(p.events[0].after, 1);
    assert_int_equal(p.events[1].after, 3);
    assert_int_equal(p.events[2].after, 1);
    plan_events_after_all(&p, 2, 99); /* an end past the events is clamped */
    assert_int_equal(p.events[2].after, 3);
    plan_done(&p);
}

static void test_plan__dropped_events_are_gone_and_the_rest_kept_in_order(void **state)
{
    static const char *const reasons[] = {"A", "B", "C", "D"};
    struct plan p;

    plan_init(&p);
    add_events(&p, reasons, 4);
    plan_events_drop(&p, 1, 3);
    assert_int_equal(p.n_events, 2);
    assert_string_equal(p.events[0].reason, "A");
    assert_string_equal(p.events[1].reason, "D");
    assert_string_equal(p.events[1].message, "D happened");
    plan_events_drop(&p, 1, 1); /* nothing */
    plan_events_drop(&p, 5, 9); /* past the end: nothing */
    assert_int_equal(p.n_events, 2);
    plan_events_drop(&p, 0, 99);
    assert_int_equal(p.n_events, 0);
    plan_done(&p);
}

/* A counted Event counts writes that are all sent: one among them that the runtime may leave
 * out, a write of progress, is refused rather than counted as made. */
static void test_plan__a_counted_event_refuses_a_progress_write_among_its_writes(void **state)
{
    struct plan p;
    cJSON *st = cJSON_Parse("{\"metadata\":{\"namespace\":\"default\",\"name\":\"x\"},"
                            "\"status\":{\"message\":\"3 of 5\"}}");

    plan_init(&p);
    create_secret(&p, "one");
    create_secret(&p, "two");
    assert_int_equal(plan_event_count(&p, 0, KUBE_EVENT_NORMAL, "Created", "Secrets created"), 0);
    assert_true(p.events[0].counted);
    assert_non_null(st);
    assert_int_equal(plan_update_status_progress(&p, &KUBE_SECRETS, st, "progress"), 0);
    create_secret(&p, "three");
    assert_int_equal(plan_event_count(&p, 2, KUBE_EVENT_NORMAL, "Created", "Secrets created"),
                     -EINVAL);
    assert_int_equal(p.n_events, 1);
    assert_int_equal(plan_event_count(&p, 3, KUBE_EVENT_NORMAL, "Created", "Secrets created"), 0);
    assert_int_equal(p.n_events, 2);
    plan_done(&p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_plan__held_events_wait_for_every_action),
        cmocka_unit_test(test_plan__dropped_events_are_gone_and_the_rest_kept_in_order),
        cmocka_unit_test(test_plan__a_counted_event_refuses_a_progress_write_among_its_writes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
