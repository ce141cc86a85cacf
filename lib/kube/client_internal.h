#ifndef NESTCP_KUBE_CLIENT_INTERNAL_H
#define NESTCP_KUBE_CLIENT_INTERNAL_H

/* What client.c shares with watch.c; not for use outside lib/kube. */

#include "lib/kube/client.h"
#include "lib/util/list.h"

struct kube_transport;

/* A request or watch waiting for the client's rate limit; embedded in its owner, and in the
 * client's queue by link while it waits. */
struct kube_pace {
    struct list_node link;
    void (*go)(struct kube_pace *p); /* sends it, from the loop */
};

/* Takes a token of the client-wide rate limit: true when the request may go now; false when
 * p was queued (FIFO) and p->go will run from the loop when its turn comes. */
bool kube_client_pace(struct kube_client *c, struct kube_pace *p);
/* Takes p out of the queue; no-op when it is not queued (p->link list_init'ed). */
void kube_client_unpace(struct kube_pace *p);

struct kube_transport *kube_client_transport(struct kube_client *c);

/* The server every transfer of the client goes to (server.h). */
struct kube_server *kube_client_server(struct kube_client *c);

/* Watches register so that kube_client_free can end them. */
void kube_client_watch_link(struct kube_client *c, struct list_node *l);
void kube_client_watch_unlink(struct kube_client *c, struct list_node *l);
void kube_client_count_watch(struct kube_client *c);
/* Ends a watch because its client is going away (defined in watch.c). */
void kube_watch_cancel_from_client(struct list_node *l);

#endif
