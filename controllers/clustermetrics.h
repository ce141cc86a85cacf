#ifndef NESTCP_CONTROLLERS_CLUSTERMETRICS_H
#define NESTCP_CONTROLLERS_CLUSTERMETRICS_H

/*
 * Metrics about the managed clusters, computed at scrape time from the manager's caches
 * (docs/metrics.md):
 *
 *   nestcp_control_planes{phase}     NestedControlPlanes by status.phase. Every phase nestcp
 *                                    sets is always present, 0 when no control plane is in it;
 *                                    "Unknown" counts those with no phase yet or another one.
 *   nestcp_control_planes_ready      NestedControlPlanes whose status.ready is true.
 *   nestcp_certificate_expiry_seconds{namespace,cluster}
 *                                    seconds from now until the earliest NotAfter among the
 *                                    certificates nestcp manages for the cluster (negative
 *                                    once one has expired): the CA Secrets <c>-ca, <c>-etcd
 *                                    and <c>-proxy, the certs Secret each component's
 *                                    StatefulSet <c>-<component> mounts, and the client
 *                                    certificate of <c>-kubeconfig. A cluster none of whose
 *                                    certificates can be read has no series.
 *   nestcp_ca_expiry_seconds{namespace,cluster,ca}
 *                                    the same for each CA alone (ca: cluster, etcd,
 *                                    front-proxy, from <c>-ca, <c>-etcd, <c>-proxy): nestcp
 *                                    renews leaves, never a CA, so this is what to alert on
 *                                    a year ahead.
 *   nestcp_service_account_key_age_seconds{namespace,cluster}
 *                                    seconds since the Secret <c>-sa (the service-account
 *                                    signing key, which has no expiry) was created, or since
 *                                    the rotation that made its key started (its annotation
 *                                    nestcp.x-k8s.io/key-created-at).
 *
 * In those Secrets every `*.crt` key is read as PEM certificates and every `*.conf` key (and
 * `value` of the kubeconfig Secret) as a kubeconfig whose users' client-certificate-data
 * counts; private keys are never decoded. The earliest NotAfter of each Secret is kept,
 * keyed by namespace/name and resourceVersion, so a scrape reads only the Secrets that
 * changed since the last one; Secrets no longer looked at are forgotten.
 *
 * Everything runs on the manager's loop.
 */

#include <stddef.h>

struct cache_view;
struct clustermetrics;
struct manager;
struct metrics;

/* Registers the families on r (borrowed; it must outlive the result). Returns 0, -EEXIST
 * (registered on r already), -ENOMEM. */
int clustermetrics_new(struct metrics *r, struct clustermetrics **ret_cm);

/* Sets the families from view: what the collector runs at every scrape. Returns 0 or -ENOMEM
 * (some series may be missing then). */
int clustermetrics_update(struct clustermetrics *cm, const struct cache_view *view);

/* Adds a collector to m's registry that updates cm from m's caches before every scrape. cm
 * must have been made on manager_metrics(m) and must outlive m (free it after
 * manager_free()). Returns 0 or -ENOMEM. */
int clustermetrics_attach(struct clustermetrics *cm, struct manager *m);

/* Secrets read so far (a Secret counts again each time its resourceVersion changes), and
 * Secrets remembered now. */
size_t clustermetrics_secrets_read(const struct clustermetrics *cm);
size_t clustermetrics_secrets_remembered(const struct clustermetrics *cm);

/* Frees cm; its families stay in the registry. Accepts NULL. */
void clustermetrics_free(struct clustermetrics *cm);

#endif
