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

/* Watches register so that kube_client_free can end them. */
void kube_client_watch_link(struct kube_client *c, struct list_node *l);
void kube_client_watch_unlink(struct kube_client *c, struct list_node *l);
void kube_client_count_watch(struct kube_client *c);
/* Ends a watch because its client is going away (defined in watch.c). */
void kube_watch_cancel_from_client(struct list_node *l);

#endif
