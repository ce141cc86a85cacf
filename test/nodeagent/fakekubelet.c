/*
 * nestcp-fake-kubelet: only the kubelet's last word. It watches the Pods of one namespace (and
 * label selector) and writes every Pod that is not Ready, not being deleted and not held back
 * by a scheduling gate as Running and Ready through its status subresource; it runs nothing. The
 * controllers' integration tests and test/bench/bench_clusters.sh use it on a super cluster without
 * nodes, where the StatefulSet controller then counts those Pods ready.
 *
 * Writes are PUTs at the cached resourceVersion, at most --concurrency in flight; a conflict is
 * retried from the cache once the watch has brought the newer Pod.
 */

#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>

#include <ev.h>

#include "lib/kube/config.h"
#include "lib/kube/informer.h"
#include "lib/kube/status.h"
#include "lib/kube/workqueue.h"
#include "lib/util/log.h"
#include "lib/util/strutil.h"

#define FK_FIELD_MANAGER "nestcp-fake-kubelet"

struct fake_kubelet {
    struct kube_client *client;
    struct kube_informer *pods;
    struct workqueue *queue;
    const char *ns;
    const char *pod_ip;
    unsigned long written, conflicts, failures;
    bool closing; /* being freed: request callbacks only clean up */
    ev_signal sigterm, sigint;
};

/* One status write in flight; the key is the Pod's name. */
struct fk_call {
    struct fake_kubelet *fk;
    char name[];
};

static const cJSON *get_path(const cJSON *obj, const char *a, const char *b)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, a);

    return b ? cJSON_GetObjectItemCaseSensitive(v, b) : v;
}

/* True for a Pod this program should write: not being deleted, not held back by a scheduling
 * gate (a kubelet never sees such a Pod) and not Ready yet. */
static bool needs_status(const cJSON *pod)
{
    const cJSON *c;

    if (get_path(pod, "metadata", "deletionTimestamp") ||
        cJSON_GetArraySize(get_path(pod, "spec", "schedulingGates")) > 0)
        return false;
    cJSON_ArrayForEach(c, get_path(pod, "status", "conditions")) {
        const cJSON *type = cJSON_GetObjectItemCaseSensitive(c, "type");
        const cJSON *status = cJSON_GetObjectItemCaseSensitive(c, "status");

        if (cJSON_IsString(type) && strcmp(type->valuestring, "Ready") == 0 &&
            cJSON_IsString(status) && strcmp(status->valuestring, "True") == 0)
            return false;
    }
    return true;
}

static bool set_item(cJSON *obj, const char *key, cJSON *item)
{
    if (!item)
        return false;
    cJSON_DeleteItemFromObjectCaseSensitive(obj, key);
    if (!cJSON_AddItemToObject(obj, key, item)) {
        cJSON_Delete(item);
        return false;
    }
    return true;
}

/* Makes pod's status Running and Ready, every container running and ready, keeping its other
 * status fields. Returns 0 or -ENOMEM. */
static int set_ready_status(cJSON *pod, const char *pod_ip)
{
    static const char *const types[] = {"Initialized", "Ready", "ContainersReady", "PodScheduled"};
    cJSON *st = cJSON_GetObjectItemCaseSensitive(pod, "status"), *conds, *cstats, *c, *s;
    const cJSON *spec_c;
    char now[32];
    size_t i;

    time_format_rfc3339(time_wall(), now);
    if (!cJSON_IsObject(st) && !set_item(pod, "status", st = cJSON_CreateObject()))
        return -ENOMEM;
    if (!set_item(st, "phase", cJSON_CreateString("Running")) ||
        !set_item(st, "podIP", cJSON_CreateString(pod_ip)) ||
        !set_item(st, "conditions", conds = cJSON_CreateArray()) ||
        !set_item(st, "containerStatuses", cstats = cJSON_CreateArray()))
        return -ENOMEM;
    for (i = 0; i < sizeof(types) / sizeof(types[0]); i++) {
        if (!cJSON_AddItemToArray(conds, c = cJSON_CreateObject()) ||
            !cJSON_AddStringToObject(c, "type", types[i]) ||
            !cJSON_AddStringToObject(c, "status", "True") ||
            !cJSON_AddStringToObject(c, "lastTransitionTime", now))
            return -ENOMEM;
    }
    cJSON_ArrayForEach(spec_c, get_path(pod, "spec", "containers")) {
        const cJSON *name = cJSON_GetObjectItemCaseSensitive(spec_c, "name");
        const cJSON *image = cJSON_GetObjectItemCaseSensitive(spec_c, "image");

        if (!cJSON_AddItemToArray(cstats, c = cJSON_CreateObject()) ||
            !cJSON_AddStringToObject(c, "name", cJSON_IsString(name) ? name->valuestring : "") ||
            !cJSON_AddTrueToObject(c, "ready") || !cJSON_AddTrueToObject(c, "started") ||
            !cJSON_AddNumberToObject(c, "restartCount", 0) ||
            !cJSON_AddStringToObject(c, "image", cJSON_IsString(image) ? image->valuestring : "") ||
            !cJSON_AddStringToObject(c, "imageID", "") ||
            !(s = cJSON_AddObjectToObject(c, "state")) ||
            !(s = cJSON_AddObjectToObject(s, "running")) ||
            !cJSON_AddStringToObject(s, "startedAt", now))
            return -ENOMEM;
    }
    return 0;
}

static void write_done(void *userdata, const struct kube_result *res)
{
    struct fk_call *call = userdata;
    struct fake_kubelet *fk = call->fk;
    struct workqueue_result result = WORKQUEUE_RESULT_SUCCESS;

    if (fk->closing)
        goto out;
    switch (res->code) {
    case 0:
        fk->written++;
        log_debug("pod ready", "pod=%s/%s", fk->ns, call->name);
        break;
    case -ENOENT:
        break; /* gone meanwhile */
    case -EBUSY:
        /* The cache is behind; the watch brings the newer Pod and the retry reads it. */
        fk->conflicts++;
        log_debug("status conflict", "pod=%s/%s", fk->ns, call->name);
        result = WORKQUEUE_RESULT_ERROR;
        break;
    default:
        fk->failures++;
        log_warn("status write failed", "pod=%s/%s code=%s message=%s", fk->ns, call->name,
                 kube_code_name(res->code), res->message);
        result = WORKQUEUE_RESULT_ERROR;
        break;
    }
    workqueue_done(fk->queue, call->name, result);
out:
    free(call);
}

static void sync_pod(void *userdata, const char *name)
{
    struct fake_kubelet *fk = userdata;
    const cJSON *pod = kube_informer_get(fk->pods, fk->ns, name);
    struct kube_request req = {0};
    struct fk_call *call = NULL;
    cJSON *body = NULL;
    size_t len = strlen(name) + 1;
    int r = -ENOMEM;

    if (!pod || !needs_status(pod)) {
        workqueue_done(fk->queue, name, WORKQUEUE_RESULT_SUCCESS);
        return;
    }
    body = cJSON_Duplicate(pod, true);
    call = malloc(sizeof(*call) + len);
    if (body && call && set_ready_status(body, fk->pod_ip) == 0) {
        call->fk = fk;
        memcpy(call->name, name, len);
        req.verb = KUBE_UPDATE;
        req.resource = &KUBE_PODS;
        req.namespace_ = fk->ns;
        req.name = name;
        req.subresource = "status";
        req.body = body;
        req.field_manager = FK_FIELD_MANAGER;
        r = kube_request_send(fk->client, &req, write_done, call);
    }
    cJSON_Delete(body);
    if (r < 0) {
        free(call);
        fk->failures++;
        log_warn("cannot send status", "pod=%s/%s code=%s", fk->ns, name, kube_code_name(r));
        workqueue_done(fk->queue, name, WORKQUEUE_RESULT_ERROR);
    }
}

static void queue_pod(struct fake_kubelet *fk, const cJSON *pod)
{
    const char *name = kube_obj_name(pod);

    if (name && needs_status(pod) && workqueue_add(fk->queue, name) < 0)
        log_warn("cannot queue pod", "pod=%s/%s", fk->ns, name);
}

static void pod_added(void *userdata, const cJSON *obj)
{
    queue_pod(userdata, obj);
}

static void pod_updated(void *userdata, const cJSON *old_obj, const cJSON *new_obj)
{
    queue_pod(userdata, new_obj);
}

static void pods_synced(void *userdata)
{
    struct fake_kubelet *fk = userdata;

    log_info("pods listed", "namespace=%s pods=%zu", fk->ns, kube_informer_count(fk->pods));
}

static void on_signal(struct ev_loop *loop, ev_signal *w, int revents)
{
    log_info("stopping", "signal=%d", w->signum);
    ev_break(loop, EVBREAK_ALL);
}

static void usage(FILE *out)
{
    fputs("usage: nestcp-fake-kubelet [flags]\n"
          "  --kubeconfig PATH      super cluster kubeconfig ($KUBECONFIG, ~/.kube/config)\n"
          "  --namespace NS         the Pods to mark ready (the kubeconfig context's namespace)\n"
          "  --selector SELECTOR    only Pods matching this label selector\n"
          "  --concurrency N        status writes in flight at once (16)\n"
          "  --pod-ip IP            the IP every Pod gets (127.0.0.2); nestcp-fake-etcd serves\n"
          "                         the etcd Pods' calls there\n"
          "  --log-level LEVEL      error|warn|info|debug|trace (info)\n",
          out);
}

int main(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"kubeconfig", required_argument, NULL, 'k'},
        {"namespace", required_argument, NULL, 'n'},
        {"selector", required_argument, NULL, 'l'},
        {"concurrency", required_argument, NULL, 'c'},
        {"pod-ip", required_argument, NULL, 'p'},
        {"log-level", required_argument, NULL, 'v'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    /* Conflicts retry quickly and without an overall rate bound: a test waits on them. */
    struct workqueue_opts qo = {.concurrency = 16, .base_delay = 0.05, .max_delay = 5, .qps = -1};
    static const struct kube_informer_handlers handlers = {
        .on_add = pod_added, .on_update = pod_updated, .on_synced = pods_synced};
    struct kube_informer_opts io = {.resource = &KUBE_PODS};
    struct ev_loop *loop = EV_DEFAULT;
    struct fake_kubelet fk = {.pod_ip = "127.0.0.2"};
    struct in_addr addr;
    enum log_level level = LOG_LEVEL_INFO;
    const char *kubeconfig = NULL;
    struct kube_config *cfg = NULL;
    struct err e = {0};
    int c, r, idx = 0, rc = 1;

    while ((c = getopt_long(argc, argv, "h", longopts, &idx)) != -1) {
        switch (c) {
        case 'k':
            kubeconfig = optarg;
            break;
        case 'n':
            fk.ns = optarg;
            break;
        case 'l':
            io.label_selector = optarg;
            break;
        case 'c':
            if (str_to_int(optarg, 1, 1024, &qo.concurrency) < 0)
                goto bad_value;
            break;
        case 'p':
            if (inet_pton(AF_INET, optarg, &addr) != 1)
                goto bad_value;
            fk.pod_ip = optarg;
            break;
        case 'v':
            if (log_parse_level(optarg, &level) < 0)
                goto bad_value;
            break;
        case 'h':
            usage(stdout);
            return 0;
        default:
            usage(stderr);
            return 2;
        }
        continue;
    bad_value:
        fprintf(stderr, "nestcp-fake-kubelet: bad value '%s' for --%s\n", optarg,
                longopts[idx].name);
        return 2;
    }
    if (optind < argc) {
        usage(stderr);
        return 2;
    }
    log_setup(level, LOG_FORMAT_TEXT, NULL);
    signal(SIGPIPE, SIG_IGN);
    /* A test script killed by its runner takes this process with it. */
    prctl(PR_SET_PDEATHSIG, SIGTERM);

    r = kube_config_load(kubeconfig, &cfg, &e);
    if (r < 0) {
        log_error("cannot load kubeconfig", "error=%s", e.msg[0] ? e.msg : err_code_name(r));
        goto out;
    }
    r = kube_client_new(loop, cfg, &fk.client, &e);
    if (r < 0) {
        log_error("cannot create client", "error=%s", e.msg[0] ? e.msg : err_code_name(r));
        goto out;
    }
    if (!fk.ns)
        fk.ns = kube_client_namespace(fk.client);
    io.namespace_ = fk.ns;
    r = workqueue_new(loop, &qo, sync_pod, &fk, &fk.queue);
    if (r == 0)
        r = kube_informer_new(fk.client, &io, &handlers, &fk, &fk.pods);
    if (r == 0)
        r = kube_informer_start(fk.pods);
    if (r < 0) {
        log_error("cannot start", "error=%s", err_code_name(r));
        goto out;
    }
    log_info("fake kubelet started", "namespace=%s server=%s concurrency=%d", fk.ns, cfg->server,
             qo.concurrency);
    ev_signal_init(&fk.sigterm, on_signal, SIGTERM);
    ev_signal_init(&fk.sigint, on_signal, SIGINT);
    ev_signal_start(loop, &fk.sigterm);
    ev_signal_start(loop, &fk.sigint);
    ev_run(loop, 0);
    ev_signal_stop(loop, &fk.sigterm);
    ev_signal_stop(loop, &fk.sigint);
    rc = 0;
out:
    fk.closing = true;
    workqueue_free(fk.queue);
    kube_informer_free(fk.pods);
    kube_client_free(fk.client); /* cancelled writes run write_done, which only frees */
    kube_config_free(cfg);
    log_info("fake kubelet stopped", "written=%lu conflicts=%lu failures=%lu exit=%d", fk.written,
             fk.conflicts, fk.failures, rc);
    return rc;
}
