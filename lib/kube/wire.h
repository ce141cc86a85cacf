#ifndef NESTCP_KUBE_WIRE_H
#define NESTCP_KUBE_WIRE_H

/*
 * A struct kube_request as it goes on the wire: method, URL with its query string, content
 * type and body. Internal to lib/kube; the client builds one per call.
 */

#include <stddef.h>

#include "lib/kube/client.h"

struct kube_server;

struct kube_wire {
    const char *method; /* static string */
    char *url;
    char *body; /* NULL when the request has none */
    size_t body_len;
    const char *content_type; /* static string, or NULL */
};

/* Builds w for req on the server s. The body is req->body serialised, or for a DELETE the
 * DeleteOptions with the propagation policy and the preconditions req asks for. Nothing is
 * half-built: on failure w owns nothing and has neither URL nor body (so a DELETE is never
 * built without its preconditions).
 * Returns 0, -EINVAL (a request that cannot be right: a verb without the name, namespace or
 * body it needs, an apply patch without a field manager), -ENOMEM. */
int kube_wire_build(struct kube_wire *w, const struct kube_server *s,
                    const struct kube_request *req);

/* Frees what w holds and empties it. */
void kube_wire_done(struct kube_wire *w);

#endif
