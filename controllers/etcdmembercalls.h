#ifndef NESTCP_CONTROLLERS_ETCDMEMBERCALLS_H
#define NESTCP_CONTROLLERS_ETCDMEMBERCALLS_H

/*
 * The membership step's memory and calls (controllers/etcdmembership.h), shared by its two
 * files:
 *
 *   etcdmembership.c   the step: the caches read, the decision turned into plan actions,
 *                      the roll's partition
 *   etcdmembercalls.c  what etcd answered, remembered by NestedEtcd key, and the calls to
 *                      etcd that a plan runs
 *
 * Internal to those files; nothing else includes it.
 */

#include <stdbool.h>
#include <stdint.h>

#include "controllers/etcdmembership.h"
#include "lib/kube/transport.h"
#include "lib/util/strmap.h"

#define NAME_LEN 128
#define EVENTS_MAX 4

/* A change etcd confirmed, told in the next reconcile. */
struct told {
    enum kube_event_type type;
    char reason[32];
    char message[256];
};

/* What etcd last answered for one NestedEtcd. */
struct obs {
    struct etcd_member_list *list; /* the last LIST's answer; NULL: none since start */
    double list_time;              /* when it was sent */
    double changed_time;           /* when the last membership change was answered */
    int failures;                  /* calls failed in a row */
    char error[256];               /* the last failure; "" after a success */
    bool new_cluster;              /* a member started a new cluster: take the next list's ID */
    double new_cluster_time;
    struct told *told; /* EVENTS_MAX of them once one is told; NULL when none is */
    int n_told;
    char key[]; /* at most NAME_LEN * 2 - 1 bytes, as op.key */
};

struct etcd_membership {
    struct strmap obs;
    struct kube_transport *t; /* made on the first call, on that call's loop */
};

/* One call in a plan. */
struct op {
    struct etcd_membership *em;
    char key[NAME_LEN * 2];
    enum etcd_members_action action;
    int ordinal;
    char pod[NAME_LEN];
    char host[NAME_LEN * 3];
    char ip[64];
    char peer_url[ETCD_MEMBERS_URL_MAX];
    uint64_t member_id;
    char *ca, *cert, *key_pem; /* PEM; the key is wiped when freed */
    double sent;
    struct etcd_client *client;
    struct etcd_call *call;
    plan_call_done_fn done;
    void *done_ctx;
};

/* What is remembered of the NestedEtcd key, made when absent if create. NULL when absent, or
 * out of memory. */
struct obs *etcd_membership_obs(struct etcd_membership *em, const char *key, bool create);

/* Forgets what o had to tell, once the reconcile has made its Events. */
void etcd_membership_told_clear(struct obs *o);

/* Frees a call (struct op) that was not handed to a plan, wiping its key. Accepts NULL. */
void etcd_membership_op_free(void *arg);

#endif
