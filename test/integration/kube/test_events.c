#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <ev.h>

#include "lib/kube/client.h"
#include "lib/kube/config.h"
#include "lib/kube/events.h"
#include "lib/util/buf.h"
#include "lib/util/strutil.h"

/* Events recorded about a ConfigMap in the real super cluster, read back through the API the way
 * kubectl describe finds them, and through kubectl describe itself. */

#define NS "default"

struct env {
    struct ev_loop *loop;
    struct kube_config *cfg;
    struct kube_client *client;
    struct kube_recorder *rec;
};

static int setup(void **state)
{
    struct env *env = calloc(1, sizeof(*env));
    struct kube_recorder_opts opts = {.component = "nestcp-test", .instance = "test-host"};
    struct err e = {0};

    assert_non_null(env);
    env->loop = ev_loop_new(EVFLAG_AUTO);
    assert_int_equal(kube_config_load(NULL, &env->cfg, &e), 0);
    assert_int_equal(kube_client_new(env->loop, env->cfg, &env->client, &e), 0);
    assert_int_equal(kube_recorder_new(env->loop, env->client, &opts, &env->rec, &e), 0);
    *state = env;
    return 0;
}

static int teardown(void **state)
{
    struct env *env = *state;

    kube_recorder_free(env->rec);
    kube_client_free(env->client);
    kube_config_free(env->cfg);
    ev_loop_destroy(env->loop);
    free(env);
    return 0;
}

static void on_flushed(void *userdata)
{
    struct env *env = userdata;

    ev_break(env->loop, EVBREAK_ALL);
}

/* Runs the loop until every request of the recorder has completed. */
static void flush(struct env *env)
{
    kube_recorder_flush(env->rec, on_flushed, env);
    ev_run(env->loop, 0);
    assert_int_equal(kube_recorder_stats(env->rec)->in_flight, 0);
}

static cJSON *create_configmap(struct env *env, const char *name)
{
    cJSON *cm = cJSON_Parse("{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{},"
                            "\"data\":{\"k\":\"v\"}}");
    cJSON *created = NULL;
    struct kube_request req = {
        .verb = KUBE_CREATE, .resource = &KUBE_CONFIGMAPS, .namespace_ = NS, .body = cm};
    struct err e = {0};

    cJSON_AddStringToObject(cJSON_GetObjectItem(cm, "metadata"), "name", name);
    assert_int_equal(kube_request_sync(env->client, &req, &created, &e), 0);
    cJSON_Delete(cm);
    return created;
}

static cJSON *list_events_of(struct env *env, const char *name)
{
    char selector[256];
    cJSON *list = NULL;
    struct kube_request req = {
        .verb = KUBE_LIST, .resource = &KUBE_EVENTS, .namespace_ = NS, .field_selector = selector};
    struct err e = {0};

    snprintf(selector, sizeof(selector),
             "involvedObject.name=%s,involvedObject.namespace=%s,involvedObject.kind=ConfigMap",
             name, NS);
    assert_int_equal(kube_request_sync(env->client, &req, &list, &e), 0);
    return list;
}

static const cJSON *find_by_reason(const cJSON *list, const char *reason)
{
    const cJSON *item;

    cJSON_ArrayForEach(item, cJSON_GetObjectItem(list, "items")) {
        const cJSON *r = cJSON_GetObjectItem(item, "reason");

        if (cJSON_IsString(r) && strcmp(r->valuestring, reason) == 0)
            return item;
    }
    return NULL;
}

static double count_of(const cJSON *ev)
{
    const cJSON *c = cJSON_GetObjectItem(ev, "count");

    return cJSON_IsNumber(c) ? c->valuedouble : -1;
}

static void delete_object(struct env *env, const struct kube_resource *res, const char *name)
{
    struct kube_request req = {
        .verb = KUBE_DELETE, .resource = res, .namespace_ = NS, .name = name};
    struct err e = {0};

    kube_request_sync(env->client, &req, NULL, &e);
}

/* kubectl describe's output for the ConfigMap (caller frees). */
static char *kubectl_describe(const char *name)
{
    char cmd[512];
    struct buf out = BUF_INIT;
    char chunk[4096];
    size_t n;
    FILE *p;

    snprintf(cmd, sizeof(cmd), "kubectl --request-timeout=20s -n %s describe configmap %s", NS,
             name);
    p = popen(cmd, "r");
    assert_non_null(p);
    buf_init(&out, 1 << 20);
    while ((n = fread(chunk, 1, sizeof(chunk), p)) > 0)
        assert_int_equal(buf_append(&out, chunk, n), 0);
    assert_int_equal(pclose(p), 0);
    return buf_steal(&out);
}

static void test_events__repeats_aggregate_into_counted_events_kubectl_shows(void **state)
{
    struct env *env = *state;
    char name[64];
    cJSON *cm, *list;
    const cJSON *synced, *failed, *obj;
    struct kube_event_ref ref;
    char *describe;

    snprintf(name, sizeof(name), "events-test-%d", (int)getpid());
    cm = create_configmap(env, name);
    ref = kube_event_ref_of(&KUBE_CONFIGMAPS, cm);

    for (int i = 0; i < 3; i++)
        kube_recorder_event(env->rec, &ref, KUBE_EVENT_NORMAL, "Synced",
                            "configuration %s is in sync", name);
    kube_recorder_event(env->rec, &ref, KUBE_EVENT_WARNING, "RenderFailed",
                        "template %s: missing value", "etcd");
    flush(env);
    assert_int_equal(kube_recorder_stats(env->rec)->failed, 0);
    assert_int_equal(kube_recorder_stats(env->rec)->created, 2);

    list = list_events_of(env, name);
    assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(list, "items")), 2);
    synced = find_by_reason(list, "Synced");
    failed = find_by_reason(list, "RenderFailed");
    assert_non_null(synced);
    assert_non_null(failed);
    assert_true(count_of(synced) == 3);
    assert_true(count_of(failed) == 1);
    assert_string_equal(cJSON_GetObjectItem(synced, "type")->valuestring, "Normal");
    assert_string_equal(cJSON_GetObjectItem(failed, "type")->valuestring, "Warning");
    assert_string_equal(cJSON_GetObjectItem(failed, "message")->valuestring,
                        "template etcd: missing value");
    assert_true(str_has_prefix(kube_obj_name(synced), name));
    obj = cJSON_GetObjectItem(synced, "involvedObject");
    assert_string_equal(cJSON_GetObjectItem(obj, "uid")->valuestring, kube_obj_uid(cm));
    assert_string_equal(cJSON_GetObjectItem(obj, "kind")->valuestring, "ConfigMap");
    assert_string_equal(cJSON_GetObjectItem(obj, "apiVersion")->valuestring, "v1");
    assert_string_equal(
        cJSON_GetObjectItem(cJSON_GetObjectItem(synced, "source"), "component")->valuestring,
        "nestcp-test");
    assert_string_equal(cJSON_GetObjectItem(synced, "reportingComponent")->valuestring,
                        "nestcp-test");
    assert_string_equal(cJSON_GetObjectItem(synced, "reportingInstance")->valuestring, "test-host");
    assert_non_null(cJSON_GetObjectItem(synced, "firstTimestamp")->valuestring);
    assert_non_null(cJSON_GetObjectItem(synced, "lastTimestamp")->valuestring);
    cJSON_Delete(list);

    /* A later repeat (the Event now exists on the server) is a PATCH. */
    kube_recorder_event(env->rec, &ref, KUBE_EVENT_NORMAL, "Synced", "configuration %s is in sync",
                        name);
    flush(env);
    assert_true(kube_recorder_stats(env->rec)->patched >= 1);
    list = list_events_of(env, name);
    assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(list, "items")), 2);
    assert_true(count_of(find_by_reason(list, "Synced")) == 4);
    cJSON_Delete(list);

    describe = kubectl_describe(name);
    assert_non_null(strstr(describe, "Synced"));
    assert_non_null(strstr(describe, "x4 over"));
    assert_non_null(strstr(describe, "RenderFailed"));
    assert_non_null(strstr(describe, "template etcd: missing value"));
    free(describe);

    list = list_events_of(env, name);
    const cJSON *item;
    cJSON_ArrayForEach(item, cJSON_GetObjectItem(list, "items"))
        delete_object(env, &KUBE_EVENTS, kube_obj_name(item));
    cJSON_Delete(list);
    delete_object(env, &KUBE_CONFIGMAPS, name);
    cJSON_Delete(cm);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(
            test_events__repeats_aggregate_into_counted_events_kubectl_shows, setup, teardown),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
