#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "controllers/rollhealth.h"
#include "lib/kube/client.h"
#include "lib/kube/store.h"
#include "lib/util/strutil.h"

/* now: 2027-01-15T08:10:00Z */
#define NOW 1799914200.0

static cJSON *sts(const char *current, const char *update, int replicas, int partition)
{
    char text[512];

    snprintf(text, sizeof(text),
             "{\"metadata\":{\"namespace\":\"t\",\"name\":\"c-apiserver\"},"
             "\"spec\":{\"replicas\":%d,\"updateStrategy\":{\"type\":\"RollingUpdate\","
             "\"rollingUpdate\":{\"partition\":%d}}},"
             "\"status\":{\"currentRevision\":\"%s\",\"updateRevision\":\"%s\"}}",
             replicas, partition, current, update);
    return cJSON_Parse(text);
}

/* A pod of revision rev, created `age` seconds before NOW, Ready or not, whose container
 * restarted `restarts` times, its last run ending with exit code 1. */
static void put_pod(struct kube_store *s, int ordinal, const char *rev, double age, bool ready,
                    int restarts)
{
    char text[1024], created[32];
    cJSON *old = NULL;

    time_format_rfc3339(NOW - age, created);
    snprintf(text, sizeof(text),
             "{\"metadata\":{\"namespace\":\"t\",\"name\":\"c-apiserver-%d\",\"uid\":\"u%d\","
             "\"creationTimestamp\":\"%s\",\"labels\":{\"controller-revision-hash\":\"%s\"}},"
             "\"status\":{\"conditions\":[{\"type\":\"Ready\",\"status\":\"%s\"}],"
             "\"containerStatuses\":[{\"name\":\"kube-apiserver\",\"restartCount\":%d,"
             "\"lastState\":{\"terminated\":{\"exitCode\":1,\"reason\":\"Error\","
             "\"message\":\"Error: invalid argument\"}}}]}}",
             ordinal, ordinal, created, rev, ready ? "True" : "False", restarts);
    assert_int_equal(kube_store_put(s, cJSON_Parse(text), &old), 0);
    cJSON_Delete(old);
}

static void test_rollhealth__a_crashing_pod_of_the_new_revision_fails_the_roll(void **state)
{
    struct kube_store pods;
    cJSON *set = sts("r1", "r2", 3, 0);
    char msg[512];
    double recheck;

    kube_store_init(&pods);
    put_pod(&pods, 0, "r1", 600, true, 0);
    put_pod(&pods, 1, "r1", 600, true, 0);
    put_pod(&pods, 2, "r2", 20, false, 2);
    /* Two restarts: still starting, looked at again by the deadline. */
    assert_false(rollhealth_failed(set, &pods, NOW, msg, sizeof(msg), &recheck));
    assert_true(recheck > 279 && recheck <= 280);
    put_pod(&pods, 2, "r2", 25, false, 3);
    assert_true(rollhealth_failed(set, &pods, NOW, msg, sizeof(msg), &recheck));
    assert_string_equal(msg, "pod c-apiserver-2: container kube-apiserver restarted 3 times, last "
                             "exit code 1 (Error): Error: invalid argument");
    cJSON_Delete(set);
    kube_store_done(&pods);
}

static void test_rollhealth__a_pod_not_ready_past_the_deadline_fails_the_roll(void **state)
{
    struct kube_store pods;
    cJSON *set = sts("r1", "r2", 2, 0);
    char msg[512];
    double recheck;

    kube_store_init(&pods);
    put_pod(&pods, 0, "r1", 900, true, 0);
    put_pod(&pods, 1, "r2", ROLLHEALTH_READY_DEADLINE + 1, false, 0);
    assert_true(rollhealth_failed(set, &pods, NOW, msg, sizeof(msg), &recheck));
    assert_string_equal(msg, "pod c-apiserver-1: not Ready 301 s after it was created");
    cJSON_Delete(set);
    kube_store_done(&pods);
}

/* Ready pods of the new revision, crashing pods of the old one, and a StatefulSet that is
 * not rolling fail nothing. */
static void test_rollhealth__only_unready_pods_of_a_rolling_update_count(void **state)
{
    struct kube_store pods;
    cJSON *rolling = sts("r1", "r2", 2, 0), *steady = sts("r2", "r2", 2, 0);
    char msg[512];
    double recheck;

    kube_store_init(&pods);
    put_pod(&pods, 0, "r1", 900, false, 9);
    put_pod(&pods, 1, "r2", 900, true, 5);
    assert_false(rollhealth_failed(rolling, &pods, NOW, msg, sizeof(msg), &recheck));
    assert_true(recheck == 0);
    put_pod(&pods, 0, "r2", 900, false, 9);
    assert_false(rollhealth_failed(steady, &pods, NOW, msg, sizeof(msg), &recheck));
    cJSON_Delete(rolling);
    cJSON_Delete(steady);
    kube_store_done(&pods);
}

static bool collect(void *userdata, const cJSON *pod)
{
    char *names = userdata;

    strcat(names, kube_obj_name(pod));
    strcat(names, " ");
    return true;
}

static void test_rollhealth__the_pods_of_the_update_revision_and_the_partition(void **state)
{
    struct kube_store pods;
    cJSON *set = sts("r1", "r2", 3, 3);
    char names[128] = "";

    kube_store_init(&pods);
    put_pod(&pods, 0, "r1", 900, true, 0);
    put_pod(&pods, 1, "r2", 900, true, 0);
    put_pod(&pods, 2, "r2", 30, false, 4);
    rollhealth_foreach_updated(set, &pods, collect, names);
    assert_string_equal(names, "c-apiserver-1 c-apiserver-2 ");
    assert_int_equal(rollhealth_partition(set), 3);
    cJSON_Delete(set);
    set = cJSON_Parse("{\"spec\":{\"replicas\":1}}");
    assert_int_equal(rollhealth_partition(set), 0);
    cJSON_Delete(set);
    kube_store_done(&pods);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rollhealth__a_crashing_pod_of_the_new_revision_fails_the_roll),
        cmocka_unit_test(test_rollhealth__a_pod_not_ready_past_the_deadline_fails_the_roll),
        cmocka_unit_test(test_rollhealth__only_unready_pods_of_a_rolling_update_count),
        cmocka_unit_test(test_rollhealth__the_pods_of_the_update_revision_and_the_partition),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
