/*
 * The local runtime with real processes: etcd (hack/kube-build.sh's) and /bin/sh run as pods in
 * their own mount namespaces (root), on loopback pod IPs. No API server is involved.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <ftw.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <ev.h>

#include "lib/util/strutil.h"
#include "lib/util/yamlconv.h"
#include "test/nodeagent/runtime.h"

#define NS "rt-test"

struct fixture {
    char state[64];
    struct imagemap *images;
    struct runtime *rt;
    cJSON *secret;
    double starts[16];
    int nstarts;
    int stopped;
    int changed;
    bool unhealthy;
    ev_timer tick;
};

static struct fixture *fx;

static int resolve(void *userdata, const char *kind, const char *ns, const char *name,
                   const cJSON **ret_obj)
{
    if (strcmp(kind, "Secret") == 0 && strcmp(name, "certs") == 0 && fx->secret) {
        *ret_obj = fx->secret;
        return 0;
    }
    return -ENOENT;
}

static void on_stopped(void *userdata, const char *ns, const char *name)
{
    fx->stopped++;
}

static void on_changed(void *userdata, const char *ns, const char *name)
{
    fx->changed++;
}

static void on_event(void *userdata, const char *ns, const char *name, const char *container,
                     const char *reason, const char *message)
{
    if (strcmp(reason, "Started") == 0 && fx->nstarts < 16)
        fx->starts[fx->nstarts++] = time_mono();
    if (strcmp(reason, "Unhealthy") == 0)
        fx->unhealthy = true;
    if (getenv("NODEAGENT_TEST_VERBOSE"))
        fprintf(stderr, "event %s/%s %s %s: %s\n", ns, name, container ? container : "-", reason,
                message);
}

static void tick_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
}

static int setup(void **state)
{
    struct runtime_opts o = {0};
    struct err e = {0};

    fx = calloc(1, sizeof(*fx));
    snprintf(fx->state, sizeof(fx->state), "/tmp/nodeagent-rt-XXXXXX");
    assert_non_null(mkdtemp(fx->state));
    assert_int_equal(imagemap_new(&fx->images), 0);
    assert_int_equal(imagemap_add_defaults(fx->images, getenv("NESTCP_BIN_ROOT")), 0);
    assert_int_equal(imagemap_add(fx->images, "nestcp.test/shell", IMAGEMAP_HOST), 0);
    o.state_dir = fx->state;
    o.images = fx->images;
    o.pod_net = 100 + (unsigned)getpid() % 100;
    o.backoff_base = 0.3;
    o.backoff_max = 10;
    o.resolve = resolve;
    o.cb.pod_stopped = on_stopped;
    o.cb.pod_changed = on_changed;
    o.cb.event = on_event;
    assert_int_equal(runtime_new(EV_DEFAULT, &o, &fx->rt, &e), 0);
    ev_timer_init(&fx->tick, tick_cb, 0.05, 0.05);
    ev_timer_start(EV_DEFAULT, &fx->tick);
    *state = fx;
    return 0;
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    return remove(path);
}

static int teardown(void **state)
{
    runtime_free(fx->rt);
    ev_timer_stop(EV_DEFAULT, &fx->tick);
    imagemap_free(fx->images);
    cJSON_Delete(fx->secret);
    nftw(fx->state, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
    free(fx);
    fx = NULL;
    return 0;
}

typedef bool (*pred_fn)(const char *arg);

/* Runs the loop until pred holds or timeout seconds pass. */
static bool run_until(pred_fn pred, const char *arg, double timeout)
{
    double end = time_mono() + timeout;

    while (!pred(arg)) {
        if (time_mono() > end)
            return false;
        ev_run(EV_DEFAULT, EVRUN_ONCE);
    }
    return true;
}

static cJSON *status(const char *name)
{
    return runtime_pod_status(fx->rt, NS, name);
}

static const cJSON *ctr_status(const cJSON *st, int i)
{
    return cJSON_GetArrayItem(cJSON_GetObjectItem(st, "containerStatuses"), i);
}

static bool pod_ready(const char *name)
{
    cJSON *st = status(name);
    bool ready = cJSON_IsTrue(cJSON_GetObjectItem(ctr_status(st, 0), "ready"));

    cJSON_Delete(st);
    return ready;
}

static bool file_has(const char *path)
{
    char *text = NULL;
    bool ok = util_read_file(path, 1 << 20, &text, NULL) == 0 && strstr(text, "\n");

    free(text);
    return ok;
}

static bool n_stopped(const char *n)
{
    return fx->stopped >= n[0] - '0';
}

static bool n_starts(const char *n)
{
    return fx->nstarts >= n[0] - '0';
}

static void apply_yaml(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static void apply_yaml(const char *fmt, ...)
{
    char text[8192];
    cJSON *pod;
    struct err e = {0};
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(text, sizeof(text), fmt, ap);
    va_end(ap);
    assert_int_equal(yamlconv_parse_one(text, strlen(text), "pod", &pod, &e), 0);
    assert_int_equal(runtime_pod_apply(fx->rt, pod, &e), 0);
    cJSON_Delete(pod);
}

static char *read_text(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static char *read_text(const char *fmt, ...)
{
    char path[512], *text = NULL;
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(path, sizeof(path), fmt, ap);
    va_end(ap);
    if (util_read_file(path, 1 << 20, &text, NULL) < 0)
        return NULL;
    return text;
}

static void test_runtime__etcd_pod_serves_on_its_pod_ip_with_private_mounts(void **state)
{
    char ip[INET_ADDRSTRLEN], path[256];
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(2379)};
    cJSON *st, *svcs;
    char *text;
    pid_t pid;
    int fd;

    fx->secret = cJSON_Parse("{\"data\":{\"ca.crt\":\"bm9kZWFnZW50LWNhCg==\"}}");
    svcs = cJSON_Parse("[{\"metadata\":{\"name\":\"etcd\",\"namespace\":\"" NS "\"},"
                       "\"spec\":{\"clusterIP\":\"None\",\"publishNotReadyAddresses\":true,"
                       "\"selector\":{\"app\":\"etcd\"}}}]");
    assert_int_equal(runtime_set_services(fx->rt, svcs), 0);
    cJSON_Delete(svcs);
    apply_yaml("metadata: {name: etcd-0, namespace: " NS ", uid: u1, labels: {app: etcd}}\n"
               "spec:\n"
               "  hostname: etcd-0\n"
               "  subdomain: etcd\n"
               "  volumes:\n"
               "  - {name: pki, secret: {secretName: certs}}\n"
               "  - {name: data, emptyDir: {}}\n"
               "  containers:\n"
               "  - name: etcd\n"
               "    image: registry.k8s.io/etcd:3.6.17-0\n"
               "    command: [etcd]\n"
               "    args:\n"
               "    - --name=$(POD_NAME)\n"
               "    - --data-dir=/var/lib/etcd/data\n"
               "    - --listen-client-urls=http://$(POD_IP):2379\n"
               "    - --advertise-client-urls=http://$(POD_NAME).etcd.$(POD_NAMESPACE).svc:2379\n"
               "    - --listen-peer-urls=http://$(POD_IP):2380\n"
               "    - --initial-advertise-peer-urls=http://$(POD_IP):2380\n"
               "    - --initial-cluster=$(POD_NAME)=http://$(POD_IP):2380\n"
               "    env:\n"
               "    - {name: POD_IP, valueFrom: {fieldRef: {fieldPath: status.podIP}}}\n"
               "    - {name: POD_NAME, valueFrom: {fieldRef: {fieldPath: metadata.name}}}\n"
               "    - {name: POD_NAMESPACE, valueFrom: {fieldRef: {fieldPath: "
               "metadata.namespace}}}\n"
               "    volumeMounts:\n"
               "    - {name: pki, mountPath: %s/mnt/pki, readOnly: true}\n"
               "    - {name: data, mountPath: /var/lib/etcd}\n"
               "    readinessProbe:\n"
               "      httpGet: {path: /health, port: 2379}\n"
               "      periodSeconds: 1\n",
               fx->state);
    /* A second pod resolves the Service and etcd-0's StatefulSet name through its hosts file. */
    apply_yaml("metadata: {name: client, namespace: " NS ", uid: u2}\n"
               "spec:\n"
               "  volumes: [{name: out, emptyDir: {}}]\n"
               "  containers:\n"
               "  - name: sh\n"
               "    image: nestcp.test/shell:1\n"
               "    command: [/bin/sh, -c]\n"
               "    args: ['getent hosts etcd.%s.svc.cluster.local etcd-0.etcd.%s.svc >/out/r.tmp;"
               " mv /out/r.tmp /out/resolved; exec sleep 600']\n"
               "    volumeMounts: [{name: out, mountPath: /out}]\n",
               NS, NS);

    assert_true(run_until(pod_ready, "etcd-0", 60));
    st = status("etcd-0");
    snprintf(ip, sizeof(ip), "%s", cJSON_GetObjectItem(st, "podIP")->valuestring);
    assert_true(str_has_prefix(ip, "127."));
    assert_string_not_equal(ip, "127.0.0.1");
    assert_string_equal(cJSON_GetObjectItem(st, "phase")->valuestring, "Running");
    assert_non_null(
        cJSON_GetObjectItem(cJSON_GetObjectItem(ctr_status(st, 0), "state"), "running"));
    assert_true(str_has_prefix(cJSON_GetObjectItem(ctr_status(st, 0), "containerID")->valuestring,
                               "nestcp://"));
    cJSON_Delete(st);

    /* etcd listens on the pod IP. */
    inet_pton(AF_INET, ip, &sa.sin_addr);
    fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
    close(fd);

    /* The Secret file is there inside the pod's mount namespace, and not on the host. */
    assert_int_equal(runtime_container_pid(fx->rt, NS, "etcd-0", "etcd", &pid), 0);
    text = read_text("/proc/%d/root%s/mnt/pki/ca.crt", (int)pid, fx->state);
    assert_non_null(text);
    assert_string_equal(text, "nodeagent-ca\n");
    free(text);
    snprintf(path, sizeof(path), "%s/mnt/pki/ca.crt", fx->state);
    assert_int_equal(access(path, F_OK), -1);
    /* The data directory is the pod's emptyDir. */
    snprintf(path, sizeof(path), "%s/pods/" NS "_etcd-0/volumes/data/data/member", fx->state);
    assert_int_equal(access(path, F_OK), 0);

    /* Names resolve inside the other pod, through nsswitch and the bind-mounted hosts file. */
    snprintf(path, sizeof(path), "%s/pods/" NS "_client/volumes/out/resolved", fx->state);
    assert_true(run_until(file_has, path, 20));
    text = read_text("%s", path);
    assert_non_null(strstr(text, "etcd." NS ".svc.cluster.local"));
    assert_non_null(strstr(text, "etcd-0.etcd." NS ".svc"));
    assert_true(str_has_prefix(text, ip));
    free(text);

    /* A log per container. */
    text = read_text("%s/pods/" NS "_etcd-0/etcd.log", fx->state);
    assert_non_null(text);
    assert_non_null(strstr(text, "etcd-0"));
    free(text);

    assert_int_equal(runtime_pod_stop(fx->rt, NS, "etcd-0", -1), 0);
    assert_int_equal(runtime_pod_stop(fx->rt, NS, "client", -1), 0);
    assert_true(run_until(n_stopped, "2", 40));
    assert_int_equal(runtime_running(fx->rt), 0);
    assert_int_equal(kill(pid, 0), -1);
    assert_int_equal(runtime_pod_remove(fx->rt, NS, "etcd-0"), 0);
    snprintf(path, sizeof(path), "%s/pods/" NS "_etcd-0/volumes", fx->state);
    assert_int_equal(access(path, F_OK), -1);
}

static void test_runtime__unknown_image_waits_with_err_image_pull(void **state)
{
    cJSON *st;
    const cJSON *waiting;

    apply_yaml("metadata: {name: nobin, namespace: " NS ", uid: u3}\n"
               "spec: {containers: [{name: c, image: 'example.com/unknown/thing:v9'}]}\n");
    st = status("nobin");
    waiting = cJSON_GetObjectItem(cJSON_GetObjectItem(ctr_status(st, 0), "state"), "waiting");
    assert_non_null(waiting);
    assert_string_equal(cJSON_GetObjectItem(waiting, "reason")->valuestring, "ErrImagePull");
    assert_non_null(strstr(cJSON_GetObjectItem(waiting, "message")->valuestring,
                           "example.com/unknown/thing:v9"));
    assert_string_equal(cJSON_GetObjectItem(st, "phase")->valuestring, "Pending");
    assert_false(cJSON_IsTrue(cJSON_GetObjectItem(ctr_status(st, 0), "ready")));
    assert_int_equal(runtime_running(fx->rt), 0);
    cJSON_Delete(st);
}

static bool log_says_3_6_17(const char *path)
{
    char *text = NULL;
    bool ok = util_read_file(path, 1 << 20, &text, NULL) == 0 && strstr(text, "3.6.17");

    free(text);
    return ok;
}

static bool succeeded(const char *name)
{
    cJSON *st = status(name);
    const cJSON *phase = cJSON_GetObjectItem(st, "phase");
    bool ok = cJSON_IsString(phase) && strcmp(phase->valuestring, "Succeeded") == 0;

    cJSON_Delete(st);
    return ok;
}

/* A tool the image holds beside its binary runs from the image's own release: `etcdutl` in
 * an etcd:3.6.17 image is etcd 3.6.17's, whatever else is on the node. */
static void test_runtime__a_tool_beside_the_image_binary_runs_that_release(void **state)
{
    char path[512];

    apply_yaml("metadata: {name: tools, namespace: " NS ", uid: u9}\n"
               "spec:\n"
               "  restartPolicy: Never\n"
               "  containers: [{name: c, image: 'registry.k8s.io/etcd:3.6.17-0', "
               "command: [etcdutl], args: [version]}]\n");
    snprintf(path, sizeof(path), "%s/pods/%s_tools/c.log", fx->state, NS);
    assert_true(run_until(log_says_3_6_17, path, 20));
    assert_true(run_until(succeeded, "tools", 20));
}

static void test_runtime__crashing_container_restarts_with_growing_backoff(void **state)
{
    cJSON *st;
    const cJSON *cs, *term;

    apply_yaml("metadata: {name: crash, namespace: " NS ", uid: u4}\n"
               "spec: {containers: [{name: c, image: nestcp.test/shell,"
               " command: [/bin/sh, -c, 'echo running; exit 3']}]}\n");
    assert_true(run_until(n_starts, "4", 30));
    /* Waits of 0.3, 0.6 and 1.2 s between the four starts: each about twice the one before. */
    for (int i = 1; i < 4; i++) {
        double wait = fx->starts[i] - fx->starts[i - 1];
        double want = 0.3 * (1 << (i - 1));

        assert_true(wait >= want - 0.05);
        assert_true(wait < want + 1.0);
    }
    st = status("crash");
    cs = ctr_status(st, 0);
    assert_true(cJSON_GetObjectItem(cs, "restartCount")->valueint >= 3);
    term = cJSON_GetObjectItem(cJSON_GetObjectItem(cs, "lastState"), "terminated");
    assert_non_null(term);
    assert_int_equal(cJSON_GetObjectItem(term, "exitCode")->valueint, 3);
    assert_string_equal(cJSON_GetObjectItem(term, "reason")->valuestring, "Error");
    cJSON_Delete(st);
}

static bool crash_backing_off(const char *name)
{
    cJSON *st = status(name);
    const cJSON *w =
        cJSON_GetObjectItem(cJSON_GetObjectItem(ctr_status(st, 0), "state"), "waiting");
    bool ok = w && strcmp(cJSON_GetObjectItem(w, "reason")->valuestring, "CrashLoopBackOff") == 0;

    cJSON_Delete(st);
    return ok;
}

static void test_runtime__crash_loop_shows_back_off_reason(void **state)
{
    apply_yaml("metadata: {name: crash2, namespace: " NS ", uid: u5}\n"
               "spec: {containers: [{name: c, image: nestcp.test/shell,"
               " command: [/bin/sh, -c, 'exit 1']}]}\n");
    assert_true(run_until(crash_backing_off, "crash2", 10));
}

static void test_runtime__stop_sends_sigterm_then_sigkill_after_grace(void **state)
{
    double t0, took;
    cJSON *st;
    char *log;
    const cJSON *term;

    apply_yaml("metadata: {name: stubborn, namespace: " NS ", uid: u6}\n"
               "spec:\n"
               "  terminationGracePeriodSeconds: 2\n"
               "  containers:\n"
               "  - name: c\n"
               "    image: nestcp.test/shell\n"
               "    command: [/bin/sh, -c, 'trap \"echo got SIGTERM\" TERM; echo up;"
               " while true; do sleep 0.1; done']\n");
    assert_true(run_until(n_starts, "1", 10));
    t0 = time_mono();
    while (time_mono() - t0 < 0.5) /* let the shell install its trap */
        ev_run(EV_DEFAULT, EVRUN_ONCE);
    t0 = time_mono();
    assert_int_equal(runtime_pod_stop(fx->rt, NS, "stubborn", -1), 0);
    assert_true(run_until(n_stopped, "1", 15));
    took = time_mono() - t0;
    assert_true(took >= 1.9);
    assert_true(took < 6);
    log = read_text("%s/pods/" NS "_stubborn/c.log", fx->state);
    assert_non_null(log);
    assert_non_null(strstr(log, "got SIGTERM"));
    free(log);
    st = status("stubborn");
    term = cJSON_GetObjectItem(cJSON_GetObjectItem(ctr_status(st, 0), "state"), "terminated");
    assert_non_null(term);
    assert_int_equal(cJSON_GetObjectItem(term, "exitCode")->valueint, 137);
    assert_int_equal(cJSON_GetObjectItem(term, "signal")->valueint, SIGKILL);
    cJSON_Delete(st);
}

static bool never(const char *arg)
{
    return false;
}

static void test_runtime__repeated_stop_of_a_stopped_pod_changes_nothing(void **state)
{
    int changed;

    apply_yaml("metadata: {name: quiet, namespace: " NS ", uid: u9}\n"
               "spec: {terminationGracePeriodSeconds: 5, containers: [{name: c,"
               " image: nestcp.test/shell, command: [sleep, '600']}]}\n");
    assert_true(run_until(n_starts, "1", 10));
    assert_int_equal(runtime_pod_stop(fx->rt, NS, "quiet", -1), 0);
    assert_true(run_until(n_stopped, "1", 10));
    assert_true(runtime_pod_stopped(fx->rt, NS, "quiet"));
    run_until(never, NULL, 0.2);
    changed = fx->changed;
    /* What a sync loop does when it sees the pod still being deleted: no new notification,
     * which would bring it back at once. */
    for (int i = 0; i < 3; i++) {
        assert_int_equal(runtime_pod_stop(fx->rt, NS, "quiet", -1), 0);
        run_until(never, NULL, 0.1);
    }
    assert_int_equal(fx->changed, changed);
    assert_int_equal(fx->stopped, 1);
}

static bool restarted_once(const char *name)
{
    cJSON *st = status(name);
    bool ok = cJSON_GetObjectItem(ctr_status(st, 0), "restartCount")->valueint >= 1;

    cJSON_Delete(st);
    return ok;
}

static void test_runtime__exec_probes_run_inside_the_pod_and_liveness_restarts(void **state)
{
    fx->secret = cJSON_Parse("{\"data\":{\"flag\":\"eWVz\"}}");
    /* The readiness probe reads a file that exists only in the pod's mount namespace. */
    apply_yaml("metadata: {name: probed, namespace: " NS ", uid: u7}\n"
               "spec:\n"
               "  volumes: [{name: s, secret: {secretName: certs}}]\n"
               "  containers:\n"
               "  - name: c\n"
               "    image: nestcp.test/shell\n"
               "    command: [sleep, '600']\n"
               "    volumeMounts: [{name: s, mountPath: %s/mnt/flag}]\n"
               "    readinessProbe:\n"
               "      exec: {command: [test, -f, %s/mnt/flag/flag]}\n"
               "      periodSeconds: 1\n",
               fx->state, fx->state);
    assert_true(run_until(pod_ready, "probed", 20));
    apply_yaml("metadata: {name: unhealthy, namespace: " NS ", uid: u8}\n"
               "spec:\n"
               "  terminationGracePeriodSeconds: 1\n"
               "  containers:\n"
               "  - name: c\n"
               "    image: nestcp.test/shell\n"
               "    command: [sleep, '600']\n"
               "    livenessProbe:\n"
               "      exec: {command: ['false']}\n"
               "      periodSeconds: 1\n"
               "      failureThreshold: 2\n");
    assert_true(run_until(restarted_once, "unhealthy", 20));
    assert_true(fx->unhealthy);
    assert_true(pod_ready("probed"));
}

static bool log_has(const char *needle)
{
    char *text = read_text("%s/pods/" NS "_annotated/c.log", fx->state);
    bool ok = text && strstr(text, needle);

    free(text);
    return ok;
}

#define ANNOTATED_POD                                                                              \
    "metadata: {name: annotated, namespace: " NS ", uid: u9,"                                      \
    " annotations: {'some.key/name': %s}}\n"                                                       \
    "spec:\n"                                                                                      \
    "  containers:\n"                                                                              \
    "  - name: c\n"                                                                                \
    "    image: nestcp.test/shell\n"                                                               \
    "    env: [{name: ANN, valueFrom: {fieldRef: {fieldPath: "                                     \
    "\"metadata.annotations['some.key/name']\"}}}]\n"                                              \
    "    command: [/bin/sh, -c, 'echo \"ann=[$ANN]\"; exec sleep 600']\n"

/* As a kubelet does when it creates a container, a restart evaluates env afresh: a
 * metadata.annotations['...'] fieldRef sees the annotation's value at that time. */
static void test_runtime__restarted_container_sees_the_current_annotation(void **state)
{
    char *pidfile;
    int pid;

    apply_yaml(ANNOTATED_POD, "first");
    assert_true(run_until(log_has, "ann=[first]\n", 10));
    /* New metadata; the running process keeps its environment. */
    apply_yaml(ANNOTATED_POD, "second");
    pidfile = read_text("%s/pods/" NS "_annotated/c.pid", fx->state);
    assert_non_null(pidfile);
    pid = atoi(pidfile);
    free(pidfile);
    assert_true(pid > 0);
    assert_false(log_has("ann=[second]"));
    assert_int_equal(kill(pid, SIGKILL), 0);
    assert_true(run_until(log_has, "ann=[second]\n", 10));
    assert_true(fx->nstarts >= 2);
}

static bool file_exists(const char *path)
{
    return access(path, F_OK) == 0;
}

/* The line of /proc/<pid>/status that starts with field ("Uid:"), without the field name. */
static char *proc_status_line(pid_t pid, const char *field)
{
    char *text = read_text("/proc/%d/status", (int)pid), *line, *end, *out = NULL;

    assert_non_null(text);
    line = strstr(text, field);
    if (line) {
        line += strlen(field);
        line += strspn(line, " \t");
        end = strchr(line, '\n');
        out = strndup(line, end ? (size_t)(end - line) : strlen(line));
        for (size_t n = out ? strlen(out) : 0; n > 0 && out[n - 1] == ' '; n--)
            out[n - 1] = '\0'; /* "Groups:" ends in a space */
    }
    free(text);
    assert_non_null(out);
    return out;
}

#define RESTRICTED_CONTAINER_SC                                                                    \
    "    securityContext: {allowPrivilegeEscalation: false, readOnlyRootFilesystem: true,"         \
    " capabilities: {drop: [ALL]}}\n"

/* The restricted securityContext nestcp's packages set is what the process gets: its uid, gid
 * and groups, no capabilities in any set, no_new_privs, a read-only root filesystem with
 * writable volumes, and a Secret readable through the fsGroup. */
static void test_runtime__security_context_is_applied_to_the_process(void **state)
{
    char path[512], *line, *text;
    struct stat st;
    cJSON *st_json;
    const cJSON *waiting;
    pid_t pid;

    /* The mount points live under the state directory, which the pod's user must traverse. */
    assert_int_equal(chmod(fx->state, 0755), 0);
    fx->secret = cJSON_Parse("{\"data\":{\"flag\":\"eWVz\"}}");
    apply_yaml("metadata: {name: restricted, namespace: " NS ", uid: u10}\n"
               "spec:\n"
               "  securityContext: {runAsNonRoot: true, runAsUser: 65532, runAsGroup: 65533,"
               " fsGroup: 65534, supplementalGroups: [4242],"
               " seccompProfile: {type: RuntimeDefault}}\n"
               "  volumes:\n"
               "  - {name: s, secret: {secretName: certs, defaultMode: 256}}\n"
               "  - {name: data, emptyDir: {}}\n"
               "  containers:\n"
               "  - name: c\n"
               "    image: nestcp.test/shell\n" RESTRICTED_CONTAINER_SC
               "    command: [/bin/sh, -c]\n"
               "    args: ['cat %s/mnt/s/flag >%s/mnt/data/read; touch /nodeagent-ro-probe"
               " 2>%s/mnt/data/root; echo done >%s/mnt/data/done; exec sleep 600']\n"
               "    volumeMounts:\n"
               "    - {name: s, mountPath: %s/mnt/s, readOnly: true}\n"
               "    - {name: data, mountPath: %s/mnt/data}\n",
               fx->state, fx->state, fx->state, fx->state, fx->state, fx->state);
    snprintf(path, sizeof(path), "%s/pods/" NS "_restricted/volumes/data/done", fx->state);
    assert_true(run_until(file_exists, path, 20));
    assert_int_equal(runtime_container_pid(fx->rt, NS, "restricted", "c", &pid), 0);

    line = proc_status_line(pid, "Uid:");
    assert_string_equal(line, "65532\t65532\t65532\t65532");
    free(line);
    line = proc_status_line(pid, "Gid:");
    assert_string_equal(line, "65533\t65533\t65533\t65533");
    free(line);
    line = proc_status_line(pid, "Groups:");
    assert_string_equal(line, "4242 65534");
    free(line);
    line = proc_status_line(pid, "NoNewPrivs:");
    assert_string_equal(line, "1");
    free(line);
    for (int i = 0; i < 4; i++) {
        static const char *const sets[] = {"CapInh:", "CapPrm:", "CapEff:", "CapBnd:"};
        line = proc_status_line(pid, sets[i]);
        assert_string_equal(line, "0000000000000000");
        free(line);
    }

    /* The Secret (mode 0400) is readable through the fsGroup; the root filesystem is not
     * writable, the emptyDir is, and what the pod writes there belongs to it and the group. */
    text = read_text("%s/pods/" NS "_restricted/volumes/data/read", fx->state);
    assert_non_null(text);
    assert_string_equal(text, "yes");
    free(text);
    text = read_text("%s/pods/" NS "_restricted/volumes/data/root", fx->state);
    assert_non_null(text);
    assert_non_null(strstr(text, "Read-only file system"));
    free(text);
    assert_int_equal(access("/nodeagent-ro-probe", F_OK), -1);
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_uid, 65532);
    assert_int_equal(st.st_gid, 65534);
    snprintf(path, sizeof(path), "%s/pods/" NS "_restricted/volumes/s/flag", fx->state);
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_gid, 65534);
    assert_int_equal(st.st_mode & 07777, 0440);

    /* runAsNonRoot without a user: this node's images run as root, so the kubelet's refusal. */
    apply_yaml("metadata: {name: rootish, namespace: " NS ", uid: u11}\n"
               "spec:\n"
               "  securityContext: {runAsNonRoot: true}\n"
               "  containers: [{name: c, image: nestcp.test/shell, command: [sleep, '600']}]\n");
    st_json = status("rootish");
    waiting = cJSON_GetObjectItem(cJSON_GetObjectItem(ctr_status(st_json, 0), "state"), "waiting");
    assert_string_equal(cJSON_GetObjectItem(waiting, "reason")->valuestring,
                        "CreateContainerConfigError");
    assert_non_null(strstr(cJSON_GetObjectItem(waiting, "message")->valuestring, "runAsNonRoot"));
    cJSON_Delete(st_json);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(
            test_runtime__etcd_pod_serves_on_its_pod_ip_with_private_mounts, setup, teardown),
        cmocka_unit_test_setup_teardown(
            test_runtime__a_tool_beside_the_image_binary_runs_that_release, setup, teardown),
        cmocka_unit_test_setup_teardown(test_runtime__unknown_image_waits_with_err_image_pull,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(
            test_runtime__crashing_container_restarts_with_growing_backoff, setup, teardown),
        cmocka_unit_test_setup_teardown(test_runtime__crash_loop_shows_back_off_reason, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_runtime__stop_sends_sigterm_then_sigkill_after_grace,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(
            test_runtime__exec_probes_run_inside_the_pod_and_liveness_restarts, setup, teardown),
        cmocka_unit_test_setup_teardown(
            test_runtime__repeated_stop_of_a_stopped_pod_changes_nothing, setup, teardown),
        cmocka_unit_test_setup_teardown(
            test_runtime__restarted_container_sees_the_current_annotation, setup, teardown),
        cmocka_unit_test_setup_teardown(test_runtime__security_context_is_applied_to_the_process,
                                        setup, teardown),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
