/*
 * The etcd membership client against real etcd 3.6.17 members on loopback addresses
 * 127.0.77.1-3, with TLS both ways from certificates lib/pki issues. Members are addressed by
 * the DNS names in their certificates (m0.test.svc ...), which do not resolve here, pinned to
 * their addresses. A 1-member cluster grows to three one learner at a time (add, start,
 * promote once in sync) and shrinks again; what etcd refuses comes back as the mapped codes;
 * a name the certificate does not hold fails verification. The shared super cluster is not
 * used. Every etcd started here is killed in teardown, also after a failed assertion, and dies
 * with the test process (PR_SET_PDEATHSIG) if that crashes.
 */

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <ev.h>

#include "lib/etcd/client.h"
#include "lib/kube/transport.h"
#include "lib/pki/cert.h"
#include "lib/util/strutil.h"
#include "test/support/proc.h"

#define ETCD_VERSION "3.6.17"
#define N_MEMBERS 3
#define WAIT_S 60.0

struct member {
    char name[8];
    char ip[16];
    char host[32]; /* the DNS name in its certificate */
    char peer_url[64];
    pid_t pid;
    uint64_t id;
};

struct env {
    char dir[64];
    char etcd[1024];
    struct ev_loop *loop;
    struct kube_transport *t;
    struct etcd_client *c;
    char *ca_cert, *ca_key, *client_cert, *client_key;
    int client_port, peer_port;
    struct member m[N_MEMBERS];
};

static struct env *ENV; /* for the exit handler */

/* ---- processes ---- */

static void kill_all(void)
{
    if (!ENV)
        return;
    for (int i = 0; i < N_MEMBERS; i++)
        if (ENV->m[i].pid > 0)
            kill(ENV->m[i].pid, SIGKILL);
}

/* Number of processes whose command line mentions dir (our etcd members pass it in flags). */
static int processes_using(const char *dir)
{
    DIR *d = opendir("/proc");
    struct dirent *de;
    int n = 0;

    assert_non_null(d);
    while ((de = readdir(d))) {
        char path[300], cmd[4096];
        ssize_t len;
        int fd;

        if (de->d_name[0] < '0' || de->d_name[0] > '9')
            continue;
        snprintf(path, sizeof(path), "/proc/%s/cmdline", de->d_name);
        fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
            continue;
        len = read(fd, cmd, sizeof(cmd) - 1);
        close(fd);
        if (len <= 0)
            continue;
        for (ssize_t i = 0; i < len; i++)
            if (cmd[i] == '\0')
                cmd[i] = ' ';
        cmd[len] = '\0';
        if (strstr(cmd, dir))
            n++;
    }
    closedir(d);
    return n;
}

static void show_log(const struct env *env, int i)
{
    char path[128], line[1024];
    long lines = 0, skip;
    FILE *f;

    snprintf(path, sizeof(path), "%s/%s.log", env->dir, env->m[i].name);
    f = fopen(path, "re");
    if (!f)
        return;
    while (fgets(line, sizeof(line), f))
        lines++;
    rewind(f);
    skip = lines > 25 ? lines - 25 : 0;
    fprintf(stderr, "--- %s (last %ld lines) ---\n", path, lines - skip);
    while (fgets(line, sizeof(line), f))
        if (skip-- <= 0)
            fputs(line, stderr);
    fclose(f);
}

static void write_file(const struct env *env, const char *name, const char *text)
{
    char path[256];
    int fd;

    snprintf(path, sizeof(path), "%s/%s", env->dir, name);
    fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    close(fd);
}

/* Starts member i; `existing` joins the cluster of members 0..i, else bootstraps it alone. */
static void start_member(struct env *env, int i, bool existing)
{
    struct member *m = &env->m[i];
    char a[16][1024], cluster[512] = "", logpath[128];
    size_t used = 0;
    pid_t parent = getpid(), pid;

    for (int j = 0; j <= (existing ? i : 0); j++)
        used += (size_t)snprintf(cluster + used, sizeof(cluster) - used, "%s%s=%s", j ? "," : "",
                                 env->m[j].name, env->m[j].peer_url);
    snprintf(a[0], sizeof(a[0]), "--data-dir=%s/%s.data", env->dir, m->name);
    snprintf(a[1], sizeof(a[1]), "--listen-client-urls=https://%s:%d", m->ip, env->client_port);
    snprintf(a[2], sizeof(a[2]), "--advertise-client-urls=https://%s:%d", m->ip, env->client_port);
    snprintf(a[3], sizeof(a[3]), "--listen-peer-urls=%s", m->peer_url);
    snprintf(a[4], sizeof(a[4]), "--initial-advertise-peer-urls=%s", m->peer_url);
    snprintf(a[5], sizeof(a[5]), "--initial-cluster=%s", cluster);
    snprintf(a[6], sizeof(a[6]), "--initial-cluster-state=%s", existing ? "existing" : "new");
    snprintf(a[7], sizeof(a[7]), "--trusted-ca-file=%s/ca.crt", env->dir);
    snprintf(a[8], sizeof(a[8]), "--cert-file=%s/%s.crt", env->dir, m->name);
    snprintf(a[9], sizeof(a[9]), "--key-file=%s/%s.key", env->dir, m->name);
    snprintf(a[10], sizeof(a[10]), "--peer-trusted-ca-file=%s/ca.crt", env->dir);
    snprintf(a[11], sizeof(a[11]), "--peer-cert-file=%s/%s.crt", env->dir, m->name);
    snprintf(a[12], sizeof(a[12]), "--peer-key-file=%s/%s.key", env->dir, m->name);
    snprintf(a[13], sizeof(a[13]), "--listen-metrics-urls=");
    char *argv[] = {env->etcd,
                    "--name",
                    m->name,
                    a[0],
                    a[1],
                    a[2],
                    a[3],
                    a[4],
                    a[5],
                    a[6],
                    "--initial-cluster-token=nestcp-etcd-test",
                    "--client-cert-auth",
                    "--peer-client-cert-auth",
                    a[7],
                    a[8],
                    a[9],
                    a[10],
                    a[11],
                    a[12],
                    "--log-level=info",
                    NULL};

    snprintf(logpath, sizeof(logpath), "%s/%s.log", env->dir, m->name);
    assert_true(m->pid <= 0);
    pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        /* Only async-signal-safe calls until exec. */
        int fd = open(logpath, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
        int null = open("/dev/null", O_RDONLY | O_CLOEXEC);

        if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || getppid() != parent || fd < 0 || null < 0)
            _exit(127);
        dup2(null, 0);
        dup2(fd, 1);
        dup2(fd, 2);
        execv(argv[0], argv);
        _exit(127);
    }
    m->pid = pid;
}

/* ---- the loop ---- */

static void tick_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
}

/* Runs the loop until *flag is set or timeout seconds pass. */
static bool run_until(struct env *env, const bool *flag, double timeout)
{
    double end = time_mono() + timeout;
    ev_timer tick;

    ev_timer_init(&tick, tick_cb, 0.05, 0.05);
    ev_timer_start(env->loop, &tick);
    while (!*flag && time_mono() < end)
        ev_run(env->loop, EVRUN_ONCE);
    ev_timer_stop(env->loop, &tick);
    return *flag;
}

/* What a callback saw, copied out of the borrowed result. */
struct outcome {
    bool done;
    int code;
    char msg[ERR_MSG_MAX];
    size_t n;
    struct {
        uint64_t id;
        char name[16];
        bool learner;
        char peer_url[64];
        size_t n_client_urls;
    } m[8];
    uint64_t added;
    bool added_learner;
    bool has_status;
    struct etcd_status status;
    struct etcd_header header;
};

static void on_done(void *userdata, const struct etcd_result *res)
{
    struct outcome *o = userdata;
    const struct etcd_member_list *l = res->members;

    o->done = true;
    o->code = res->code;
    snprintf(o->msg, sizeof(o->msg), "%s", res->err->msg);
    if (l) {
        o->header = l->header;
        o->n = l->n_members;
        for (size_t i = 0; i < l->n_members && i < 8; i++) {
            o->m[i].id = l->members[i].id;
            snprintf(o->m[i].name, sizeof(o->m[i].name), "%s", l->members[i].name);
            o->m[i].learner = l->members[i].is_learner;
            snprintf(o->m[i].peer_url, sizeof(o->m[i].peer_url), "%s",
                     l->members[i].n_peer_urls ? l->members[i].peer_urls[0] : "");
            o->m[i].n_client_urls = l->members[i].n_client_urls;
        }
        if (l->added) {
            o->added = l->added->id;
            o->added_learner = l->added->is_learner;
        }
    }
    if (res->status) {
        o->has_status = true;
        o->status = *res->status;
        o->header = res->status->header;
    }
}

static void wait_done(struct env *env, struct outcome *o)
{
    if (!run_until(env, &o->done, WAIT_S))
        fail_msg("no answer within %.0f s", WAIT_S);
}

static struct etcd_endpoint endpoint(const struct env *env, int i)
{
    return (struct etcd_endpoint){
        .host = env->m[i].host, .ip = env->m[i].ip, .port = env->client_port};
}

/* Calls that run to completion on the loop; each returns the outcome's code. */
static int list(struct env *env, int via, struct outcome *o)
{
    struct etcd_endpoint ep = endpoint(env, via);
    struct err e;

    memset(o, 0, sizeof(*o));
    assert_int_equal(etcd_member_list(env->c, &ep, on_done, o, NULL, &e), 0);
    wait_done(env, o);
    return o->code;
}

static int add(struct env *env, int via, const char *peer_url, bool learner, struct outcome *o)
{
    struct etcd_endpoint ep = endpoint(env, via);
    const char *urls[] = {peer_url};
    struct err e;

    memset(o, 0, sizeof(*o));
    assert_int_equal(etcd_member_add(env->c, &ep, urls, 1, learner, on_done, o, NULL, &e), 0);
    wait_done(env, o);
    return o->code;
}

static int promote(struct env *env, int via, uint64_t id, struct outcome *o)
{
    struct etcd_endpoint ep = endpoint(env, via);
    struct err e;

    memset(o, 0, sizeof(*o));
    assert_int_equal(etcd_member_promote(env->c, &ep, id, on_done, o, NULL, &e), 0);
    wait_done(env, o);
    return o->code;
}

static int remove_member(struct env *env, int via, uint64_t id, struct outcome *o)
{
    struct etcd_endpoint ep = endpoint(env, via);
    struct err e;

    memset(o, 0, sizeof(*o));
    assert_int_equal(etcd_member_remove(env->c, &ep, id, on_done, o, NULL, &e), 0);
    wait_done(env, o);
    return o->code;
}

static int status(struct env *env, int of, struct outcome *o)
{
    struct etcd_endpoint ep = endpoint(env, of);
    struct err e;

    memset(o, 0, sizeof(*o));
    assert_int_equal(etcd_status_get(env->c, &ep, on_done, o, NULL, &e), 0);
    wait_done(env, o);
    return o->code;
}

/*
 * A call repeated on the loop every 100 ms while its condition does not hold and the member
 * still runs, for at most WAIT_S: the health of a starting member, the promotion of a learner
 * catching up, a promoted member seeing itself vote.
 */
enum retry_kind {
    RETRY_HEALTH,  /* until /health answers 0 */
    RETRY_PROMOTE, /* while promote answers -EAGAIN */
    RETRY_VOTING,  /* until status says the member is no learner */
    RETRY_ADD,     /* while add answers -ENETDOWN (not connected to every voter for 5 s) */
    RETRY_REMOVE,  /* likewise for remove */
};

struct retry {
    struct env *env;
    int member; /* whose process must stay alive */
    int via;
    uint64_t id;
    const char *peer_url; /* RETRY_ADD */
    bool voting;          /* RETRY_ADD: a voting member rather than a learner */
    enum retry_kind kind;
    char first_refusal[ERR_MSG_MAX];
    double deadline;
    ev_timer timer;
    int attempts;
    bool finished;
    struct outcome o;
};

static void retry_start(struct retry *r);

static void retry_done(void *userdata, const struct etcd_result *res)
{
    struct retry *r = userdata;
    bool again = r->kind == RETRY_PROMOTE                          ? res->code == -EAGAIN
                 : r->kind == RETRY_ADD || r->kind == RETRY_REMOVE ? res->code == -ENETDOWN
                 : r->kind == RETRY_VOTING ? res->code != 0 || res->status->is_learner
                                           : res->code != 0;

    if (again && !r->first_refusal[0])
        snprintf(r->first_refusal, sizeof(r->first_refusal), "%s", res->err->msg);

    on_done(&r->o, res);
    r->o.done = false;
    if (again && time_mono() < r->deadline && proc_alive(&r->env->m[r->member].pid)) {
        ev_timer_set(&r->timer, 0.1, 0.);
        ev_timer_start(r->env->loop, &r->timer);
        return;
    }
    r->finished = true;
}

static void retry_timer_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
    retry_start(w->data);
}

static void retry_start(struct retry *r)
{
    struct etcd_endpoint ep = endpoint(r->env, r->via);
    struct err e;
    int rc;

    r->attempts++;
    switch (r->kind) {
    case RETRY_PROMOTE:
        rc = etcd_member_promote(r->env->c, &ep, r->id, retry_done, r, NULL, &e);
        break;
    case RETRY_ADD:
        rc = etcd_member_add(r->env->c, &ep, &r->peer_url, 1, !r->voting, retry_done, r, NULL, &e);
        break;
    case RETRY_REMOVE:
        rc = etcd_member_remove(r->env->c, &ep, r->id, retry_done, r, NULL, &e);
        break;
    case RETRY_VOTING:
        rc = etcd_status_get(r->env->c, &ep, retry_done, r, NULL, &e);
        break;
    default:
        rc = etcd_health_get(r->env->c, &ep, retry_done, r, NULL, &e);
        break;
    }
    if (rc < 0) {
        r->o.code = rc;
        r->finished = true;
    }
}

static int retry_run(struct env *env, struct retry *r)
{
    r->env = env;
    r->deadline = time_mono() + WAIT_S;
    ev_timer_init(&r->timer, retry_timer_cb, 0., 0.);
    r->timer.data = r;
    retry_start(r);
    run_until(env, &r->finished, WAIT_S + 10);
    ev_timer_stop(env->loop, &r->timer);
    assert_true(r->finished);
    return r->o.code;
}

static void wait_healthy(struct env *env, int i)
{
    struct retry r = {.member = i, .via = i};

    if (retry_run(env, &r) != 0) {
        show_log(env, i);
        fail_msg("%s did not become healthy after %d probes: %d %s", env->m[i].name, r.attempts,
                 r.o.code, r.o.msg);
    }
}

/* Promotes learner i through member `via`, again while etcd answers that it is not in sync. */
static int promote_when_in_sync(struct env *env, int via, int i, struct outcome *o)
{
    struct retry r = {.member = i, .via = via, .id = env->m[i].id, .kind = RETRY_PROMOTE};
    int code = retry_run(env, &r);

    *o = r.o;
    if (code != 0)
        show_log(env, i);
    fprintf(stderr, "# promote %s: %d attempt(s)%s%s\n", env->m[i].name, r.attempts,
            r.first_refusal[0] ? ", first answer: " : "", r.first_refusal);
    return code;
}

/* A membership change through `via`, again while etcd answers that the cluster is not healthy
 * yet: its leader must have been connected to every voting member for the last 5 s, which
 * takes that long after a member started or was promoted. */
static int change_when_healthy(struct env *env, struct retry *r, const char *what,
                               struct outcome *o)
{
    int code;

    r->member = r->via;
    code = retry_run(env, r);
    *o = r->o;
    fprintf(stderr, "# %s: %d attempt(s)%s%s\n", what, r->attempts,
            r->first_refusal[0] ? ", first answer: " : "", r->first_refusal);
    return code;
}

static int add_when_healthy(struct env *env, int via, const char *peer_url, bool voting,
                            struct outcome *o)
{
    struct retry r = {.via = via, .peer_url = peer_url, .voting = voting, .kind = RETRY_ADD};
    char what[128];

    snprintf(what, sizeof(what), "add %s", peer_url);
    return change_when_healthy(env, &r, what, o);
}

static int remove_when_healthy(struct env *env, int via, uint64_t id, struct outcome *o)
{
    struct retry r = {.via = via, .id = id, .kind = RETRY_REMOVE};
    char what[64];

    snprintf(what, sizeof(what), "remove %" PRIx64, id);
    return change_when_healthy(env, &r, what, o);
}

/* ---- set-up ---- */

static bool executable(const char *path)
{
    return access(path, X_OK) == 0;
}

static void find_etcd(struct env *env)
{
    const char *root = getenv("NESTCP_BIN_ROOT"), *dir = getenv("NESTCP_ETCD_BIN_DIR");
    const char *home = getenv("HOME");

    if (root && root[0]) {
        snprintf(env->etcd, sizeof(env->etcd), "%s/etcd-" ETCD_VERSION "/bin/etcd", root);
        if (executable(env->etcd))
            return;
    }
    if (dir && dir[0] && strstr(dir, "etcd-" ETCD_VERSION)) {
        snprintf(env->etcd, sizeof(env->etcd), "%s/etcd", dir);
        if (executable(env->etcd))
            return;
    }
    if (home) {
        snprintf(env->etcd, sizeof(env->etcd), "%s/.cache/nestcp/etcd-" ETCD_VERSION "/bin/etcd",
                 home);
        if (executable(env->etcd))
            return;
    }
    fail_msg("etcd " ETCD_VERSION " not found (NESTCP_BIN_ROOT, NESTCP_ETCD_BIN_DIR, "
             "~/.cache/nestcp); hack/kube-build.sh etcd " ETCD_VERSION " builds it");
}

static bool can_bind(const char *ip, int port)
{
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), r;
    int one = 1;

    assert_true(fd >= 0);
    assert_int_equal(inet_pton(AF_INET, ip, &a.sin_addr), 1);
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    r = bind(fd, (struct sockaddr *)&a, sizeof(a));
    close(fd);
    return r == 0;
}

/* A client and a peer port, below the ephemeral range, free on every member's address. */
static void pick_ports(struct env *env)
{
    for (int tries = 0; tries < 200; tries++) {
        int p = 20000 + 2 * (rand() % 5000);
        bool ok = true;

        for (int i = 0; i < N_MEMBERS && ok; i++)
            ok = can_bind(env->m[i].ip, p) && can_bind(env->m[i].ip, p + 1);
        if (ok) {
            env->client_port = p;
            env->peer_port = p + 1;
            return;
        }
    }
    fail_msg("no free port pair on 127.0.77.1-%d", N_MEMBERS);
}

static void issue(struct env *env, const char *cn, const char *dns, const char *ip, unsigned eku,
                  char **ret_cert, char **ret_key)
{
    struct pki_cert_spec s;
    struct err e;

    pki_cert_spec_init(&s);
    assert_int_equal(pki_cert_spec_set_cn(&s, cn, &e), 0);
    if (dns)
        assert_int_equal(pki_cert_spec_add_dns(&s, dns, &e), 0);
    if (ip) {
        assert_int_equal(pki_cert_spec_add_ip(&s, ip, &e), 0);
        /* etcd matches a peer's source address against its certificate's IPs, and the
         * kernel sends from 127.0.0.1 to every loopback address. */
        assert_int_equal(pki_cert_spec_add_ip(&s, "127.0.0.1", &e), 0);
    }
    s.ext_usage = eku;
    s.is_ca = !env;
    if (pki_cert_issue(env ? env->ca_cert : NULL, env ? env->ca_key : NULL, &s, ret_cert, ret_key,
                       &e) < 0)
        fail_msg("issuing %s: %s", cn, e.msg);
    pki_cert_spec_done(&s);
}

static int setup(void **state)
{
    struct env *env = calloc(1, sizeof(*env));
    struct err e;

    assert_non_null(env);
    ENV = env;
    find_etcd(env);
    snprintf(env->dir, sizeof(env->dir), "/tmp/nestcp-etcd-members-XXXXXX");
    assert_non_null(mkdtemp(env->dir));
    for (int i = 0; i < N_MEMBERS; i++) {
        struct member *m = &env->m[i];

        snprintf(m->name, sizeof(m->name), "m%d", i);
        snprintf(m->ip, sizeof(m->ip), "127.0.77.%d", i + 1);
        snprintf(m->host, sizeof(m->host), "m%d.test.svc", i);
    }
    pick_ports(env);
    issue(NULL, "etcd-ca", NULL, NULL, 0, &env->ca_cert, &env->ca_key);
    write_file(env, "ca.crt", env->ca_cert);
    for (int i = 0; i < N_MEMBERS; i++) {
        struct member *m = &env->m[i];
        char *cert, *key, file[32];

        snprintf(m->peer_url, sizeof(m->peer_url), "https://127.0.77.%d:%d", i + 1, env->peer_port);
        /* Serving and peer certificate in one; etcd's gateway dials its own gRPC server with
         * the serving certificate as client, so it needs clientAuth too (as kubeadm's has). */
        issue(env, m->name, m->host, m->ip, PKI_EKU_SERVER_AUTH | PKI_EKU_CLIENT_AUTH, &cert, &key);
        snprintf(file, sizeof(file), "%s.crt", m->name);
        write_file(env, file, cert);
        snprintf(file, sizeof(file), "%s.key", m->name);
        write_file(env, file, key);
        free(cert);
        free(key);
    }
    issue(env, "nestcp-etcd-client", NULL, NULL, PKI_EKU_CLIENT_AUTH, &env->client_cert,
          &env->client_key);

    env->loop = ev_loop_new(EVFLAG_AUTO);
    assert_int_equal(kube_transport_new(env->loop, &env->t), 0);
    struct etcd_tls tls = {
        .ca_pem = env->ca_cert, .cert_pem = env->client_cert, .key_pem = env->client_key};
    assert_int_equal(etcd_client_new(env->t, &tls, &env->c, &e), 0);

    start_member(env, 0, false);
    wait_healthy(env, 0);
    *state = env;
    return 0;
}

static int teardown(void **state)
{
    struct env *env = ENV;
    char cmd[128];

    if (!env)
        return 0;
    for (int i = 0; i < N_MEMBERS; i++)
        proc_stop(&env->m[i].pid, 10);
    etcd_client_free(env->c);
    if (env->t)
        kube_transport_free(env->t);
    if (env->loop)
        ev_loop_destroy(env->loop);
    /* Nothing started here outlives the test. */
    assert_int_equal(processes_using(env->dir), 0);
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", env->dir);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", env->dir);
    free(env->ca_cert);
    free(env->ca_key);
    free(env->client_cert);
    free(env->client_key);
    free(env);
    ENV = NULL;
    return 0;
}

/* ---- the tests ---- */

static int index_of(const struct outcome *o, uint64_t id)
{
    for (size_t i = 0; i < o->n; i++)
        if (o->m[i].id == id)
            return (int)i;
    return -1;
}

/* Adds member i as a learner through `via`, starts it, and promotes it once it is in sync. */
static void grow(struct env *env, int via, int i)
{
    struct outcome o;
    int k;

    assert_int_equal(add_when_healthy(env, via, env->m[i].peer_url, false, &o), 0);
    assert_true(o.added != 0);
    assert_true(o.added_learner);
    assert_int_equal(o.n, (size_t)i + 1);
    k = index_of(&o, o.added);
    assert_true(k >= 0);
    /* Not started: etcd knows its peer URL only. */
    assert_true(o.m[k].learner);
    assert_string_equal(o.m[k].name, "");
    assert_string_equal(o.m[k].peer_url, env->m[i].peer_url);
    assert_int_equal(o.m[k].n_client_urls, 0);
    env->m[i].id = o.added;

    /* A learner that has not even started is not in sync: try again later. */
    assert_int_equal(promote(env, via, env->m[i].id, &o), -EAGAIN);
    assert_string_equal(
        o.msg, "etcdserver: can only promote a learner member which is in sync with leader");
    /* Only one learner at a time. */
    assert_int_equal(add(env, via, "https://127.0.77.4:2380", true, &o), -EUSERS);
    assert_string_equal(o.msg, "etcdserver: too many learner members in cluster");

    start_member(env, i, true);
    wait_healthy(env, i);
    /* A learner reports itself as one, and serves no membership calls. */
    assert_int_equal(status(env, i, &o), 0);
    assert_true(o.status.is_learner);
    assert_true(o.header.member_id == env->m[i].id);
    assert_int_equal(list(env, i, &o), -EOPNOTSUPP);
    assert_string_equal(o.msg, "etcdserver: rpc not supported for learner");

    assert_int_equal(promote_when_in_sync(env, via, i, &o), 0);
    k = index_of(&o, env->m[i].id);
    assert_true(k >= 0);
    assert_false(o.m[k].learner);

    /* The member itself learns of its promotion when it applies it; until then it still
     * refuses membership calls as a learner. */
    struct retry voting = {.member = i, .via = i, .kind = RETRY_VOTING};
    if (retry_run(env, &voting) != 0 || voting.o.status.is_learner)
        fail_msg("%s still a learner after %d probes: %s", env->m[i].name, voting.attempts,
                 voting.o.msg);
    assert_int_equal(list(env, i, &o), 0);
    assert_int_equal(o.n, (size_t)i + 1);
}

static void test_members__grow_to_three_and_shrink(void **state)
{
    struct env *env = *state;
    struct outcome o;
    uint64_t cluster_id, leader;
    int k;

    /* One member, as bootstrapped. */
    assert_int_equal(list(env, 0, &o), 0);
    assert_int_equal(o.n, 1);
    assert_string_equal(o.m[0].name, "m0");
    assert_false(o.m[0].learner);
    assert_string_equal(o.m[0].peer_url, env->m[0].peer_url);
    assert_int_equal(o.m[0].n_client_urls, 1);
    assert_true(o.header.cluster_id != 0);
    assert_true(o.header.member_id == o.m[0].id);
    env->m[0].id = o.m[0].id;
    cluster_id = o.header.cluster_id;
    fprintf(stderr, "# cluster %" PRIx64 ", m0 %" PRIx64 "\n", cluster_id, env->m[0].id);

    grow(env, 0, 1);
    /* The third through the second member, as any voting member serves the calls. */
    grow(env, 1, 2);

    assert_int_equal(list(env, 2, &o), 0);
    assert_int_equal(o.n, 3);
    for (int i = 0; i < N_MEMBERS; i++) {
        k = index_of(&o, env->m[i].id);
        assert_true(k >= 0);
        assert_string_equal(o.m[k].name, env->m[i].name);
        assert_false(o.m[k].learner);
        assert_int_equal(o.m[k].n_client_urls, 1);
    }

    /* Every member reports the same cluster and leader, as a voting member. */
    leader = 0;
    for (int i = 0; i < N_MEMBERS; i++) {
        assert_int_equal(status(env, i, &o), 0);
        assert_true(o.has_status);
        assert_true(o.header.cluster_id == cluster_id);
        assert_true(o.header.member_id == env->m[i].id);
        assert_false(o.status.is_learner);
        assert_string_equal(o.status.version, ETCD_VERSION);
        assert_true(o.status.leader != 0);
        assert_true(o.status.raft_index > 0);
        assert_true(o.status.db_size > 0);
        if (i == 0)
            leader = o.status.leader;
        assert_true(o.status.leader == leader);
    }
    assert_true(leader == env->m[0].id || leader == env->m[1].id || leader == env->m[2].id);

    /* Remove the third; the others no longer list it, and it cannot be removed twice. */
    assert_int_equal(remove_when_healthy(env, 0, env->m[2].id, &o), 0);
    assert_int_equal(o.n, 2);
    assert_int_equal(index_of(&o, env->m[2].id), -1);
    assert_int_equal(list(env, 1, &o), 0);
    assert_int_equal(o.n, 2);
    assert_int_equal(index_of(&o, env->m[2].id), -1);
    assert_true(index_of(&o, env->m[0].id) >= 0 && index_of(&o, env->m[1].id) >= 0);
    assert_int_equal(remove_member(env, 1, env->m[2].id, &o), -ENOENT);
    assert_string_equal(o.msg, "etcdserver: member not found");
    proc_stop(&env->m[2].pid, 10);

    /* A voting member that never starts is accepted while two of three run; removing a running
     * member then would leave one started member of two: refused for quorum. */
    assert_int_equal(add_when_healthy(env, 0, "https://127.0.77.4:2380", true, &o), 0);
    assert_false(o.added_learner);
    uint64_t absent = o.added;
    assert_int_equal(remove_member(env, 0, env->m[1].id, &o), -EHOSTDOWN);
    assert_string_equal(o.msg,
                        "etcdserver: re-configuration failed due to not enough started members");
    assert_int_equal(remove_when_healthy(env, 0, absent, &o), 0);
    assert_int_equal(o.n, 2);
}

/* What etcd refuses, as the codes the controller acts on. */
static void test_members__refusals(void **state)
{
    struct env *env = *state;
    struct outcome o;

    assert_int_equal(list(env, 0, &o), 0);
    env->m[0].id = o.m[index_of(&o, o.header.member_id)].id;

    /* A voting member cannot be promoted. */
    assert_int_equal(promote(env, 0, env->m[0].id, &o), -EALREADY);
    assert_string_equal(o.msg, "etcdserver: can only promote a learner member");
    /* IDs that are no member's; above 2^53 too. */
    assert_int_equal(promote(env, 0, UINT64_C(12345), &o), -ENOENT);
    assert_int_equal(remove_member(env, 0, UINT64_MAX - 1, &o), -ENOENT);
    assert_string_equal(o.msg, "etcdserver: member not found");
    /* A peer URL that a member has. */
    assert_int_equal(add(env, 0, env->m[0].peer_url, true, &o), -EEXIST);
    assert_string_equal(o.msg, "etcdserver: Peer URLs already exists");
    /* No URL at all. */
    assert_int_equal(add(env, 0, "not-a-url", true, &o), -EINVAL);
    assert_string_equal(o.msg, "etcdserver: given member URLs are invalid");
}

/* Runs one call with its own transport and client (no connection or pinned name shared with
 * the other tests) and returns its outcome. */
static int call_alone(struct env *env, const struct etcd_tls *tls, const char *host, int ip_of,
                      struct outcome *o)
{
    struct kube_transport *t = NULL;
    struct etcd_client *c = NULL;
    struct etcd_endpoint ep = {.host = host, .ip = env->m[ip_of].ip, .port = env->client_port};
    struct err e;

    memset(o, 0, sizeof(*o));
    assert_int_equal(kube_transport_new(env->loop, &t), 0);
    assert_int_equal(etcd_client_new(t, tls, &c, &e), 0);
    assert_int_equal(etcd_member_list(c, &ep, on_done, o, NULL, &e), 0);
    wait_done(env, o);
    etcd_client_free(c);
    kube_transport_free(t);
    return o->code;
}

/* TLS is verified against the pinned name: another member's name, or one no certificate
 * holds, on m0's address fails; so do a foreign CA and a foreign client certificate. */
static void test_members__tls_is_verified(void **state)
{
    struct env *env = *state;
    struct etcd_tls tls = {
        .ca_pem = env->ca_cert, .cert_pem = env->client_cert, .key_pem = env->client_key};
    char *other_ca, *other_ca_key, *other_cert, *other_key;
    struct outcome o;

    /* The control: m0's own name on its address. */
    assert_int_equal(call_alone(env, &tls, "m0.test.svc", 0, &o), 0);
    /* Its IP, which its certificate also holds, without pinning. */
    {
        struct etcd_endpoint ep = {.host = env->m[0].ip, .port = env->client_port};
        struct err e;

        memset(&o, 0, sizeof(o));
        assert_int_equal(etcd_health_get(env->c, &ep, on_done, &o, NULL, &e), 0);
        wait_done(env, &o);
        assert_int_equal(o.code, 0);
    }

    assert_int_equal(call_alone(env, &tls, "m1.test.svc", 0, &o), -EKEYREJECTED);
    assert_non_null(strstr(o.msg, "m1.test.svc"));
    fprintf(stderr, "# m1.test.svc on m0's address: %s\n", o.msg);
    assert_int_equal(call_alone(env, &tls, "nosuch.test.svc", 0, &o), -EKEYREJECTED);

    /* A CA that did not sign m0's certificate. */
    issue(NULL, "other-ca", NULL, NULL, 0, &other_ca, &other_ca_key);
    struct etcd_tls foreign_ca = {
        .ca_pem = other_ca, .cert_pem = env->client_cert, .key_pem = env->client_key};
    assert_int_equal(call_alone(env, &foreign_ca, "m0.test.svc", 0, &o), -EKEYREJECTED);
    fprintf(stderr, "# foreign CA: %s\n", o.msg);

    /* A client certificate of another CA: m0 ends the handshake. */
    struct env other = {.ca_cert = other_ca, .ca_key = other_ca_key};
    issue(&other, "intruder", NULL, NULL, PKI_EKU_CLIENT_AUTH, &other_cert, &other_key);
    struct etcd_tls foreign_client = {
        .ca_pem = env->ca_cert, .cert_pem = other_cert, .key_pem = other_key};
    assert_int_equal(call_alone(env, &foreign_client, "m0.test.svc", 0, &o), -ECONNRESET);
    fprintf(stderr, "# foreign client certificate: %s\n", o.msg);
    free(other_ca);
    free(other_ca_key);
    free(other_cert);
    free(other_key);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_members__refusals),
        cmocka_unit_test(test_members__tls_is_verified),
        cmocka_unit_test(test_members__grow_to_three_and_shrink),
    };

    srand((unsigned)time(NULL) ^ (unsigned)getpid());
    atexit(kill_all);
    return cmocka_run_group_tests(tests, setup, teardown);
}
