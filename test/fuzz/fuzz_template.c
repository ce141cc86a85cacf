/* Fuzz target for the template language (lib/render/tmpl.h): the input is a template, run
 * against a fixed context (the one lib/render builds for a kube-apiserver of cluster c1 with
 * three etcd members, plus an `extra` object with one value of every JSON type). Parsing and
 * running must fail cleanly ("<file>:<line>: ..." messages, the documented codes) or give the
 * same documents on every run. hack/fuzz.sh builds it with libFuzzer; test/fuzz/CMakeLists.txt
 * replays the corpus. */

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/render/tmpl.h"
#include "test/fuzz/fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char context_json[] =
    "{\"cluster\":{\"name\":\"c1\",\"namespace\":\"tenants\"},\"component\":\"kube-apiserver\",\""
    "componentShort\":\"apiserver\",\"version\":\"1.20.2\",\"packageLine\":\"1.20\",\"replicas\":"
    "2,\"image\":\"registry.k8s.io/kube-apiserver:v1.20.2\",\"imageRegistry\":\"\",\"inputsHash\""
    ":\"\",\"name\":\"c1-apiserver\",\"names\":{\"etcd\":\"c1-etcd\",\"apiserver\":\"c1-apiserver"
    "\",\"controllerManager\":\"c1-controller-manager\"},\"network\":{\"serviceCIDRs\":[\"10.96.0"
    ".0/12\",\"fd00:10:96::/108\"],\"podCIDRs\":[\"10.244.0.0/16\"],\"serviceDomain\":\"cluster.l"
    "ocal\"},\"selectorLabels\":{\"cluster.x-k8s.io/cluster-name\":\"c1\",\"app.kubernetes.io/com"
    "ponent\":\"apiserver\"},\"labels\":{\"cluster.x-k8s.io/cluster-name\":\"c1\",\"app.kubernete"
    "s.io/component\":\"apiserver\",\"app.kubernetes.io/name\":\"kube-apiserver\",\"app.kubernete"
    "s.io/managed-by\":\"nestcp\"},\"etcd\":{\"members\":[{\"name\":\"c1-etcd-0\",\"host\":\"c1-e"
    "tcd-0.c1-etcd.tenants.svc\",\"peerURL\":\"https://c1-etcd-0.c1-etcd.tenants.svc:2380\",\"cli"
    "entURL\":\"https://c1-etcd-0.c1-etcd.tenants.svc:2379\"},{\"name\":\"c1-etcd-1\",\"host\":\""
    "c1-etcd-1.c1-etcd.tenants.svc\",\"peerURL\":\"https://c1-etcd-1.c1-etcd.tenants.svc:2380\","
    "\"clientURL\":\"https://c1-etcd-1.c1-etcd.tenants.svc:2379\"},{\"name\":\"c1-etcd-2\",\"host"
    "\":\"c1-etcd-2.c1-etcd.tenants.svc\",\"peerURL\":\"https://c1-etcd-2.c1-etcd.tenants.svc:238"
    "0\",\"clientURL\":\"https://c1-etcd-2.c1-etcd.tenants.svc:2379\"}],\"clientURLs\":[\"https:/"
    "/c1-etcd-0.c1-etcd.tenants.svc:2379\",\"https://c1-etcd-1.c1-etcd.tenants.svc:2379\",\"https"
    "://c1-etcd-2.c1-etcd.tenants.svc:2379\"],\"replicas\":3,\"initialCluster\":\"c1-etcd-0=https"
    "://c1-etcd-0.c1-etcd.tenants.svc:2380,c1-etcd-1=https://c1-etcd-1.c1-etcd.tenants.svc:2380,c"
    "1-etcd-2=https://c1-etcd-2.c1-etcd.tenants.svc:2380\",\"initialClusterToken\":\"tenants-c1-e"
    "tcd\",\"domain\":\"c1-etcd.tenants.svc\",\"listenLoopback\":true},\"secrets\":{\"certs\":\"c"
    "1-apiserver-certs\"},\"storage\":{\"type\":\"emptyDir\",\"size\":\"1Gi\",\"storageClassName"
    "\":\"\",\"sizeLimit\":\"\"},\"featureGates\":{\"IPv6DualStack\":true},\"resources\":{\"reque"
    "sts\":{\"cpu\":\"200m\"}},\"serviceAccountIssuer\":\"https://kubernetes.default.svc.cluster."
    "local\",\"apiserver\":{\"serviceType\":\"ClusterIP\"},\"extra\":{\"n\":3,\"f\":1.5,\"neg\":-"
    "2,\"t\":true,\"fl\":false,\"nil\":null,\"empty\":\"\",\"evil\":\"x\\n- y: z\",\"list\":[1,\""
    "a\",[2],{\"k\":\"v\"}],\"obj\":{\"b\":1,\"a\":\"2\"},\"emptyList\":[],\"emptyObj\":{}}}";

static void check(bool ok, const char *what, const char *detail)
{
    fuzz_check(ok, "fuzz_template", what, detail);
}

/* True when msg reads "fuzz.yaml:<line>: <what>", as tmpl.h promises for every error. */
static bool names_file_and_line(const char *msg)
{
    const char *p = msg + strlen("fuzz.yaml:");

    if (strncmp(msg, "fuzz.yaml:", strlen("fuzz.yaml:")) != 0 || *p < '0' || *p > '9')
        return false;
    while (*p >= '0' && *p <= '9')
        p++;
    return p[0] == ':' && p[1] == ' ' && p[2] != '\0';
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static cJSON *context;
    cJSON *docs = NULL, *again = NULL;
    struct tmpl *t = NULL;
    struct err e;
    int r;

    if (!context && !(context = cJSON_Parse(context_json)))
        abort();
    err_clear(&e);
    r = tmpl_parse("fuzz.yaml", (const char *)data, size, &t, &e);
    if (r < 0) {
        check(r == -EINVAL || r == -ENOMEM, "unexpected code from tmpl_parse", e.msg);
        check(r == -ENOMEM || names_file_and_line(e.msg), "message without file and line", e.msg);
        return 0;
    }
    err_clear(&e);
    r = tmpl_execute(t, context, &docs, &e);
    if (r < 0) {
        check(r == -EINVAL || r == -ENOBUFS || r == -ENOMEM, "unexpected code from tmpl_execute",
              e.msg);
        check(r == -ENOMEM || names_file_and_line(e.msg), "message without file and line", e.msg);
        check(docs == NULL, "a failed run returned documents", NULL);
    } else {
        check(cJSON_IsArray(docs), "documents are not an array", NULL);
        r = tmpl_execute(t, context, &again, &e);
        check(r == 0 && fuzz_json_same(docs, again), "a second run gave other documents", e.msg);
    }
    cJSON_Delete(again);
    cJSON_Delete(docs);
    tmpl_free(t);
    return 0;
}
