#ifndef NESTCP_PKI_KUBECONFIG_H
#define NESTCP_PKI_KUBECONFIG_H

/*
 * Kubeconfigs with embedded credentials, named the way Cluster API writes them
 * (util/kubeconfig): cluster `<cluster>`, user `<cluster>-admin`, context
 * `<cluster>-admin@<cluster>`, set as current-context:
 *
 *     apiVersion: v1
 *     clusters:
 *     - cluster:
 *         certificate-authority-data: <base64 CA PEM>
 *         server: https://<host>:<port>
 *       name: <cluster>
 *     contexts:
 *     - context:
 *         cluster: <cluster>
 *         user: <cluster>-admin
 *       name: <cluster>-admin@<cluster>
 *     current-context: <cluster>-admin@<cluster>
 *     kind: Config
 *     preferences: {}
 *     users:
 *     - name: <cluster>-admin
 *       user:
 *         client-certificate-data: <base64 PEM>
 *         client-key-data: <base64 PEM>
 */

#include <stddef.h>

#include <cjson/cJSON.h>

#include "lib/util/err.h"

/* The largest kubeconfig pki_kubeconfig_read accepts. */
#define PKI_KUBECONFIG_MAX (256 * 1024)

/* Strings are borrowed. */
struct pki_kubeconfig {
    const char *cluster_name;    /* required */
    const char *user_name;       /* NULL: "<cluster_name>-admin" */
    const char *context_name;    /* NULL: "<user_name>@<cluster_name>" */
    const char *server;          /* required, "https://host:port" (see pki_kubeconfig_server_url) */
    const char *ca_cert_pem;     /* required */
    const char *client_cert_pem; /* required */
    const char *client_key_pem;  /* required */
};

/* Formats "https://host:port", bracketing an IPv6 host. Returns 0 or -EINVAL (no host, port
 * outside 1..65535, or out does not fit). */
int pki_kubeconfig_server_url(const char *host, int port, char *out, size_t out_size);

/* Builds the kubeconfig as a cJSON object (caller frees with cJSON_Delete).
 * Returns 0, -EINVAL (a required field is missing; named in e), -ENOMEM. */
int pki_kubeconfig_build(const struct pki_kubeconfig *kc, cJSON **ret_doc, struct err *e);

/* Builds it as YAML text (caller frees). Same returns as pki_kubeconfig_build. */
int pki_kubeconfig_render(const struct pki_kubeconfig *kc, char **ret_yaml, struct err *e);

/* What the current context of a kubeconfig holds. Absent fields are NULL. */
struct pki_kubeconfig_creds {
    char *context_name;
    char *cluster_name;
    char *user_name;
    char *server;
    char *ca_cert_pem;     /* decoded certificate-authority-data */
    char *client_cert_pem; /* decoded client-certificate-data */
    char *client_key_pem;  /* decoded client-key-data */
};

/* Parses a kubeconfig (at most PKI_KUBECONFIG_MAX bytes) and resolves its current context
 * (or its only context when current-context is empty). Only embedded `*-data` credentials are
 * read, and each must parse as a PEM certificate or private key. `origin` names the input in
 * messages ("Secret default/foo-kubeconfig: value"). Returns 0, -EINVAL (malformed; the field path
 * is in e), -ENOBUFS, -ENOMEM. */
int pki_kubeconfig_read(const char *yaml, size_t len, const char *origin,
                        struct pki_kubeconfig_creds **ret_creds, struct err *e);

/* Frees creds (NULL accepted), wiping the key. */
void pki_kubeconfig_creds_free(struct pki_kubeconfig_creds *creds);

#endif
