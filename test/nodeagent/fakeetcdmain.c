/*
 * nestcp-fake-etcd: answers nestcp's etcd calls for the etcd Pods of one namespace, with no
 * etcd process, for benchmarks that create more clusters than the machine can run etcd members
 * for (test/bench/bench_clusters.sh, BENCH_ETCD=fake). It watches the namespace's etcd Pods
 * (app.kubernetes.io/component=etcd) and Secrets, and serves on one address, which
 * nestcp-fake-kubelet --pod-ip gives those Pods. See fakeetcd.h and README.md.
 */

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
#include "lib/util/log.h"
#include "test/nodeagent/fakeetcd.h"

#define FE_SELECTOR "app.kubernetes.io/component=etcd"

/* Secrets keep only what a member serves with: the rest of their data never enters memory. */
static bool keep_certs(void *ctx, cJSON *obj)
{
    static const char *const keep[] = {"ca.crt", "server.crt", "server.key"};
    cJSON *data = cJSON_GetObjectItemCaseSensitive(obj, "data"), *it = data ? data->child : NULL;

    while (it) {
        cJSON *next = it->next;
        bool wanted = false;

        for (size_t i = 0; i < sizeof(keep) / sizeof(keep[0]); i++)
            wanted = wanted || (it->string && strcmp(it->string, keep[i]) == 0);
        if (!wanted)
            cJSON_Delete(cJSON_DetachItemViaPointer(data, it));
        it = next;
    }
    cJSON_DeleteItemFromObjectCaseSensitive(obj, "stringData");
    cJSON_DeleteItemFromObjectCaseSensitive(cJSON_GetObjectItemCaseSensitive(obj, "metadata"),
                                            "annotations");
    return true;
}

/* Every minute in which something happened, what the server has done so far. */
static void on_report(struct ev_loop *loop, ev_timer *w, int revents)
{
    static struct fake_etcd_stats last;
    struct fake_etcd_stats st;

    fake_etcd_get_stats(w->data, &st);
    if (memcmp(&st, &last, sizeof(st)) == 0)
        return;
    last = st;
    log_info("fake etcd", "handshakes=%lu refused=%lu requests=%lu changes=%lu", st.handshakes,
             st.refused, st.requests, st.changes);
}

static void on_signal(struct ev_loop *loop, ev_signal *w, int revents)
{
    log_info("stopping", "signal=%d", w->signum);
    ev_break(loop, EVBREAK_ALL);
}

static void usage(FILE *out)
{
    fputs("usage: nestcp-fake-etcd [flags]\n"
          "  --kubeconfig PATH      super cluster kubeconfig ($KUBECONFIG, ~/.kube/config)\n"
          "  --namespace NS         the etcd Pods to answer for (the kubeconfig context's)\n"
          "  --listen ADDR          where to serve, ip:port (127.0.0.2:2379), the Pods' IP\n"
          "  --log-level LEVEL      error|warn|info|debug|trace (info)\n",
          out);
}

int main(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"kubeconfig", required_argument, NULL, 'k'},
        {"namespace", required_argument, NULL, 'n'},
        {"listen", required_argument, NULL, 'a'},
        {"log-level", required_argument, NULL, 'v'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    struct kube_informer_opts po = {.resource = &KUBE_PODS, .label_selector = FE_SELECTOR};
    struct kube_informer_opts so = {.resource = &KUBE_SECRETS, .transform = keep_certs};
    struct kube_informer *pods = NULL, *secrets = NULL;
    struct ev_loop *loop = EV_DEFAULT;
    struct fake_etcd *fe = NULL;
    struct fake_etcd_stats st = {0};
    enum log_level level = LOG_LEVEL_INFO;
    const char *kubeconfig = NULL, *ns = NULL, *listen = "127.0.0.2:2379";
    struct kube_config *cfg = NULL;
    struct kube_client *client = NULL;
    ev_signal sigterm, sigint;
    ev_timer report;
    struct err e = {0};
    int c, r, idx = 0, rc = 1;

    while ((c = getopt_long(argc, argv, "h", longopts, &idx)) != -1) {
        switch (c) {
        case 'k':
            kubeconfig = optarg;
            break;
        case 'n':
            ns = optarg;
            break;
        case 'a':
            listen = optarg;
            break;
        case 'v':
            if (log_parse_level(optarg, &level) < 0) {
                fprintf(stderr, "nestcp-fake-etcd: bad value '%s' for --log-level\n", optarg);
                return 2;
            }
            break;
        case 'h':
            usage(stdout);
            return 0;
        default:
            usage(stderr);
            return 2;
        }
    }
    if (optind < argc) {
        usage(stderr);
        return 2;
    }
    log_setup(level, LOG_FORMAT_TEXT, NULL);
    signal(SIGPIPE, SIG_IGN);
    /* A script killed by its runner takes this process with it. */
    prctl(PR_SET_PDEATHSIG, SIGTERM);

    r = kube_config_load(kubeconfig, &cfg, &e);
    if (r < 0) {
        log_error("cannot load kubeconfig", "error=%s", e.msg[0] ? e.msg : err_code_name(r));
        goto out;
    }
    r = kube_client_new(loop, cfg, &client, &e);
    if (r < 0) {
        log_error("cannot create client", "error=%s", e.msg[0] ? e.msg : err_code_name(r));
        goto out;
    }
    if (!ns)
        ns = kube_client_namespace(client);
    po.namespace_ = so.namespace_ = ns;
    if ((r = kube_informer_new(client, &po, NULL, NULL, &pods)) < 0 ||
        (r = kube_informer_new(client, &so, NULL, NULL, &secrets)) < 0 ||
        (r = kube_informer_start(pods)) < 0 || (r = kube_informer_start(secrets)) < 0) {
        log_error("cannot start", "error=%s", err_code_name(r));
        goto out;
    }
    r = fake_etcd_new(loop, listen, kube_informer_store(pods), kube_informer_store(secrets), &fe,
                      &e);
    if (r < 0) {
        log_error("cannot listen", "address=%s error=%s", listen,
                  e.msg[0] ? e.msg : err_code_name(r));
        goto out;
    }
    log_info("fake etcd started", "namespace=%s listen=%s server=%s", ns, listen, cfg->server);
    ev_signal_init(&sigterm, on_signal, SIGTERM);
    ev_signal_init(&sigint, on_signal, SIGINT);
    ev_signal_start(loop, &sigterm);
    ev_signal_start(loop, &sigint);
    ev_timer_init(&report, on_report, 60, 60);
    report.data = fe;
    ev_timer_start(loop, &report);
    ev_run(loop, 0);
    ev_timer_stop(loop, &report);
    ev_signal_stop(loop, &sigterm);
    ev_signal_stop(loop, &sigint);
    fake_etcd_get_stats(fe, &st);
    rc = 0;
out:
    fake_etcd_free(fe);
    kube_informer_free(secrets);
    kube_informer_free(pods);
    kube_client_free(client);
    kube_config_free(cfg);
    log_info("fake etcd stopped", "handshakes=%lu refused=%lu requests=%lu changes=%lu exit=%d",
             st.handshakes, st.refused, st.requests, st.changes, rc);
    return rc;
}
