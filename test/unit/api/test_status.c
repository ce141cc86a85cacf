#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "api/conditions.h"
#include "api/status.h"

static char *print(const cJSON *j)
{
    char *s = cJSON_PrintUnformatted(j);

    assert_non_null(s);
    return s;
}

/* Wraps a status into an object of the kind and parses it back. */
static cJSON *wrap(const char *api_kind, const cJSON *status)
{
    cJSON *o = cJSON_CreateObject();

    cJSON_AddStringToObject(o, "apiVersion", "controlplane.cluster.x-k8s.io/v1beta1");
    cJSON_AddStringToObject(o, "kind", api_kind);
    cJSON_AddItemToObject(cJSON_AddObjectToObject(o, "metadata"), "name", cJSON_CreateString("x"));
    cJSON_AddItemToObject(o, "status", cJSON_Duplicate(status, true));
    return o;
}

static void test_status__control_plane_json_is_deterministic(void **state)
{
    struct api_control_plane_status st = {0};
    struct api_errors errs = API_ERRORS_INIT;
    struct api_control_plane *back = NULL;
    cJSON *j, *j2, *obj;
    char *s;

    st.ready = true;
    st.initialized = true;
    st.control_plane_initialized = true;
    st.external_managed = true;
    st.version = strdup("v1.20.2");
    st.replicas = 1;
    st.ready_replicas = 1;
    st.updated_replicas = 1;
    st.available_replicas = 1;
    st.up_to_date_replicas = 1;
    st.observed_generation = 4;
    st.phase = strdup("Ready");
    st.rollout.etcd.version = strdup("3.4.13");
    st.rollout.etcd.config_hash = strdup("abc");
    assert_int_equal(
        api_conditions_set(&st.conditions, "Available", "True", "AsExpected", NULL, 4, 1623232800),
        1);
    assert_int_equal(
        api_conditions_set(&st.conditions, "Ready", "True", "AsExpected", NULL, 4, 1623232800), 1);
    j = api_control_plane_status_to_json(&st);
    s = print(j);
    assert_string_equal(
        s, "{\"ready\":true,\"initialized\":true,"
           "\"initialization\":{\"controlPlaneInitialized\":true},"
           "\"externalManagedControlPlane\":true,\"version\":\"v1.20.2\",\"replicas\":1,"
           "\"readyReplicas\":1,\"updatedReplicas\":1,\"availableReplicas\":1,"
           "\"upToDateReplicas\":1,\"observedGeneration\":4,"
           "\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\",\"reason\":\"AsExpected\","
           "\"lastTransitionTime\":\"2021-06-09T10:00:00Z\",\"observedGeneration\":4},"
           "{\"type\":\"Available\",\"status\":\"True\",\"reason\":\"AsExpected\","
           "\"lastTransitionTime\":\"2021-06-09T10:00:00Z\",\"observedGeneration\":4}],"
           "\"phase\":\"Ready\","
           "\"rollout\":{\"components\":{\"etcd\":{\"version\":\"3.4.13\",\"configHash\":"
           "\"abc\"}}}}");
    free(s);

    /* What the cache gives back parses to the same struct, which prints the same JSON. */
    obj = wrap("NestedControlPlane", j);
    assert_int_equal(api_control_plane_from_json(obj, &back, &errs), 0);
    j2 = api_control_plane_status_to_json(&back->status);
    assert_true(api_status_equal(j, j2));
    s = print(j);
    char *s2 = print(j2);
    assert_string_equal(s, s2);
    free(s);
    free(s2);

    /* Setting a condition to what it already is changes nothing. */
    assert_int_equal(api_conditions_set(&back->status.conditions, "Ready", "True", "AsExpected",
                                        NULL, 4, 1999999999),
                     0);
    cJSON_Delete(j2);
    j2 = api_control_plane_status_to_json(&back->status);
    assert_true(api_status_equal(j, j2));
    back->status.ready_replicas = 0;
    cJSON_Delete(j2);
    j2 = api_control_plane_status_to_json(&back->status);
    assert_false(api_status_equal(j, j2));

    cJSON_Delete(j);
    cJSON_Delete(j2);
    cJSON_Delete(obj);
    api_control_plane_free(back);
    free(st.version);
    free(st.phase);
    api_rollout_done(&st.rollout);
    api_conditions_done(&st.conditions);
}

static void test_status__components_write_their_own_fields(void **state)
{
    struct api_component_status st = {0};
    struct api_etcd_address addr = {"10.0.0.1", "c1-etcd-0.c1-etcd", 2379};
    cJSON *j;
    char *s;

    st.phase = "Ready";
    st.healthy = true;
    st.version = "3.4.13";
    st.replicas = st.ready_replicas = st.updated_replicas = 3;
    st.addresses = &addr;
    st.n_addresses = 1;
    st.apiserver_service.name = "c1-apiserver";
    j = api_component_status_to_json(API_KIND_NESTED_ETCD, &st);
    s = print(j);
    assert_string_equal(s, "{\"phase\":\"Ready\",\"healthy\":true,\"observedGeneration\":0,"
                           "\"version\":\"3.4.13\",\"replicas\":3,\"readyReplicas\":3,"
                           "\"updatedReplicas\":3,\"addresses\":[{\"ip\":\"10.0.0.1\","
                           "\"hostname\":\"c1-etcd-0.c1-etcd\",\"port\":2379}]}");
    free(s);
    cJSON_Delete(j);
    j = api_component_status_to_json(API_KIND_NESTED_APISERVER, &st);
    s = print(j);
    assert_non_null(strstr(s, "\"apiserverService\":{\"name\":\"c1-apiserver\"}"));
    assert_null(strstr(s, "addresses"));
    free(s);
    cJSON_Delete(j);
}

static void test_status__nested_cluster(void **state)
{
    struct api_nested_cluster_status st = {true, true, 2, {NULL, 0}};
    cJSON *j = api_nested_cluster_status_to_json(&st);
    char *s = print(j);

    assert_string_equal(s, "{\"ready\":true,\"initialization\":{\"provisioned\":true},"
                           "\"observedGeneration\":2}");
    free(s);
    cJSON_Delete(j);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_status__control_plane_json_is_deterministic),
        cmocka_unit_test(test_status__components_write_their_own_fields),
        cmocka_unit_test(test_status__nested_cluster),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
