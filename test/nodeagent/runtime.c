#include "test/nodeagent/runtime.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "lib/util/buf.h"
#include "lib/util/strutil.h"
#include "test/nodeagent/hosts.h"
#include "test/nodeagent/podvol.h"
#include "test/nodeagent/proc.h"
#include "test/nodeagent/runtime_internal.h"

#define RT_IPS_PER_NET (254u * 253u) /* 127.x.<1..254>.<2..254> */
#define RT_SETUP_RETRY 2.0
#define RT_PATH_MAX 4096

#define container_of(ptr, type, member) ((type *)((char *)(ptr)-offsetof(type, member)))

static void container_start(struct rt_container *c);
static void pod_check_stopped(struct rt_pod *p);

/* ---- small helpers ---- */

static void set_str(char **dst, const char *src)
{
    char *copy = src ? strdup(src) : NULL;

    free(*dst);
    *dst = copy; /* NULL when out of memory: the status then simply lacks the text */
}

static void set_waiting(struct rt_container *c, const char *reason, const char *message)
{
    c->state = RT_WAITING;
    set_str(&c->reason, reason);
    set_str(&c->message, message);
}

static void emit(struct rt_pod *p, const char *container, const char *reason, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static void emit(struct rt_pod *p, const char *container, const char *reason, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;

    if (!p->rt->o.cb.event)
        return;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    p->rt->o.cb.event(p->rt->o.userdata, p->ns, p->name, container, reason, msg);
}

struct rt_pod *rt_pod_find(const struct runtime *rt, const char *ns, const char *name)
{
    for (struct rt_pod *p = rt->pods; p; p = p->next)
        if (strcmp(p->ns, ns) == 0 && strcmp(p->name, name) == 0)
            return p;
    return NULL;
}

static int path_join(char *out, size_t size, const char *a, const char *b)
{
    return (size_t)snprintf(out, size, "%s/%s", a, b) < size ? 0 : -ENAMETOOLONG;
}

/* ---- notifications (always from the loop) ---- */

static void notify_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
    struct rt_pod *p = container_of(w, struct rt_pod, notify_w);
    struct runtime *rt = p->rt;
    char ns[256], name[256];
    bool stopped;

    snprintf(ns, sizeof(ns), "%s", p->ns);
    snprintf(name, sizeof(name), "%s", p->name);
    stopped = p->stopped && !p->stop_notified;
    if (stopped)
        p->stop_notified = true;
    if (rt->o.cb.pod_changed)
        rt->o.cb.pod_changed(rt->o.userdata, ns, name);
    if (stopped && rt->o.cb.pod_stopped && rt_pod_find(rt, ns, name) == p)
        rt->o.cb.pod_stopped(rt->o.userdata, ns, name);
}

static void pod_notify(struct rt_pod *p)
{
    if (!ev_is_active(&p->notify_w))
        ev_timer_start(p->rt->loop, &p->notify_w);
}

/* ---- hosts files ---- */

static int write_in_place(const char *path, const char *data, size_t len)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
    int r = 0;

    /* In place, not by rename: running containers have this very inode bind-mounted. */
    if (fd < 0)
        return -errno;
    while (len > 0) {
        ssize_t n = write(fd, data, len);

        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            r = -errno;
            break;
        }
        data += n;
        len -= (size_t)n;
    }
    if (close(fd) < 0 && r == 0)
        r = -errno;
    return r;
}

static int hosts_write_pod(struct runtime *rt, struct rt_pod *self, const struct hosts_pod *all,
                           size_t n)
{
    struct hosts_pod me = {0};
    struct buf b = BUF_INIT;
    int r;

    for (size_t i = 0; i < n; i++)
        if (strcmp(all[i].namespace_, self->ns) == 0 && strcmp(all[i].name, self->name) == 0)
            me = all[i];
    r = hosts_render(&me, all, n, rt->services, rt->domain, &b);
    if (r == 0 && (!self->hosts || strcmp(self->hosts, b.data) != 0)) {
        r = write_in_place(self->hosts_path, b.data, b.len);
        if (r == 0) {
            free(self->hosts);
            self->hosts = buf_steal(&b);
        }
    }
    buf_done(&b);
    return r;
}

/* Rewrites the hosts file of every pod (only or also) whose content changed. */
static int hosts_update(struct runtime *rt, struct rt_pod *only)
{
    struct hosts_pod *all;
    size_t n = 0, i = 0;
    int r = 0;

    for (struct rt_pod *p = rt->pods; p; p = p->next)
        n++;
    all = calloc(n ? n : 1, sizeof(*all));
    if (!all)
        return -ENOMEM;
    for (struct rt_pod *p = rt->pods; p; p = p->next, i++) {
        all[i].namespace_ = p->ns;
        all[i].name = p->name;
        all[i].hostname = podobj_str(p->obj, "spec", "hostname", NULL) ?: p->name;
        all[i].subdomain = podobj_str(p->obj, "spec", "subdomain", NULL);
        all[i].labels = podobj_get(p->obj, "metadata", "labels", NULL);
        all[i].ip = p->ip;
        all[i].ready = p->ready && !p->stopping;
    }
    for (struct rt_pod *p = rt->pods; p; p = p->next) {
        if (only && p != only)
            continue;
        int q = hosts_write_pod(rt, p, all, n);

        if (q < 0 && r == 0)
            r = q;
    }
    free(all);
    return r;
}

static void hosts_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
    struct runtime *rt = container_of(w, struct runtime, hosts_w);

    hosts_update(rt, NULL);
}

static void hosts_schedule(struct runtime *rt)
{
    if (!ev_is_active(&rt->hosts_w))
        ev_timer_start(rt->loop, &rt->hosts_w);
}

/* ---- pod IPs ---- */

static void ip_format(const struct runtime *rt, unsigned index, char out[INET_ADDRSTRLEN])
{
    /* Octets are taken modulo 256 so the compiler can see the text fits (pod_net <= 255 and
     * index < 254 * 253 are checked where they are set). */
    snprintf(out, INET_ADDRSTRLEN, "127.%u.%u.%u", rt->o.pod_net & 0xffu, (1 + index / 253) & 0xffu,
             (2 + index % 253) & 0xffu);
}

static bool ip_taken(const struct runtime *rt, unsigned index)
{
    for (const struct rt_pod *p = rt->pods; p; p = p->next)
        if (p->ip[0] && p->ip_index == index)
            return true;
    return false;
}

/* Keeps the pod's earlier IP when it is in this node's range and free (so an agent restart
 * does not move pods), else takes the next free one after the last handed out. */
static int ip_alloc(struct runtime *rt, struct rt_pod *p)
{
    const char *prev = podobj_str(p->obj, "status", "podIP", NULL);
    unsigned a, b, c, d;
    char tail;

    if (prev && sscanf(prev, "%u.%u.%u.%u%c", &a, &b, &c, &d, &tail) == 4 && a == 127 &&
        b == rt->o.pod_net && c >= 1 && c <= 254 && d >= 2 && d <= 254) {
        unsigned index = (c - 1) * 253 + (d - 2);

        if (!ip_taken(rt, index)) {
            p->ip_index = index;
            ip_format(rt, index, p->ip);
            return 0;
        }
    }
    for (unsigned k = 0; k < RT_IPS_PER_NET; k++) {
        unsigned index = (rt->ip_next + k) % RT_IPS_PER_NET;

        if (ip_taken(rt, index))
            continue;
        rt->ip_next = (index + 1) % RT_IPS_PER_NET;
        p->ip_index = index;
        ip_format(rt, index, p->ip);
        return 0;
    }
    return -ENOSPC;
}

/* ---- containers ---- */

static void container_pidfile(struct rt_container *c, pid_t pid)
{
    char path[RT_PATH_MAX], text[32];
    int n;

    if ((size_t)snprintf(path, sizeof(path), "%s/%s.pid", c->pod->dir, c->name) >= sizeof(path))
        return;
    if (pid <= 0) {
        unlink(path);
        return;
    }
    n = snprintf(text, sizeof(text), "%d\n", (int)pid);
    write_in_place(path, text, (size_t)n);
}

static void pod_update_ready(struct rt_pod *p)
{
    bool ready = p->nctrs > 0 && !p->stopping;

    for (size_t i = 0; i < p->nctrs; i++)
        ready = ready && p->ctrs[i].ready;
    if (ready != p->ready) {
        p->ready = ready;
        p->ready_changed = time_wall();
        hosts_schedule(p->rt);
        pod_notify(p);
    }
}

static void container_kill(struct rt_container *c, double grace)
{
    if (c->pid <= 0)
        return;
    if (!c->killing) {
        c->killing = true;
        proc_signal_group(c->pid, grace > 0 ? SIGTERM : SIGKILL);
    }
    if (grace <= 0) {
        proc_signal_group(c->pid, SIGKILL);
        return;
    }
    /* A later, shorter grace period (a second delete) wins, as with the kubelet. */
    if (ev_is_active(&c->kill_w) && ev_timer_remaining(c->pod->rt->loop, &c->kill_w) <= grace)
        return;
    ev_timer_stop(c->pod->rt->loop, &c->kill_w);
    ev_timer_set(&c->kill_w, grace, 0);
    ev_timer_start(c->pod->rt->loop, &c->kill_w);
}

static void kill_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
    struct rt_container *c = container_of(w, struct rt_container, kill_w);

    if (c->pid > 0) {
        emit(c->pod, c->name, "Killing", "grace period over: SIGKILL to process group %d",
             (int)c->pid);
        proc_signal_group(c->pid, SIGKILL);
    }
}

static void probes_stop(struct rt_container *c)
{
    if (c->has_readiness)
        probe_stop(&c->readiness);
    if (c->has_liveness)
        probe_stop(&c->liveness);
    if (c->has_startup)
        probe_stop(&c->startup);
}

static void readiness_result(struct probe *pr, bool ok)
{
    struct rt_container *c = container_of(pr, struct rt_container, readiness);
    bool ready = c->ready;

    if (ok && pr->successes >= pr->spec.success_threshold)
        ready = true;
    else if (!ok && pr->failures >= pr->spec.failure_threshold)
        ready = false;
    if (!ok && pr->failures == pr->spec.failure_threshold)
        emit(c->pod, c->name, "Unhealthy", "readiness probe failed %d times", pr->failures);
    if (ready != c->ready) {
        c->ready = ready;
        pod_update_ready(c->pod);
    }
}

static void liveness_result(struct probe *pr, bool ok)
{
    struct rt_container *c = container_of(pr, struct rt_container, liveness);

    if (ok || pr->failures < pr->spec.failure_threshold || c->killing)
        return;
    emit(c->pod, c->name, "Unhealthy", "liveness probe failed %d times; restarting", pr->failures);
    probes_stop(c);
    container_kill(c, c->pod->grace);
}

static void start_after_startup(struct rt_container *c)
{
    c->started = true;
    if (c->has_readiness)
        probe_start(&c->readiness, c->pid, c->env.vars);
    else
        c->ready = true;
    if (c->has_liveness)
        probe_start(&c->liveness, c->pid, c->env.vars);
    pod_update_ready(c->pod);
    pod_notify(c->pod);
}

static void startup_result(struct probe *pr, bool ok)
{
    struct rt_container *c = container_of(pr, struct rt_container, startup);

    if (ok && pr->successes >= pr->spec.success_threshold) {
        probe_stop(pr);
        start_after_startup(c);
    } else if (!ok && pr->failures >= pr->spec.failure_threshold && !c->killing) {
        emit(c->pod, c->name, "Unhealthy", "startup probe failed %d times; restarting",
             pr->failures);
        probes_stop(c);
        container_kill(c, c->pod->grace);
    }
}

static void restart_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
    struct rt_container *c = container_of(w, struct rt_container, restart_w);

    if (!c->pod->stopping)
        container_start(c);
}

static void container_schedule_restart(struct rt_container *c, double ran_for)
{
    struct runtime *rt = c->pod->rt;
    double delay;
    char msg[512];

    /* Like the kubelet: a container that ran well past the longest back-off starts over. */
    if (ran_for >= 2 * rt->o.backoff_max)
        c->backoff = rt->o.backoff_base;
    delay = c->backoff;
    c->backoff = c->backoff * 2 > rt->o.backoff_max ? rt->o.backoff_max : c->backoff * 2;
    snprintf(msg, sizeof(msg), "back-off %gs restarting failed container=%s pod=%s_%s(%s)", delay,
             c->name, c->pod->name, c->pod->ns, c->pod->uid);
    set_waiting(c, "CrashLoopBackOff", msg);
    emit(c->pod, c->name, "BackOff", "%s", msg);
    ev_timer_set(&c->restart_w, delay, 0);
    ev_timer_start(rt->loop, &c->restart_w);
}

static void exit_done(struct rt_exit *x)
{
    free(x->reason);
    memset(x, 0, sizeof(*x));
}

static void child_cb(struct ev_loop *loop, ev_child *w, int revents)
{
    struct rt_container *c = container_of(w, struct rt_container, child_w);
    struct rt_pod *p = c->pod;
    const char *policy = podobj_str(p->obj, "spec", "restartPolicy", NULL) ?: "Always";
    int status = w->rstatus;
    bool restart;

    ev_child_stop(loop, w);
    ev_timer_stop(loop, &c->kill_w);
    probes_stop(c);
    /* Whatever the container left behind in its process group goes with it. */
    proc_signal_group(c->pid, SIGKILL);
    container_pidfile(c, 0);
    c->pid = 0;
    c->killing = false;
    c->ready = false;
    c->started = false;
    exit_done(&c->term);
    c->term.signal = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
    c->term.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + c->term.signal;
    c->term.reason = strdup(c->term.exit_code == 0 ? "Completed" : "Error");
    c->term.started_at = c->started_at;
    c->term.finished_at = time_wall();
    c->state = RT_TERMINATED;
    emit(p, c->name, "Exited", "exit code %d%s%s", c->term.exit_code,
         c->term.signal ? ", signal " : "", c->term.signal ? strsignal(c->term.signal) : "");
    restart = !p->stopping && (strcmp(policy, "Always") == 0 ||
                               (strcmp(policy, "OnFailure") == 0 && c->term.exit_code != 0));
    if (restart) {
        exit_done(&c->last);
        c->last = c->term;
        c->last.reason = str_dup(c->term.reason);
        c->has_last = true;
        container_schedule_restart(c, c->term.finished_at - c->term.started_at);
    }
    pod_update_ready(p);
    pod_notify(p);
    pod_check_stopped(p);
}

/* A plain command word that names a program beside the image's binary: `etcdutl` in an
 * etcd:3.6.17 image runs etcd-3.6.17/bin/etcdutl, as the image holds its own tools. */
static int find_beside(const char *word, const char *binary, char *out, size_t size)
{
    const char *slash = binary ? strrchr(binary, '/') : NULL;

    if (!slash || strchr(word, '/') || strcmp(binary, IMAGEMAP_HOST) == 0)
        return -ENOENT;
    if ((size_t)snprintf(out, size, "%.*s/%s", (int)(slash - binary), binary, word) >= size)
        return -ENAMETOOLONG;
    return access(out, X_OK) == 0 ? 0 : -ENOENT;
}

/* PATH lookup of a command word in the container's PATH. */
static int find_in_path(const char *word, const char *path, char *out, size_t size)
{
    if (strchr(word, '/')) {
        if ((size_t)snprintf(out, size, "%s", word) >= size)
            return -ENAMETOOLONG;
        return 0;
    }
    while (path && *path) {
        size_t n = strcspn(path, ":");

        if ((size_t)snprintf(out, size, "%.*s/%s", (int)n, path, word) < size &&
            access(out, X_OK) == 0)
            return 0;
        path += n + (path[n] == ':');
    }
    return -ENOENT;
}

static void strv_free(char **v)
{
    if (!v)
        return;
    for (char **p = v; *p; p++)
        free(*p);
    free(v);
}

static const char *base_name(const char *path)
{
    const char *slash = strrchr(path, '/');

    return slash ? slash + 1 : path;
}

/* The executable and argv of c (its env must be built). Returns 0, or a negative code with
 * e's message for the container's waiting status. */
static int container_argv(struct rt_container *c, const cJSON *spec, char *exe, size_t exesize,
                          char ***ret_argv, struct err *e)
{
    const cJSON *command = podobj_get(spec, "command", NULL);
    const cJSON *args = podobj_get(spec, "args", NULL), *item;
    size_t n = (size_t)cJSON_GetArraySize(command) + (size_t)cJSON_GetArraySize(args) + 2, i = 0;
    char **argv = calloc(n, sizeof(char *));
    const char *binary;
    int r = -ENOMEM;

    if (!argv)
        return -ENOMEM;
    if (cJSON_GetArraySize(command) > 0) {
        cJSON_ArrayForEach(item, command) {
            if (!cJSON_IsString(item)) {
                r = err_set(e, -EINVAL, "command holds a non-string");
                goto fail;
            }
            if (podenv_expand(item->valuestring, &c->env, &argv[i]) < 0)
                goto fail;
            i++;
        }
        if (c->binary && strcmp(c->binary, IMAGEMAP_HOST) != 0 &&
            strcmp(base_name(argv[0]), base_name(c->binary)) == 0) {
            /* `command: [kube-apiserver]` in a kube-apiserver:v1.36.3 image: that image's
             * release, not whichever release the name alone maps to. */
            snprintf(exe, exesize, "%s", c->binary);
        } else if (imagemap_resolve_command(c->pod->rt->o.images, argv[0], &binary) == 0) {
            snprintf(exe, exesize, "%s", binary);
        } else if (find_beside(argv[0], c->binary, exe, exesize) == 0) {
            /* exe is set */
        } else if (find_in_path(argv[0], podenv_get(&c->env, "PATH"), exe, exesize) < 0) {
            r = err_set(e, -ENOENT, "executable %s not found on this node", argv[0]);
            goto fail;
        }
    } else {
        if (strcmp(c->binary, IMAGEMAP_HOST) == 0) {
            r = err_set(e, -EINVAL,
                        "image %s runs host commands, but the container has no "
                        "command",
                        c->image);
            goto fail;
        }
        snprintf(exe, exesize, "%s", c->binary);
        if (!(argv[i++] = strdup(c->binary)))
            goto fail;
    }
    cJSON_ArrayForEach(item, args) {
        if (!cJSON_IsString(item)) {
            r = err_set(e, -EINVAL, "args holds a non-string");
            goto fail;
        }
        if (podenv_expand(item->valuestring, &c->env, &argv[i]) < 0)
            goto fail;
        i++;
    }
    *ret_argv = argv;
    return 0;
fail:
    strv_free(argv);
    return r;
}

static const cJSON *container_spec(const struct rt_container *c)
{
    return cJSON_GetArrayItem(podobj_get(c->pod->obj, "spec", "containers", NULL), (int)c->index);
}

static void container_start(struct rt_container *c)
{
    struct rt_pod *p = c->pod;
    struct runtime *rt = p->rt;
    const cJSON *spec = container_spec(c);
    struct podenv_fields fields = {p->ip,        rt->host_ip,    rt->node_name,
                                   rt->path_env, rt->o.api_host, rt->o.api_port};
    struct podvol_dirs dirs = {p->dir, p->claims};
    struct podvol_mount *mounts = NULL;
    size_t nmounts = 0;
    char exe[RT_PATH_MAX], log[RT_PATH_MAX];
    char **argv = NULL;
    struct podsec sec;
    struct err e = {0};
    pid_t pid;
    int r;

    if (c->image_missing)
        return;
    podenv_done(&c->env);
    r = podenv_build(p->obj, spec, &fields, rt->o.resolve, rt->o.userdata, &c->env, &e);
    if (r < 0) {
        set_waiting(c, "CreateContainerConfigError", e.msg[0] ? e.msg : strerror(-r));
        emit(p, c->name, "Failed", "%s", c->message ? c->message : "environment");
        goto retry;
    }
    r = podsec_resolve(p->obj, spec, &sec, &e);
    if (r < 0) {
        set_waiting(c, "CreateContainerConfigError", e.msg);
        emit(p, c->name, "Failed", "%s", c->message ? c->message : "securityContext");
        goto retry;
    }
    r = container_argv(c, spec, exe, sizeof(exe), &argv, &e);
    if (r == 0)
        r = podvol_mounts(p->obj, spec, &dirs, p->hosts_path, &mounts, &nmounts, &e);
    if (r == 0 && (size_t)snprintf(log, sizeof(log), "%s/%s.log", p->dir, c->name) >= sizeof(log))
        r = err_set(&e, -ENAMETOOLONG, "log path too long");
    if (r == 0) {
        struct proc_spec ps = {
            .path = exe,
            .argv = argv,
            .envp = c->env.vars,
            .workdir = podobj_str(spec, "workingDir", NULL),
            .log_path = log,
            .mount_ns = true,
            .mounts = mounts,
            .nmounts = nmounts,
            .sec = &sec,
        };

        r = proc_spawn(&ps, &pid, &e);
    }
    podvol_mounts_free(mounts, nmounts);
    strv_free(argv);
    if (r < 0) {
        set_waiting(c, "RunContainerError", e.msg[0] ? e.msg : strerror(-r));
        emit(p, c->name, "Failed", "%s", c->message ? c->message : "start");
        goto retry;
    }
    if (c->ever_ran)
        c->restarts++;
    c->pid = pid;
    c->state = RT_RUNNING;
    c->started_at = time_wall();
    c->ever_ran = true;
    c->ready = false;
    c->started = false;
    c->killing = false;
    set_str(&c->reason, NULL);
    set_str(&c->message, NULL);
    container_pidfile(c, pid);
    ev_child_set(&c->child_w, pid, 0);
    ev_child_start(rt->loop, &c->child_w);
    emit(p, c->name, "Started", "pid %d: %s", (int)pid, exe);
    if (c->has_startup)
        probe_start(&c->startup, pid, c->env.vars);
    else
        start_after_startup(c);
    pod_notify(p);
    return;
retry:
    /* A start that failed backs off like a crash, without a restart counted. */
    {
        char *reason = str_dup(c->reason), *message = str_dup(c->message);

        container_schedule_restart(c, 0);
        set_waiting(c, reason, message);
        free(reason);
        free(message);
    }
    pod_notify(p);
}

static int container_init(struct rt_pod *p, struct rt_container *c, size_t index, const cJSON *spec,
                          struct err *e)
{
    struct runtime *rt = p->rt;
    static const char *const kinds[] = {"readinessProbe", "livenessProbe", "startupProbe"};
    int r;

    c->pod = p;
    c->index = index;
    c->backoff = rt->o.backoff_base;
    c->name = str_dup(podobj_str(spec, "name", NULL));
    c->image = str_dup(podobj_str(spec, "image", NULL) ?: "");
    if (!c->name || !c->image)
        return c->name ? -ENOMEM : err_set(e, -EINVAL, "container %zu has no name", index);
    ev_child_init(&c->child_w, child_cb, 0, 0);
    ev_timer_init(&c->restart_w, restart_cb, 0, 0);
    ev_timer_init(&c->kill_w, kill_cb, 0, 0);
    for (int k = 0; k < 3; k++) {
        const cJSON *probe = podobj_get(spec, kinds[k], NULL);
        struct probe *pr = k == 0 ? &c->readiness : k == 1 ? &c->liveness : &c->startup;
        probe_result_fn fn = k == 0 ? readiness_result : k == 1 ? liveness_result : startup_result;
        struct probe_spec ps;

        if (!probe)
            continue;
        r = probe_spec_parse(probe, spec, p->ip, &ps, e);
        if (r < 0) {
            err_prefix(e, "container %s %s: ", c->name, kinds[k]);
            return r;
        }
        probe_init(pr, rt->loop, &ps, fn);
        *(k == 0 ? &c->has_readiness : k == 1 ? &c->has_liveness : &c->has_startup) = true;
    }
    if (imagemap_resolve_image(rt->o.images, c->image, &c->binary) < 0 ||
        (strcmp(c->binary, IMAGEMAP_HOST) != 0 && access(c->binary, X_OK) < 0)) {
        char msg[1024];

        if (c->binary && strcmp(c->binary, IMAGEMAP_HOST) != 0)
            snprintf(msg, sizeof(msg), "image \"%s\": its local binary %s is missing", c->image,
                     c->binary);
        else
            snprintf(msg, sizeof(msg),
                     "image \"%s\" has no local binary on this node (see "
                     "--image-map)",
                     c->image);
        c->image_missing = true;
        c->binary = NULL;
        set_waiting(c, "ErrImagePull", msg);
        emit(p, c->name, "Failed", "%s", msg);
        return 0;
    }
    set_waiting(c, "ContainerCreating", NULL);
    return 0;
}

static void container_done(struct rt_container *c)
{
    struct ev_loop *loop = c->pod->rt->loop;

    if (c->pid > 0) {
        ev_child_stop(loop, &c->child_w);
        proc_signal_group(c->pid, SIGKILL);
        while (waitpid(c->pid, NULL, 0) < 0 && errno == EINTR)
            ;
        container_pidfile(c, 0);
        c->pid = 0;
    }
    ev_timer_stop(loop, &c->restart_w);
    ev_timer_stop(loop, &c->kill_w);
    if (c->has_readiness)
        probe_done(&c->readiness);
    if (c->has_liveness)
        probe_done(&c->liveness);
    if (c->has_startup)
        probe_done(&c->startup);
    podenv_done(&c->env);
    exit_done(&c->term);
    exit_done(&c->last);
    free(c->name);
    free(c->image);
    free(c->reason);
    free(c->message);
}

/* ---- pods ---- */

static void pod_check_stopped(struct rt_pod *p)
{
    if (!p->stopping || p->stopped)
        return;
    for (size_t i = 0; i < p->nctrs; i++)
        if (p->ctrs[i].pid > 0)
            return;
    p->stopped = true;
    pod_notify(p);
}

static void pod_setup(struct rt_pod *p);

static void setup_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
    pod_setup(container_of(w, struct rt_pod, setup_w));
}

/* Sets the pod's volumes up once every claim it mounts is bound: until then its containers
 * wait, as the kubelet leaves a pod in ContainerCreating. A claim's directory, once found,
 * stays the pod's for its life, as the kubelet mounts a volume once per pod. */
static void pod_setup(struct rt_pod *p)
{
    struct runtime *rt = p->rt;
    struct podvol_dirs dirs = {p->dir, NULL};
    cJSON *claims = NULL;
    struct err e = {0};
    int r;

    if (p->stopping || p->volumes_ready)
        return;
    r = podvol_claims_resolve(p->obj, rt->o.resolve, rt->o.userdata, &claims, &e);
    if (r == 0) {
        dirs.claims = claims;
        r = podvol_prepare(p->obj, &dirs, rt->o.resolve, rt->o.userdata, &e);
    }
    if (r < 0) {
        cJSON_Delete(claims);
        for (size_t i = 0; i < p->nctrs; i++)
            if (!p->ctrs[i].image_missing)
                set_waiting(&p->ctrs[i], "ContainerCreating", e.msg);
        emit(p, NULL, "FailedMount", "%s", e.msg);
        ev_timer_set(&p->setup_w, RT_SETUP_RETRY, 0);
        ev_timer_start(rt->loop, &p->setup_w);
        pod_notify(p);
        return;
    }
    cJSON_Delete(p->claims);
    p->claims = claims;
    p->volumes_ready = true;
    for (size_t i = 0; i < p->nctrs; i++)
        container_start(&p->ctrs[i]);
    pod_notify(p);
}

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    remove(path);
    return 0;
}

static void pod_free(struct rt_pod *p)
{
    char path[RT_PATH_MAX];

    if (!p)
        return;
    for (size_t i = 0; i < p->nctrs; i++)
        container_done(&p->ctrs[i]);
    free(p->ctrs);
    if (p->rt) {
        ev_timer_stop(p->rt->loop, &p->setup_w);
        ev_timer_stop(p->rt->loop, &p->notify_w);
    }
    if (p->dir && path_join(path, sizeof(path), p->dir, "volumes") == 0)
        nftw(path, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
    if (p->hosts_path)
        unlink(p->hosts_path);
    cJSON_Delete(p->claims);
    cJSON_Delete(p->obj);
    free(p->ns);
    free(p->name);
    free(p->uid);
    free(p->dir);
    free(p->hosts_path);
    free(p->hosts);
    free(p);
}

static int pod_new(struct runtime *rt, const cJSON *obj, struct rt_pod **ret, struct err *e)
{
    const cJSON *ctrs = podobj_get(obj, "spec", "containers", NULL), *spec;
    struct rt_pod *p = calloc(1, sizeof(*p));
    char dir[RT_PATH_MAX];
    size_t i = 0;
    int r = -ENOMEM;

    if (!p)
        return -ENOMEM;
    p->rt = rt;
    ev_timer_init(&p->setup_w, setup_cb, 0, 0);
    ev_timer_init(&p->notify_w, notify_cb, 0, 0);
    p->ns = str_dup(podobj_str(obj, "metadata", "namespace", NULL) ?: "default");
    p->name = str_dup(podobj_str(obj, "metadata", "name", NULL));
    p->uid = str_dup(podobj_str(obj, "metadata", "uid", NULL) ?: "");
    p->obj = cJSON_Duplicate(obj, true);
    if (!p->ns || !p->name || !p->uid || !p->obj)
        goto fail;
    if (strchr(p->ns, '/') || strchr(p->name, '/') || p->name[0] == '.') {
        r = err_set(e, -EINVAL, "bad pod name %s/%s", p->ns, p->name);
        goto fail;
    }
    p->grace =
        (double)podobj_long(podobj_get(obj, "spec", NULL), "terminationGracePeriodSeconds", 30);
    if ((size_t)snprintf(dir, sizeof(dir), "%s/pods/%s_%s", rt->state_dir, p->ns, p->name) >=
        sizeof(dir)) {
        r = err_set(e, -ENAMETOOLONG, "pod directory name too long");
        goto fail;
    }
    p->dir = strdup(dir);
    if (!p->dir || asprintf(&p->hosts_path, "%s/hosts", dir) < 0) {
        p->hosts_path = NULL;
        goto fail;
    }
    r = podvol_mkdir_p(dir, 0700);
    if (r < 0) {
        err_set(e, r, "%s: %s", dir, strerror(-r));
        goto fail;
    }
    r = ip_alloc(rt, p);
    if (r < 0) {
        err_set(e, r, "no free pod IP in 127.%u.0.0/16", rt->o.pod_net);
        goto fail;
    }
    p->nctrs = (size_t)cJSON_GetArraySize(ctrs);
    p->ctrs = calloc(p->nctrs ? p->nctrs : 1, sizeof(*p->ctrs));
    if (!p->ctrs) {
        r = -ENOMEM;
        goto fail;
    }
    cJSON_ArrayForEach(spec, ctrs) {
        r = container_init(p, &p->ctrs[i], i, spec, e);
        i++;
        if (r < 0) {
            p->nctrs = i;
            goto fail;
        }
    }
    p->start_time = time_wall();
    p->initialized_at = p->start_time;
    p->ready_changed = p->start_time;
    *ret = p;
    return 0;
fail:
    p->rt = rt;
    pod_free(p);
    return r;
}

int runtime_pod_apply(struct runtime *rt, const cJSON *obj, struct err *e)
{
    const char *ns = podobj_str(obj, "metadata", "namespace", NULL) ?: "default";
    const char *name = podobj_str(obj, "metadata", "name", NULL);
    const char *uid = podobj_str(obj, "metadata", "uid", NULL) ?: "";
    struct rt_pod *p;
    int r;

    if (!name || cJSON_GetArraySize(podobj_get(obj, "spec", "containers", NULL)) < 1)
        return err_set(e, -EINVAL, "pod without a name or containers");
    p = rt_pod_find(rt, ns, name);
    if (p && strcmp(p->uid, uid) != 0)
        return err_set(e, -EBUSY,
                       "pod %s/%s: an earlier pod of that name (uid %s) is still "
                       "known",
                       ns, name, p->uid);
    if (p) {
        cJSON *copy = cJSON_Duplicate(obj, true);
        cJSON *spec;

        if (!copy)
            return -ENOMEM;
        /* Keep the spec the containers run from; take the new metadata. */
        spec = cJSON_DetachItemFromObjectCaseSensitive(p->obj, "spec");
        cJSON_DeleteItemFromObjectCaseSensitive(copy, "spec");
        if (spec)
            cJSON_AddItemToObject(copy, "spec", spec);
        cJSON_Delete(p->obj);
        p->obj = copy;
        hosts_schedule(rt);
        return 0;
    }
    r = pod_new(rt, obj, &p, e);
    if (r < 0)
        return r;
    p->next = rt->pods;
    rt->pods = p;
    r = hosts_update(rt, p);
    if (r < 0)
        emit(p, NULL, "FailedMount", "hosts file %s: %s", p->hosts_path, strerror(-r));
    hosts_schedule(rt);
    pod_setup(p);
    return 0;
}

int runtime_pod_stop(struct runtime *rt, const char *ns, const char *name, double grace)
{
    struct rt_pod *p = rt_pod_find(rt, ns, name);

    if (!p)
        return -ENOENT;
    if (grace < 0)
        grace = p->grace;
    if (rt->stopping_all && grace > rt->max_grace)
        grace = rt->max_grace;
    if (p->stopping) {
        /* Again: only a shorter grace period changes anything. */
        for (size_t i = 0; i < p->nctrs; i++)
            if (p->ctrs[i].pid > 0)
                container_kill(&p->ctrs[i], grace);
        return 0;
    }
    p->stopping = true;
    ev_timer_stop(rt->loop, &p->setup_w);
    for (size_t i = 0; i < p->nctrs; i++) {
        struct rt_container *c = &p->ctrs[i];

        ev_timer_stop(rt->loop, &c->restart_w);
        probes_stop(c);
        if (c->pid > 0) {
            if (!c->killing)
                emit(p, c->name, "Killing", "stopping container (grace %gs)", grace);
            container_kill(c, grace);
        }
    }
    pod_update_ready(p);
    pod_notify(p);
    pod_check_stopped(p);
    return 0;
}

int runtime_pod_remove(struct runtime *rt, const char *ns, const char *name)
{
    struct rt_pod **pp;

    for (pp = &rt->pods; *pp; pp = &(*pp)->next) {
        struct rt_pod *p = *pp;

        if (strcmp(p->ns, ns) != 0 || strcmp(p->name, name) != 0)
            continue;
        *pp = p->next;
        pod_free(p);
        hosts_schedule(rt);
        return 0;
    }
    return -ENOENT;
}

bool runtime_pod_stopped(const struct runtime *rt, const char *ns, const char *name)
{
    struct rt_pod *p = rt_pod_find(rt, ns, name);

    return p && p->stopped;
}

const char *runtime_pod_uid(const struct runtime *rt, const char *ns, const char *name)
{
    struct rt_pod *p = rt_pod_find(rt, ns, name);

    return p ? p->uid : NULL;
}

const char *runtime_pod_dir(const struct runtime *rt, const char *ns, const char *name)
{
    struct rt_pod *p = rt_pod_find(rt, ns, name);

    return p ? p->dir : NULL;
}

int runtime_container_pid(const struct runtime *rt, const char *ns, const char *name,
                          const char *container, pid_t *ret_pid)
{
    struct rt_pod *p = rt_pod_find(rt, ns, name);

    for (size_t i = 0; p && i < p->nctrs; i++) {
        if (strcmp(p->ctrs[i].name, container) == 0 && p->ctrs[i].pid > 0) {
            *ret_pid = p->ctrs[i].pid;
            return 0;
        }
    }
    return -ENOENT;
}

int runtime_set_services(struct runtime *rt, const cJSON *services)
{
    cJSON *copy = NULL;

    if (services && !(copy = cJSON_Duplicate(services, true)))
        return -ENOMEM;
    cJSON_Delete(rt->services);
    rt->services = copy;
    hosts_schedule(rt);
    return 0;
}

void runtime_refresh_volumes(struct runtime *rt)
{
    for (struct rt_pod *p = rt->pods; p; p = p->next) {
        struct podvol_dirs dirs = {p->dir, p->claims};

        if (p->stopping)
            continue;
        if (!p->volumes_ready) {
            ev_timer_stop(rt->loop, &p->setup_w);
            pod_setup(p);
        } else {
            podvol_prepare(p->obj, &dirs, rt->o.resolve, rt->o.userdata, NULL);
        }
    }
}

unsigned runtime_running(const struct runtime *rt)
{
    unsigned n = 0;

    for (const struct rt_pod *p = rt->pods; p; p = p->next)
        for (size_t i = 0; i < p->nctrs; i++)
            n += p->ctrs[i].pid > 0;
    return n;
}

static void stop_all_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
    struct runtime *rt = container_of(w, struct runtime, stop_all_w);

    if (runtime_running(rt) > 0)
        return;
    ev_timer_stop(loop, w);
    if (rt->stop_all_done)
        rt->stop_all_done(rt->stop_all_data);
}

void runtime_stop_all(struct runtime *rt, double max_grace, void (*done)(void *userdata),
                      void *userdata)
{
    rt->stopping_all = true;
    rt->max_grace = max_grace;
    rt->stop_all_done = done;
    rt->stop_all_data = userdata;
    for (struct rt_pod *p = rt->pods; p; p = p->next)
        runtime_pod_stop(rt, p->ns, p->name, -1);
    ev_timer_set(&rt->stop_all_w, 0, 0.05);
    ev_timer_start(rt->loop, &rt->stop_all_w);
}

int runtime_new(struct ev_loop *loop, const struct runtime_opts *opts, struct runtime **ret_rt,
                struct err *e)
{
    struct runtime *rt;
    char dirs[2048];
    int r = -ENOMEM;

    if (!opts->state_dir || !opts->images || opts->pod_net > 255)
        return err_set(e, -EINVAL,
                       "runtime needs a state directory, an image map and a pod "
                       "network 0..255");
    rt = calloc(1, sizeof(*rt));
    if (!rt)
        return -ENOMEM;
    rt->loop = loop;
    rt->o = *opts;
    if (rt->o.backoff_base <= 0)
        rt->o.backoff_base = 10;
    if (rt->o.backoff_max <= 0)
        rt->o.backoff_max = 300;
    if (rt->o.backoff_max < rt->o.backoff_base)
        rt->o.backoff_max = rt->o.backoff_base;
    ev_timer_init(&rt->hosts_w, hosts_cb, 0, 0);
    ev_timer_init(&rt->stop_all_w, stop_all_cb, 0, 0.05);
    rt->state_dir = strdup(opts->state_dir);
    rt->node_name = strdup(opts->node_name ? opts->node_name : "nestcp-node");
    rt->host_ip = strdup(opts->host_ip ? opts->host_ip : "127.0.0.1");
    rt->domain = strdup(opts->cluster_domain ? opts->cluster_domain : "cluster.local");
    if (!rt->state_dir || !rt->node_name || !rt->host_ip || !rt->domain)
        goto fail;
    if (imagemap_bin_dirs(opts->images, dirs, sizeof(dirs)) < 0)
        dirs[0] = '\0';
    snprintf(rt->path_env, sizeof(rt->path_env),
             "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin%s%s", dirs[0] ? ":" : "",
             dirs);
    r = podvol_mkdir_p(rt->state_dir, 0700);
    if (r < 0) {
        err_set(e, r, "state directory %s: %s", opts->state_dir, strerror(-r));
        goto fail;
    }
    *ret_rt = rt;
    return 0;
fail:
    runtime_free(rt);
    return r;
}

void runtime_free(struct runtime *rt)
{
    if (!rt)
        return;
    while (rt->pods) {
        struct rt_pod *p = rt->pods;

        rt->pods = p->next;
        pod_free(p);
    }
    ev_timer_stop(rt->loop, &rt->hosts_w);
    ev_timer_stop(rt->loop, &rt->stop_all_w);
    cJSON_Delete(rt->services);
    free(rt->state_dir);
    free(rt->node_name);
    free(rt->host_ip);
    free(rt->domain);
    free(rt);
}
