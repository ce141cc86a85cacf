/* The security gate (lib/render/gate.h) on real packages: each attack a hostile tenant tried
 * through spec.patches or extraArgs is refused with the object and field named, and what
 * packages and harmless patches render still passes. */

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/render/catalog.h"
#include "lib/render/render.h"
#include "lib/util/yamlconv.h"

static struct render_catalog *catalog;

static int setup(void **state)
{
    const char *src = getenv("NESTCP_SOURCE_DIR");
    char dir[4096];
    struct err e;

    snprintf(dir, sizeof(dir), "%s/templates", src ? src : ".");
    err_clear(&e);
    if (render_catalog_open(dir, &catalog, &e) < 0) {
        print_error("catalog %s: %s\n", dir, e.msg);
        return -1;
    }
    return 0;
}

static int teardown(void **state)
{
    render_catalog_free(catalog);
    return 0;
}

#define BASE "cluster: {name: c1, namespace: ns1}\n"
#define KAS BASE "component: kube-apiserver\nversion: 1.37.2\n"
#define ETCD BASE "component: etcd\nversion: 3.6.17\n"
#define KCM BASE "component: kube-controller-manager\nversion: 1.37.2\n"
#define STS_PATCH(name, spec)                                                                      \
    "patches:\n- target: {kind: StatefulSet, name: " name "}\n  type: merge\n  patch: " spec "\n"

/* Renders values; returns the error message ("" when it rendered). */
static const char *render(const char *values_yaml)
{
    static struct err e;
    cJSON *values = NULL, *objs = NULL;
    int r;

    err_clear(&e);
    assert_int_equal(yamlconv_parse_one(values_yaml, strlen(values_yaml), "test", &values, &e), 0);
    r = render_component(catalog, values, &objs, &e);
    cJSON_Delete(values);
    cJSON_Delete(objs);
    if (r == 0)
        return "";
    assert_int_equal(r, -EINVAL);
    return e.msg;
}

static void refused(const char *values_yaml, const char *want)
{
    const char *got = render(values_yaml);

    if (!strstr(got, want))
        fail_msg("want an error containing\n  %s\ngot\n  %s", want, got);
}

static void passes(const char *values_yaml)
{
    const char *got = render(values_yaml);

    if (*got)
        fail_msg("refused: %s", got);
}

static void test_gate__patches_cannot_leave_the_namespace_or_take_another_name(void **state)
{
    refused(ETCD "patches:\n- target: {kind: StatefulSet, name: c1-etcd}\n  type: json\n"
                 "  patch: [{op: replace, path: /metadata/namespace, value: kube-system}]\n",
            "StatefulSet ns1/c1-etcd: metadata.namespace: may not be changed from \"ns1\"");
    refused(ETCD "patches:\n- target: {kind: Service, name: c1-etcd}\n  type: merge\n"
                 "  patch: {metadata: {namespace: kube-system}}\n",
            "Service ns1/c1-etcd: metadata.namespace: may not be changed");
    refused(ETCD STS_PATCH("c1-etcd", "{metadata: {ownerReferences: [{apiVersion: v1, kind: "
                                      "ConfigMap, name: x, uid: u}]}}"),
            "metadata.ownerReferences: may not be set");
    refused(ETCD STS_PATCH("c1-etcd", "{metadata: {labels: {cluster.x-k8s.io/cluster-name: "
                                      "other}}}"),
            "metadata.labels[cluster.x-k8s.io/cluster-name]: nestcp's label may not be changed");
}

static void test_gate__pods_cannot_gain_privileges(void **state)
{
    refused(ETCD STS_PATCH("c1-etcd", "{spec: {template: {spec: {hostNetwork: true}}}}"),
            "StatefulSet ns1/c1-etcd: spec.template.spec.hostNetwork: true is not allowed (host "
            "namespaces)");
    refused(ETCD STS_PATCH("c1-etcd", "{spec: {template: {spec: {hostPID: true}}}}"),
            "spec.template.spec.hostPID");
    refused(ETCD "patches:\n- apiVersion: apps/v1\n  kind: StatefulSet\n  metadata: {name: "
                 "c1-etcd}\n  spec:\n    template:\n      spec:\n        containers:\n"
                 "        - name: etcd\n          securityContext: {privileged: true}\n",
            "spec.template.spec.containers[0].securityContext.privileged: true is not allowed");
    refused(ETCD "patches:\n- apiVersion: apps/v1\n  kind: StatefulSet\n  metadata: {name: "
                 "c1-etcd}\n  spec:\n    template:\n      spec:\n        containers:\n"
                 "        - name: etcd\n          securityContext: {capabilities: {add: "
                 "[SYS_ADMIN]}}\n",
            "capabilities.add: adding capabilities is not allowed");
    refused(ETCD "patches:\n- apiVersion: apps/v1\n  kind: StatefulSet\n  metadata: {name: "
                 "c1-etcd}\n  spec:\n    template:\n      spec:\n        volumes:\n"
                 "        - {name: root, hostPath: {path: /}}\n",
            "spec.template.spec.volumes[1].hostPath: hostPath volumes are not allowed");
    refused(ETCD "patches:\n- apiVersion: apps/v1\n  kind: StatefulSet\n  metadata: {name: "
                 "c1-etcd}\n  spec:\n    template:\n      spec:\n        containers:\n"
                 "        - name: etcd\n          ports: [{name: client, containerPort: 2379, "
                 "hostPort: 2379}]\n",
            "hostPort: host ports are not allowed");
    refused(ETCD STS_PATCH("c1-etcd", "{spec: {template: {spec: {serviceAccountName: admin}}}}"),
            "spec.template.spec.serviceAccountName: may not be changed");
    refused(ETCD STS_PATCH("c1-etcd", "{spec: {template: {spec: {nodeName: master-0}}}}"),
            "spec.template.spec.nodeName: may not be changed");
    refused(ETCD STS_PATCH("c1-etcd", "{spec: {template: {spec: {tolerations: [{operator: "
                                      "Exists}]}}}}"),
            "spec.template.spec.tolerations: may not be changed");
    refused(ETCD STS_PATCH("c1-etcd", "{spec: {template: {spec: {automountServiceAccountToken: "
                                      "true}}}}"),
            "automountServiceAccountToken: may not be changed");
}

static void test_gate__pods_mount_only_their_own_secrets(void **state)
{
    refused(KAS "patches:\n- apiVersion: apps/v1\n  kind: StatefulSet\n  metadata: {name: "
                "c1-apiserver}\n  spec:\n    template:\n      spec:\n        volumes:\n"
                "        - {name: loot, secret: {secretName: c2-kubeconfig}}\n",
            "Secret \"c2-kubeconfig\" is not one this component uses");
    refused(KAS "patches:\n- apiVersion: apps/v1\n  kind: StatefulSet\n  metadata: {name: "
                "c1-apiserver}\n  spec:\n    template:\n      spec:\n        containers:\n"
                "        - name: kube-apiserver\n          env: [{name: X, valueFrom: "
                "{secretKeyRef: {name: c2-kubeconfig, key: value}}}]\n",
            "env[1].valueFrom: Secret \"c2-kubeconfig\" is not one this component uses");
    refused(KAS "patches:\n- apiVersion: apps/v1\n  kind: StatefulSet\n  metadata: {name: "
                "c1-apiserver}\n  spec:\n    template:\n      spec:\n        containers:\n"
                "        - name: kube-apiserver\n          envFrom: [{configMapRef: {name: "
                "kube-root-ca.crt}}]\n",
            "envFrom[0]: ConfigMap \"kube-root-ca.crt\" is not one this component uses");
    refused(KAS "patches:\n- apiVersion: apps/v1\n  kind: StatefulSet\n  metadata: {name: "
                "c1-apiserver}\n  spec:\n    template:\n      spec:\n        volumes:\n"
                "        - {name: p, projected: {sources: [{secret: {name: c2-ca}}]}}\n",
            "Secret \"c2-ca\" is not one this component uses");
}

static void test_gate__services_reach_only_their_own_pods(void **state)
{
    refused(KAS "patches:\n- target: {kind: Service, name: c1-apiserver}\n  type: merge\n"
                "  patch: {spec: {externalIPs: [203.0.113.7]}}\n",
            "Service ns1/c1-apiserver: spec.externalIPs: external IPs are not allowed");
    refused(KAS "patches:\n- target: {kind: Service, name: c1-apiserver}\n  type: merge\n"
                "  patch: {spec: {selector: {cluster.x-k8s.io/cluster-name: c2}}}\n",
            "spec.selector: may not be changed: it could select another cluster's pods");
    refused(KAS "patches:\n- target: {kind: Service, name: c1-apiserver}\n  type: merge\n"
                "  patch: {spec: {type: NodePort}}\n",
            "spec.type: may not be changed from \"ClusterIP\"");
    refused(KAS STS_PATCH("c1-apiserver", "{spec: {template: {metadata: {labels: "
                                          "{cluster.x-k8s.io/cluster-name: c2}}}}}"),
            "spec.template.metadata.labels[cluster.x-k8s.io/cluster-name]");
}

static void test_gate__security_flags_stay_as_rendered(void **state)
{
    refused(KAS "extraArgs: {authorization-mode: AlwaysAllow}\n",
            "--authorization-mode=AlwaysAllow is not allowed: security depends on it, and the "
            "package renders --authorization-mode=Node,RBAC");
    refused(KAS "extraArgs: {anonymous-auth: \"true\"}\n", "--anonymous-auth=true is not allowed");
    refused(KAS "extraArgs: {token-auth-file: /etc/kubernetes/pki/sa.key}\n",
            "--token-auth-file=/etc/kubernetes/pki/sa.key is not allowed");
    refused(KAS "extraArgs: {disable-admission-plugins: NodeRestriction}\n",
            "--disable-admission-plugins=NodeRestriction is not allowed");
    refused(KAS "extraArgs: {enable-admission-plugins: AlwaysAdmit}\n",
            "--enable-admission-plugins=AlwaysAdmit drops a plugin the package enables "
            "(NodeRestriction)");
    refused(KAS "extraArgs: {etcd-servers: \"https://c2-etcd-0.c2-etcd.ns1.svc:2379\"}\n",
            "--etcd-servers=");
    refused(ETCD "extraArgs: {client-cert-auth: \"false\"}\n",
            "--client-cert-auth=false is not allowed");
    refused(ETCD "extraArgs: {auto-tls: \"true\"}\n", "--auto-tls=true is not allowed");
    refused(KCM "extraArgs: {use-service-account-credentials: \"false\"}\n",
            "--use-service-account-credentials=false is not allowed");
    /* A patch to args is held to the same rules as extraArgs. */
    refused(KAS
            "patches:\n- apiVersion: apps/v1\n  kind: StatefulSet\n  metadata: {name: "
            "c1-apiserver}\n  spec:\n    template:\n      spec:\n        containers:\n"
            "        - name: kube-apiserver\n          args: [--authorization-mode=AlwaysAllow]\n",
            "--authorization-mode=AlwaysAllow is not allowed");
    /* Anonymous requests are the rendered authentication configuration's (health endpoints
     * only): the binary refuses --anonymous-auth beside it, and its ConfigMap stays. */
    refused(KAS "extraArgs: {anonymous-auth: \"false\"}\n",
            "--anonymous-auth=false is not allowed");
    refused(KAS "patches:\n- target: {kind: ConfigMap, name: c1-apiserver-authn}\n  type: merge\n"
                "  patch: {data: {authentication-config.yaml: \"anonymous: {enabled: true}\"}}\n",
            "ConfigMap ns1/c1-apiserver-authn: data: may not be changed");
    refused(KAS "patches:\n- apiVersion: apps/v1\n  kind: StatefulSet\n  metadata: {name: "
                "c1-apiserver}\n  spec:\n    template:\n      spec:\n        containers:\n"
                "        - name: kube-apiserver\n"
                "          args: [--authentication-config=/tmp/a]\n",
            "--authentication-config=/tmp/a is not allowed");
    /* What only takes rights away, and ordinary tuning, pass. */
    passes(KAS "extraArgs: {enable-admission-plugins: \"NodeRestriction,EventRateLimit\", v: "
               "\"2\"}\n");
    passes(KAS "patches:\n- target: {kind: ConfigMap, name: c1-apiserver-authn}\n  type: merge\n"
               "  patch: {metadata: {annotations: {team: a}}}\n");
    passes(ETCD "extraArgs: {quota-backend-bytes: \"4294967296\"}\n");
}

static void test_gate__harmless_patches_pass(void **state)
{
    passes(KAS STS_PATCH("c1-apiserver", "{spec: {template: {spec: "
                                         "{terminationGracePeriodSeconds: 60}}}}"));
    passes(KAS "patches:\n- target: {kind: Service, name: c1-apiserver}\n  type: merge\n"
               "  patch: {metadata: {annotations: {team: a}}}\n");
    passes(ETCD "patches:\n- apiVersion: apps/v1\n  kind: StatefulSet\n  metadata: {name: "
                "c1-etcd}\n  spec:\n    template:\n      spec:\n        containers:\n"
                "        - name: etcd\n          securityContext: {allowPrivilegeEscalation: "
                "false, capabilities: {drop: [ALL]}}\n");
}

static void test_gate__the_admin_flag_allows_privilege_but_never_other_tenants(void **state)
{
    passes(ETCD "security: {allowPrivileged: true}\n" STS_PATCH(
        "c1-etcd", "{spec: {template: {spec: {hostNetwork: true, priorityClassName: "
                   "system-cluster-critical}}}}"));
    passes(KAS "security: {allowPrivileged: true}\nextraArgs: {anonymous-auth: \"true\"}\n");
    refused(ETCD "security: {allowPrivileged: true}\npatches:\n- target: {kind: StatefulSet, "
                 "name: c1-etcd}\n  type: json\n"
                 "  patch: [{op: replace, path: /metadata/namespace, value: kube-system}]\n",
            "metadata.namespace: may not be changed");
    refused(KAS "security: {allowPrivileged: true}\npatches:\n- apiVersion: apps/v1\n  kind: "
                "StatefulSet\n  metadata: {name: c1-apiserver}\n  spec:\n    template:\n"
                "      spec:\n        volumes:\n"
                "        - {name: loot, secret: {secretName: c2-kubeconfig}}\n",
            "Secret \"c2-kubeconfig\" is not one this component uses");
}

#define CTR_PATCH(sts, ctr, sc)                                                                    \
    "patches:\n- apiVersion: apps/v1\n  kind: StatefulSet\n  metadata: {name: " sts "}\n"          \
    "  spec:\n    template:\n      spec:\n        containers:\n        - name: " ctr "\n"          \
    "          securityContext: " sc "\n"

static void test_gate__patches_cannot_weaken_the_restricted_profile(void **state)
{
    refused(ETCD STS_PATCH("c1-etcd", "{spec: {template: {spec: {securityContext: {runAsUser: "
                                      "0}}}}}"),
            "StatefulSet ns1/c1-etcd: spec.template.spec.containers[0].securityContext: "
            "runAsUser 0 is not allowed");
    refused(KAS STS_PATCH("c1-apiserver", "{spec: {template: {spec: {securityContext: "
                                          "{runAsNonRoot: false}}}}}"),
            "securityContext: runAsNonRoot must stay true");
    refused(KAS CTR_PATCH("c1-apiserver", "kube-apiserver", "{runAsNonRoot: false}"),
            "spec.template.spec.containers[0].securityContext: runAsNonRoot must stay true");
    refused(KCM CTR_PATCH("c1-controller-manager", "kube-controller-manager",
                          "{allowPrivilegeEscalation: true}"),
            "allowPrivilegeEscalation: true is not allowed");
    refused(KCM CTR_PATCH("c1-controller-manager", "kube-controller-manager",
                          "{allowPrivilegeEscalation: null}"),
            "allowPrivilegeEscalation must stay false");
    refused(ETCD CTR_PATCH("c1-etcd", "etcd", "{capabilities: {drop: [NET_RAW]}}"),
            "capabilities.drop must keep ALL");
    refused(ETCD STS_PATCH("c1-etcd", "{spec: {template: {spec: {securityContext: "
                                      "{seccompProfile: null}}}}}"),
            "seccompProfile must stay RuntimeDefault");
    refused(ETCD CTR_PATCH("c1-etcd", "etcd", "{readOnlyRootFilesystem: false}"),
            "readOnlyRootFilesystem must stay true");
    /* Another unprivileged user is no escalation. */
    passes(ETCD STS_PATCH("c1-etcd", "{spec: {template: {spec: {securityContext: {runAsUser: "
                                     "2000, runAsGroup: 2000, fsGroup: 2000}}}}}"));
}

/* The member at a dotted path of obj ("spec.template.spec"), or NULL. */
static const cJSON *at(const cJSON *obj, const char *path)
{
    char name[64];

    while (obj && *path) {
        size_t n = strcspn(path, ".");
        snprintf(name, sizeof(name), "%.*s", (int)n, path);
        obj = cJSON_GetObjectItemCaseSensitive(obj, name);
        path += n + (path[n] == '.');
    }
    return obj;
}

static bool has_string(const cJSON *list, const char *want)
{
    const cJSON *v;

    cJSON_ArrayForEach(v, list) {
        if (cJSON_IsString(v) && strcmp(v->valuestring, want) == 0)
            return true;
    }
    return false;
}

/* Every line of every component renders pods that the Pod Security Standards' restricted
 * profile admits, with a fixed non-root user and a read-only root filesystem (the API server's
 * Pod Security admission checks the same on the super cluster's test namespaces). */
static void test_gate__every_package_renders_restricted_pods(void **state)
{
    cJSON *versions = NULL, *comp, *line;
    int pods = 0;

    assert_int_equal(render_catalog_versions(catalog, &versions), 0);
    cJSON_ArrayForEach(comp, versions) {
        cJSON_ArrayForEach(line, cJSON_GetObjectItem(comp, "packages")) {
            char values[512];
            cJSON *v = NULL, *objs = NULL, *o;
            struct err e;

            snprintf(values, sizeof(values), BASE "component: %s\nversion: %s.0\n", comp->string,
                     line->valuestring);
            err_clear(&e);
            assert_int_equal(yamlconv_parse_one(values, strlen(values), "t", &v, &e), 0);
            if (render_component(catalog, v, &objs, &e) < 0)
                fail_msg("%s %s: %s", comp->string, line->valuestring, e.msg);
            cJSON_ArrayForEach(o, objs) {
                const cJSON *pod = at(o, "spec.template.spec"), *c;

                if (!pod)
                    continue;
                pods++;
                assert_true(cJSON_IsTrue(at(pod, "securityContext.runAsNonRoot")));
                assert_true(at(pod, "securityContext.runAsUser")->valueint > 0);
                assert_true(at(pod, "securityContext.runAsGroup")->valueint > 0);
                assert_true(at(pod, "securityContext.fsGroup")->valueint > 0);
                assert_string_equal(at(pod, "securityContext.seccompProfile.type")->valuestring,
                                    "RuntimeDefault");
                cJSON_ArrayForEach(c, at(pod, "containers")) {
                    assert_true(cJSON_IsFalse(at(c, "securityContext.allowPrivilegeEscalation")));
                    assert_true(cJSON_IsTrue(at(c, "securityContext.readOnlyRootFilesystem")));
                    assert_true(has_string(at(c, "securityContext.capabilities.drop"), "ALL"));
                    assert_null(at(c, "securityContext.capabilities.add"));
                }
            }
            cJSON_Delete(objs);
            cJSON_Delete(v);
        }
    }
    cJSON_Delete(versions);
    assert_int_equal(pods, 8); /* etcd 3.5, 3.6; kube-apiserver and controller manager 1.35-1.37 */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_gate__patches_cannot_leave_the_namespace_or_take_another_name),
        cmocka_unit_test(test_gate__pods_cannot_gain_privileges),
        cmocka_unit_test(test_gate__pods_mount_only_their_own_secrets),
        cmocka_unit_test(test_gate__services_reach_only_their_own_pods),
        cmocka_unit_test(test_gate__security_flags_stay_as_rendered),
        cmocka_unit_test(test_gate__harmless_patches_pass),
        cmocka_unit_test(test_gate__patches_cannot_weaken_the_restricted_profile),
        cmocka_unit_test(test_gate__every_package_renders_restricted_pods),
        cmocka_unit_test(test_gate__the_admin_flag_allows_privilege_but_never_other_tenants),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
