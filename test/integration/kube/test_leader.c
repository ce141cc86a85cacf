#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <ev.h>

#include "lib/kube/client.h"
#include "lib/kube/config.h"
#include "lib/kube/leader.h"
#include "lib/util/strutil.h"

/*
 * Candidates are child processes (fork, each with its own loop and client) campaigning for one
 * Lease in the real super cluster; they report on a pipe, one line per event:
 *   "started <mono>", "stopped <mono> <code>", "released <mono> <code>".
 * CLOCK_MONOTONIC is shared by the processes, so the parent can subtract their times.
 *
 * The durations are short so the test is quick, and chosen so the two ways of handing over
 * are far apart: after a kill the standby waits out the lease (>= lease - renew = 4 s), after
 * a clean release it takes over at its next poll (~retry = 0.5 s).
 */

#define NS "default"
#define LEASE_S 6.0
#define RENEW_S 2.0
#define RETRY_S 0.5
#define SLACK_S 2.5 /* request latency on a loaded two-core machine */

struct candidate {
    pid_t pid;
    int fd; /* read end of its report pipe */
    char identity[64];
    char line[256];
    size_t len;
    bool alive;
};

/* ---- the child side ---- */

struct child {
    struct ev_loop *loop;
    struct kube_leader *leader;
    int fd;
    ev_signal sigterm;
};

static void report(int fd, const char *what, int code)
{
    char line[128];
    int n = snprintf(line, sizeof(line), "%s %.6f %d\n", what, time_mono(), code);

    if (write(fd, line, (size_t)n) != n)
        _exit(3);
}

static void child_started(void *userdata)
{
    struct child *ch = userdata;

    report(ch->fd, "started", 0);
}

static void child_stopped(void *userdata, int code)
{
    struct child *ch = userdata;

    report(ch->fd, "stopped", code);
    ev_break(ch->loop, EVBREAK_ALL);
}

static void child_released(void *userdata, int code)
{
    struct child *ch = userdata;

    report(ch->fd, "released", code);
    ev_break(ch->loop, EVBREAK_ALL);
}

static void child_on_sigterm(struct ev_loop *loop, ev_signal *w, int revents)
{
    struct child *ch = w->data;

    if (kube_leader_stop(ch->leader, child_released, ch) < 0)
        _exit(4);
}

static void run_candidate(int fd, const char *lease, const char *identity)
{
    struct child ch = {.fd = fd};
    struct kube_config *cfg = NULL;
    struct kube_client *client = NULL;
    struct kube_leader_opts opts = {
        .namespace_ = NS,
        .name = lease,
        .identity = identity,
        .lease_duration = LEASE_S,
        .renew_deadline = RENEW_S,
        .retry_period = RETRY_S,
        .on_started_leading = child_started,
        .on_stopped_leading = child_stopped,
        .userdata = &ch,
    };
    struct err e = {0};

    ch.loop = ev_loop_new(EVFLAG_AUTO);
    if (!ch.loop || kube_config_load(NULL, &cfg, &e) < 0 ||
        kube_client_new(ch.loop, cfg, &client, &e) < 0 ||
        kube_leader_new(client, &opts, &ch.leader, &e) < 0 || kube_leader_start(ch.leader) < 0) {
        fprintf(stderr, "candidate %s: %s\n", identity, e.msg);
        _exit(2);
    }
    ev_signal_init(&ch.sigterm, child_on_sigterm, SIGTERM);
    ch.sigterm.data = &ch;
    ev_signal_start(ch.loop, &ch.sigterm);
    ev_unref(ch.loop); /* the signal watcher alone does not keep the loop running */
    ev_run(ch.loop, 0);
    ev_ref(ch.loop);
    ev_signal_stop(ch.loop, &ch.sigterm);
    kube_leader_free(ch.leader);
    kube_client_free(client);
    kube_config_free(cfg);
    ev_loop_destroy(ch.loop);
    _exit(0);
}

/* ---- the parent side ---- */

static void spawn(struct candidate *c, const char *lease, const char *identity)
{
    int p[2];

    assert_int_equal(pipe2(p, O_CLOEXEC), 0);
    fflush(stdout);
    fflush(stderr);
    memset(c, 0, sizeof(*c));
    snprintf(c->identity, sizeof(c->identity), "%s", identity);
    c->pid = fork();
    assert_true(c->pid >= 0);
    if (c->pid == 0) {
        close(p[0]);
        run_candidate(p[1], lease, identity);
    }
    close(p[1]);
    c->fd = p[0];
    c->alive = true;
}

/* Waits up to timeout seconds for the next report from any of n candidates. Returns the
 * candidate's index and fills what/at/code, or -1 on timeout. */
static int next_report(struct candidate *cs, int n, double timeout, char *what, double *at,
                       int *code)
{
    double end = time_mono() + timeout;

    for (;;) {
        for (int i = 0; i < n; i++) {
            char *nl = cs[i].len ? memchr(cs[i].line, '\n', cs[i].len) : NULL;

            if (nl) {
                *nl = '\0';
                assert_int_equal(sscanf(cs[i].line, "%15s %lf %d", what, at, code), 3);
                cs[i].len -= (size_t)(nl + 1 - cs[i].line);
                memmove(cs[i].line, nl + 1, cs[i].len);
                return i;
            }
        }
        double left = end - time_mono();
        if (left <= 0)
            return -1;
        struct pollfd pfd[4];
        for (int i = 0; i < n; i++)
            pfd[i] = (struct pollfd){.fd = cs[i].alive ? cs[i].fd : -1, .events = POLLIN};
        int r = poll(pfd, (nfds_t)n, (int)(left * 1000) + 1);
        assert_true(r >= 0 || errno == EINTR);
        for (int i = 0; i < n; i++) {
            if (!(pfd[i].revents & (POLLIN | POLLHUP)))
                continue;
            ssize_t got =
                read(cs[i].fd, cs[i].line + cs[i].len, sizeof(cs[i].line) - 1 - cs[i].len);
            if (got <= 0)
                cs[i].alive = false; /* the process ended */
            else
                cs[i].len += (size_t)got;
        }
    }
}

static void reap(struct candidate *c, int sig)
{
    int status;

    if (c->pid <= 0)
        return;
    if (sig)
        kill(c->pid, sig);
    assert_int_equal(waitpid(c->pid, &status, 0), c->pid);
    if (!sig || sig == SIGTERM)
        assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    close(c->fd);
    c->pid = 0;
}

/* The Lease's spec as the server has it now (caller frees), read with a short-lived client so
 * that no client state is inherited by later forks. */
static cJSON *get_lease_spec(const char *lease)
{
    struct ev_loop *loop = ev_loop_new(EVFLAG_AUTO);
    struct kube_config *cfg = NULL;
    struct kube_client *client = NULL;
    struct kube_request req = {
        .verb = KUBE_GET, .resource = &KUBE_LEASES, .namespace_ = NS, .name = lease};
    cJSON *body = NULL, *spec;
    struct err e = {0};

    assert_int_equal(kube_config_load(NULL, &cfg, &e), 0);
    assert_int_equal(kube_client_new(loop, cfg, &client, &e), 0);
    assert_int_equal(kube_request_sync(client, &req, &body, &e), 0);
    spec = cJSON_DetachItemFromObjectCaseSensitive(body, "spec");
    assert_non_null(spec);
    cJSON_Delete(body);
    kube_client_free(client);
    kube_config_free(cfg);
    ev_loop_destroy(loop);
    return spec;
}

static void delete_lease(const char *lease)
{
    struct ev_loop *loop = ev_loop_new(EVFLAG_AUTO);
    struct kube_config *cfg = NULL;
    struct kube_client *client = NULL;
    struct kube_request req = {
        .verb = KUBE_DELETE, .resource = &KUBE_LEASES, .namespace_ = NS, .name = lease};
    struct err e = {0};

    assert_int_equal(kube_config_load(NULL, &cfg, &e), 0);
    assert_int_equal(kube_client_new(loop, cfg, &client, &e), 0);
    kube_request_sync(client, &req, NULL, &e);
    kube_client_free(client);
    kube_config_free(cfg);
    ev_loop_destroy(loop);
}

static const char *spec_string(const cJSON *spec, const char *field)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(spec, field);

    return cJSON_IsString(v) ? v->valuestring : "";
}

static void test_leader__one_leader_then_standby_takes_over_after_kill(void **state)
{
    char lease[64], what[16];
    struct candidate cs[2];
    double at, t_kill;
    int code, leader, other, i;
    cJSON *spec;

    snprintf(lease, sizeof(lease), "leader-kill-%d", (int)getpid());
    spawn(&cs[0], lease, "candidate-a");
    spawn(&cs[1], lease, "candidate-b");

    /* The Lease does not exist yet: one candidate creates it, at once. */
    leader = next_report(cs, 2, 20, what, &at, &code);
    assert_true(leader >= 0);
    assert_string_equal(what, "started");
    other = 1 - leader;

    /* For a whole lease duration (three renewals' worth), nobody else leads. */
    i = next_report(cs, 2, LEASE_S, what, &at, &code);
    assert_int_equal(i, -1);
    spec = get_lease_spec(lease);
    assert_string_equal(spec_string(spec, "holderIdentity"), cs[leader].identity);
    assert_true(cJSON_GetObjectItemCaseSensitive(spec, "leaseDurationSeconds")->valuedouble ==
                LEASE_S);
    cJSON_Delete(spec);

    /* kill -9: the Lease is not released, so the standby must wait for it to expire. */
    t_kill = time_mono();
    reap(&cs[leader], SIGKILL);
    cs[leader].alive = false;
    i = next_report(cs, 2, LEASE_S + RETRY_S + 20, what, &at, &code);
    assert_int_equal(i, other);
    assert_string_equal(what, "started");
    printf("takeover after kill -9: %.2f s (lease %.0f s, retry %.1f s, bound %.1f s)\n",
           at - t_kill, LEASE_S, RETRY_S, LEASE_S + RETRY_S);
    /* Never before the dead leader's last renewal could have expired... */
    assert_true(at - t_kill >= LEASE_S - RENEW_S);
    /* ...and within lease + retry, give or take request latency. */
    assert_true(at - t_kill <= LEASE_S + RETRY_S + SLACK_S);
    spec = get_lease_spec(lease);
    assert_string_equal(spec_string(spec, "holderIdentity"), cs[other].identity);
    cJSON_Delete(spec);

    reap(&cs[other], SIGTERM);
    delete_lease(lease);
}

static void test_leader__clean_shutdown_releases_the_lease_for_a_quick_handover(void **state)
{
    char lease[64], what[16];
    struct candidate cs[2];
    double at, t_released;
    int code, i;
    cJSON *spec;

    snprintf(lease, sizeof(lease), "leader-release-%d", (int)getpid());
    spawn(&cs[0], lease, "candidate-first");
    i = next_report(cs, 1, 20, what, &at, &code);
    assert_int_equal(i, 0);
    assert_string_equal(what, "started");

    spawn(&cs[1], lease, "candidate-second");
    /* Let the second candidate see the first one's record for a while. */
    i = next_report(cs, 2, 2, what, &at, &code);
    assert_int_equal(i, -1);

    kill(cs[0].pid, SIGTERM);
    i = next_report(cs, 2, 10, what, &at, &code);
    assert_int_equal(i, 0);
    assert_string_equal(what, "released");
    assert_int_equal(code, 0);
    t_released = at;
    reap(&cs[0], 0);
    cs[0].alive = false;

    i = next_report(cs, 2, LEASE_S + 20, what, &at, &code);
    assert_int_equal(i, 1);
    assert_string_equal(what, "started");
    printf("takeover after release: %.2f s (retry %.1f s; waiting out the lease would take "
           ">= %.0f s)\n",
           at - t_released, RETRY_S, LEASE_S - RENEW_S);
    assert_true(at - t_released < LEASE_S - RENEW_S);
    spec = get_lease_spec(lease);
    assert_string_equal(spec_string(spec, "holderIdentity"), "candidate-second");
    /* One transition from the first holder (through the released record) to the second. */
    assert_true(cJSON_GetObjectItemCaseSensitive(spec, "leaseTransitions")->valuedouble >= 1);
    cJSON_Delete(spec);

    /* The second one releases too; the record says so. */
    kill(cs[1].pid, SIGTERM);
    i = next_report(cs, 2, 10, what, &at, &code);
    assert_int_equal(i, 1);
    assert_string_equal(what, "released");
    reap(&cs[1], 0);
    spec = get_lease_spec(lease);
    assert_string_equal(spec_string(spec, "holderIdentity"), "");
    assert_true(cJSON_GetObjectItemCaseSensitive(spec, "leaseDurationSeconds")->valuedouble == 1);
    cJSON_Delete(spec);
    delete_lease(lease);
}

static int kube_env(const char *verb)
{
    const char *src = getenv("NESTCP_SOURCE_DIR");
    const char *dir = getenv("NESTCP_KUBE_ENV_DIR");
    char cmd[1024];

    assert_non_null(src);
    assert_non_null(dir);
    snprintf(cmd, sizeof(cmd), "'%s/hack/kube-env.sh' %s apiserver --dir '%s' >&2", src, verb, dir);
    return system(cmd);
}

static void test_leader__leader_that_cannot_renew_stops_within_the_deadline(void **state)
{
    char lease[64], what[16];
    struct candidate cs[1];
    double at, t_stop;
    int code, i;

    snprintf(lease, sizeof(lease), "leader-partition-%d", (int)getpid());
    spawn(&cs[0], lease, "candidate-cut-off");
    i = next_report(cs, 1, 20, what, &at, &code);
    assert_int_equal(i, 0);
    assert_string_equal(what, "started");

    t_stop = time_mono();
    assert_int_equal(kube_env("stop"), 0);
    i = next_report(cs, 1, RENEW_S + 20, what, &at, &code);
    assert_int_equal(kube_env("start"), 0);
    assert_int_equal(i, 0);
    assert_string_equal(what, "stopped");
    assert_int_equal(code, -ETIMEDOUT);
    printf("leader without an apiserver stopped after %.2f s (renew deadline %.1f s)\n",
           at - t_stop, RENEW_S);
    /* It stops no later than renew_deadline after its last successful renewal, which was at
     * most one retry period (plus a request) before the apiserver went away. */
    assert_true(at - t_stop <= RENEW_S + SLACK_S);
    reap(&cs[0], 0);
    delete_lease(lease);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_leader__one_leader_then_standby_takes_over_after_kill),
        cmocka_unit_test(test_leader__clean_shutdown_releases_the_lease_for_a_quick_handover),
        cmocka_unit_test(test_leader__leader_that_cannot_renew_stops_within_the_deadline),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
