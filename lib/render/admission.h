#ifndef NESTCP_RENDER_ADMISSION_H
#define NESTCP_RENDER_ADMISSION_H

/*
 * The parameters of the ValidatingAdmissionPolicy in config/admission: what the package
 * catalog knows, as a ConfigMap whose keys the policy's CEL looks up (docs/install.md,
 * "Refused at kubectl apply"). The manager keeps the ConfigMap equal to this;
 * `nestcp render --admission-params` prints it, and config/admission/params.yaml is that
 * output.
 *
 * data keys (lists hold one name per line, each line ended by "\n"):
 *   kubernetes.lines                 "1.35, 1.36, 1.37": Kubernetes lines with both packages
 *   kubernetes.default               "1.36.3": the stable channel's version (no spec.version)
 *   kubernetes.<line>.featureGates   kube-apiserver's gates of that line (what validation
 *                                    checks every Kubernetes kind's gates against)
 *   kubernetes.featureGates          the gates of every line (a component without a version)
 *   etcd.lines                       "3.5, 3.6"
 *   <component>.<line>.flags         the flags of that line's binary (etcd, kube-apiserver,
 *                                    kube-controller-manager)
 *   <component>.<line>.removedFlags  the flags the package lists as removed, when any
 *   <component>.flags                the flags of every line
 */

#include <cjson/cJSON.h>

struct render_catalog;

/* The label every params ConfigMap carries besides app.kubernetes.io/managed-by=nestcp. */
#define RENDER_ADMISSION_COMPONENT "admission-params"

/* The ConfigMap name/namespace (namespace may be NULL: none, for a kustomize base) holding
 * what c knows (caller frees). Deterministic. Returns 0, -EINVAL (name NULL or empty),
 * -ENOMEM. */
int render_admission_params(const struct render_catalog *c, const char *ns, const char *name,
                            cJSON **ret_configmap);

#endif
