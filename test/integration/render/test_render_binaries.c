/*
 * What `nestcp render` prints runs: a 1-member etcd and a kube-apiserver are started from the
 * rendered StatefulSets' command lines, with the rendered certs Secrets laid out as the pods
 * would see them. Only what a pod runtime would supply is substituted: $(POD_IP) becomes a
 * loopback address of its own, $(POD_NAME) the pod name, the mount paths a temporary
 * directory, and the Services' DNS names resolve through a hosts file bind-mounted over
 * /etc/hosts in a private mount namespace (unshare -m) around each process. Then etcdctl with
 * the healthcheck client certificate is served and one without a client certificate is
 * refused, and kubectl with the rendered admin kubeconfig (server pointed at the local address,
 * TLS still verified against the Service name) lists namespaces.
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

extern char **environ;

#define NS "rbns"
#define ETCD_IP "127.0.9.2"
#define API_IP "127.0.9.3"

static const char input[] =
    "apiVersion: controlplane.cluster.x-k8s.io/v1beta1\nkind: NestedControlPlane\n"
    "metadata: {name: rb, namespace: " NS "}\nspec: {version: 1.20.2}\n"
    "---\napiVersion: controlplane.cluster.x-k8s.io/v1beta1\nkind: NestedEtcd\n"
    "metadata: {name: rb-etcd, namespace: " NS ", labels: {cluster.x-k8s.io/cluster-name: rb}}\n"
    "spec: {replicas: 1}\n"
    "---\napiVersion: controlplane.cluster.x-k8s.io/v1beta1\nkind: NestedAPIServer\n"
    "metadata: {name: rb-apiserver, namespace: " NS ", labels: {cluster.x-k8s.io/cluster-name: "
    "rb}}\nspec: {replicas: 1}\n"
    "---\napiVersion: controlplane.cluster.x-k8s.io/v1beta1\nkind: NestedControllerManager\n"
    "metadata: {name: rb-cm, namespace: " NS ", labels: {cluster.x-k8s.io/cluster-name: rb}}\n"
    "spec: {replicas: 1}\n";

struct env {
    char dir[64];
    char bin_dir[1024];
    pid_t etcd, apiserver;
    cJSON *objs;
};

/* Runs a shell command; its output goes to out. Returns the exit status. */
static int run(char *out, size_t size, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int run(char *out, size_t size, const char *fmt, ...)
{
    char cmd[8192];
    va_list ap;
    FILE *p;
    size_t n;

    va_start(ap, fmt);
    vsnprintf(cmd, sizeof(cmd), fmt, ap);
    va_end(ap);
    p = popen(cmd, "r");
    assert_non_null(p);
    n = fread(out, 1, size - 1, p);
    out[n] = '\0';
    int st = pclose(p);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

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

    cJSON_ArrayForEach(o, objs)
    {
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
    cJSON_ArrayForEach(it, cJSON_GetObjectItem(secret, "data"))
    {
        unsigned char *data = NULL;
        size_t len = 0;
        assert_int_equal(
            pki_base64_decode(it->valuestring, strlen(it->valuestring), 1 << 20, &data, &len), 0);
        snprintf(path, sizeof(path), "%s/%s", dir, it->string);
        write_file(path, (const char *)data, len);
        free(data);
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
    posix_spawn_file_actions_t fa;
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
    cJSON_ArrayForEach(a, cJSON_GetObjectItem(c, "args"))
    {
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
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, logpath, O_WRONLY | O_CREAT | O_APPEND, 0600);
    posix_spawn_file_actions_adddup2(&fa, 1, 2);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    assert_int_equal(posix_spawn(&pid, argv[0], &fa, NULL, argv, environ), 0);
    posix_spawn_file_actions_destroy(&fa);
    for (int i = 0; i < argc; i++)
        free(argv[i]);
    return pid;
}

static void stop(pid_t *pid)
{
    if (*pid <= 0)
        return;
    kill(*pid, SIGTERM);
    for (int i = 0; i < 100; i++) {
        if (waitpid(*pid, NULL, WNOHANG) == *pid) {
            *pid = 0;
            return;
        }
        usleep(100 * 1000);
    }
    kill(*pid, SIGKILL);
    waitpid(*pid, NULL, 0);
    *pid = 0;
}

static bool alive(pid_t pid)
{
    return pid > 0 && waitpid(pid, NULL, WNOHANG) == 0;
}

static void show_log(const struct env *env, const char *log)
{
    char out[8192];

    run(out, sizeof(out), "tail -n 20 %s/%s", env->dir, log);
    fprintf(stderr, "--- %s ---\n%s\n", log, out);
}

/* Runs cmd in a mount namespace with the test's hosts file. */
static int run_in_ns(const struct env *env, char *out, size_t size, const char *cmd)
{
    return run(out, size, "unshare -m sh -c 'mount --bind %s/hosts /etc/hosts && cd %s && %s' 2>&1",
               env->dir, env->dir, cmd);
}

static int setup(void **state)
{
    struct env *env = calloc(1, sizeof(*env));
    const char *src = getenv("NESTCP_SOURCE_DIR"), *bin = getenv("NESTCP_BIN");
    static char out[4 * 1024 * 1024];
    char path[256];
    struct err e = {0};

    snprintf(env->dir, sizeof(env->dir), "/tmp/nestcp-render-bin-XXXXXX");
    if (!src || !bin || !mkdtemp(env->dir)) {
        fprintf(stderr, "NESTCP_SOURCE_DIR and NESTCP_BIN are needed\n");
        return -1;
    }
    if (run(out, sizeof(out), "%s/hack/kube-build.sh", src) != 0) {
        fprintf(stderr, "kube-apiserver not available: %s\n", out);
        return -1;
    }
    out[strcspn(out, "\n")] = '\0';
    snprintf(env->bin_dir, sizeof(env->bin_dir), "%.1000s", out);
    snprintf(path, sizeof(path), "%s/input.yaml", env->dir);
    write_file(path, input, strlen(input));
    if (run(out, sizeof(out), "%s render -f %s 2>&1", bin, path) != 0) {
        fprintf(stderr, "nestcp render: %s\n", out);
        return -1;
    }
    if (yamlconv_parse_all(out, strlen(out), "render", &env->objs, &e) < 0) {
        fprintf(stderr, "output: %s\n", e.msg);
        return -1;
    }
    snprintf(path, sizeof(path), "%s/hosts", env->dir);
    const char *hosts = "127.0.0.1 localhost\n" ETCD_IP " rb-etcd-0.rb-etcd." NS ".svc rb-etcd." NS
                        ".svc\n" API_IP " rb-apiserver." NS ".svc\n";
    write_file(path, hosts, strlen(hosts));
    *state = env;
    return 0;
}

static int teardown(void **state)
{
    struct env *env = *state;
    char out[64];

    stop(&env->apiserver);
    stop(&env->etcd);
    run(out, sizeof(out), "rm -rf %s", env->dir);
    cJSON_Delete(env->objs);
    free(env);
    return 0;
}

static void test_render_binaries__etcd_serves_the_rendered_certificates(void **state)
{
    struct env *env = *state;
    char pki[128], data[128], out[4096];
    int ok = 0;

    snprintf(pki, sizeof(pki), "%s/etcd-pki", env->dir);
    snprintf(data, sizeof(data), "--data-dir=%s/etcd-data", env->dir);
    lay_out(find(env->objs, "Secret", "rb-etcd-certs-"), pki);
    const char *const subst[][2] = {
        {"$(POD_NAME)", "rb-etcd-0"},
        {"$(POD_IP)", ETCD_IP},
        {"/etc/etcd/pki", pki},
        {"--data-dir=/var/lib/etcd/data", data},
    };
    env->etcd = start(env, find(env->objs, "StatefulSet", "rb-etcd"), "/usr/bin/etcd", subst,
                      sizeof(subst) / sizeof(subst[0]), "etcd.log");
    for (int i = 0; i < 100 && !ok; i++) {
        usleep(200 * 1000);
        if (!alive(env->etcd))
            break;
        ok = run_in_ns(env, out, sizeof(out),
                       "ETCDCTL_API=3 etcdctl --endpoints=https://rb-etcd-0.rb-etcd." NS
                       ".svc:2379 --cacert=etcd-pki/ca.crt --cert=etcd-pki/healthcheck-client.crt "
                       "--key=etcd-pki/healthcheck-client.key endpoint health") == 0;
    }
    if (!ok)
        show_log(env, "etcd.log");
    assert_true(ok);
    assert_non_null(strstr(out, "is healthy"));
    /* Without a client certificate: refused. */
    assert_int_not_equal(run_in_ns(env, out, sizeof(out),
                                   "ETCDCTL_API=3 etcdctl --endpoints=https://rb-etcd-0.rb-etcd." NS
                                   ".svc:2379 --cacert=etcd-pki/ca.crt --dial-timeout=2s "
                                   "--command-timeout=3s endpoint health"),
                         0);
}

static void test_render_binaries__apiserver_serves_the_admin_kubeconfig(void **state)
{
    struct env *env = *state;
    char pki[128], bin[1200], kc[128], out[4096];
    const cJSON *secret = find(env->objs, "Secret", "rb-kubeconfig");
    unsigned char *text = NULL;
    size_t len = 0;
    bool ready = false;

    assert_true(alive(env->etcd));
    snprintf(pki, sizeof(pki), "%s/kube-pki", env->dir);
    snprintf(bin, sizeof(bin), "%s/kube-apiserver", env->bin_dir);
    lay_out(find(env->objs, "Secret", "rb-apiserver-certs-"), pki);
    const char *const subst[][2] = {{"$(POD_IP)", API_IP}, {"/etc/kubernetes/pki", pki}};
    env->apiserver =
        start(env, find(env->objs, "StatefulSet", "rb-apiserver"), bin, subst, 2, "apiserver.log");

    /* The rendered admin kubeconfig, pointed at the local address; TLS is still verified,
     * against the Service's name. */
    const cJSON *v = cJSON_GetObjectItem(cJSON_GetObjectItem(secret, "data"), "value");
    assert_int_equal(
        pki_base64_decode(v->valuestring, strlen(v->valuestring), 1 << 20, &text, &len), 0);
    snprintf(kc, sizeof(kc), "%s/admin.conf", env->dir);
    write_file(kc, (const char *)text, len);
    free(text);
    assert_int_equal(run(out, sizeof(out),
                         "kubectl config set-cluster rb --kubeconfig %s --server=https://" API_IP
                         ":6443 --tls-server-name=rb-apiserver." NS ".svc 2>&1",
                         kc),
                     0);
    for (int i = 0; i < 300 && !ready; i++) {
        usleep(200 * 1000);
        if (!alive(env->apiserver))
            break;
        ready = run(out, sizeof(out), "kubectl --kubeconfig %s get --raw /readyz 2>&1", kc) == 0 &&
                strcmp(out, "ok") == 0;
    }
    if (!ready) {
        show_log(env, "apiserver.log");
        show_log(env, "etcd.log");
    }
    assert_true(ready);
    assert_int_equal(
        run(out, sizeof(out), "kubectl --kubeconfig %s get namespaces -o name 2>&1", kc), 0);
    assert_non_null(strstr(out, "namespace/kube-system"));
    assert_non_null(strstr(out, "namespace/default"));
    assert_int_equal(run(out, sizeof(out), "kubectl --kubeconfig %s auth can-i '*' '*' 2>&1", kc),
                     0);
    assert_string_equal(out, "yes\n");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_render_binaries__etcd_serves_the_rendered_certificates),
        cmocka_unit_test(test_render_binaries__apiserver_serves_the_admin_kubeconfig),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
