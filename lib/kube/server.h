#ifndef NESTCP_KUBE_SERVER_H
#define NESTCP_KUBE_SERVER_H

/*
 * The API server as a client reaches it: its address, the TLS material and credentials every
 * transfer carries, and the URLs of resources on it. The request and watch code of lib/kube
 * prepare their libcurl handles here; nothing outside lib/kube uses this header.
 */

#include <curl/curl.h>

#include "lib/kube/client.h"
#include "lib/util/buf.h"
#include "lib/util/err.h"

struct kube_config;

/* Embedded in the client. */
struct kube_server {
    struct kube_config *cfg; /* owned copy */
    struct curl_blob ca, cert, key;
    unsigned long ca_reloads; /* times the CA file changed and was loaded */
    unsigned long ca_errors;  /* times it changed and could not be used (old CA kept) */
};

/* Copies cfg into s. Refuses a server that is not https:// (or, for tests that set
 * allow_plain_http, http:// on a loopback address). Returns 0, -EINVAL (detail in e), -ENOMEM. */
int kube_server_init(struct kube_server *s, const struct kube_config *cfg, struct err *e);

/* Frees what kube_server_init allocated. */
void kube_server_done(struct kube_server *s);

/* Appends "&key=value" (value percent-encoded; the first one gets "?"). Returns 0 or -ENOMEM. */
int kube_query_add(struct buf *q, const char *key, const char *value);

/* Appends to out the server, the path of res (/api/v1 or /apis/group/version, namespace, name,
 * subresource; ns, name and subresource may be NULL) and query (may be NULL). Whether a
 * namespace is required is the caller's check. Returns 0 or -ENOMEM. */
int kube_server_url(const struct kube_server *s, const struct kube_resource *res, const char *ns,
                    const char *name, const char *subresource, const struct buf *query,
                    struct buf *out);

/* Configures easy for the server (TLS material and verification, keepalive, HTTP/2, auth and
 * Accept headers, plus content_type if not NULL) and sets *ret_headers (caller frees with
 * curl_slist_free_all after the transfer). A CA file that changed is loaded first. Returns 0,
 * -ENOMEM, or a token file error. */
int kube_server_setup_easy(struct kube_server *s, CURL *easy, const char *content_type,
                           struct curl_slist **ret_headers);

#endif
