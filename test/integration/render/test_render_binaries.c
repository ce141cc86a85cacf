/*
 * What `nestcp render` prints runs, on every line shipped: for each of Kubernetes 1.35, 1.36 and
 * 1.37 (with etcd 3.5 under 1.35 and 3.6 under the others, so both etcd lines run too), a
 * 1-member etcd, a kube-apiserver and a kube-controller-manager of that release are started
 * from the rendered StatefulSets' command lines, with the rendered certs Secrets laid out as the
 * pods would see them. Only what a pod runtime (and, for etcd's initial cluster, the manager
 * through the pod's annotations) would supply is substituted: $(POD_IP) becomes a loopback address
 * of its own, $(POD_NAME) the pod name, the mount paths a temporary directory, and the Services'
 * DNS names resolve through a hosts file bind-mounted over /etc/hosts in a private mount namespace
 * (unshare -m) around each process. Then etcdctl with the healthcheck client certificate is served
 * and one without a client certificate is refused, kubectl of the same release with the rendered
 * admin kubeconfig (server pointed at the local address, TLS still verified against the Service
 * name) lists namespaces and reads the server's version, and the controller manager, through its
 * own rendered kubeconfig, does its work: it creates the `default` ServiceAccount of a new
 * namespace. The rendered authentication configuration holds on every line: anonymous requests
 * reach /readyz, /livez and /healthz only (401 for /api, /version and the rest).
 */

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "lib/pki/base64.h"
#include "lib/render/patch.h"
#include "lib/util/buf.h"
#include "lib/util/yamlconv.h"
#include "test/support/proc.h"

#define NS "rbns"

/* One shipped line: the Kubernetes and etcd releases hack/kube-build.sh builds for it, and the
 * loopback addresses its pods get. */
struct line {
    const char *kubernetes, *etcd;
    const char *etcd_ip, *api_ip, *cm_ip;
    const char *apiserver_spec; /* the NestedAPIServer's spec */
};

/* From 1.37 kube-apiserver refuses to advertise a loopback address to its endpoint reconciler,
 * and the pods here have loopback addresses: that line turns the reconciler off. */
static const struct line lines[] = {
    {"1.35.4", "3.5.36", "127.0.9.2", "127.0.9.3", "127.0.9.4", "{replicas: 1}"},
    {"1.36.3", "3.6.17", "127.0.9.12", "127.0.9.13", "127.0.9.14", "{replicas: 1}"},
    {"1.37.2", "3.6.17", "127.0.9.22", "127.0.9.23", "127.0.9.24",
     "{replicas: 1, extraArgs: {endpoint-reconciler-type: none}}"},
};

static const char input_fmt[] =
    "apiVersion: controlplane.cluster.x-k8s.io/v1beta1\nkind: NestedControlPlane\n"
    "metadata: {name: rb, namespace: " NS "}\nspec: {version: %s}\n"
    "---\napiVersion: controlplane.cluster.x-k8s.io/v1beta1\nkind: NestedEtcd\n"
    "metadata: {name: rb-etcd, namespace: " NS ", labels: {cluster.x-k8s.io/cluster-name: rb}}\n"
    "spec: {replicas: 1, version: %s}\n"
    "---\napiVersion: controlplane.cluster.x-k8s.io/v1beta1\nkind: NestedAPIServer\n"
    "metadata: {name: rb-apiserver, namespace: " NS ", labels: {cluster.x-k8s.io/cluster-name: "
    "rb}}\nspec: %s\n"
    "---\napiVersion: controlplane.cluster.x-k8s.io/v1beta1\nkind: NestedControllerManager\n"
    "metadata: {name: rb-cm, namespace: " NS ", labels: {cluster.x-k8s.io/cluster-name: rb}}\n"
    "spec: {replicas: 1}\n";

struct env {
    char dir[64];
    char kube_bin[1024], etcd_bin[1024];
    const struct line *line;
    pid_t etcd, apiserver, cm;
    cJSON *objs;
};

static void write_file(const char *path, const char *text, size_t len)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);

    assert_true(fd >= 0);
    assert_int_equal(write(fd, text, len), (ssize_t)len);
    close(fd);
}

static const cJSON *find(const cJSON *objs, const char *kind, const char *prefix)
{
    const cJSON *o;

    cJSON_ArrayForEach(o, objs) {
        const cJSON *k = cJSON_GetObjectItem(o, "kind");
        const cJSON *n = cJSON_GetObjectItem(cJSON_GetObjectItem(o, "metadata"), "name");
        if (strcmp(k->valuestring, kind) == 0 &&
            strncmp(n->valuestring, prefix, strlen(prefix)) == 0)
            return o;
    }
    return NULL;
}

/* Writes every key of a Secret as a file under dir, as a Secret volume would. */
static void lay_out(const cJSON *secret, const char *dir)
{
    const cJSON *it;
    char path[512];

    assert_non_null(secret);
    assert_true(mkdir(dir, 0700) == 0 || errno == EEXIST);
    cJSON_ArrayForEach(it, cJSON_GetObjectItem(secret, "data")) {
        unsigned char *data = NULL;
        size_t len = 0;
        assert_int_equal(
            pki_base64_decode(it->valuestring, strlen(it->valuestring), 1 << 20, &data, &len), 0);
        snprintf(path, sizeof(path), "%s/%s", dir, it->string);
        write_file(path, (const char *)data, len);
        free(data);
    }
}

/* Writes every key of a ConfigMap as a file under dir, as a ConfigMap volume would. */
static void lay_out_config(const cJSON *cm, const char *dir)
{
    const cJSON *it;
    char path[512];

    assert_non_null(cm);
    assert_true(mkdir(dir, 0700) == 0 || errno == EEXIST);
    cJSON_ArrayForEach(it, cJSON_GetObjectItem(cm, "data")) {
        snprintf(path, sizeof(path), "%s/%s", dir, it->string);
        write_file(path, it->valuestring, strlen(it->valuestring));
    }
}

/* s with every occurrence of from replaced by to (caller frees). */
static char *replace(const char *s, const char *from, const char *to)
{
    struct buf b = BUF_INIT;
    const char *p;

    while ((p = strstr(s, from))) {
        buf_append(&b, s, (size_t)(p - s));
        buf_puts(&b, to);
        s = p + strlen(from);
    }
    buf_puts(&b, s);
    return buf_steal(&b);
}

/* Starts the first container of a rendered StatefulSet as the pod would run it: its args
 * with the substitutions the pod runtime makes, inside a mount namespace whose /etc/hosts
 * knows the Services. */
static pid_t start(const struct env *env, const cJSON *sts, const char *binary,
                   const char *const subst[][2], size_t nsubst, const char *log)
{
    const cJSON *c = cJSON_GetObjectItem(render_pod_spec(sts), "containers")->child, *a;
    char *argv[128], hosts[128], logpath[128];
    int argc = 0;
    pid_t pid;

    snprintf(hosts, sizeof(hosts), "%s/hosts", env->dir);
    argv[argc++] = strdup("/usr/bin/unshare");
    argv[argc++] = strdup("-m");
    argv[argc++] = strdup("/bin/sh");
    argv[argc++] = strdup("-c");
    argv[argc++] = strdup("mount --bind \"$0\" /etc/hosts && exec \"$@\"");
    argv[argc++] = strdup(hosts);
    argv[argc++] = strdup(binary);
    cJSON_ArrayForEach(a, cJSON_GetObjectItem(c, "args")) {
        char *arg = strdup(a->valuestring);
        for (size_t i = 0; i < nsubst; i++) {
            char *next = replace(arg, subst[i][0], subst[i][1]);
            free(arg);
            arg = next;
        }
        assert_true(argc < 126);
        argv[argc++] = arg;
    }
    argv[argc] = NULL;
    snprintf(logpath, sizeof(logpath), "%s/%s", env->dir, log);
    pid = proc_spawn(logpath, argv);
    assert_true(pid > 0);
    for (int i = 0; i < argc; i++)
        free(argv[i]);
    return pid;
}

static void show_log(const struct env *env, const char *log)
{
    char out[8192];

    proc_run(out, sizeof(out), "tail -n 20 %s/%s", env->dir, log);
    fprintf(stderr, "--- %s ---\n%s\n", log, out);
}

/* Runs cmd in a mount namespace with the test's hosts file. */
static int run_in_ns(const struct env *env, char *out, size_t size, const char *cmd)
{
    return proc_run(out, size,
                    "unshare -m sh -c 'mount --bind %s/hosts /etc/hosts && cd %s && %s' 2>&1",
                    env->dir, env->dir, cmd);
}

/* The directory hack/kube-build.sh caches a release's binaries in (building it if missing). */
static int release_dir(const char *src, const char *what, const char *version, char *out,
                       size_t size)
{
    static char text[64 * 1024];

    if (proc_run(text, sizeof(text), "%s/hack/kube-build.sh %s %s 2>&1", src, what, version) != 0) {
        fprintf(stderr, "hack/kube-build.sh %s %s: %s\n", what, version, text);
        return -1;
    }
    /* The last line is the directory; build progress may precede it. */
    while (*text && text[strlen(text) - 1] == '\n')
        text[strlen(text) - 1] = '\0';
    snprintf(out, size, "%s", strrchr(text, '\n') ? strrchr(text, '\n') + 1 : text);
    return 0;
}

static int setup_line(void **state, const struct line *line)
{
    struct env *env = calloc(1, sizeof(*env));
    const char *src = getenv("NESTCP_SOURCE_DIR"), *bin = getenv("NESTCP_BIN");
    static char out[4 * 1024 * 1024];
    char path[256], input[4096], hosts[512];
    struct err e = {0};

    env->line = line;
    snprintf(env->dir, sizeof(env->dir), "/tmp/nestcp-render-bin-XXXXXX");
    if (!src || !bin || !mkdtemp(env->dir)) {
        fprintf(stderr, "NESTCP_SOURCE_DIR and NESTCP_BIN are needed\n");
        return -1;
    }
    if (release_dir(src, "kubernetes", line->kubernetes, env->kube_bin, sizeof(env->kube_bin)) <
            0 ||
        release_dir(src, "etcd", line->etcd, env->etcd_bin, sizeof(env->etcd_bin)) < 0)
        return -1;
    snprintf(path, sizeof(path), "%s/input.yaml", env->dir);
    snprintf(input, sizeof(input), input_fmt, line->kubernetes, line->etcd, line->apiserver_spec);
    write_file(path, input, strlen(input));
    if (proc_run(out, sizeof(out), "%s render -f %s 2>&1", bin, path) != 0) {
        fprintf(stderr, "nestcp render: %s\n", out);
        return -1;
    }
    if (yamlconv_parse_all(out, strlen(out), "render", &env->objs, &e) < 0) {
        fprintf(stderr, "output: %s\n", e.msg);
        return -1;
    }
    snprintf(path, sizeof(path), "%s/hosts", env->dir);
    snprintf(hosts, sizeof(hosts),
             "127.0.0.1 localhost\n%s rb-etcd-0.rb-etcd." NS ".svc rb-etcd." NS ".svc\n"
             "%s rb-apiserver." NS ".svc\n",
             line->etcd_ip, line->api_ip);
    write_file(path, hosts, strlen(hosts));
    *state = env;
    return 0;
}

static int teardown(void **state)
{
    struct env *env = *state;
    char out[64];

    if (!env)
        return 0;
    proc_stop(&env->cm, 10);
    proc_stop(&env->apiserver, 10);
    proc_stop(&env->etcd, 10);
    proc_run(out, sizeof(out), "rm -rf %s", env->dir);
    cJSON_Delete(env->objs);
    free(env);
    return 0;
}

static void etcd_serves_the_rendered_certificates(struct env *env)
{
    char pki[128], data[128], etcd[1400], cmd[1800], out[4096];
    int ok = 0;

    snprintf(pki, sizeof(pki), "%s/etcd-pki", env->dir);
    snprintf(data, sizeof(data), "--data-dir=%s/etcd-data", env->dir);
    snprintf(etcd, sizeof(etcd), "%s/etcd", env->etcd_bin);
    lay_out(find(env->objs, "Secret", "rb-etcd-certs-"), pki);
    /* What nestcp writes into the pod's annotations before it lifts the scheduling gate. */
    const char *const subst[][2] = {
        {"$(NESTCP_INITIAL_CLUSTER)", "rb-etcd-0=https://rb-etcd-0.rb-etcd." NS ".svc:2380"},
        {"$(NESTCP_INITIAL_CLUSTER_STATE)", "new"},
        {"$(POD_NAME)", "rb-etcd-0"},
        {"$(POD_IP)", env->line->etcd_ip},
        {"/etc/etcd/pki", pki},
        {"--data-dir=/var/lib/etcd/data", data},
    };
    env->etcd = start(env, find(env->objs, "StatefulSet", "rb-etcd"), etcd, subst,
                      sizeof(subst) / sizeof(subst[0]), "etcd.log");
    snprintf(etcd, sizeof(etcd),
             "%s/etcdctl --endpoints=https://rb-etcd-0.rb-etcd." NS ".svc:2379 "
             "--cacert=etcd-pki/ca.crt --dial-timeout=2s --command-timeout=3s",
             env->etcd_bin);
    for (int i = 0; i < 100 && !ok; i++) {
        usleep(200 * 1000);
        if (!proc_alive(&env->etcd))
            break;
        snprintf(cmd, sizeof(cmd),
                 "%s --cert=etcd-pki/healthcheck-client.crt --key=etcd-pki/healthcheck-client.key "
                 "endpoint status -w json",
                 etcd);
        ok = run_in_ns(env, out, sizeof(out), cmd) == 0;
    }
    if (!ok)
        show_log(env, "etcd.log");
    assert_true(ok);
    /* The member runs the release asked for. */
    {
        char want[64];

        snprintf(want, sizeof(want), "\"version\":\"%s\"", env->line->etcd);
        if (!strstr(out, want))
            fail_msg("etcd status does not say %s: %s", want, out);
    }
    /* Without a client certificate: refused. */
    snprintf(cmd, sizeof(cmd), "%s endpoint health", etcd);
    assert_int_not_equal(run_in_ns(env, out, sizeof(out), cmd), 0);
}

/* The rendered authentication configuration: a request without credentials reaches the
 * health endpoints the kubelet's probes use, and is 401 everywhere else (the API discovery,
 * /version, a Secret list). */
static void anonymous_gets_only_health(struct env *env, const char *pki)
{
    static const struct {
        const char *path, *code;
    } want[] = {
        {"/readyz", "200"},  {"/livez", "200"}, {"/healthz", "200"}, {"/api", "401"},
        {"/version", "401"}, {"/apis", "401"},  {"/metrics", "401"}, {"/api/v1/secrets", "401"},
    };
    char out[256];

    for (size_t i = 0; i < sizeof(want) / sizeof(*want); i++) {
        assert_int_equal(proc_run(out, sizeof(out),
                                  "curl -sS -o /dev/null -w '%%{http_code}' --max-time 10 --cacert "
                                  "%s/ca.crt --resolve rb-apiserver." NS ".svc:6443:%s "
                                  "https://rb-apiserver." NS ".svc:6443%s 2>&1",
                                  pki, env->line->api_ip, want[i].path),
                         0);
        if (strcmp(out, want[i].code) != 0)
            fail_msg("anonymous GET %s: HTTP %s, want %s", want[i].path, out, want[i].code);
    }
}

static void apiserver_serves_the_admin_kubeconfig(struct env *env)
{
    char pki[128], authn[128], bin[1200], kc[128], kubectl[1400], out[4096], want[128];
    const cJSON *secret = find(env->objs, "Secret", "rb-kubeconfig");
    unsigned char *text = NULL;
    size_t len = 0;
    bool ready = false;

    assert_true(proc_alive(&env->etcd));
    snprintf(pki, sizeof(pki), "%s/kube-pki", env->dir);
    snprintf(bin, sizeof(bin), "%s/kube-apiserver", env->kube_bin);
    lay_out(find(env->objs, "Secret", "rb-apiserver-certs-"), pki);
    snprintf(authn, sizeof(authn), "%s/kube-authn", env->dir);
    lay_out_config(find(env->objs, "ConfigMap", "rb-apiserver-authn"), authn);
    const char *const subst[][2] = {{"$(POD_IP)", env->line->api_ip},
                                    {"/etc/kubernetes/pki", pki},
                                    {"/etc/kubernetes/authn", authn}};
    env->apiserver =
        start(env, find(env->objs, "StatefulSet", "rb-apiserver"), bin, subst, 3, "apiserver.log");

    /* The rendered admin kubeconfig, pointed at the local address; TLS is still verified,
     * against the Service's name. kubectl is the same release as the server. */
    const cJSON *v = cJSON_GetObjectItem(cJSON_GetObjectItem(secret, "data"), "value");
    assert_int_equal(
        pki_base64_decode(v->valuestring, strlen(v->valuestring), 1 << 20, &text, &len), 0);
    snprintf(kc, sizeof(kc), "%s/admin.conf", env->dir);
    write_file(kc, (const char *)text, len);
    free(text);
    snprintf(kubectl, sizeof(kubectl), "%s/kubectl --kubeconfig %s", env->kube_bin, kc);
    assert_int_equal(proc_run(out, sizeof(out),
                              "%s config set-cluster rb --server=https://%s:6443 "
                              "--tls-server-name=rb-apiserver." NS ".svc 2>&1",
                              kubectl, env->line->api_ip),
                     0);
    for (int i = 0; i < 300 && !ready; i++) {
        usleep(200 * 1000);
        if (!proc_alive(&env->apiserver))
            break;
        ready = proc_run(out, sizeof(out), "%s get --raw /readyz 2>&1", kubectl) == 0 &&
                strcmp(out, "ok") == 0;
    }
    if (!ready) {
        show_log(env, "apiserver.log");
        show_log(env, "etcd.log");
    }
    assert_true(ready);
    assert_int_equal(proc_run(out, sizeof(out), "%s get namespaces -o name 2>&1", kubectl), 0);
    assert_non_null(strstr(out, "namespace/kube-system"));
    assert_non_null(strstr(out, "namespace/default"));
    assert_int_equal(proc_run(out, sizeof(out), "%s auth can-i '*' '*' 2>&1", kubectl), 0);
    assert_string_equal(out, "yes\n");
    /* /version says the release: the binary was stamped as a release build is. */
    assert_int_equal(proc_run(out, sizeof(out), "%s get --raw /version 2>&1", kubectl), 0);
    snprintf(want, sizeof(want), "\"gitVersion\": \"v%s\"", env->line->kubernetes);
    if (!strstr(out, want))
        fail_msg("/version does not say %s: %s", want, out);
    anonymous_gets_only_health(env, pki);
}

static void controller_manager_works_through_its_kubeconfig(struct env *env)
{
    char pki[128], bin[1200], kubectl[1400], out[4096];
    bool done = false;

    assert_true(proc_alive(&env->apiserver));
    snprintf(pki, sizeof(pki), "%s/cm-pki", env->dir);
    snprintf(bin, sizeof(bin), "%s/kube-controller-manager", env->kube_bin);
    lay_out(find(env->objs, "Secret", "rb-controller-manager-certs-"), pki);
    const char *const subst[][2] = {{"$(POD_IP)", env->line->cm_ip}, {"/etc/kubernetes/pki", pki}};
    env->cm = start(env, find(env->objs, "StatefulSet", "rb-controller-manager"), bin, subst, 2,
                    "controller-manager.log");
    snprintf(kubectl, sizeof(kubectl), "%s/kubectl --kubeconfig %s/admin.conf", env->kube_bin,
             env->dir);
    assert_int_equal(proc_run(out, sizeof(out), "%s create namespace rb-probe 2>&1", kubectl), 0);
    /* The serviceaccount controller creates `default` in every namespace: the controller
     * manager reached the API server with its own credentials and holds the lease. */
    for (int i = 0; i < 300 && !done; i++) {
        usleep(200 * 1000);
        if (!proc_alive(&env->cm))
            break;
        done = proc_run(out, sizeof(out), "%s -n rb-probe get serviceaccount default -o name 2>&1",
                        kubectl) == 0;
    }
    if (!done)
        show_log(env, "controller-manager.log");
    assert_true(done);
    assert_string_equal(out, "serviceaccount/default\n");
}

static void line_runs(void **state)
{
    struct env *env = *state;

    etcd_serves_the_rendered_certificates(env);
    apiserver_serves_the_admin_kubeconfig(env);
    controller_manager_works_through_its_kubeconfig(env);
}

static int setup_1_35(void **state)
{
    return setup_line(state, &lines[0]);
}

static int setup_1_36(void **state)
{
    return setup_line(state, &lines[1]);
}

static int setup_1_37(void **state)
{
    return setup_line(state, &lines[2]);
}

static void test_render_binaries__kubernetes_1_35_with_etcd_3_5(void **state)
{
    line_runs(state);
}

static void test_render_binaries__kubernetes_1_36_with_etcd_3_6(void **state)
{
    line_runs(state);
}

static void test_render_binaries__kubernetes_1_37_with_etcd_3_6(void **state)
{
    line_runs(state);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_render_binaries__kubernetes_1_35_with_etcd_3_5,
                                        setup_1_35, teardown),
        cmocka_unit_test_setup_teardown(test_render_binaries__kubernetes_1_36_with_etcd_3_6,
                                        setup_1_36, teardown),
        cmocka_unit_test_setup_teardown(test_render_binaries__kubernetes_1_37_with_etcd_3_6,
                                        setup_1_37, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
