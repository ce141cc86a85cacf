#ifndef NESTCP_RENDER_RENDER_H
#define NESTCP_RENDER_RENDER_H

/*
 * Rendering one component of one tenant control plane: values in, Kubernetes objects out.
 *
 * render_component() is pure: it reads a values document and a loaded catalog, touches no
 * network and no API type, and the same values always give byte-identical objects. The
 * pipeline is
 *
 *   resolve package (version | channel | "stable") -> build the template context from values
 *   -> run the package's templates -> namespace -> extraArgs -> imageRegistry -> spec.patches
 *   -> common labels -> owner reference -> config-hash annotations
 *
 * The values schema (docs/templates.md has the full description and one example per component):
 *
 *   cluster:       {name: <DNS label>, namespace: <namespace>}              required
 *   component:     etcd | kube-apiserver | kube-controller-manager           required
 *   version:       exact version, "1.20.2" or "v1.20.2"; etcd: "3.4.23"      optional
 *   channel:       channel name when version is empty (default "stable")    optional
 *   replicas:      pods of this component (default 1)                        optional
 *   image:         full image reference overriding the package default       optional
 *   imageRegistry: registry that replaces the registry of every image        optional
 *   owner:         {apiVersion, kind, name, uid} of the reconciled object    optional
 *   network:       {serviceCIDRs: [..], podCIDRs: [..], serviceDomain}       optional
 *                  defaults ["10.96.0.0/12"], ["10.244.0.0/16"], "cluster.local"
 *   featureGates:  {Name: bool}, checked against the package                 optional
 *   extraArgs:     {flag-without-dashes: value}, checked against the package optional
 *   resources:     container resources object                               optional
 *   storage:       {type: emptyDir | persistentVolumeClaim, size, storageClassName,
 *                   sizeLimit}  (etcd)
 *   etcd:          {replicas: N (the etcd cluster's size), endpoints: [client URLs of an
 *                   external etcd], listenLoopback: bool (default false)}   optional
 *   secrets:       {certs: name of the one Secret the component mounts (its certificates,
 *                  keys, kubeconfig; lib/render/cluster.h builds it)}, default
 *                  "<cluster>-<short name>-certs"
 *   serviceAccountIssuer: default "https://kubernetes.default.svc.<serviceDomain>"
 *   serviceAccount: {maxTokenExpirationSeconds: 3600..31536000, default
 *                  RENDER_SA_MAX_TOKEN_EXPIRATION}: kube-apiserver's
 *                  --service-account-max-token-expiration                  optional
 *   superClusterDomain: DNS domain of the hosting cluster; "" (default) makes etcd member
 *                  names end in ".svc", otherwise ".svc.<domain>"
 *   apiserver:     {serviceType: ClusterIP | NodePort | LoadBalancer}      optional
 *   inputsHash:    opaque string folded into the pod-template config hash  optional
 *   patches:       the component's spec.patches (see lib/render/patch.h)   optional
 */

#include <cjson/cJSON.h>

#include "lib/render/catalog.h"
#include "lib/util/buf.h"
#include "lib/util/err.h"

/* The longest life of a service-account token, seconds, when the values do not say. */
#define RENDER_SA_MAX_TOKEN_EXPIRATION 86400

/* Bound on the number of objects one component renders to. */
#define RENDER_MAX_OBJECTS 64

/* Builds the context the templates see: the values with every default filled in plus derived
 * fields (names, etcd members and URLs, labels, resolved version and image; see
 * docs/templates.md). Validates the values, feature gates and extraArgs against the package.
 * Returns 0 with a new object in *ret_ctx (caller frees) and the package in *ret_pkg
 * (borrowed, may be NULL if not wanted), or -EINVAL/-ENOENT with the field path in e, -ENOMEM. */
int render_context(const struct render_catalog *c, const cJSON *values,
                   const struct render_package **ret_pkg, cJSON **ret_ctx, struct err *e);

/* Renders the component the values describe. Returns 0 and a new cJSON array of objects in
 * apply order (caller frees), or -EINVAL/-ENOENT/-ENOBUFS with a message naming the field,
 * patch index or template file:line, -ENOMEM. */
int render_component(const struct render_catalog *c, const cJSON *values, cJSON **ret_objects,
                     struct err *e);

/* Appends the objects as a YAML stream ("---"-separated documents) to out, for golden files
 * and `nestcp render`. Returns 0 or -ENOMEM/-ENOBUFS. */
int render_emit_yaml(const cJSON *objects, struct buf *out);

/* The short name of a component used in object names and the app.kubernetes.io/component
 * label: "etcd", "apiserver", "controller-manager"; NULL for an unknown component. */
const char *render_component_short_name(const char *component);

#endif
