#ifndef NESTCP_KUBE_CONFIG_H
#define NESTCP_KUBE_CONFIG_H

/*
 * Where the API server is and how to authenticate to it: a kubeconfig file (explicit path,
 * then $KUBECONFIG, then ~/.kube/config) or the in-cluster service account.
 *
 * Supported kubeconfig fields: current-context; contexts[].context.{cluster,user,namespace};
 * clusters[].cluster.{server,certificate-authority,certificate-authority-data};
 * users[].user.{client-certificate(-data),client-key(-data),token,tokenFile}. Relative file
 * paths resolve against the kubeconfig's directory. `exec`, `auth-provider`, basic auth and
 * `insecure-skip-tls-verify: true` are refused with an error naming the field: TLS is always
 * verified, against the configured CA or, when none is given, the system trust store.
 *
 * $KUBECONFIG may list several files separated by ':'; they are merged as kubectl merges them
 * (see kube_config_load_list). An explicit path is one file, never merged.
 */

#include <stdbool.h>
#include <stddef.h>
#include <time.h>

#include "lib/util/err.h"

/* Bound on a kubeconfig, certificate, key or token file. */
#define KUBE_CONFIG_FILE_MAX (4u << 20)
/* Bound on the number of files in a list such as $KUBECONFIG. */
#define KUBE_CONFIG_FILES_MAX 64

struct kube_config {
    char *server; /* "https://host:port", no trailing slash */
    char *ca_pem; /* PEM bundle, or NULL for the system trust store */
    size_t ca_len;
    char *ca_file;  /* the bundle's file, re-read when it changes (kube_config_ca), or NULL */
    char *cert_pem; /* client certificate (PEM) or NULL */
    size_t cert_len;
    char *key_pem; /* client key (PEM) or NULL; never logged */
    size_t key_len;
    char *token;      /* bearer token (static, or the last read of token_file) or NULL */
    char *token_file; /* re-read when it changes (see kube_config_token) or NULL */
    char *namespace_; /* the context's namespace, or "default" */
    char *origin;     /* the file or "in-cluster", for messages */
    /* Tests only: accept an http:// server, and only on a loopback address. No loader ever
     * sets this; a kubeconfig with an http:// server is refused. */
    bool allow_plain_http;
    /* token_file bookkeeping */
    struct timespec token_mtime;
    long long token_size;
    unsigned long long token_ino;
    double token_checked; /* time_mono() of the last stat */
    /* ca_file bookkeeping: the file as last read (loaded or refused) */
    struct timespec ca_mtime;
    long long ca_size;
    unsigned long long ca_ino;
    unsigned long ca_generation; /* bumped on every reload that changed ca_pem */
};

/* Paths for the in-cluster configuration; NULL fields take the service-account defaults
 * under /var/run/secrets/kubernetes.io/serviceaccount/. */
struct kube_incluster_paths {
    const char *token;
    const char *ca;
    const char *namespace_;
};

/* Parses kubeconfig text. `origin` names it in messages; relative paths resolve against
 * base_dir (NULL: the current directory); context NULL means current-context.
 * Returns 0, -EINVAL (detail in e, naming the field), -ENOENT/-EACCES (a referenced file),
 * -EOPNOTSUPP (exec, auth-provider, basic auth, insecure-skip-tls-verify), -ENOMEM. */
int kube_config_parse(const char *text, size_t len, const char *origin, const char *base_dir,
                      const char *context, struct kube_config **ret_cfg, struct err *e);

/* Reads and parses the kubeconfig at path. Same returns as kube_config_parse. */
int kube_config_load_file(const char *path, const char *context, struct kube_config **ret_cfg,
                          struct err *e);

/* Builds the in-cluster configuration from KUBERNETES_SERVICE_HOST/PORT and the service
 * account files. Returns 0, -ENOENT (not running in a cluster, or a file missing), -EINVAL. */
int kube_config_in_cluster(const struct kube_incluster_paths *paths, struct kube_config **ret_cfg,
                           struct err *e);

/*
 * Reads the ':'-separated list of kubeconfig files (the form of $KUBECONFIG) and merges them as
 * kubectl does: files in order, empty entries and files that do not exist skipped; the first
 * file with a non-empty current-context sets it (context NULL); for contexts, clusters and users
 * the first file that defines a name wins and later definitions are ignored; relative paths
 * resolve against the directory of the file that holds them. Every file read must parse and its
 * current-context, contexts, clusters and users must have the right types. The result's origin
 * is the files read, joined with ':'. Errors name the file and the field.
 * Returns as kube_config_parse, -ENOENT when none of the files exists, -EINVAL when the list
 * names more than KUBE_CONFIG_FILES_MAX files.
 */
int kube_config_load_list(const char *list, const char *context, struct kube_config **ret_cfg,
                          struct err *e);

/* The usual order: explicit path (if not NULL; one file), else $KUBECONFIG when it names a file
 * (merged as by kube_config_load_list; -ENOENT when none of them exists, without falling back,
 * as kubectl does), else ~/.kube/config, else in-cluster.
 * Returns -ENOENT when none of them is present. */
int kube_config_load(const char *path, struct kube_config **ret_cfg, struct err *e);

/* A deep copy. Returns NULL when out of memory. */
struct kube_config *kube_config_dup(const struct kube_config *cfg);

void kube_config_free(struct kube_config *cfg);

/* Re-reads the CA bundle from ca_file when the file's mtime, size or inode changed since it
 * was last read (a rotated management-cluster CA, e.g. the service account's ca.crt). The new
 * bundle replaces ca_pem only if it holds at least one certificate that parses; otherwise
 * the working one is kept, the error returned, and the same file is not read again until it
 * changes (a missing file is reported once, and read again when it is back). Returns 1 when ca_pem
 * changed, 0 when it did not (or there is no ca_file), -ENOENT/-EACCES/... (the file) or -EINVAL
 * (no certificate in it), with a message in e. */
int kube_config_ca(struct kube_config *cfg, struct err *e);

/* The bearer token to send now (NULL: none). With a token file, re-reads it when its mtime,
 * size or inode changed, or at least once a minute, so a rotated token is picked up. If a
 * re-read fails, the previous token is kept and the error returned (-ENOENT, ...).
 * The returned string is borrowed until the next call. */
int kube_config_token(struct kube_config *cfg, const char **ret_token, struct err *e);

#endif
