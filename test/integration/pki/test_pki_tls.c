/*
 * The certificate set lib/pki generates, used by the real programs: an etcd member with
 * client and peer TLS, a kube-apiserver that talks to it with the apiserver-etcd-client
 * certificate and serves with the apiserver certificate, and kubectl reaching it through the
 * generated admin and controller-manager kubeconfigs. Everything listens on loopback ports
 * of its own; the shared super cluster is not used.
 */

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdbool.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "lib/pki/kubeadm.h"
#include "lib/pki/kubeconfig.h"
#include "lib/util/strutil.h"
#include "test/support/proc.h"

struct env {
    char dir[64];
    char bin_dir[1024];
    pid_t etcd, apiserver;
    int etcd_port, peer_port, api_port;
    struct pki_kubeadm_set *set;
};

/*
 * A loopback port below the kernel's ephemeral range that nothing holds and that was not handed
 * out before: a port the kernel hands out for bind(0) can be taken by an outgoing connection
 * (the API server's own etcd clients) before the program that is meant to listen on it starts.
 */
static int free_port(void)
{
    static int given[8];
    static unsigned n_given;
    int lo = 32768;
    FILE *f = fopen("/proc/sys/net/ipv4/ip_local_port_range", "re");

    if (f) {
        if (fscanf(f, "%d", &lo) != 1)
            lo = 32768;
        fclose(f);
    }
    assert_true(lo > 11000 && n_given < 8);
    for (int tries = 0; tries < 200; tries++) {
        int port = 10000 + rand() % (lo - 10000), fd, r;
        struct sockaddr_in a = {.sin_family = AF_INET,
                                .sin_addr.s_addr = htonl(INADDR_LOOPBACK),
                                .sin_port = htons((uint16_t)port)};
        bool taken = false;

        for (unsigned i = 0; i < n_given; i++)
            taken |= given[i] == port;
        if (taken)
            continue;
        fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        assert_true(fd >= 0);
        r = bind(fd, (struct sockaddr *)&a, sizeof(a));
        close(fd);
        if (r == 0) {
            given[n_given++] = port;
            return port;
        }
    }
    fail_msg("no free loopback port in 10000-%d", lo);
    return -1;
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

static void write_pair(const struct env *env, const char *name, const struct pki_pem_pair *p)
{
    char file[128];

    snprintf(file, sizeof(file), "%s.crt", name);
    write_file(env, file, p->cert_pem);
    snprintf(file, sizeof(file), "%s.key", name);
    write_file(env, file, p->key_pem);
}

/* Starts argv with stdout and stderr appended to <dir>/<log>. */
static pid_t spawn(const struct env *env, const char *log, char *const argv[])
{
    char path[256];
    pid_t pid;

    snprintf(path, sizeof(path), "%s/%s", env->dir, log);
    pid = proc_spawn(path, argv);
    assert_true(pid > 0);
    return pid;
}

static void show_log(const struct env *env, const char *log)
{
    char out[8192];

    proc_run(out, sizeof(out), "tail -n 20 %s/%s", env->dir, log);
    fprintf(stderr, "--- %s ---\n%s\n", log, out);
}

static int setup(void **state)
{
    static const char *const cidrs[] = {"10.96.0.0/12"};
    struct env *env = calloc(1, sizeof(*env));
    struct pki_cluster c = {.name = "tls",
                            .ns = "default",
                            .service_cidrs = cidrs,
                            .n_service_cidrs = 1,
                            .etcd_members = 1};
    char out[1024];
    struct err e;
    const char *src = getenv("NESTCP_SOURCE_DIR");

    snprintf(env->dir, sizeof(env->dir), "/tmp/nestcp-pki-tls-XXXXXX");
    if (!mkdtemp(env->dir))
        return -1;
    /* kube-build.sh prints the directory of the cached release (building it once). */
    if (!src || proc_run(out, sizeof(out), "%s/hack/kube-build.sh kubernetes 1.37.2", src) != 0) {
        fprintf(stderr, "kube-apiserver not available: %s\n", out);
        return -1;
    }
    out[strcspn(out, "\n")] = '\0';
    snprintf(env->bin_dir, sizeof(env->bin_dir), "%s", out);
    if (pki_kubeadm_set_new(1, &env->set) < 0 || pki_kubeadm_set_fill(&c, env->set, &e) < 0) {
        fprintf(stderr, "generating the set: %s\n", e.msg);
        return -1;
    }
    struct pki_kubeadm_set *s = env->set;
    write_pair(env, "ca", &s->pairs[PKI_KUBEADM_CA]);
    write_pair(env, "etcd-ca", &s->pairs[PKI_KUBEADM_ETCD_CA]);
    write_pair(env, "front-proxy-ca", &s->pairs[PKI_KUBEADM_FRONT_PROXY_CA]);
    write_pair(env, "apiserver", &s->pairs[PKI_KUBEADM_APISERVER]);
    write_pair(env, "apiserver-kubelet-client", &s->pairs[PKI_KUBEADM_APISERVER_KUBELET_CLIENT]);
    write_pair(env, "apiserver-etcd-client", &s->pairs[PKI_KUBEADM_APISERVER_ETCD_CLIENT]);
    write_pair(env, "front-proxy-client", &s->pairs[PKI_KUBEADM_FRONT_PROXY_CLIENT]);
    write_pair(env, "etcd-server", &s->etcd_server[0]);
    write_pair(env, "etcd-peer", &s->etcd_peer[0]);
    write_pair(env, "etcd-healthcheck-client", &s->pairs[PKI_KUBEADM_ETCD_HEALTHCHECK_CLIENT]);
    write_pair(env, "sa", &s->sa);
    env->etcd_port = free_port();
    env->peer_port = free_port();
    env->api_port = free_port();
    *state = env;
    return 0;
}

static int teardown(void **state)
{
    struct env *env = *state;
    char out[64];

    proc_stop(&env->apiserver, 10);
    proc_stop(&env->etcd, 10);
    proc_run(out, sizeof(out), "rm -rf %s", env->dir);
    pki_kubeadm_set_free(env->set);
    free(env);
    return 0;
}

static char *fmt(char *buf, size_t size, const char *f, ...) __attribute__((format(printf, 3, 4)));
static char *fmt(char *buf, size_t size, const char *f, ...)
{
    va_list ap;

    va_start(ap, f);
    vsnprintf(buf, size, f, ap);
    va_end(ap);
    return buf;
}

static void start_etcd(struct env *env)
{
    char a[16][256], etcd[1024];
    const char *d = env->dir, *root = getenv("NESTCP_BIN_ROOT");
    char *argv[] = {
        fmt(etcd, sizeof(etcd), "%s/etcd-3.6.17/bin/etcd", root ? root : "/nonexistent"),
        "--name",
        "tls-etcd-0",
        fmt(a[0], 256, "--data-dir=%s/etcd-data", d),
        fmt(a[1], 256, "--listen-client-urls=https://127.0.0.1:%d", env->etcd_port),
        fmt(a[2], 256, "--advertise-client-urls=https://127.0.0.1:%d", env->etcd_port),
        fmt(a[3], 256, "--listen-peer-urls=https://127.0.0.1:%d", env->peer_port),
        fmt(a[4], 256, "--initial-advertise-peer-urls=https://127.0.0.1:%d", env->peer_port),
        fmt(a[5], 256, "--initial-cluster=tls-etcd-0=https://127.0.0.1:%d", env->peer_port),
        "--client-cert-auth",
        "--peer-client-cert-auth",
        fmt(a[6], 256, "--trusted-ca-file=%s/etcd-ca.crt", d),
        fmt(a[7], 256, "--cert-file=%s/etcd-server.crt", d),
        fmt(a[8], 256, "--key-file=%s/etcd-server.key", d),
        fmt(a[9], 256, "--peer-trusted-ca-file=%s/etcd-ca.crt", d),
        fmt(a[10], 256, "--peer-cert-file=%s/etcd-peer.crt", d),
        fmt(a[11], 256, "--peer-key-file=%s/etcd-peer.key", d),
        "--log-level=warn",
        NULL};

    env->etcd = spawn(env, "etcd.log", argv);
}

static void start_apiserver(struct env *env)
{
    char a[24][512];
    const char *d = env->dir;
    char bin[1100];
    char *argv[] = {
        fmt(bin, sizeof(bin), "%s/kube-apiserver", env->bin_dir),
        fmt(a[0], 512, "--etcd-servers=https://127.0.0.1:%d", env->etcd_port),
        fmt(a[1], 512, "--etcd-cafile=%s/etcd-ca.crt", d),
        fmt(a[2], 512, "--etcd-certfile=%s/apiserver-etcd-client.crt", d),
        fmt(a[3], 512, "--etcd-keyfile=%s/apiserver-etcd-client.key", d),
        "--bind-address=127.0.0.1", "--advertise-address=127.0.0.1",
        fmt(a[4], 512, "--secure-port=%d", env->api_port),
        /* 1.37 refuses to advertise a loopback address to its endpoint reconciler. */
        "--endpoint-reconciler-type=none", fmt(a[5], 512, "--tls-cert-file=%s/apiserver.crt", d),
        fmt(a[6], 512, "--tls-private-key-file=%s/apiserver.key", d),
        fmt(a[7], 512, "--client-ca-file=%s/ca.crt", d),
        fmt(a[8], 512, "--kubelet-client-certificate=%s/apiserver-kubelet-client.crt", d),
        fmt(a[9], 512, "--kubelet-client-key=%s/apiserver-kubelet-client.key", d),
        fmt(a[10], 512, "--requestheader-client-ca-file=%s/front-proxy-ca.crt", d),
        fmt(a[11], 512, "--proxy-client-cert-file=%s/front-proxy-client.crt", d),
        fmt(a[12], 512, "--proxy-client-key-file=%s/front-proxy-client.key", d),
        "--requestheader-allowed-names=front-proxy-client",
        "--requestheader-username-headers=X-Remote-User",
        "--requestheader-group-headers=X-Remote-Group",
        fmt(a[13], 512, "--service-account-key-file=%s/sa.crt", d),
        fmt(a[14], 512, "--service-account-signing-key-file=%s/sa.key", d),
        "--service-account-issuer=https://kubernetes.default.svc",
        "--service-cluster-ip-range=10.96.0.0/12", "--authorization-mode=Node,RBAC",
        "--profiling=false", NULL};

    env->apiserver = spawn(env, "apiserver.log", argv);
}

/* etcd serves TLS with the generated server certificate and admits the healthcheck client. */
static void test_pki_tls__etcd_accepts_generated_certificates(void **state)
{
    struct env *env = *state;
    char out[4096];
    int ok = 0;

    start_etcd(env);
    for (int i = 0; i < 100 && !ok; i++) {
        usleep(200 * 1000);
        if (!proc_alive(&env->etcd))
            break;
        ok = proc_run(out, sizeof(out),
                      "cd %s && ETCDCTL_API=3 etcdctl --endpoints=https://127.0.0.1:%d "
                      "--cacert=etcd-ca.crt --cert=etcd-healthcheck-client.crt "
                      "--key=etcd-healthcheck-client.key endpoint health 2>&1",
                      env->dir, env->etcd_port) == 0;
    }
    if (!ok)
        show_log(env, "etcd.log");
    assert_true(ok);
    assert_non_null(strstr(out, "is healthy"));
    /* A client certificate from another CA is refused. */
    assert_int_not_equal(proc_run(out, sizeof(out),
                                  "cd %s && ETCDCTL_API=3 etcdctl --endpoints=https://127.0.0.1:%d "
                                  "--cacert=etcd-ca.crt --cert=apiserver-kubelet-client.crt "
                                  "--key=apiserver-kubelet-client.key --dial-timeout=2s "
                                  "--command-timeout=3s endpoint health 2>&1",
                                  env->dir, env->etcd_port),
                         0);
}

/* kube-apiserver stores into that etcd and serves the generated kubeconfigs: the admin one
 * (system:masters) may do anything, the controller-manager one is authenticated as itself. */
static void test_pki_tls__apiserver_serves_generated_kubeconfigs(void **state)
{
    struct env *env = *state;
    struct pki_kubeadm_set *s = env->set;
    char server[128], out[4096], *yaml = NULL;
    struct err e;
    bool ready = false;

    assert_true(proc_alive(&env->etcd));
    start_apiserver(env);
    for (const char *host = "127.0.0.1", *file = "admin.conf"; host;
         host = strcmp(host, "127.0.0.1") == 0 ? "localhost" : NULL,
                    file = "admin-localhost.conf") {
        assert_int_equal(pki_kubeconfig_server_url(host, env->api_port, server, sizeof(server)), 0);
        struct pki_kubeconfig kc = {.cluster_name = "tls",
                                    .server = server,
                                    .ca_cert_pem = s->pairs[PKI_KUBEADM_CA].cert_pem,
                                    .client_cert_pem = s->pairs[PKI_KUBEADM_ADMIN].cert_pem,
                                    .client_key_pem = s->pairs[PKI_KUBEADM_ADMIN].key_pem};
        assert_int_equal(pki_kubeconfig_render(&kc, &yaml, &e), 0);
        write_file(env, file, yaml);
        free(yaml);
    }
    struct pki_kubeconfig cm = {.cluster_name = "tls",
                                .user_name = "system:kube-controller-manager",
                                .server = server,
                                .ca_cert_pem = s->pairs[PKI_KUBEADM_CA].cert_pem,
                                .client_cert_pem =
                                    s->pairs[PKI_KUBEADM_CONTROLLER_MANAGER].cert_pem,
                                .client_key_pem = s->pairs[PKI_KUBEADM_CONTROLLER_MANAGER].key_pem};
    assert_int_equal(pki_kubeconfig_render(&cm, &yaml, &e), 0);
    write_file(env, "controller-manager.conf", yaml);
    free(yaml);

    for (int i = 0; i < 300 && !ready; i++) {
        usleep(200 * 1000);
        if (!proc_alive(&env->apiserver))
            break;
        ready =
            proc_run(out, sizeof(out), "kubectl --kubeconfig %s/admin.conf get --raw /readyz 2>&1",
                     env->dir) == 0 &&
            strcmp(out, "ok") == 0;
    }
    if (!ready) {
        show_log(env, "apiserver.log");
        show_log(env, "etcd.log");
    }
    assert_true(ready);
    /* The serving certificate holds 127.0.0.1 and localhost; the admin is a cluster admin. */
    assert_int_equal(
        proc_run(out, sizeof(out),
                 "kubectl --kubeconfig %s/admin-localhost.conf auth can-i '*' '*' 2>&1", env->dir),
        0);
    assert_string_equal(out, "yes\n");
    assert_int_equal(
        proc_run(out, sizeof(out),
                 "kubectl --kubeconfig %s/admin.conf create namespace pki-check 2>&1 && "
                 "kubectl --kubeconfig %s/admin.conf get namespace pki-check "
                 "-o jsonpath='{.metadata.name}' 2>&1",
                 env->dir, env->dir),
        0);
    assert_non_null(strstr(out, "pki-check"));
    /* The controller-manager is authenticated as itself and bound by its default role. */
    assert_int_equal(proc_run(out, sizeof(out),
                              "kubectl --kubeconfig %s/controller-manager.conf auth can-i create "
                              "tokenreviews.authentication.k8s.io 2>/dev/null; "
                              "kubectl --kubeconfig %s/controller-manager.conf auth can-i delete "
                              "nodes 2>/dev/null",
                              env->dir, env->dir),
                     1);
    assert_string_equal(out, "yes\nno\n");
    /* A token signed with the generated service-account key authenticates. The TokenRequest
     * API is used because no controller-manager runs here to create token Secrets. */
    write_file(env, "token-request.json",
               "{\"apiVersion\":\"authentication.k8s.io/v1\",\"kind\":\"TokenRequest\","
               "\"spec\":{\"expirationSeconds\":600}}");
    assert_int_equal(
        proc_run(out, sizeof(out),
                 "cd %s && kubectl --kubeconfig admin.conf -n pki-check create "
                 "serviceaccount robot >/dev/null 2>&1 && "
                 "t=$(kubectl --kubeconfig admin.conf create --raw "
                 "/api/v1/namespaces/pki-check/serviceaccounts/robot/token "
                 "-f token-request.json | sed 's/.*\"token\":\"\\([^\"]*\\)\".*/\\1/') && "
                 "[ -n \"$t\" ] && "
                 "env -u KUBECONFIG HOME=%s kubectl --server https://127.0.0.1:%d "
                 "--certificate-authority ca.crt --token \"$t\" get pods -n pki-check 2>&1",
                 env->dir, env->dir, env->api_port),
        1);
    /* Refused by RBAC, but as the service account: the token was accepted. */
    assert_non_null(strstr(out, "User \"system:serviceaccount:pki-check:robot\" cannot list"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pki_tls__etcd_accepts_generated_certificates),
        cmocka_unit_test(test_pki_tls__apiserver_serves_generated_kubeconfigs),
    };
    srand((unsigned)time(NULL) ^ (unsigned)getpid());
    return cmocka_run_group_tests(tests, setup, teardown);
}
