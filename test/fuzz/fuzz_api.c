/* Fuzz target for the API layer (api/): the input is a YAML stream; every document is parsed
 * by each api_*_from_json parser, once as it is and once with apiVersion and kind set to the
 * parser's own kind (so any body reaches every parser), then defaulted and validated (no
 * catalog), and the status of what parsed is written out, read back and written again, which
 * must give the same status. Errors must come as lines. hack/fuzz.sh builds it with libFuzzer;
 * test/fuzz/CMakeLists.txt replays the corpus. */

#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "api/defaults.h"
#include "api/status.h"
#include "api/types.h"
#include "api/validate.h"
#include "lib/util/yamlconv.h"
#include "test/fuzz/fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const struct {
    enum api_kind kind;
    const char *api_version;
    const char *name;
} kinds[] = {
    {API_KIND_NESTED_CONTROL_PLANE, "controlplane.cluster.x-k8s.io/v1beta1", "NestedControlPlane"},
    {API_KIND_NESTED_ETCD, "controlplane.cluster.x-k8s.io/v1alpha4", "NestedEtcd"},
    {API_KIND_NESTED_APISERVER, "controlplane.cluster.x-k8s.io/v1beta1", "NestedAPIServer"},
    {API_KIND_NESTED_CONTROLLER_MANAGER, "controlplane.cluster.x-k8s.io/v1beta1",
     "NestedControllerManager"},
    {API_KIND_NESTED_CLUSTER, "infrastructure.cluster.x-k8s.io/v1beta1", "NestedCluster"},
    {API_KIND_CLUSTER, "cluster.x-k8s.io/v1beta1", "Cluster"},
};

static void check_errors(int r, struct api_errors *errs, const char *what)
{
    fuzz_check(r == 0 || r == -EINVAL || r == -ENOMEM, "fuzz_api", what, "undocumented code");
    fuzz_check(r != -EINVAL || api_errors_count(errs) > 0, "fuzz_api", what,
               "-EINVAL without an error line");
    fuzz_check(errs->n <= API_ERRORS_MAX, "fuzz_api", what, "more lines than API_ERRORS_MAX");
    for (size_t i = 0; i < errs->n; i++)
        fuzz_check(errs->lines[i] && !strchr(errs->lines[i], '\n') && errs->lines[i][0] != '\0',
                   "fuzz_api", what, "an error line is empty or holds a newline");
    api_errors_done(errs);
    api_errors_init(errs);
}

/* obj with its status replaced by status (borrowed). */
static cJSON *with_status(const cJSON *obj, const cJSON *status)
{
    cJSON *copy = cJSON_Duplicate(obj, 1), *st = cJSON_Duplicate(status, 1);

    if (!copy || !st) {
        cJSON_Delete(copy);
        cJSON_Delete(st);
        return NULL;
    }
    cJSON_DeleteItemFromObjectCaseSensitive(copy, "status");
    cJSON_AddItemToObject(copy, "status", st);
    return copy;
}

/* Status written from a parse must read back to the same status. */
static void status_round_trip(const cJSON *obj, enum api_kind kind, const cJSON *st1)
{
    struct api_errors errs = API_ERRORS_INIT;
    cJSON *again = with_status(obj, st1), *st2 = NULL;
    int r = -ENOMEM;

    if (!st1 || !again)
        goto out;
    if (kind == API_KIND_NESTED_CONTROL_PLANE) {
        struct api_control_plane *ncp = NULL;
        r = api_control_plane_from_json(again, &ncp, &errs);
        if (r == 0)
            st2 = api_control_plane_status_to_json(&ncp->status);
        api_control_plane_free(ncp);
    } else if (kind == API_KIND_NESTED_CLUSTER) {
        struct api_nested_cluster *nc = NULL;
        r = api_nested_cluster_from_json(again, &nc, &errs);
        if (r == 0)
            st2 = api_nested_cluster_status_to_json(&nc->status);
        api_nested_cluster_free(nc);
    } else {
        struct api_component *c = NULL;
        r = api_component_from_json(again, &c, &errs);
        if (r == 0)
            st2 = api_component_status_to_json(c->kind, &c->status);
        api_component_free(c);
    }
    if (r == -EINVAL) {
        char *text = cJSON_PrintUnformatted(st1);
        fuzz_check(false, "fuzz_api", "a written status does not parse back",
                   errs.n ? errs.lines[0] : text);
        free(text);
    }
    if (r == 0 && st2 && !api_status_equal(st1, st2)) {
        char *a = cJSON_PrintUnformatted(st1), *b = cJSON_PrintUnformatted(st2);
        fprintf(stderr, "first  %s\nsecond %s\n", a ? a : "?", b ? b : "?");
        fuzz_check(false, "fuzz_api", "a status reads back differently", NULL);
    }
out:
    api_errors_done(&errs);
    cJSON_Delete(st2);
    cJSON_Delete(again);
}

static void parse_as(const cJSON *obj, enum api_kind kind, const struct api_capi_cluster *cl,
                     struct api_control_plane **io_ncp)
{
    struct api_errors errs = API_ERRORS_INIT;
    cJSON *st = NULL;
    int r;

    if (kind == API_KIND_NESTED_CONTROL_PLANE) {
        struct api_control_plane *ncp = NULL;
        r = api_control_plane_from_json(obj, &ncp, &errs);
        check_errors(r, &errs, "api_control_plane_from_json");
        if (r < 0)
            return;
        r = api_control_plane_default(ncp, cl, NULL);
        fuzz_check(r == 0 || r == -ENOMEM, "fuzz_api", "api_control_plane_default", "code");
        r = api_control_plane_validate(ncp, NULL, &errs);
        check_errors(r, &errs, "api_control_plane_validate");
        st = api_control_plane_status_to_json(&ncp->status);
        status_round_trip(obj, kind, st);
        if (!*io_ncp)
            *io_ncp = ncp;
        else
            api_control_plane_free(ncp);
    } else if (kind == API_KIND_NESTED_CLUSTER) {
        struct api_nested_cluster *nc = NULL;
        r = api_nested_cluster_from_json(obj, &nc, &errs);
        check_errors(r, &errs, "api_nested_cluster_from_json");
        if (r < 0)
            return;
        r = api_nested_cluster_default(nc, cl);
        fuzz_check(r == 0 || r == -ENOMEM, "fuzz_api", "api_nested_cluster_default", "code");
        r = api_nested_cluster_validate(nc, &errs);
        check_errors(r, &errs, "api_nested_cluster_validate");
        st = api_nested_cluster_status_to_json(&nc->status);
        status_round_trip(obj, kind, st);
        api_nested_cluster_free(nc);
    } else if (kind == API_KIND_CLUSTER) {
        struct api_capi_cluster *c = NULL;
        r = api_capi_cluster_from_json(obj, &c, &errs);
        check_errors(r, &errs, "api_capi_cluster_from_json");
        api_capi_cluster_free(c);
    } else {
        struct api_component *c = NULL;
        struct api_gates gates = {0};
        r = api_component_from_json(obj, &c, &errs);
        check_errors(r, &errs, "api_component_from_json");
        if (r < 0)
            return;
        r = api_component_default(c, *io_ncp, NULL);
        fuzz_check(r == 0 || r == -ENOMEM, "fuzz_api", "api_component_default", "code");
        r = api_component_validate(c, *io_ncp, NULL, &errs);
        check_errors(r, &errs, "api_component_validate");
        if (api_component_effective_gates(c, *io_ncp, &gates) == 0)
            api_gates_done(&gates);
        st = api_component_status_to_json(c->kind, &c->status);
        status_round_trip(obj, c->kind, st);
        api_component_free(c);
    }
    cJSON_Delete(st);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct api_control_plane *ncp = NULL;
    struct api_capi_cluster *cl = NULL;
    struct api_errors errs = API_ERRORS_INIT;
    cJSON *docs = NULL;
    const cJSON *doc;

    if (yamlconv_parse_all((const char *)data, size, "fuzz", &docs, NULL) < 0)
        return 0;
    /* A Cluster anywhere in the stream is the owner the others default from. */
    cJSON_ArrayForEach(doc, docs) {
        if (!cl && api_capi_cluster_from_json(doc, &cl, &errs) < 0)
            cl = NULL;
        api_errors_done(&errs);
        api_errors_init(&errs);
    }
    cJSON_ArrayForEach(doc, docs) {
        for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
            cJSON *forced;

            parse_as(doc, kinds[i].kind, cl, &ncp);
            if (!cJSON_IsObject(doc) || !(forced = cJSON_Duplicate(doc, 1)))
                continue;
            cJSON_DeleteItemFromObjectCaseSensitive(forced, "apiVersion");
            cJSON_DeleteItemFromObjectCaseSensitive(forced, "kind");
            if (cJSON_AddStringToObject(forced, "apiVersion", kinds[i].api_version) &&
                cJSON_AddStringToObject(forced, "kind", kinds[i].name))
                parse_as(forced, kinds[i].kind, cl, &ncp);
            cJSON_Delete(forced);
        }
    }
    api_control_plane_free(ncp);
    api_capi_cluster_free(cl);
    cJSON_Delete(docs);
    return 0;
}
