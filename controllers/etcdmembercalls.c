/* What the membership step remembers of etcd and how it calls etcd
 * (controllers/etcdmembercalls.h): the last answers by NestedEtcd key, the changes etcd
 * confirmed, told as Events in the next reconcile, and the LIST, ADD_LEARNER, PROMOTE and
 * REMOVE calls a plan runs through lib/etcd/client.h. */

#include "controllers/etcdmembercalls.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>

#include "lib/etcd/json.h"
#include "lib/util/strutil.h"

static void obs_free(void *v)
{
    struct obs *o = v;

    etcd_member_list_free(o->list);
    free(o->told);
    free(o);
}

int etcd_membership_new(struct etcd_membership **ret)
{
    struct etcd_membership *em = calloc(1, sizeof(*em));

    if (!em)
        return -ENOMEM;
    *ret = em;
    return 0;
}

void etcd_membership_free(struct etcd_membership *em)
{
    if (!em)
        return;
    strmap_done(&em->obs, obs_free);
    kube_transport_free(em->t);
    free(em);
}

void etcd_membership_forget(struct etcd_membership *em, const char *key)
{
    struct obs *o = em ? strmap_remove(&em->obs, key) : NULL;

    if (o)
        obs_free(o);
}

struct obs *etcd_membership_obs(struct etcd_membership *em, const char *key, bool create)
{
    struct obs *o = strmap_get(&em->obs, key);

    size_t len = strnlen(key, NAME_LEN * 2 - 1);

    if (o || !create)
        return o;
    /* One per cluster, for the manager's life: no more than it holds. */
    if (!(o = calloc(1, sizeof(*o) + len + 1)))
        return NULL;
    memcpy(o->key, key, len);
    if (strmap_put(&em->obs, o->key, o) < 0) {
        free(o);
        return NULL;
    }
    return o;
}

void etcd_membership_told_clear(struct obs *o)
{
    free(o->told);
    o->told = NULL;
    o->n_told = 0;
}

static char **strv_dup(char *const *v, size_t n, bool *oom)
{
    char **out;

    if (n == 0)
        return NULL;
    if (!(out = calloc(n, sizeof(*out)))) {
        *oom = true;
        return NULL;
    }
    for (size_t i = 0; i < n; i++)
        if (!(out[i] = strdup(v[i] ? v[i] : "")))
            *oom = true;
    return out;
}

/* A deep copy of l in the layout etcd_member_list_free expects; NULL when out of memory. */
static struct etcd_member_list *list_copy(const struct etcd_member_list *l)
{
    struct etcd_member_list *c = calloc(1, sizeof(*c));
    bool oom = false;

    if (!c)
        return NULL;
    c->header = l->header;
    if (l->n_members && !(c->members = calloc(l->n_members, sizeof(*c->members)))) {
        free(c);
        return NULL;
    }
    c->n_members = l->n_members;
    for (size_t k = 0; k < l->n_members; k++) {
        const struct etcd_member *m = &l->members[k];
        struct etcd_member *d = &c->members[k];
        d->id = m->id;
        d->is_learner = m->is_learner;
        if (!(d->name = strdup(m->name ? m->name : "")))
            oom = true;
        d->peer_urls = strv_dup(m->peer_urls, m->n_peer_urls, &oom);
        d->n_peer_urls = d->peer_urls ? m->n_peer_urls : 0;
        d->client_urls = strv_dup(m->client_urls, m->n_client_urls, &oom);
        d->n_client_urls = d->client_urls ? m->n_client_urls : 0;
    }
    if (oom) {
        etcd_member_list_free(c);
        return NULL;
    }
    return c;
}

static void tell(struct obs *o, enum kube_event_type type, const char *reason, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static void tell(struct obs *o, enum kube_event_type type, const char *reason, const char *fmt, ...)
{
    struct told *t;
    va_list ap;

    if (o->n_told == EVENTS_MAX)
        return;
    if (!o->told && !(o->told = calloc(EVENTS_MAX, sizeof(*o->told))))
        return; /* out of memory: the Event is not made; the conditions still say it */
    t = &o->told[o->n_told++];
    t->type = type;
    snprintf(t->reason, sizeof(t->reason), "%s", reason);
    va_start(ap, fmt);
    vsnprintf(t->message, sizeof(t->message), fmt, ap);
    va_end(ap);
}

static void record(struct op *op, const struct etcd_result *res, double sent, double now)
{
    struct obs *o = etcd_membership_obs(op->em, op->key, true);
    char id[ETCD_ID_STRLEN];

    if (!o)
        return; /* out of memory: the next reconcile lists again */
    if (op->action != ETCD_MEMBERS_LIST)
        o->changed_time = now;
    if (res->code != 0) {
        /* A learner that is not in sync yet is expected; anything else counts. */
        if (!(op->action == ETCD_MEMBERS_PROMOTE && res->code == -EAGAIN))
            o->failures++;
        snprintf(o->error, sizeof(o->error), "%s of member %.96s: %.120s",
                 etcd_members_action_name(op->action), op->pod,
                 res->err && res->err->msg[0] ? res->err->msg : err_code_name(res->code));
        return;
    }
    o->failures = 0;
    o->error[0] = '\0';
    switch (op->action) {
    case ETCD_MEMBERS_LIST:
        if (res->members) {
            struct etcd_member_list *c = list_copy(res->members);
            if (c) {
                etcd_member_list_free(o->list);
                o->list = c;
                o->list_time = sent;
            }
        }
        break;
    case ETCD_MEMBERS_ADD_LEARNER:
        tell(o, KUBE_EVENT_NORMAL, "AddedMember", "added %s to etcd as a learner (ID %s)",
             op->peer_url,
             etcd_json_format_id(res->members && res->members->added ? res->members->added->id : 0,
                                 id));
        break;
    case ETCD_MEMBERS_PROMOTE:
        tell(o, KUBE_EVENT_NORMAL, "PromotedMember",
             "promoted member %s (ID %s) to a voting member", op->pod,
             etcd_json_format_id(op->member_id, id));
        break;
    case ETCD_MEMBERS_REMOVE:
        tell(o, KUBE_EVENT_NORMAL, "RemovedMember", "removed member %s (ID %s) from etcd", op->pod,
             etcd_json_format_id(op->member_id, id));
        break;
    default:
        break;
    }
}

/* ---- calls ---- */

void etcd_membership_op_free(void *arg)
{
    struct op *op = arg;

    if (!op)
        return;
    etcd_client_free(op->client);
    if (op->key_pem) {
        OPENSSL_cleanse(op->key_pem, strlen(op->key_pem));
        free(op->key_pem);
    }
    free(op->ca);
    free(op->cert);
    free(op);
}

static void op_done(void *userdata, const struct etcd_result *res)
{
    struct op *op = userdata;
    plan_call_done_fn done = op->done;
    void *ctx = op->done_ctx;
    bool cancelled = res->code == -ECANCELED;

    op->call = NULL;
    if (!cancelled)
        record(op, res, op->sent, time_wall());
    /* What etcd answered is recorded; the reconcile decides what it means. */
    done(ctx, cancelled ? -ECANCELED : 0, NULL);
}

static int op_start(void *arg, struct ev_loop *loop, plan_call_done_fn done, void *done_ctx,
                    void **ret_handle)
{
    struct op *op = arg;
    struct etcd_tls tls = {op->ca, op->cert, op->key_pem};
    struct etcd_endpoint ep = {op->host, op->ip, 2379, 0};
    const char *url = op->peer_url;
    struct err e;
    int r;

    if (!op->em->t && (r = kube_transport_new(loop, &op->em->t)) < 0)
        return r;
    err_clear(&e);
    if (!op->client && (r = etcd_client_new(op->em->t, &tls, &op->client, &e)) < 0)
        return r;
    op->done = done;
    op->done_ctx = done_ctx;
    op->sent = time_wall();
    switch (op->action) {
    case ETCD_MEMBERS_LIST:
        r = etcd_member_list(op->client, &ep, op_done, op, &op->call, &e);
        break;
    case ETCD_MEMBERS_ADD_LEARNER:
        r = etcd_member_add(op->client, &ep, &url, 1, true, op_done, op, &op->call, &e);
        break;
    case ETCD_MEMBERS_PROMOTE:
        r = etcd_member_promote(op->client, &ep, op->member_id, op_done, op, &op->call, &e);
        break;
    case ETCD_MEMBERS_REMOVE:
        r = etcd_member_remove(op->client, &ep, op->member_id, op_done, op, &op->call, &e);
        break;
    default:
        r = -EINVAL;
    }
    if (r < 0)
        return r;
    *ret_handle = op;
    return 0;
}

static void op_cancel(void *handle)
{
    struct op *op = handle;

    if (op->call)
        etcd_call_cancel(op->call);
}

const struct plan_call_ops etcd_membership_call_ops = {
    .name = "etcd",
    .start = op_start,
    .cancel = op_cancel,
    .free = etcd_membership_op_free,
};

int etcd_membership_call_of(const struct plan_action *a, struct etcd_membership_call *ret)
{
    const struct op *op;

    if (a->call != &etcd_membership_call_ops)
        return -EINVAL;
    op = a->call_arg;
    *ret = (struct etcd_membership_call){op->action, op->ordinal, op->peer_url, op->member_id};
    return 0;
}

void etcd_membership_answer(const struct plan_action *a, const struct etcd_result *res, double sent,
                            double now)
{
    if (a->call == &etcd_membership_call_ops)
        record(a->call_arg, res, sent, now);
}
