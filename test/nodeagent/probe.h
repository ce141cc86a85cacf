#ifndef NESTCP_NODEAGENT_PROBE_H
#define NESTCP_NODEAGENT_PROBE_H

/*
 * Readiness, liveness and startup probes as the kubelet runs them: httpGet (HTTP or HTTPS;
 * like the kubelet's, an HTTPS probe does not verify the server's certificate and sends no
 * credentials: it only asks whether something answers), tcpSocket, and exec (the command runs
 * in the container's mount namespace with the container's environment).
 *
 * Each check runs in a forked child, so nothing blocks the event loop; the child is killed when
 * timeoutSeconds pass, which counts as a failure. Because pods here have no loopback of their
 * own, a probe host of 127.0.0.1 or localhost means the pod IP.
 *
 * The probe embeds its libev watchers; child watchers need the default loop.
 */

#include <stdbool.h>
#include <sys/types.h>

#include <cjson/cJSON.h>
#include <ev.h>

#include "lib/util/err.h"

enum probe_kind {
    PROBE_HTTP,
    PROBE_TCP,
    PROBE_EXEC,
};

struct probe_spec {
    enum probe_kind kind;
    bool https;
    char *host;     /* an IP address */
    int port;       /* http, tcp */
    char *path;     /* http */
    char **headers; /* http: "Name: value", NULL-terminated, or NULL */
    char **command; /* exec: NULL-terminated */
    double initial_delay, period, timeout;
    int success_threshold, failure_threshold;
};

/* Reads a probe object (container.readinessProbe and so on). container resolves named ports;
 * pod_ip is the default host. Returns 0, -EINVAL (no or several handlers, a bad port; detail in
 * e), -ENOMEM. */
int probe_spec_parse(const cJSON *probe, const cJSON *container, const char *pod_ip,
                     struct probe_spec *ret_spec, struct err *e);
void probe_spec_done(struct probe_spec *spec);

struct probe;
typedef void (*probe_result_fn)(struct probe *p, bool ok);

struct probe {
    struct probe_spec spec;
    bool active;
    struct ev_loop *loop;
    ev_timer timer; /* the next run, or the running check's timeout */
    ev_child child;
    pid_t pid;         /* the running check, or 0 */
    pid_t target;      /* exec probes: the container process whose namespace to join */
    char *const *envp; /* exec probes: borrowed from the owner */
    int successes;     /* consecutive */
    int failures;      /* consecutive */
    probe_result_fn on_result;
};

/* Takes ownership of spec. The probe is idle until probe_start. */
void probe_init(struct probe *p, struct ev_loop *loop, struct probe_spec *spec,
                probe_result_fn on_result);

/* Starts checking after the initial delay, then every period, against target (exec probes).
 * Counters restart from zero. */
void probe_start(struct probe *p, pid_t target, char *const *envp);

/* Stops the timers and kills a running check. The probe can be started again. */
void probe_stop(struct probe *p);

/* probe_stop, then frees the spec. */
void probe_done(struct probe *p);

/* Runs one check synchronously in the calling process and returns true on success. For the
 * forked child, and for tests. */
bool probe_check(const struct probe_spec *spec, pid_t target, char *const *envp);

#endif
