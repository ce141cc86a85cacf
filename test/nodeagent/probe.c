#include "test/nodeagent/probe.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <sys/prctl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <curl/curl.h>

#include "test/nodeagent/podobj.h"
#include "test/nodeagent/proc.h"

static void strv_free(char **v)
{
    if (!v)
        return;
    for (char **p = v; *p; p++)
        free(*p);
    free(v);
}

void probe_spec_done(struct probe_spec *s)
{
    free(s->host);
    free(s->path);
    strv_free(s->headers);
    strv_free(s->command);
    memset(s, 0, sizeof(*s));
}

static int probe_port(const cJSON *handler, const cJSON *container, int *ret_port)
{
    const cJSON *port = podobj_get(handler, "port", NULL);

    if (cJSON_IsNumber(port) && port->valuedouble >= 1 && port->valuedouble <= 65535) {
        *ret_port = (int)port->valuedouble;
        return 0;
    }
    if (cJSON_IsString(port))
        return podobj_named_port(container, port->valuestring, ret_port);
    return -EINVAL;
}

int probe_spec_parse(const cJSON *probe, const cJSON *container, const char *pod_ip,
                     struct probe_spec *ret, struct err *e)
{
    const cJSON *http = podobj_get(probe, "httpGet", NULL);
    const cJSON *tcp = podobj_get(probe, "tcpSocket", NULL);
    const cJSON *exec = podobj_get(probe, "exec", NULL);
    const cJSON *handler = http ? http : tcp, *item;
    struct probe_spec s = {0};
    const char *host;
    int r = -ENOMEM;

    if (!!http + !!tcp + !!exec != 1)
        return err_set(e, -EINVAL, "probe needs exactly one of httpGet, tcpSocket, exec");
    s.initial_delay = (double)podobj_long(probe, "initialDelaySeconds", 0);
    s.period = (double)podobj_long(probe, "periodSeconds", 10);
    s.timeout = (double)podobj_long(probe, "timeoutSeconds", 1);
    s.success_threshold = (int)podobj_long(probe, "successThreshold", 1);
    s.failure_threshold = (int)podobj_long(probe, "failureThreshold", 3);
    if (s.period < 1)
        s.period = 1;
    if (s.timeout < 1)
        s.timeout = 1;
    if (s.success_threshold < 1)
        s.success_threshold = 1;
    if (s.failure_threshold < 1)
        s.failure_threshold = 1;
    if (exec) {
        int n = cJSON_GetArraySize(podobj_get(exec, "command", NULL)), i = 0;

        if (n < 1)
            return err_set(e, -EINVAL, "exec probe without a command");
        s.kind = PROBE_EXEC;
        s.command = calloc((size_t)n + 1, sizeof(char *));
        if (!s.command)
            goto fail;
        cJSON_ArrayForEach(item, podobj_get(exec, "command", NULL)) {
            if (!cJSON_IsString(item)) {
                r = err_set(e, -EINVAL, "exec probe command holds a non-string");
                goto fail;
            }
            if (!(s.command[i++] = strdup(item->valuestring)))
                goto fail;
        }
        *ret = s;
        return 0;
    }
    s.kind = http ? PROBE_HTTP : PROBE_TCP;
    if (probe_port(handler, container, &s.port) < 0)
        return err_set(e, -EINVAL, "probe port is missing, out of range or not a named port");
    host = podobj_str(handler, "host", NULL);
    if (!host || !*host || strcmp(host, "127.0.0.1") == 0 || strcmp(host, "localhost") == 0)
        host = pod_ip;
    if (!(s.host = strdup(host)))
        goto fail;
    if (http) {
        const char *scheme = podobj_str(http, "scheme", NULL);
        const char *path = podobj_str(http, "path", NULL);
        int n = cJSON_GetArraySize(podobj_get(http, "httpHeaders", NULL)), i = 0;

        s.https = scheme && strcmp(scheme, "HTTPS") == 0;
        if (!(s.path = strdup(path && *path ? path : "/")))
            goto fail;
        if (!(s.headers = calloc((size_t)n + 1, sizeof(char *))))
            goto fail;
        cJSON_ArrayForEach(item, podobj_get(http, "httpHeaders", NULL)) {
            const char *name = podobj_str(item, "name", NULL);
            const char *value = podobj_str(item, "value", NULL);
            size_t len;

            if (!name || !value || strpbrk(name, ":\r\n") || strpbrk(value, "\r\n"))
                continue;
            len = strlen(name) + strlen(value) + 3;
            if (!(s.headers[i] = malloc(len)))
                goto fail;
            snprintf(s.headers[i++], len, "%s: %s", name, value);
        }
    }
    *ret = s;
    return 0;
fail:
    probe_spec_done(&s);
    return r;
}

static size_t discard(char *ptr, size_t size, size_t n, void *userdata)
{
    return size * n;
}

static bool check_http(const struct probe_spec *s)
{
    struct curl_slist *headers = NULL;
    char url[1024];
    long code = 0;
    bool ok = false;
    CURL *easy;

    if ((size_t)snprintf(url, sizeof(url), "%s://%s:%d%s", s->https ? "https" : "http", s->host,
                         s->port, s->path) >= sizeof(url))
        return false;
    easy = curl_easy_init();
    if (!easy)
        return false;
    for (char **h = s->headers; h && *h; h++) {
        struct curl_slist *n = curl_slist_append(headers, *h);

        if (!n)
            goto out;
        headers = n;
    }
    curl_easy_setopt(easy, CURLOPT_URL, url);
    curl_easy_setopt(easy, CURLOPT_HTTPHEADER, headers);
    curl_easy_setopt(easy, CURLOPT_USERAGENT, "kube-probe/1.20");
    curl_easy_setopt(easy, CURLOPT_WRITEFUNCTION, discard);
    curl_easy_setopt(easy, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(easy, CURLOPT_TIMEOUT_MS, (long)(s->timeout * 1000));
    curl_easy_setopt(easy, CURLOPT_PROTOCOLS_STR, "http,https");
    if (s->https) {
        /* A probe asks only whether the server answers; it sends no credentials and trusts
         * nothing it reads, and the kubelet's probes do not verify either. */
        curl_easy_setopt(easy, CURLOPT_SSL_VERIFYPEER, 0L);
        curl_easy_setopt(easy, CURLOPT_SSL_VERIFYHOST, 0L);
    }
    if (curl_easy_perform(easy) == CURLE_OK &&
        curl_easy_getinfo(easy, CURLINFO_RESPONSE_CODE, &code) == CURLE_OK)
        ok = code >= 200 && code < 400;
out:
    curl_slist_free_all(headers);
    curl_easy_cleanup(easy);
    return ok;
}

static bool check_tcp(const struct probe_spec *s)
{
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)s->port)};
    bool ok;
    int fd;

    if (inet_pton(AF_INET, s->host, &sa.sin_addr) != 1)
        return false;
    fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return false;
    ok = connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0;
    close(fd);
    return ok;
}

static bool check_exec(const struct probe_spec *s, pid_t target, char *const *envp)
{
    extern char **environ;
    int status;
    pid_t pid;

    if (target <= 0 || proc_enter_mount_ns(target) < 0)
        return false;
    pid = fork();
    if (pid < 0)
        return false;
    if (pid == 0) {
        int null = open("/dev/null", O_RDWR | O_CLOEXEC);

        if (null >= 0) {
            dup2(null, 0);
            dup2(null, 1);
            dup2(null, 2);
        }
        close_range(3, ~0U, CLOSE_RANGE_CLOEXEC);
        if (envp)
            environ = (char **)envp;
        execvp(s->command[0], s->command);
        _exit(127);
    }
    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR)
            return false;
    return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

bool probe_check(const struct probe_spec *s, pid_t target, char *const *envp)
{
    switch (s->kind) {
    case PROBE_HTTP:
        return check_http(s);
    case PROBE_TCP:
        return check_tcp(s);
    case PROBE_EXEC:
        return check_exec(s, target, envp);
    }
    return false;
}

static void probe_run(struct ev_loop *loop, ev_timer *w, int revents);

static void probe_child_done(struct ev_loop *loop, ev_child *w, int revents)
{
    struct probe *p = (struct probe *)((char *)w - offsetof(struct probe, child));
    bool ok = WIFEXITED(w->rstatus) && WEXITSTATUS(w->rstatus) == 0;

    ev_child_stop(loop, w);
    ev_timer_stop(loop, &p->timer);
    p->pid = 0;
    if (ok) {
        p->successes++;
        p->failures = 0;
    } else {
        p->failures++;
        p->successes = 0;
    }
    ev_timer_init(&p->timer, probe_run, p->spec.period, 0);
    ev_timer_start(loop, &p->timer);
    p->on_result(p, ok); /* may stop or restart the probe */
}

static void probe_timeout(struct ev_loop *loop, ev_timer *w, int revents)
{
    struct probe *p = (struct probe *)((char *)w - offsetof(struct probe, timer));

    /* The child watcher reports the killed check as a failure. */
    if (p->pid > 0)
        kill(-p->pid, SIGKILL);
}

static void probe_run(struct ev_loop *loop, ev_timer *w, int revents)
{
    struct probe *p = (struct probe *)((char *)w - offsetof(struct probe, timer));
    pid_t pid = fork();

    if (pid < 0) {
        ev_timer_init(&p->timer, probe_run, p->spec.period, 0);
        ev_timer_start(loop, &p->timer);
        return;
    }
    if (pid == 0) {
        proc_child_reset_signals();
        setpgid(0, 0);
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        _exit(probe_check(&p->spec, p->target, p->envp) ? 0 : 1);
    }
    setpgid(pid, pid);
    p->pid = pid;
    ev_child_init(&p->child, probe_child_done, pid, 0);
    ev_child_start(loop, &p->child);
    ev_timer_init(&p->timer, probe_timeout, p->spec.timeout, 0);
    ev_timer_start(loop, &p->timer);
}

void probe_init(struct probe *p, struct ev_loop *loop, struct probe_spec *spec,
                probe_result_fn on_result)
{
    memset(p, 0, sizeof(*p));
    p->spec = *spec;
    memset(spec, 0, sizeof(*spec));
    p->loop = loop;
    p->on_result = on_result;
}

void probe_start(struct probe *p, pid_t target, char *const *envp)
{
    probe_stop(p);
    p->target = target;
    p->envp = envp;
    p->successes = p->failures = 0;
    p->active = true;
    ev_timer_init(&p->timer, probe_run, p->spec.initial_delay, 0);
    ev_timer_start(p->loop, &p->timer);
}

void probe_stop(struct probe *p)
{
    if (!p->loop)
        return;
    ev_timer_stop(p->loop, &p->timer);
    if (p->pid > 0) {
        int status;

        ev_child_stop(p->loop, &p->child);
        kill(-p->pid, SIGKILL);
        while (waitpid(p->pid, &status, 0) < 0 && errno == EINTR)
            ;
        p->pid = 0;
    }
    p->active = false;
}

void probe_done(struct probe *p)
{
    probe_stop(p);
    probe_spec_done(&p->spec);
}
