#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "controllers/caches.h"
#include "controllers/status.h"

/* A NestedControlPlane whose Ready condition has this status, reason and message. */
static cJSON *status_of(const char *ready, const char *reason, const char *message)
{
    char text[512];

    snprintf(text, sizeof(text),
             "{\"observedGeneration\":2,\"conditions\":[{\"type\":\"Ready\",\"status\":\"%s\","
             "\"reason\":\"%s\",\"message\":\"%s\",\"lastTransitionTime\":"
             "\"2027-01-15T08:10:00Z\"}]}",
             ready, reason, message);
    return cJSON_Parse(text);
}

static cJSON *control_plane(const char *ready, const char *reason, const char *message)
{
    cJSON *o = cJSON_Parse("{\"apiVersion\":\"controlplane.cluster.x-k8s.io/v1beta1\","
                           "\"kind\":\"NestedControlPlane\",\"metadata\":{\"namespace\":\"t\","
                           "\"name\":\"c\",\"resourceVersion\":\"7\"}}");

    cJSON_AddItemToObject(o, "status", status_of(ready, reason, message));
    return o;
}

/* Plans the write of new over the cached obj and says what was planned: 0 nothing, 1 a status
 * write, 2 a write of progress only. */
static int planned(const cJSON *obj, cJSON *new_status)
{
    struct plan p;
    int r, kind;

    plan_init(&p);
    r = status_plan_write(&p, &NESTCP_CONTROL_PLANES, obj, new_status,
                          cJSON_GetObjectItemCaseSensitive(obj, "status"));
    assert_true(r >= 0);
    assert_int_equal((size_t)r, p.n_actions);
    kind = r == 0 ? 0 : p.actions[0].progress ? 2 : 1;
    if (r)
        assert_string_equal(p.actions[0].subresource, "status");
    plan_done(&p);
    return kind;
}

/* Only messages changed: progress, which the runtime coalesces. */
static void test_status__a_changed_message_alone_is_progress(void **state)
{
    cJSON *obj = control_plane("False", "Provisioning", "etcd 0/3 updated");

    (void)state;
    assert_int_equal(planned(obj, status_of("False", "Provisioning", "etcd 1/3 updated")), 2);
    cJSON_Delete(obj);
}

/* A condition's reason or status changed, or any other field: a transition, written at once. */
static void test_status__a_transition_is_written_at_once(void **state)
{
    cJSON *obj = control_plane("False", "Provisioning", "etcd 3/3 updated");
    cJSON *more = status_of("False", "Provisioning", "etcd 3/3 updated");

    (void)state;
    assert_int_equal(planned(obj, status_of("False", "RollingOut", "etcd 3/3 updated")), 1);
    assert_int_equal(planned(obj, status_of("True", "Provisioning", "etcd 3/3 updated")), 1);
    assert_int_equal(planned(obj, status_of("False", "WriteRejected", "apply was rejected")), 1);
    cJSON_AddNumberToObject(more, "readyReplicas", 1);
    assert_int_equal(planned(obj, more), 1);
    cJSON_Delete(obj);
}

/* The same status again: nothing; no cached status yet: a write. */
static void test_status__an_equal_status_is_not_written(void **state)
{
    cJSON *obj = control_plane("False", "Provisioning", "etcd 3/3 updated");

    (void)state;
    assert_int_equal(planned(obj, status_of("False", "Provisioning", "etcd 3/3 updated")), 0);
    cJSON_DeleteItemFromObjectCaseSensitive(obj, "status");
    assert_int_equal(planned(obj, status_of("False", "Provisioning", "etcd 3/3 updated")), 1);
    cJSON_Delete(obj);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_status__a_changed_message_alone_is_progress),
        cmocka_unit_test(test_status__a_transition_is_written_at_once),
        cmocka_unit_test(test_status__an_equal_status_is_not_written),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
