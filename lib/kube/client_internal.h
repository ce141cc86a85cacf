#ifndef NESTCP_KUBE_CLIENT_INTERNAL_H
#define NESTCP_KUBE_CLIENT_INTERNAL_H

/* What client.c shares with watch.c; not for use outside lib/kube. */

#include "lib/kube/client.h"
#include "lib/util/list.h"

struct kube_pacer;
struct kube_server;
struct kube_transport;

/* The parts of the client a watch uses: its libcurl multi handle (transport.h), the server
 * every transfer goes to (server.h) and the client-wide rate limit (pace.h). */
struct kube_transport *kube_client_transport(struct kube_client *c);
struct kube_server *kube_client_server(struct kube_client *c);
struct kube_pacer *kube_client_pacer(struct kube_client *c);

/*
 * A long-lived user of the client, such as a running watch, embeds a handle so that
 * kube_client_free can end it without knowing its type: the client takes the handle off its
 * list and calls cancel, which must take the transfer off the transport (the client frees the
 * transport next) and tell its owner. Running handles count as work in flight.
 */
struct kube_handle {
    struct list_node link;
    void (*cancel)(struct kube_handle *h);
};

void kube_client_handle_init(struct kube_handle *h, void (*cancel)(struct kube_handle *h));
void kube_client_handle_add(struct kube_client *c, struct kube_handle *h);
/* A no-op when h is not on the client's list. */
void kube_client_handle_remove(struct kube_client *c, struct kube_handle *h);

/* Counts a watch stream opened in the client's stats. */
void kube_client_count_watch(struct kube_client *c);

#endif
