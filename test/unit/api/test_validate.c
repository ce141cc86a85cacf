#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/defaults.h"
#include "api/validate.h"
#include "lib/util/yamlconv.h"

/* A catalog that knows Kubernetes 1.20.2 and 1.21.1 and etcd 3.4.13 / 3.4.3. */
static bool knows_version(void *ctx, const char *component, const char *version)
{
    if (strcmp(component, API_CATALOG_ETCD) == 0)
        return strcmp(version, "3.4.13") == 0 || strcmp(version, "3.4.3") == 0;
    return strcmp(version, "1.20.2") == 0 || strcmp(version, "1.21.1") == 0;
}

static bool knows_gate(void *ctx, const char *k8s, const char *gate)
{
    return strcmp(gate, "EphemeralContainers") == 0 ||
           (strcmp(gate, "GracefulNodeShutdown") == 0 && strcmp(k8s, "1.21.1") == 0);
}

static const char *etcd_for(void *ctx, const char *k8s)
{
    return "3.4.13";
}

static const char *default_version(void *ctx)
{
    return "1.20.2";
}

/* Lines before 1.20 are retired. */
static bool retired_version(void *ctx, const char *component, const char *version)
{
    return strcmp(component, API_CATALOG_KUBERNETES) == 0 && strncmp(version, "1.", 2) == 0 &&
           atoi(version + 2) < 20;
}

static const char *supported_lines(void *ctx, const char *component)
{
    return strcmp(component, API_CATALOG_ETCD) == 0 ? "3.4" : "1.20, 1.21";
}

static const struct api_catalog catalog = {
    .knows_version = knows_version,
    .retired_version = retired_version,
    .supported_lines = supported_lines,
    .knows_feature_gate = knows_gate,
    .etcd_version_for = etcd_for,
    .default_version = default_version,
};

static cJSON *yaml(const char *text)
{
    cJSON *doc = NULL;
    struct err e;

    if (yamlconv_parse_one(text, strlen(text), "t.yaml", &doc, &e) < 0)
        fail_msg("bad test YAML: %s", e.msg);
    return doc;
}

static struct api_control_plane *ncp_parse(const char *spec_yaml)
{
    char text[4096];
    struct api_errors errs = API_ERRORS_INIT;
    struct api_control_plane *ncp = NULL;
    cJSON *doc;

    snprintf(text, sizeof(text),
             "apiVersion: controlplane.cluster.x-k8s.io/v1beta1\n"
             "kind: NestedControlPlane\n"
             "metadata: {name: c1, namespace: ns1}\n"
             "spec:\n%s",
             spec_yaml);
    doc = yaml(text);
    assert_int_equal(api_control_plane_from_json(doc, &ncp, &errs), 0);
    cJSON_Delete(doc);
    api_errors_done(&errs);
    return ncp;
}

static struct api_component *component_parse(const char *kind, const char *spec_yaml)
{
    char text[4096];
    struct api_errors errs = API_ERRORS_INIT;
    struct api_component *c = NULL;
    cJSON *doc;

    snprintf(text, sizeof(text),
             "apiVersion: controlplane.cluster.x-k8s.io/v1beta1\n"
             "kind: %s\n"
             "metadata: {name: x, namespace: ns1}\n"
             "spec:\n%s",
             kind, spec_yaml);
    doc = yaml(text);
    if (api_component_from_json(doc, &c, &errs) < 0) {
        struct buf b = BUF_INIT;
        api_errors_format(&errs, &b);
        fail_msg("parse failed: %s", b.data);
    }
    cJSON_Delete(doc);
    api_errors_done(&errs);
    return c;
}

/* Validates a control plane (defaulted without a Cluster) and returns the formatted lines. */
static char *ncp_errors(const char *spec_yaml, const struct api_catalog *cat)
{
    struct api_control_plane *ncp = ncp_parse(spec_yaml);
    struct api_errors errs = API_ERRORS_INIT;
    struct buf out = BUF_INIT;
    int r;

    assert_int_equal(api_control_plane_default(ncp, NULL, cat), 0);
    r = api_control_plane_validate(ncp, cat, &errs);
    assert_int_equal(r, api_errors_count(&errs) ? -EINVAL : 0);
    api_errors_format(&errs, &out);
    api_errors_done(&errs);
    api_control_plane_free(ncp);
    return out.data ? buf_steal(&out) : strdup("");
}

static char *component_errors(const char *kind, const char *spec_yaml, const char *k8s_version,
                              const struct api_catalog *cat)
{
    struct api_control_plane *ncp = NULL;
    struct api_component *c = component_parse(kind, spec_yaml);
    struct api_errors errs = API_ERRORS_INIT;
    struct buf out = BUF_INIT;
    char spec[128];

    if (k8s_version) {
        snprintf(spec, sizeof(spec), "  version: \"%s\"\n", k8s_version);
        ncp = ncp_parse(spec);
    }
    assert_int_equal(api_component_default(c, ncp, cat), 0);
    api_component_validate(c, ncp, cat, &errs);
    api_errors_format(&errs, &out);
    api_errors_done(&errs);
    api_component_free(c);
    api_control_plane_free(ncp);
    return out.data ? buf_steal(&out) : strdup("");
}

#define EXPECT_NCP(spec, cat, want)                                                                \
    do {                                                                                           \
        char *got_ = ncp_errors(spec, cat);                                                        \
        assert_string_equal(got_, want);                                                           \
        free(got_);                                                                                \
    } while (0)

#define EXPECT_COMPONENT(kind, spec, k8s, cat, want)                                               \
    do {                                                                                           \
        char *got_ = component_errors(kind, spec, k8s, cat);                                       \
        assert_string_equal(got_, want);                                                           \
        free(got_);                                                                                \
    } while (0)

static void test_validate__capn_shaped_control_plane_is_valid_with_defaults(void **state)
{
    struct api_control_plane *ncp = ncp_parse("  etcd: {kind: NestedEtcd, name: c1-nestedetcd}\n"
                                              "  apiserver: {kind: NestedAPIServer, name: a}\n"
                                              "  controllerManager: {name: m}\n");
    struct api_errors errs = API_ERRORS_INIT;

    assert_int_equal(api_control_plane_default(ncp, NULL, &catalog), 0);
    assert_int_equal(api_control_plane_validate(ncp, &catalog, &errs), 0);
    assert_string_equal(ncp->spec.version, "1.20.2");
    assert_string_equal(ncp->spec.control_plane_endpoint.host, "c1-apiserver.ns1.svc");
    assert_int_equal(ncp->spec.control_plane_endpoint.port, 6443);
    assert_int_equal(ncp->spec.cluster_network.services.n, 1);
    assert_string_equal(ncp->spec.cluster_network.services.items[0], "10.96.0.0/12");
    assert_int_equal(ncp->spec.cluster_network.pods.n, 0);
    assert_string_equal(ncp->spec.cluster_network.service_domain, "cluster.local");
    api_control_plane_free(ncp);
}

static void test_validate__defaults_come_from_the_cluster(void **state)
{
    cJSON *doc = yaml("apiVersion: cluster.x-k8s.io/v1alpha4\nkind: Cluster\n"
                      "metadata: {name: owner}\n"
                      "spec:\n"
                      "  clusterNetwork:\n"
                      "    services: {cidrBlocks: [10.128.0.0/16, \"fd00:10:96::/112\"]}\n"
                      "    pods: {cidrBlocks: [192.168.0.0/16, \"fd00:10:244::/56\"]}\n"
                      "    serviceDomain: tenant.local\n"
                      "  controlPlaneEndpoint: {host: owner-apiserver, port: 6443}\n");
    struct api_capi_cluster *cl = NULL;
    struct api_errors errs = API_ERRORS_INIT;
    struct api_control_plane *ncp = ncp_parse("  version: v1.21.1\n");

    assert_int_equal(api_capi_cluster_from_json(doc, &cl, &errs), 0);
    assert_int_equal(api_control_plane_default(ncp, cl, &catalog), 0);
    assert_string_equal(ncp->spec.version, "v1.21.1"); /* kept as written */
    assert_string_equal(ncp->spec.control_plane_endpoint.host, "owner-apiserver");
    assert_int_equal(ncp->spec.cluster_network.services.n, 2);
    assert_string_equal(ncp->spec.cluster_network.services.items[1], "fd00:10:96::/112");
    assert_string_equal(ncp->spec.cluster_network.pods.items[0], "192.168.0.0/16");
    assert_string_equal(ncp->spec.cluster_network.service_domain, "tenant.local");
    assert_int_equal(api_control_plane_validate(ncp, &catalog, &errs), 0);
    /* Defaulting twice changes nothing. */
    assert_int_equal(api_control_plane_default(ncp, cl, &catalog), 0);
    assert_int_equal(ncp->spec.cluster_network.services.n, 2);
    api_control_plane_free(ncp);
    api_capi_cluster_free(cl);
    cJSON_Delete(doc);
}

static void test_validate__cidr_syntax_host_bits_and_families(void **state)
{
    EXPECT_NCP("  clusterNetwork:\n"
               "    services: {cidrBlocks: [10.96.0.0/33, 10.96.0.1/12]}\n"
               "    pods: {cidrBlocks: [10.244.0.0, \"fd00::/64\"]}\n",
               NULL,
               "spec.clusterNetwork.services.cidrBlocks[0]: \"10.96.0.0/33\" is not a valid CIDR\n"
               "spec.clusterNetwork.services.cidrBlocks[1]: \"10.96.0.1/12\" has host bits set; "
               "did you mean 10.96.0.0/12?\n"
               "spec.clusterNetwork.pods.cidrBlocks[0]: \"10.244.0.0\" is not a valid CIDR\n");
    EXPECT_NCP("  clusterNetwork:\n"
               "    services: {cidrBlocks: [10.96.0.0/12, 10.100.0.0/16]}\n"
               "    pods: {cidrBlocks: [\"fd00::/64\", \"fd01::/64\"]}\n",
               NULL,
               "spec.clusterNetwork.services.cidrBlocks[1]: \"10.100.0.0/16\" is a second IPv4 "
               "block; dual-stack allows one IPv4 and one IPv6 block\n"
               "spec.clusterNetwork.pods.cidrBlocks[1]: \"fd01::/64\" is a second IPv6 block; "
               "dual-stack allows one IPv4 and one IPv6 block\n");
    EXPECT_NCP("  clusterNetwork:\n"
               "    services: {cidrBlocks: [10.96.0.0/12, \"fd00:10:96::/112\"]}\n"
               "    pods: {cidrBlocks: [10.244.0.0/16, \"fd00:10:244::/56\"]}\n",
               NULL, "");
}

static void test_validate__service_range_size_and_overlap(void **state)
{
    EXPECT_NCP("  clusterNetwork:\n"
               "    services: {cidrBlocks: [10.96.0.0/29, \"fd00::/64\"]}\n",
               NULL,
               "spec.clusterNetwork.services.cidrBlocks[0]: \"10.96.0.0/29\" is too small for a "
               "service range (8 addresses; use /28 or larger)\n"
               "spec.clusterNetwork.services.cidrBlocks[1]: \"fd00::/64\" is too large for a "
               "service range (2^64 addresses; use /108 or smaller)\n");
    EXPECT_NCP("  clusterNetwork:\n"
               "    services: {cidrBlocks: [10.0.0.0/8]}\n",
               NULL,
               "spec.clusterNetwork.services.cidrBlocks[0]: \"10.0.0.0/8\" is too large for a "
               "service range (2^24 addresses; use /12 or smaller)\n");
    EXPECT_NCP("  clusterNetwork:\n"
               "    services: {cidrBlocks: [10.96.0.0/28]}\n"
               "    pods: {cidrBlocks: [10.96.0.0/16]}\n",
               NULL,
               "spec.clusterNetwork.pods.cidrBlocks[0]: \"10.96.0.0/16\" overlaps the service "
               "range \"10.96.0.0/28\"\n");
    EXPECT_NCP("  clusterNetwork:\n"
               "    services: {cidrBlocks: [10.96.0.0/12]}\n"
               "    serviceDomain: Cluster_Local\n",
               NULL,
               "spec.clusterNetwork.serviceDomain: \"Cluster_Local\" is not a valid DNS domain\n");
}

static void test_validate__versions_and_catalog(void **state)
{
    EXPECT_NCP("  version: \"1.20\"\n", &catalog,
               "spec.version: \"1.20\" is not a version like 1.36.3 or v1.36.3\n");
    EXPECT_NCP("  version: v1.22.0\n", &catalog,
               "spec.version: \"v1.22.0\" is not a Kubernetes version the installed packages "
               "know (supported lines: 1.20, 1.21)\n");
    /* A line older than every one shipped is retired, said as such. */
    EXPECT_NCP("  version: v1.19.0\n", &catalog,
               "spec.version: \"v1.19.0\" is no longer supported (supported lines: 1.20, 1.21); "
               "a control plane already running it is left as it is. Move it to 1.20, the "
               "oldest supported line, one minor version at a time, each step with a nestcp "
               "release that still ships that line\n");
    /* Without a catalog only the syntax is checked. */
    EXPECT_NCP("  version: v1.19.0\n", NULL, "");
    {
        struct api_control_plane *ncp = ncp_parse("  version: v1.19.0\n");
        struct api_errors errs = API_ERRORS_INIT;

        assert_int_equal(api_control_plane_validate(ncp, &catalog, &errs), -EINVAL);
        assert_string_equal(api_errors_reason(&errs), "VersionUnsupported");
        api_errors_done(&errs);
        api_control_plane_free(ncp);
        ncp = ncp_parse("  version: v1.22.0\n");
        assert_int_equal(api_control_plane_validate(ncp, &catalog, &errs), -EINVAL);
        assert_string_equal(api_errors_reason(&errs), "InvalidSpec");
        api_errors_done(&errs);
        api_control_plane_free(ncp);
    }
    EXPECT_NCP("  version: 1.31.0-rc.1+abc\n", NULL, "");
}

static void test_validate__feature_gates(void **state)
{
    EXPECT_NCP("  version: 1.20.2\n"
               "  featureGates: {EphemeralContainers: true, GracefulNodeShutdown: true, "
               "bad-name: true}\n",
               &catalog,
               "spec.featureGates: \"GracefulNodeShutdown\" is not a feature gate of Kubernetes "
               "1.20.2\n"
               "spec.featureGates: \"bad-name\" is not a valid feature gate name (letters and "
               "digits, starting with an upper-case letter)\n");
    EXPECT_NCP("  version: 1.21.1\n"
               "  featureGates: {GracefulNodeShutdown: true}\n",
               &catalog, "");
    EXPECT_COMPONENT("NestedAPIServer", "  featureGates: {NoSuchGate: false}\n", "v1.20.2",
                     &catalog,
                     "spec.featureGates: \"NoSuchGate\" is not a feature gate of Kubernetes "
                     "1.20.2\n");
}

static void test_validate__cluster_name_fits_derived_names(void **state)
{
    struct api_errors errs = API_ERRORS_INIT;
    char name[64];

    /* 33 characters: "<name>-controller-manager-<10-char hash>" is exactly 63. */
    memset(name, 'a', 33);
    name[33] = '\0';
    assert_int_equal(api_cluster_name_validate(name, "metadata.name", &errs), 0);
    name[33] = 'b';
    name[34] = '\0';
    assert_int_equal(api_cluster_name_validate(name, "metadata.name", &errs), -EINVAL);
    assert_int_equal(api_cluster_name_validate("1abc", "metadata.name", &errs), -EINVAL);
    assert_int_equal(api_cluster_name_validate("Abc", "metadata.name", &errs), -EINVAL);
    assert_int_equal(api_errors_count(&errs), 3);
    assert_string_equal(errs.lines[0],
                        "metadata.name: \"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaab\" is too long for "
                        "a cluster name: 34 characters, at most 33, so that the derived label "
                        "\"<name>-controller-manager-<10-character revision hash>\" fits in 63");
    assert_string_equal(errs.lines[1],
                        "metadata.name: \"1abc\" is not a valid cluster name (lower-case "
                        "letters, digits and '-', starting with a letter and ending with a "
                        "letter or digit)");
    api_errors_done(&errs);
}

static void test_validate__cluster_name_from_label_names_the_label(void **state)
{
    cJSON *doc = yaml("apiVersion: controlplane.cluster.x-k8s.io/v1beta1\n"
                      "kind: NestedControlPlane\n"
                      "metadata:\n"
                      "  name: cp\n"
                      "  labels: {cluster.x-k8s.io/cluster-name: Bad}\n");
    struct api_errors errs = API_ERRORS_INIT;
    struct api_control_plane *ncp = NULL;

    assert_int_equal(api_control_plane_from_json(doc, &ncp, &errs), 0);
    assert_int_equal(api_control_plane_default(ncp, NULL, NULL), 0);
    assert_int_equal(api_control_plane_validate(ncp, NULL, &errs), -EINVAL);
    assert_true(api_errors_contains(
        &errs, "metadata.labels[cluster.x-k8s.io/cluster-name]: \"Bad\" is not a valid cluster "
               "name (lower-case letters, digits and '-', starting with a letter and ending "
               "with a letter or digit)"));
    api_errors_done(&errs);
    api_control_plane_free(ncp);
    cJSON_Delete(doc);
}

static void test_validate__endpoint_certificates_and_refs(void **state)
{
    EXPECT_NCP("  controlPlaneEndpoint: {host: \"bad host\", port: 70000}\n"
               "  certificates:\n"
               "    validityDays: 30\n"
               "    renewBeforeDays: 30\n"
               "    extraSANs: [api.example.com, \"*.example.com\", 10.0.0.1, \"fd00::1\", "
               "\"not_valid\"]\n"
               "  etcd: {kind: NestedAPIServer, name: e}\n"
               "  apiserver: {apiVersion: apps/v1, kind: NestedAPIServer}\n",
               NULL,
               "spec.controlPlaneEndpoint.host: \"bad host\" is not a valid host name or IP "
               "address\n"
               "spec.controlPlaneEndpoint.port: 70000 is not a port number (1-65535)\n"
               "spec.certificates.renewBeforeDays: 30 is not less than validityDays 30\n"
               "spec.certificates.extraSANs[4]: \"not_valid\" is not a DNS name or IP address\n"
               "spec.etcd.kind: \"NestedAPIServer\" is not NestedEtcd\n"
               "spec.apiserver.name: is required\n"
               "spec.apiserver.apiVersion: \"apps/v1\" is not in group "
               "controlplane.cluster.x-k8s.io\n");
}

static void test_validate__key_algorithm_enum_is_checked_at_parse(void **state)
{
    cJSON *doc = yaml("apiVersion: controlplane.cluster.x-k8s.io/v1beta1\n"
                      "kind: NestedControlPlane\n"
                      "metadata: {name: c1}\n"
                      "spec: {certificates: {keyAlgorithm: RSA-1024, validityDays: 0}}\n");
    struct api_errors errs = API_ERRORS_INIT;
    struct api_control_plane *ncp = NULL;
    struct buf out = BUF_INIT;

    assert_int_equal(api_control_plane_from_json(doc, &ncp, &errs), -EINVAL);
    api_errors_format(&errs, &out);
    assert_string_equal(out.data, "spec.certificates.keyAlgorithm: \"RSA-1024\" is not one of "
                                  "ECDSA-P256, ECDSA-P384, RSA-2048, RSA-3072, RSA-4096\n"
                                  "spec.certificates.validityDays: 0 is less than the minimum "
                                  "1\n");
    buf_done(&out);
    api_errors_done(&errs);
    cJSON_Delete(doc);
}

static void test_validate__etcd_replicas_storage_and_version(void **state)
{
    EXPECT_COMPONENT("NestedEtcd", "  replicas: 4\n", NULL, NULL,
                     "spec.replicas: 4 is even; etcd needs an odd number of members (1, 3, 5 "
                     "or 7)\n");
    EXPECT_COMPONENT("NestedEtcd",
                     "  storage:\n"
                     "    emptyDir: {sizeLimit: 0}\n"
                     "    persistentVolumeClaim: {size: -1Gi, storageClassName: Fast_SSD}\n",
                     NULL, NULL,
                     "spec.storage: emptyDir and persistentVolumeClaim are mutually exclusive\n"
                     "spec.storage.emptyDir.sizeLimit: \"0\" is not a positive size\n"
                     "spec.storage.persistentVolumeClaim.size: \"-1Gi\" is not a positive "
                     "size\n"
                     "spec.storage.persistentVolumeClaim.storageClassName: \"Fast_SSD\" is not a "
                     "valid StorageClass name\n");
    EXPECT_COMPONENT("NestedEtcd", "  snapshots: {persistentVolumeClaim: {claimName: My_Snaps}}\n",
                     NULL, NULL,
                     "spec.snapshots.persistentVolumeClaim.claimName: \"My_Snaps\" is not a "
                     "valid PersistentVolumeClaim name\n");
    EXPECT_COMPONENT("NestedEtcd", "  snapshots: {persistentVolumeClaim: {claimName: snaps}}\n",
                     NULL, NULL, "");
    EXPECT_COMPONENT("NestedEtcd", "  version: 3.4.3\n", "1.20.2", &catalog,
                     "spec.version: \"3.4.3\" is older than 3.4.13, the etcd version Kubernetes "
                     "1.20.2 needs\n");
    EXPECT_COMPONENT("NestedEtcd", "  version: 3.5.0\n", "1.20.2", &catalog,
                     "spec.version: \"3.5.0\" is not an etcd version the installed packages "
                     "know (supported lines: 3.4)\n");
    EXPECT_COMPONENT("NestedEtcd", "  replicas: 3\n  storage: {persistentVolumeClaim: {}}\n",
                     "1.20.2", &catalog, "");
}

static void test_validate__component_version_may_override_control_plane(void **state)
{
    /* Its own version wins for that component; whether the step is allowed is the rollout's
     * decision, not the object's. */
    EXPECT_COMPONENT("NestedAPIServer", "  version: 1.21.1\n", "v1.20.2", &catalog, "");
    EXPECT_COMPONENT("NestedControllerManager", "  version: v1.20.2\n", "1.21.1", &catalog, "");
    EXPECT_COMPONENT("NestedControllerManager", "  version: 1.25.0\n", "1.20.2", &catalog,
                     "spec.version: \"1.25.0\" is not a Kubernetes version the installed "
                     "packages know (supported lines: 1.20, 1.21)\n");
    EXPECT_COMPONENT("NestedAPIServer", "  version: \"1.21\"\n", "1.20.2", &catalog,
                     "spec.version: \"1.21\" is not a version like 1.36.3 or v1.36.3\n");
    /* The component's gates are checked against the version it runs. */
    EXPECT_COMPONENT("NestedControllerManager",
                     "  version: 1.21.1\n  featureGates: {GracefulNodeShutdown: true}\n", "1.20.2",
                     &catalog, "");
    EXPECT_COMPONENT("NestedControllerManager",
                     "  version: 1.20.2\n  featureGates: {GracefulNodeShutdown: true}\n", "1.21.1",
                     &catalog,
                     "spec.featureGates: \"GracefulNodeShutdown\" is not a feature gate of "
                     "Kubernetes 1.20.2\n");
}

static void test_validate__extra_args_image_and_resources(void **state)
{
    EXPECT_COMPONENT("NestedAPIServer",
                     "  replicas: 2\n"
                     "  image: \"my image\"\n"
                     "  extraArgs: {\"--v\": \"2\", \"a=b\": x, feature-gates: \"A=true\", "
                     "audit-log-path: /var/log/audit.log}\n"
                     "  resources:\n"
                     "    limits: {cpu: 1, memory: -1Gi}\n"
                     "    requests: {cpu: 1500m, memory: 1Mi}\n",
                     NULL, NULL,
                     "spec.image: \"my image\" is not a valid image reference\n"
                     "spec.extraArgs: \"--v\" must be given without leading dashes\n"
                     "spec.extraArgs: \"a=b\" must not contain '='; put the value in the map\n"
                     "spec.extraArgs: \"feature-gates\" is not allowed here; use featureGates\n"
                     "spec.resources.limits[memory]: \"-1Gi\" is negative\n"
                     "spec.resources.requests[cpu]: \"1500m\" is more than the limit \"1\"\n");
}

static void test_validate__etcd_extra_args_cannot_touch_membership(void **state)
{
    EXPECT_COMPONENT("NestedEtcd",
                     "  extraArgs: {initial-cluster-state: new, force-new-cluster: \"true\", "
                     "data-dir: /tmp/x, unsafe-no-fsync: \"true\", "
                     "quota-backend-bytes: \"4294967296\"}\n",
                     NULL, NULL,
                     "spec.extraArgs: \"data-dir\" may not be set: etcd's membership and data "
                     "depend on it, and nestcp manages it per member\n"
                     "spec.extraArgs: \"force-new-cluster\" may not be set: etcd's membership and "
                     "data depend on it, and nestcp manages it per member\n"
                     "spec.extraArgs: \"initial-cluster-state\" may not be set: etcd's membership "
                     "and data depend on it, and nestcp manages it per member\n"
                     "spec.extraArgs: \"unsafe-no-fsync\" may not be set: etcd's membership and "
                     "data depend on it, and nestcp manages it per member\n");
    EXPECT_COMPONENT("NestedAPIServer",
                     "  extraArgs: {v: \"2\\n--authorization-mode=AlwaysAllow\"}\n", NULL, NULL,
                     "spec.extraArgs: \"v\" has a value with a newline or another control "
                     "character, which would read as more than one flag\n");
    /* the same flag names mean nothing special to an API server */
    EXPECT_COMPONENT("NestedAPIServer", "  extraArgs: {name: x}\n", NULL, NULL, "");
}

static void test_validate__component_defaults(void **state)
{
    struct api_control_plane *ncp = ncp_parse("  version: v1.20.2\n"
                                              "  featureGates: {A: true, B: true}\n");
    struct api_component *etcd = component_parse("NestedEtcd", "  {}\n");
    struct api_component *kas = component_parse("NestedAPIServer", "  featureGates: {B: false, "
                                                                   "C: true}\n");
    struct api_gates g = {NULL, 0};

    assert_int_equal(api_component_default(etcd, ncp, &catalog), 0);
    assert_int_equal(api_component_default(kas, ncp, &catalog), 0);
    assert_string_equal(etcd->spec.version, "3.4.13");
    assert_string_equal(kas->spec.version, "1.20.2");
    assert_int_equal(kas->spec.replicas, 1);
    assert_int_equal(api_component_effective_gates(kas, ncp, &g), 0);
    assert_int_equal(g.n, 3);
    assert_true(api_gates_get(&g, "A")->enabled);
    assert_false(api_gates_get(&g, "B")->enabled);
    assert_true(api_gates_get(&g, "C")->enabled);
    api_gates_done(&g);
    api_component_free(etcd);
    api_component_free(kas);
    api_control_plane_free(ncp);
}

static void test_validate__errors_format_one_per_line_and_into_err(void **state)
{
    struct api_errors errs = API_ERRORS_INIT;
    struct err e;

    api_errors_add(&errs, "spec.a", "is required");
    api_errors_add_str(&errs, "spec.b", "x\"y", "is bad");
    assert_int_equal(api_errors_to_err(&errs, "NestedEtcd ns/e", &e), -EINVAL);
    assert_string_equal(e.msg, "NestedEtcd ns/e: spec.a: is required\nspec.b: \"x\\\"y\" is bad");
    for (int i = 0; i < API_ERRORS_MAX + 5; i++)
        api_errors_add(&errs, "spec", "n");
    assert_int_equal(api_errors_count(&errs), API_ERRORS_MAX + 7);
    api_errors_done(&errs);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_validate__capn_shaped_control_plane_is_valid_with_defaults),
        cmocka_unit_test(test_validate__defaults_come_from_the_cluster),
        cmocka_unit_test(test_validate__cidr_syntax_host_bits_and_families),
        cmocka_unit_test(test_validate__service_range_size_and_overlap),
        cmocka_unit_test(test_validate__versions_and_catalog),
        cmocka_unit_test(test_validate__feature_gates),
        cmocka_unit_test(test_validate__cluster_name_fits_derived_names),
        cmocka_unit_test(test_validate__cluster_name_from_label_names_the_label),
        cmocka_unit_test(test_validate__endpoint_certificates_and_refs),
        cmocka_unit_test(test_validate__key_algorithm_enum_is_checked_at_parse),
        cmocka_unit_test(test_validate__etcd_replicas_storage_and_version),
        cmocka_unit_test(test_validate__component_version_may_override_control_plane),
        cmocka_unit_test(test_validate__extra_args_image_and_resources),
        cmocka_unit_test(test_validate__etcd_extra_args_cannot_touch_membership),
        cmocka_unit_test(test_validate__component_defaults),
        cmocka_unit_test(test_validate__errors_format_one_per_line_and_into_err),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
