/*
 * nestcp-nodeagent: plays scheduler and kubelet for one node of the local super cluster, so the
 * Pods of StatefulSets run as host processes. See README.md.
 */

#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>

#include <ev.h>

#include "lib/kube/config.h"
#include "lib/util/log.h"
#include "lib/util/strutil.h"
#include "lib/util/yamlconv.h"
#include "test/nodeagent/nodeagent.h"

struct main_ctx {
    struct nodeagent *na;
    double max_grace;
    int signals;
    ev_signal sigterm, sigint;
};

static void usage(FILE *out)
{
    fputs("usage: nestcp-nodeagent [flags]\n"
          "  --kubeconfig PATH           super cluster kubeconfig ($KUBECONFIG, ~/.kube/config)\n"
          "  --node-name NAME            Node to register and run pods for (nestcp-node)\n"
          "  --state-dir DIR             pod directories and logs (/tmp/nestcp-nodeagent)\n"
          "  --selector SELECTOR         bind only pending pods matching this label selector\n"
          "                              (repeated: pods matching any of them; at most 4)\n"
          "  --namespace NS              bind only pending pods of this namespace\n"
          "  --image-map FILE            extra `<repository-suffix> <binary|host>` rules\n"
          "  --bin-root DIR              hack/kube-build.sh's cache of releases\n"
          "                              ($NESTCP_BIN_ROOT, $NESTCP_KUBE_ENV_DIR/bin-root)\n"
          "  --restart-backoff SECONDS   first restart delay of a crashed container (10)\n"
          "  --restart-backoff-max SECONDS  longest restart delay (300)\n"
          "  --pod-network N             pod IPs are 127.N.x.y (0)\n"
          "  --cluster-domain DOMAIN     (cluster.local)\n"
          "  --heartbeat SECONDS         Node status and Lease renewal period (10)\n"
          "  --stop-grace-max SECONDS    longest grace period when the agent stops (30)\n"
          "  --log-level LEVEL           error|warn|info|debug|trace (info)\n"
          "  --log-format FORMAT         text|json (text)\n",
          out);
}

/* Seconds: "10", "2.5", "10s", "500ms". */
static int parse_seconds(const char *s, double *ret)
{
    char *end;
    double v;

    errno = 0;
    v = strtod(s, &end);
    if (end == s || errno)
        return -EINVAL;
    if (strcmp(end, "ms") == 0)
        v /= 1000;
    else if (strcmp(end, "m") == 0)
        v *= 60;
    else if (*end && strcmp(end, "s") != 0)
        return -EINVAL;
    if (v < 0 || v > 86400)
        return -ERANGE;
    *ret = v;
    return 0;
}

static void stopped(void *userdata)
{
    ev_break(EV_DEFAULT, EVBREAK_ALL);
}

static void on_signal(struct ev_loop *loop, ev_signal *w, int revents)
{
    struct main_ctx *m = w->data;

    if (++m->signals > 1) {
        log_warn("second signal: killing every process now", "signal=%d", w->signum);
        ev_break(loop, EVBREAK_ALL);
        return;
    }
    log_info("stopping", "signal=%d", w->signum);
    nodeagent_shutdown(m->na, m->max_grace, stopped, m);
}

/* The directory of cached releases: flag, $NESTCP_BIN_ROOT, or what kube-env.sh recorded. */
static char *bin_root(const char *flag)
{
    const char *env = getenv("NESTCP_BIN_ROOT"), *envdir = getenv("NESTCP_KUBE_ENV_DIR");
    char path[4096], *text = NULL;

    if (flag)
        return strdup(flag);
    if (env && *env)
        return strdup(env);
    if (!envdir || (size_t)snprintf(path, sizeof(path), "%s/bin-root", envdir) >= sizeof(path) ||
        util_read_file(path, 4096, &text, NULL) < 0)
        return NULL;
    text[strcspn(text, "\r\n")] = '\0';
    return text;
}

int main(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"kubeconfig", required_argument, NULL, 'k'},
        {"node-name", required_argument, NULL, 'n'},
        {"state-dir", required_argument, NULL, 's'},
        {"selector", required_argument, NULL, 'l'},
        {"namespace", required_argument, NULL, 'N'},
        {"image-map", required_argument, NULL, 'i'},
        {"bin-root", required_argument, NULL, 'b'},
        {"restart-backoff", required_argument, NULL, 'r'},
        {"restart-backoff-max", required_argument, NULL, 'R'},
        {"pod-network", required_argument, NULL, 'p'},
        {"cluster-domain", required_argument, NULL, 'd'},
        {"heartbeat", required_argument, NULL, 'H'},
        {"stop-grace-max", required_argument, NULL, 'g'},
        {"log-level", required_argument, NULL, 'v'},
        {"log-format", required_argument, NULL, 'f'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const char *kubeconfig = NULL, *image_map = NULL, *bin_flag = NULL;
    const char *selectors[5] = {NULL};
    size_t nselectors = 0;
    enum log_level level = LOG_LEVEL_INFO;
    enum log_format format = LOG_FORMAT_TEXT;
    struct nodeagent_opts o = {0};
    struct main_ctx m = {.max_grace = 30};
    struct kube_config *cfg = NULL;
    struct imagemap *images = NULL;
    struct err e = {0};
    char *bin_dir = NULL;
    int c, r, idx = 0, pod_net, rc = 1;

    o.runtime.state_dir = "/tmp/nestcp-nodeagent";
    while ((c = getopt_long(argc, argv, "h", longopts, &idx)) != -1) {
        switch (c) {
        case 'k':
            kubeconfig = optarg;
            break;
        case 'n':
            o.node_name = optarg;
            break;
        case 's':
            o.runtime.state_dir = optarg;
            break;
        case 'l':
            if (nselectors == sizeof(selectors) / sizeof(selectors[0]) - 1) {
                fprintf(stderr, "nestcp-nodeagent: at most 4 --selector flags\n");
                return 2;
            }
            selectors[nselectors++] = optarg;
            o.selectors = selectors;
            break;
        case 'N':
            o.namespace_ = optarg;
            break;
        case 'i':
            image_map = optarg;
            break;
        case 'b':
            bin_flag = optarg;
            break;
        case 'd':
            o.runtime.cluster_domain = optarg;
            break;
        case 'r':
            r = parse_seconds(optarg, &o.runtime.backoff_base);
            goto check;
        case 'R':
            r = parse_seconds(optarg, &o.runtime.backoff_max);
            goto check;
        case 'H':
            r = parse_seconds(optarg, &o.heartbeat);
            goto check;
        case 'g':
            r = parse_seconds(optarg, &m.max_grace);
            goto check;
        case 'p':
            r = str_to_int(optarg, 0, 255, &pod_net);
            o.runtime.pod_net = (unsigned)pod_net;
            goto check;
        case 'v':
            r = log_parse_level(optarg, &level);
            goto check;
        case 'f':
            r = log_parse_format(optarg, &format);
            goto check;
        case 'h':
            usage(stdout);
            return 0;
        default:
            usage(stderr);
            return 2;
        }
        continue;
    check:
        if (r < 0) {
            fprintf(stderr, "nestcp-nodeagent: bad value '%s' for --%s\n", optarg,
                    longopts[idx].name);
            return 2;
        }
    }
    if (optind < argc) {
        usage(stderr);
        return 2;
    }
    log_setup(level, format, NULL);
    signal(SIGPIPE, SIG_IGN);
    /* Orphans of containers come back to us and are reaped, not left to init. */
    prctl(PR_SET_CHILD_SUBREAPER, 1);

    bin_dir = bin_root(bin_flag);
    if (imagemap_new(&images) < 0 || imagemap_add_defaults(images, bin_dir) < 0 ||
        (image_map && imagemap_load_file(images, image_map, &e) < 0)) {
        log_error("cannot build the image map", "error=%s", e.msg[0] ? e.msg : "out of memory");
        goto out;
    }
    r = kube_config_load(kubeconfig, &cfg, &e);
    if (r < 0) {
        log_error("cannot load kubeconfig", "error=%s", e.msg[0] ? e.msg : err_code_name(r));
        goto out;
    }
    o.runtime.images = images;
    r = nodeagent_new(EV_DEFAULT, cfg, &o, &m.na, &e);
    if (r == 0)
        r = nodeagent_start(m.na);
    if (r < 0) {
        log_error("cannot start", "error=%s", e.msg[0] ? e.msg : err_code_name(r));
        goto out;
    }
    log_info("node agent started", "node=%s server=%s state_dir=%s bin_root=%s",
             o.node_name ? o.node_name : "nestcp-node", cfg->server, o.runtime.state_dir,
             bin_dir ? bin_dir : "-");
    ev_signal_init(&m.sigterm, on_signal, SIGTERM);
    ev_signal_init(&m.sigint, on_signal, SIGINT);
    m.sigterm.data = m.sigint.data = &m;
    ev_signal_start(EV_DEFAULT, &m.sigterm);
    ev_signal_start(EV_DEFAULT, &m.sigint);
    ev_run(EV_DEFAULT, 0);
    ev_signal_stop(EV_DEFAULT, &m.sigterm);
    ev_signal_stop(EV_DEFAULT, &m.sigint);
    rc = 0;
out:
    nodeagent_free(m.na); /* kills whatever still runs */
    log_info("node agent stopped", "exit=%d", rc);
    kube_config_free(cfg);
    imagemap_free(images);
    free(bin_dir);
    return rc;
}
