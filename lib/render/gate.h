#ifndef NESTCP_RENDER_GATE_H
#define NESTCP_RENDER_GATE_H

/*
 * The security gate: what a tenant's spec.patches and extraArgs may not do to the objects a
 * component's package renders. Anyone allowed to write a component object would otherwise
 * borrow the manager's cluster-wide rights. The gate compares the final objects with what the
 * templates rendered (the baseline, same objects in the same order) and refuses:
 *
 *   identity     another apiVersion, kind, name or namespace; an ownerReference; an object
 *                added or dropped;
 *   other data   a Secret, ConfigMap or PersistentVolumeClaim the baseline does not use, in a
 *                volume (projected sources too), env valueFrom or envFrom;
 *   reach        a selector other than the baseline's (StatefulSet spec.selector, Service
 *                spec.selector), pod template labels that differ on nestcp's keys, a Service
 *                with externalIPs, externalName or a type other than the baseline's;
 *   placement    a change of serviceAccountName, automountServiceAccountToken, nodeName,
 *                nodeSelector, affinity, tolerations, priorityClassName or hostAliases;
 *   privilege    host namespaces (hostNetwork, hostPID, hostIPC), hostPath or any volume type
 *                outside the Pod Security Standards' restricted list, hostPort, privileged,
 *                allowPrivilegeEscalation true, added capabilities, Unconfined seccomp or
 *                AppArmor profiles, sysctls, SELinux options, procMount;
 *   flags        per component, the flags security depends on set to anything but the
 *                baseline's value (e.g. kube-apiserver --authorization-mode, --anonymous-auth,
 *                --etcd-servers, --service-account-*, admission plugins a package enables;
 *                etcd --client-cert-auth, --auto-tls; kube-controller-manager
 *                --use-service-account-credentials); see gate.c for the lists.
 *
 * allow_privileged (a manager flag for the platform admin, never part of a tenant's spec) lets
 * the privilege, placement and flag rules pass; identity, other data and reach never do.
 * Errors read "StatefulSet ns/c-etcd: spec.template.spec.hostNetwork: true is not allowed
 * (host namespaces)".
 */

#include <stdbool.h>

#include <cjson/cJSON.h>

#include "lib/util/err.h"

struct render_gate_opts {
    bool allow_privileged;
};

/* Returns 0, or -EINVAL with the first violation in e. */
int render_gate_check(const cJSON *baseline, const cJSON *objects, const char *component,
                      const struct render_gate_opts *opts, struct err *e);

#endif
