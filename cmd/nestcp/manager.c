/* nestcp manager: the controllers, with metrics and health endpoints, on one event loop. */

#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <ev.h>

#include "cmd/nestcp/cmd.h"
#include "cmd/nestcp/flags.h"
#include "controllers/caches.h"
#include "controllers/controllers.h"
#include "lib/ctrl/httpserver.h"
#include "lib/ctrl/manager.h"
#include "lib/ctrl/metrics.h"
#include "lib/kube/client.h"
#include "lib/kube/config.h"
#include "lib/kube/status.h"
#include "lib/util/log.h"
#include "nestcp_version.h"

#ifndef NESTCP_DEFAULT_TEMPLATES
#define NESTCP_DEFAULT_TEMPLATES "/usr/share/nestcp/templates"
#endif

const char cmd_manager_help[] =
    "Runs nestcp's controllers: it reconciles NestedCluster, NestedControlPlane, NestedEtcd,\n"
    "NestedAPIServer and NestedControllerManager objects into StatefulSets, Services and\n"
    "Secrets in this (the management) cluster. Stops gracefully on SIGTERM or SIGINT.";

/* Parses a duration such as "30d", "720h", "1h30m", "90s", "250ms" (units ms, s, m, h, d;
 * "0" alone is zero) into seconds. Returns 0 or -EINVAL. */
static int parse_duration(const char *s, double *ret)
{
    static const struct {
        const char *unit;
        double seconds;
    } units[] = {{"ms", 0.001}, {"s", 1}, {"m", 60}, {"h", 3600}, {"d", 86400}};
    double total = 0;

    if (!s || !*s)
        return -EINVAL;
    if (strcmp(s, "0") == 0) {
        *ret = 0;
        return 0;
    }
    while (*s) {
        char *end;
        double v;
        size_t best = 0, best_len = 0;

        if (*s < '0' || *s > '9')
            return -EINVAL;
        errno = 0;
        v = strtod(s, &end);
        if (errno || end == s)
            return -EINVAL;
        s = end;
        for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
            size_t n = strlen(units[i].unit);
            if (strncmp(s, units[i].unit, n) == 0 && n > best_len) {
                best = i;
                best_len = n;
            }
        }
        /* The longest unit that matches, so "ms" is not read as "m" followed by "s". */
        if (best_len == 0)
            return -EINVAL;
        total += v * units[best].seconds;
        s += best_len;
    }
    *ret = total;
    return 0;
}

struct run {
    struct ev_loop *loop;
    struct manager *m;
    int exit_code;
    bool stopping;
    ev_signal sigterm, sigint;
};

static void on_stopped(void *userdata)
{
    struct run *run = userdata;

    ev_break(run->loop, EVBREAK_ALL);
}

static void on_signal(struct ev_loop *loop, ev_signal *w, int revents)
{
    struct run *run = w->data;

    if (run->stopping) {
        log_warn("second signal: exiting without waiting", "signal=%d", w->signum);
        run->exit_code = 1;
        ev_break(loop, EVBREAK_ALL);
        return;
    }
    run->stopping = true;
    log_info("signal received, shutting down", "signal=%d", w->signum);
    if (manager_stop(run->m, on_stopped, run) < 0)
        ev_break(loop, EVBREAK_ALL);
}

static void on_lost_leadership(void *userdata, int code)
{
    struct run *run = userdata;

    log_error("exiting: this replica is no longer the leader", "error=%s", kube_code_name(code));
    run->exit_code = 1;
    ev_break(run->loop, EVBREAK_ALL);
}

static int register_build_info(struct manager *m)
{
    struct metric *info;
    int r = metrics_register(manager_metrics(m), METRIC_GAUGE, "nestcp_build_info",
                             "The version and commit nestcp was built from.",
                             (const char *[]){"version", "commit", NULL}, NULL, 0, &info);

    return r < 0 ? r : metric_set(info, (const char *[]){NESTCP_VERSION, NESTCP_GIT_VERSION}, 1);
}

struct settings {
    const char *kubeconfig, *namespace_, *templates;
    bool leader_elect;
    const char *lease_namespace, *lease_duration, *renew_deadline, *retry_period;
    const char *metrics_address, *health_address, *metrics_cert_dir;
    bool metrics_secure;
    const char *log_level, *log_format;
    int concurrency;
    int kube_api_qps, kube_api_burst;
    const char *cert_renew_before, *cert_validity, *shutdown_timeout, *sync_period;
    bool allow_privileged;
    const char *admission_params;
    const char *max_rollouts;
    char pod_namespace[256]; /* where this manager's pod runs, or "" */
    char admission_ns[256], admission_name[256];
};

/* --admission-params: NS/NAME, "none", or unset: <the pod's namespace>/nestcp-catalog, and none
 * outside a pod or when the manager watches one namespace (its rights end there). */
static int check_admission_params(struct settings *s, struct controllers_opts *co)
{
    const char *v = s->admission_params, *slash = strchr(v, '/');

    if (strcmp(v, "none") == 0 || (!*v && (s->namespace_[0] || !s->pod_namespace[0])))
        return 0;
    if (!*v) {
        snprintf(s->admission_ns, sizeof(s->admission_ns), "%s", s->pod_namespace);
        snprintf(s->admission_name, sizeof(s->admission_name), "nestcp-catalog");
    } else if (!slash || slash == v || !slash[1] || strchr(slash + 1, '/') ||
               (size_t)(slash - v) >= sizeof(s->admission_ns) ||
               strlen(slash + 1) >= sizeof(s->admission_name)) {
        fprintf(stderr,
                "nestcp manager: --admission-params: \"%s\" is not NAMESPACE/NAME or "
                "none\n",
                v);
        return -EINVAL;
    } else {
        snprintf(s->admission_ns, sizeof(s->admission_ns), "%.*s", (int)(slash - v), v);
        snprintf(s->admission_name, sizeof(s->admission_name), "%s", slash + 1);
    }
    co->admission_params_namespace = s->admission_ns;
    co->admission_params_name = s->admission_name;
    return 0;
}

static int check_settings(const struct settings *s, struct manager_opts *mo,
                          struct controllers_opts *co)
{
    struct {
        const char *flag, *value;
        double *out;
        bool positive;
    } durations[] = {
        {"leader-elect-lease-duration", s->lease_duration, &mo->lease_duration, true},
        {"leader-elect-renew-deadline", s->renew_deadline, &mo->renew_deadline, true},
        {"leader-elect-retry-period", s->retry_period, &mo->retry_period, true},
        {"graceful-shutdown-timeout", s->shutdown_timeout, &mo->shutdown_timeout, true},
        {"sync-period", s->sync_period, &mo->sync_period, true},
    };
    double renew_before, validity;
    struct stat st;

    for (size_t i = 0; i < sizeof(durations) / sizeof(durations[0]); i++) {
        if (parse_duration(durations[i].value, durations[i].out) < 0 ||
            (durations[i].positive && *durations[i].out <= 0)) {
            fprintf(stderr, "nestcp manager: --%s: \"%s\" is not a positive duration (e.g. 15s)\n",
                    durations[i].flag, durations[i].value);
            return -EINVAL;
        }
    }
    if (mo->leader_elect &&
        !(mo->lease_duration > mo->renew_deadline && mo->renew_deadline > 1.2 * mo->retry_period)) {
        fprintf(stderr, "nestcp manager: leader election needs lease duration > renew deadline > "
                        "1.2 x retry period\n");
        return -EINVAL;
    }
    /* Unset: each control plane's spec.certificates.renewBeforeDays alone decides. */
    renew_before = 0;
    if (s->cert_renew_before &&
        (parse_duration(s->cert_renew_before, &renew_before) < 0 || renew_before <= 0)) {
        fprintf(stderr,
                "nestcp manager: --cert-renew-before: \"%s\" is not a positive duration "
                "(e.g. 30d)\n",
                s->cert_renew_before);
        return -EINVAL;
    }
    co->cert_renew_before = (int64_t)renew_before;
    /* Unset: each control plane's spec.certificates.validityDays. */
    validity = 0;
    if (s->cert_validity && (parse_duration(s->cert_validity, &validity) < 0 || validity < 60)) {
        fprintf(stderr,
                "nestcp manager: --cert-validity: \"%s\" is not a duration of at least 1m "
                "(e.g. 24h)\n",
                s->cert_validity);
        return -EINVAL;
    }
    co->cert_validity = (int64_t)validity;
    co->allow_privileged = s->allow_privileged;
    co->manager_namespace = s->pod_namespace[0] ? s->pod_namespace : NULL;
    if (s->concurrency < 1 || s->concurrency > 1000) {
        fprintf(stderr, "nestcp manager: --concurrency: %d is not in 1..1000\n", s->concurrency);
        return -EINVAL;
    }
    mo->concurrency = s->concurrency;
    if (s->kube_api_qps < 0 || s->kube_api_burst < 1) {
        fprintf(stderr, "nestcp manager: --kube-api-qps must be 0 or more and --kube-api-burst "
                        "1 or more\n");
        return -EINVAL;
    }
    if (stat(s->templates, &st) < 0 || !S_ISDIR(st.st_mode)) {
        fprintf(stderr, "nestcp manager: --templates: %s is not a directory\n", s->templates);
        return -EINVAL;
    }
    co->templates_dir = s->templates;
    if (brake_limit_parse(s->max_rollouts, &co->max_rollouts) < 0) {
        fprintf(stderr,
                "nestcp manager: --max-concurrent-rollouts: \"%s\" is not a count of 1 or more "
                "or a percentage of 1%% to 100%% (e.g. 10 or 10%%)\n",
                s->max_rollouts);
        return -EINVAL;
    }
    return 0;
}

static int run_manager(const struct settings *s, struct manager_opts *mo,
                       const struct controllers_opts *co)
{
    struct run run = {.exit_code = 1};
    struct kube_config *cfg = NULL;
    struct kube_client *client = NULL;
    struct httpserver *http = NULL;
    struct httpserver_opts ho = {.metrics_address = s->metrics_address,
                                 .health_address = s->health_address,
                                 .metrics_insecure = !s->metrics_secure,
                                 .metrics_cert_dir = s->metrics_cert_dir};
    struct controllers_opts cop = *co;
    struct controllers *ctl = NULL;
    struct err e;

    err_clear(&e);
    run.loop = ev_loop_new(EVFLAG_AUTO);
    if (!run.loop) {
        log_error("cannot create the event loop", "%s", "");
        return 1;
    }
    cop.loop = run.loop;
    if (kube_config_load(s->kubeconfig && s->kubeconfig[0] ? s->kubeconfig : NULL, &cfg, &e) < 0) {
        log_error("cannot load the cluster configuration", "error=%s", e.msg);
        goto out;
    }
    if (kube_client_new(run.loop, cfg, &client, &e) < 0) {
        log_error("cannot create the API client", "server=%s error=%s", cfg->server, e.msg);
        goto out;
    }
    kube_client_set_rate_limit(client, s->kube_api_qps, s->kube_api_burst);
    mo->on_lost_leadership = on_lost_leadership;
    mo->userdata = &run;
    caches_manager_opts(mo);
    if (manager_new(run.loop, client, mo, &run.m, &e) < 0) {
        log_error("cannot create the manager", "error=%s", e.msg);
        goto out;
    }
    if (register_build_info(run.m) < 0 || controllers_register(run.m, &cop, &ctl, &e) < 0) {
        log_error("cannot register the controllers", "error=%s", e.msg);
        goto out;
    }
    ho.client = client;
    if (httpserver_start(run.loop, run.m, &ho, &http, &e) < 0) {
        log_error("cannot serve metrics and health probes", "error=%s", e.msg);
        goto out;
    }
    log_info("nestcp manager",
             "version=%s commit=%s server=%s config=%s metrics_port=%d metrics_secure=%s "
             "health_port=%d",
             NESTCP_VERSION, NESTCP_GIT_VERSION, cfg->server, cfg->origin,
             httpserver_metrics_port(http), s->metrics_secure ? "true" : "false",
             httpserver_health_port(http));
    if (manager_start(run.m, &e) < 0) {
        log_error("cannot start the manager", "error=%s", e.msg);
        goto out;
    }
    ev_signal_init(&run.sigterm, on_signal, SIGTERM);
    run.sigterm.data = &run;
    ev_signal_start(run.loop, &run.sigterm);
    ev_signal_init(&run.sigint, on_signal, SIGINT);
    run.sigint.data = &run;
    ev_signal_start(run.loop, &run.sigint);
    run.exit_code = 0;
    ev_run(run.loop, 0);
    ev_signal_stop(run.loop, &run.sigterm);
    ev_signal_stop(run.loop, &run.sigint);
out:
    httpserver_free(http);
    manager_free(run.m);
    controllers_free(ctl);
    kube_client_free(client);
    kube_config_free(cfg);
    ev_loop_destroy(run.loop);
    if (run.exit_code == 0)
        log_info("exiting", "code=%d", 0);
    return run.exit_code;
}

static void settings_defaults(struct settings *s)
{
    *s = (struct settings){
        .kubeconfig = "",
        .namespace_ = "",
        .templates = NESTCP_DEFAULT_TEMPLATES,
        .lease_namespace = "",
        .lease_duration = "15s",
        .renew_deadline = "10s",
        .retry_period = "2s",
        .metrics_address = ":8443",
        .metrics_secure = true,
        .metrics_cert_dir = "",
        .health_address = ":8081",
        .log_level = "info",
        .log_format = "text",
        .concurrency = 4,
        /* About three times the mean rate of 500 control planes applied at once (62 requests/s
         * in docs/architecture.md, where the super cluster's API server is already the limit):
         * a ceiling for a hot loop, never for honest work. */
        .kube_api_qps = 200,
        .kube_api_burst = 400,
        .shutdown_timeout = "15s",
        .sync_period = "10h",
        .admission_params = "",
        .max_rollouts = "10%",
    };
}

static int manager_flags(struct settings *s, struct flag *out, int cap)
{
    const struct flag flags[] = {
        {"kubeconfig", 0, FLAG_STRING, &s->kubeconfig, "FILE",
         "kubeconfig of the management cluster; unset: $KUBECONFIG (its files merged as "
         "kubectl merges them), ~/.kube/config, then the in-cluster service account"},
        {"namespace", 0, FLAG_STRING, &s->namespace_, "NS",
         "watch and reconcile only this namespace; unset: every namespace"},
        {"templates", 0, FLAG_STRING, &s->templates, "DIR", "the package catalog"},
        {"leader-elect", 0, FLAG_BOOL, &s->leader_elect, NULL,
         "elect a leader among replicas on the Lease " MANAGER_LEASE_NAME
         "; only the leader reconciles"},
        {"leader-election-namespace", 0, FLAG_STRING, &s->lease_namespace, "NS",
         "namespace of the Lease; unset: the pod's namespace, else nestcp-system if it exists, "
         "else default"},
        {"leader-elect-lease-duration", 0, FLAG_STRING, &s->lease_duration, "DURATION",
         "how long a standby waits after the last renewal before taking over"},
        {"leader-elect-renew-deadline", 0, FLAG_STRING, &s->renew_deadline, "DURATION",
         "how long the leader keeps trying to renew before it gives up (and exits)"},
        {"leader-elect-retry-period", 0, FLAG_STRING, &s->retry_period, "DURATION",
         "how often the leader renews and standbys try to acquire"},
        {"metrics-bind-address", 0, FLAG_STRING, &s->metrics_address, "ADDR",
         "serve Prometheus metrics at /metrics on host:port (\":8443\": every interface); "
         "\"0\" turns it off"},
        {"metrics-secure", 0, FLAG_BOOL, &s->metrics_secure, NULL,
         "serve /metrics over HTTPS to callers whose bearer token the API server authenticates "
         "(TokenReview) and allows get on /metrics (SubjectAccessReview); false: plain HTTP, "
         "unauthenticated, on a loopback address only"},
        {"metrics-cert-dir", 0, FLAG_STRING, &s->metrics_cert_dir, "DIR",
         "the metrics serving certificate: " HTTPSERVER_CERT_FILE
         " (with its chain) and " HTTPSERVER_KEY_FILE
         " in DIR, read at start; unset: a self-signed one made at start"},
        {"health-probe-bind-address", 0, FLAG_STRING, &s->health_address, "ADDR",
         "serve /healthz and /readyz on host:port; \"0\" turns it off"},
        {"log-level", 0, FLAG_STRING, &s->log_level, "LEVEL", "error, warn, info, debug or trace"},
        {"log-format", 0, FLAG_STRING, &s->log_format, "FORMAT", "text or json"},
        {"concurrency", 0, FLAG_INT, &s->concurrency, "N",
         "objects each controller reconciles at once"},
        {"kube-api-qps", 0, FLAG_INT, &s->kube_api_qps, "N",
         "requests per second to the management cluster's API server, for everything the "
         "manager sends; 0: no limit"},
        {"kube-api-burst", 0, FLAG_INT, &s->kube_api_burst, "N",
         "requests sent at once before --kube-api-qps applies"},
        {"cert-renew-before", 0, FLAG_STRING, &s->cert_renew_before, "DURATION",
         "renew certificates with less validity left than this (e.g. 60d) even when a control "
         "plane's renewBeforeDays is shorter (default: each control plane's renewBeforeDays)"},
        {"cert-validity", 0, FLAG_STRING, &s->cert_validity, "DURATION",
         "issue leaf certificates and kubeconfig client certificates valid for this long (at "
         "least 1m) instead of each control plane's validityDays; they are renewed when a third "
         "is left, or --cert-renew-before, at most half (default: validityDays)"},
        {"sync-period", 0, FLAG_STRING, &s->sync_period, "DURATION",
         "reconcile every object at least this often, even when nothing changes"},
        {"graceful-shutdown-timeout", 0, FLAG_STRING, &s->shutdown_timeout, "DURATION",
         "on SIGTERM, how long to let reconciles in flight finish"},
        {"allow-privileged-patches", 0, FLAG_BOOL, &s->allow_privileged, NULL,
         "let components' patches and extraArgs use host namespaces, hostPath, privileged "
         "containers, other placement and security-relevant flags (docs/security.md); never "
         "other clusters' objects or namespaces"},
        {"max-concurrent-rollouts", 0, FLAG_STRING, &s->max_rollouts, "N|P%",
         "how many control planes may roll at once, a count or a percentage of the control "
         "planes (rounded down, at least 1); the others wait (Upgrading True, reason "
         "RolloutQueued), oldest request first. Creating a control plane, and a roll that renews "
         "a certificate expiring within 7 days, never wait (docs/upgrades.md)"},
        {"admission-params", 0, FLAG_STRING, &s->admission_params, "NS/NAME",
         "keep this ConfigMap, the parameters of config/admission's ValidatingAdmissionPolicy, "
         "equal to the package catalog; \"none\" turns it off (default: the pod's "
         "namespace/nestcp-catalog; none outside a pod or with --namespace)"},
    };

    return flags_copy(flags, (int)(sizeof(flags) / sizeof(flags[0])), out, cap);
}

int cmd_manager_flags(struct flag *out, int cap)
{
    static struct settings defaults;

    settings_defaults(&defaults);
    return manager_flags(&defaults, out, cap);
}

int cmd_manager(int argc, char **argv)
{
    struct settings s;
    struct flag flags[FLAGS_MAX];
    int nflags;
    struct manager_opts mo = {0};
    struct controllers_opts co = {0};
    enum log_level level;
    enum log_format format;
    char **rest = NULL;
    int nrest = 0, r;

    settings_defaults(&s);
    nflags = manager_flags(&s, flags, FLAGS_MAX);
    if (nflags < 0)
        return 1;
    r = flags_parse("manager", NULL, cmd_manager_help, flags, nflags, argc, argv, &rest, &nrest);
    if (r != 0)
        return r > 0 ? 0 : 2;
    if (nrest > 0) {
        fprintf(stderr, "nestcp manager: unexpected argument %s\n", rest[0]);
        free(rest);
        return 2;
    }
    free(rest);
    if (log_parse_level(s.log_level, &level) < 0 || log_parse_format(s.log_format, &format) < 0) {
        fprintf(stderr, "nestcp manager: bad --log-level \"%s\" or --log-format \"%s\"\n",
                s.log_level, s.log_format);
        return 2;
    }
    log_setup(level, format, NULL);
    mo.namespace_ = s.namespace_[0] ? s.namespace_ : NULL;
    mo.leader_elect = s.leader_elect;
    mo.leader_election_namespace = s.lease_namespace[0] ? s.lease_namespace : NULL;
    if (!manager_pod_namespace(s.pod_namespace, sizeof(s.pod_namespace)))
        s.pod_namespace[0] = '\0';
    if (check_settings(&s, &mo, &co) < 0 || check_admission_params(&s, &co) < 0)
        return 2;
    /* A peer closing a socket must not kill the process. */
    signal(SIGPIPE, SIG_IGN);
    return run_manager(&s, &mo, &co);
}
