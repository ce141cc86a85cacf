#ifndef NESTCP_KUBE_CLIENT_INTERNAL_H
#define NESTCP_KUBE_CLIENT_INTERNAL_H

/* What client.c shares with watch.c; not for use outside lib/kube. */

#include <curl/curl.h>

#include "lib/kube/client.h"
#include "lib/util/buf.h"

struct kube_transport;

/* A node in one of the client's lists of things in flight. */
struct kube_link {
    struct kube_link *prev, *next;
};

/* A request or watch waiting for the client's rate limit; embedded in its owner. */
struct kube_pace {
    struct kube_link link;
    void (*go)(struct kube_pace *p); /* sends it, from the loop */
};

/* Takes a token of the client-wide rate limit: true when the request may go now; false when
 * p was queued (FIFO) and p->go will run from the loop when its turn comes. */
bool kube_client_pace(struct kube_client *c, struct kube_pace *p);
/* Takes p out of the queue; no-op when it is not queued. */
void kube_client_unpace(struct kube_pace *p);

struct kube_transport *kube_client_transport(struct kube_client *c);

/* Appends "&key=value" (value percent-encoded; the first one gets "?"). Returns 0 or -ENOMEM. */
int kube_query_add(struct buf *q, const char *key, const char *value);

/* Builds server + path for res (/api/v1 or /apis/group/version, namespace, name, subresource)
 * followed by query (may be NULL). Returns 0, -EINVAL (namespaced resource without namespace
 * where one is required is the caller's check), -ENOMEM. */
int kube_client_url(const struct kube_client *c, const struct kube_resource *res, const char *ns,
                    const char *name, const char *subresource, const struct buf *query,
                    struct buf *out);

/* Configures easy for the client (TLS material and verification, keepalive, HTTP/2, auth and
 * Accept headers, plus content_type if not NULL) and sets *ret_headers (caller frees with
 * curl_slist_free_all after the transfer). Returns 0, -ENOMEM, or a token file error. */
int kube_client_setup_easy(struct kube_client *c, CURL *easy, const char *content_type,
                           struct curl_slist **ret_headers);

/* Watches register so that kube_client_free can end them. */
void kube_client_watch_link(struct kube_client *c, struct kube_link *l);
void kube_client_watch_unlink(struct kube_client *c, struct kube_link *l);
void kube_client_count_watch(struct kube_client *c);
/* Ends a watch because its client is going away (defined in watch.c). */
void kube_watch_cancel_from_client(struct kube_link *l);

#endif
