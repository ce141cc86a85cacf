/* The next step that changes an etcd's membership (controllers/etcdmembers.h): the names, the
 * view of the input, the rules that change the membership (5 to 8) and the decision. The
 * rules that start members are in etcdmembersstart.c (controllers/etcdmembersview.h). */

#include "controllers/etcdmembers.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "controllers/etcdmembersview.h"

const char *etcd_members_action_name(enum etcd_members_action a)
{
    switch (a) {
    case ETCD_MEMBERS_NONE:
        return "None";
    case ETCD_MEMBERS_LIST:
        return "List";
    case ETCD_MEMBERS_RELEASE:
        return "Release";
    case ETCD_MEMBERS_RECORD_ADDING:
        return "RecordAdding";
    case ETCD_MEMBERS_ADD_LEARNER:
        return "AddLearner";
    case ETCD_MEMBERS_PROMOTE:
        return "Promote";
    case ETCD_MEMBERS_REMOVE:
        return "Remove";
    case ETCD_MEMBERS_SET_REPLICAS:
        return "SetReplicas";
    }
    return "Unknown";
}

const char *etcd_members_phase_name(enum etcd_members_phase p)
{
    switch (p) {
    case ETCD_MEMBERS_PHASE_BOOTSTRAPPING:
        return "Bootstrapping";
    case ETCD_MEMBERS_PHASE_STARTING:
        return "Starting";
    case ETCD_MEMBERS_PHASE_ADDING:
        return "AddingMember";
    case ETCD_MEMBERS_PHASE_PROMOTING:
        return "PromotingMember";
    case ETCD_MEMBERS_PHASE_REMOVING:
        return "RemovingMember";
    case ETCD_MEMBERS_PHASE_REPLACING:
        return "ReplacingMember";
    case ETCD_MEMBERS_PHASE_SCALING:
        return "Scaling";
    case ETCD_MEMBERS_PHASE_OBSERVING:
        return "Observing";
    case ETCD_MEMBERS_PHASE_WAITING:
        return "Waiting";
    case ETCD_MEMBERS_PHASE_REFUSED:
        return "Refused";
    case ETCD_MEMBERS_PHASE_SCALED:
        return "Scaled";
    }
    return "Unknown";
}

int etcd_members_peer_url(const char *cluster, const char *ns, int ordinal, char *buf, size_t size)
{
    int r = snprintf(buf, size, "https://%s-etcd-%d.%s-etcd.%s.svc:2380", cluster, ordinal, cluster,
                     ns);

    if (r < 0 || (size_t)r >= size)
        return -ENAMETOOLONG;
    return 0;
}

static bool pod_healthy(const struct view *v, int i)
{
    const struct etcd_members_pod *p;

    if (i < 0 || i >= MAXR)
        return false;
    p = &v->in->pods[i];
    return p->exists && !p->gated && p->ready && !p->deleting;
}

/* The ordinal whose peer URL m has; -1 for a foreign member. */
int etcd_members_ordinal(const struct view *v, const struct etcd_member *m)
{
    for (int i = 0; i < MAXR; i++)
        for (size_t j = 0; j < m->n_peer_urls; j++)
            if (m->peer_urls[j] && strcmp(m->peer_urls[j], v->url[i]) == 0)
                return i;
    return -1;
}

static bool member_healthy(const struct view *v, const struct etcd_member *m)
{
    return started(m) && pod_healthy(v, etcd_members_ordinal(v, m));
}

/* "c-etcd-1", or for a foreign member its name or ID. */
static const char *label(const struct view *v, const struct etcd_member *m, char *buf, size_t size)
{
    int i = etcd_members_ordinal(v, m);

    if (i >= 0)
        return v->pod[i];
    if (started(m))
        snprintf(buf, size, "%s (ID %" PRIx64 ")", m->name, m->id);
    else
        snprintf(buf, size, "%" PRIx64, m->id);
    return buf;
}

/* The first voting member other than except that is not healthy; NULL when none. */
static const struct etcd_member *unhealthy_voter(const struct view *v,
                                                 const struct etcd_member *except)
{
    const struct etcd_member_list *l = v->in->list;

    for (size_t k = 0; l && k < l->n_members; k++) {
        const struct etcd_member *m = &l->members[k];
        if (m != except && !m->is_learner && !member_healthy(v, m))
            return m;
    }
    return NULL;
}

/* A Ready, started voting member to send a call to, preferably not ordinal exclude; without
 * a usable list (LIST only), a Ready pod or a running one; -1: any. */
static int endpoint(const struct view *v, int exclude)
{
    int self = -1;

    for (int i = 0; i < MAXR; i++) {
        const struct etcd_member *m = v->member[i];
        if (m && !m->is_learner && member_healthy(v, m)) {
            if (i != exclude)
                return i;
            self = i;
        }
    }
    if (self >= 0 || v->usable)
        return self;
    for (int i = 0; i < MAXR; i++)
        if (pod_healthy(v, i))
            return i;
    for (int i = 0; i < MAXR; i++)
        if (pod_running(&v->in->pods[i]))
            return i;
    return -1;
}

/* The gated pod i has lost the data of its member m (NULL: not known). */
bool etcd_members_data_lost(const struct view *v, int i, const struct etcd_member *m)
{
    const struct etcd_members_pod *p = &v->in->pods[i];

    if (p->recorded_data_uid)
        return !same_uid(p->recorded_data_uid, p->data_uid);
    return v->in->storage == API_STORAGE_EMPTYDIR && m && started(m);
}

/* The gated pod i holds no data a removed member may have left: a member may be added there. */
static bool data_clean(const struct view *v, int i)
{
    const struct etcd_members_pod *p = &v->in->pods[i];

    if (v->in->storage == API_STORAGE_EMPTYDIR)
        return !same_uid(p->recorded_data_uid, p->data_uid);
    return p->data_uid && p->recorded_data_uid && !same_uid(p->recorded_data_uid, p->data_uid);
}

void etcd_members_list_members(const struct view *v, struct etcd_members_decision *out,
                               enum etcd_members_phase phase, const char *why)
{
    out->action = ETCD_MEMBERS_LIST;
    out->endpoint = endpoint(v, -1);
    say(out, phase, NULL, "listing the members: %s", why);
}

static bool check_input(const struct etcd_members_input *in, struct view *v,
                        struct etcd_members_decision *out)
{
    const char *bad = NULL;

    if (!in->cluster || !in->ns)
        bad = "no cluster name or namespace";
    else if (in->desired < 1 || in->desired > MAXR || in->desired % 2 == 0)
        bad = "desired replicas must be odd, 1 to 7";
    else if (in->sts_exists && (in->sts_replicas < 0 || in->sts_replicas > MAXR))
        bad = "the StatefulSet's replicas are outside 0 to 7";
    else if (in->storage != API_STORAGE_EMPTYDIR && in->storage != API_STORAGE_PVC)
        bad = "no storage kind";
    for (int i = 0; !bad && i < MAXR; i++) {
        int r = snprintf(v->pod[i], sizeof(v->pod[i]), "%s-etcd-%d", in->cluster, i);
        if (r < 0 || (size_t)r >= sizeof(v->pod[i]) ||
            etcd_members_peer_url(in->cluster, in->ns, i, v->url[i], sizeof(v->url[i])) < 0)
            bad = "the cluster name and namespace are too long for a peer URL";
    }
    if (!bad)
        return true;
    say(out, ETCD_MEMBERS_PHASE_REFUSED, "InvalidInput", "%s", bad);
    return false;
}

static void view_init(struct view *v, const struct etcd_members_input *in)
{
    const struct etcd_member_list *l = in->list;
    int running = 0;

    v->in = in;
    v->n = in->sts_exists ? in->sts_replicas : 0;
    v->keep = in->desired > v->n ? in->desired : v->n;
    v->usable = l && in->list_time >= in->changed_time;
    v->fresh = v->usable && in->now - in->list_time <= ETCD_MEMBERS_STALE_AFTER;
    v->wait_claim = v->waiting_learner = -1;
    for (int i = 0; i < MAXR; i++) {
        v->member[i] = v->usable ? etcd_member_list_find_peer_url(l, v->url[i]) : NULL;
        if (pod_running(&in->pods[i])) {
            v->running = true;
            running++;
        }
    }
    v->listable = running >= v->n / 2 + 1;
    for (size_t k = 0; v->usable && k < l->n_members; k++) {
        const struct etcd_member *m = &l->members[k];
        if (m->is_learner) {
            v->learners++;
        } else {
            v->voters++;
            if (member_healthy(v, m))
                v->healthy_voters++;
        }
    }
}

static bool converged(const struct view *v)
{
    const struct etcd_members_input *in = v->in;

    if (!v->usable || !in->sts_exists || in->sts_replicas != in->desired ||
        in->list->n_members != (size_t)in->desired)
        return false;
    for (int i = 0; i < in->desired; i++)
        if (!v->member[i] || v->member[i]->is_learner)
            return false;
    return true;
}

/* Whether the adding record is done with: its member votes, or its ordinal is not wanted. */
static bool adding_done(const struct view *v)
{
    const char *url = v->in->adding;
    const struct etcd_member *m;

    if (!url || !v->usable)
        return false;
    m = etcd_member_list_find_peer_url(v->in->list, url);
    if (m && !m->is_learner)
        return true;
    for (int i = 0; i < v->keep; i++)
        if (strcmp(url, v->url[i]) == 0)
            return false;
    return true;
}

/* Rule 5: promotions. */
static bool promotions(struct view *v, struct etcd_members_decision *out)
{
    int lim = v->in->desired < v->n ? v->in->desired : v->n;

    for (int i = 0; i < lim; i++) {
        const struct etcd_member *m = v->member[i];
        if (!m || !m->is_learner)
            continue;
        if (started(m) && pod_healthy(v, i) && endpoint(v, i) >= 0) {
            out->action = ETCD_MEMBERS_PROMOTE;
            out->member_id = m->id;
            out->ordinal = i;
            out->endpoint = endpoint(v, i);
            say(out, ETCD_MEMBERS_PHASE_PROMOTING, NULL, "promoting learner %s to a voting member",
                v->pod[i]);
            return true;
        }
        if (!started(m) && pod_healthy(v, i) &&
            v->in->now - v->in->list_time >= ETCD_MEMBERS_RELIST_AFTER) {
            char why[160];
            snprintf(why, sizeof(why), "pod %s is ready; has its learner started?", v->pod[i]);
            etcd_members_list_members(v, out, ETCD_MEMBERS_PHASE_ADDING, why);
            return true;
        }
        if (v->waiting_learner < 0)
            v->waiting_learner = i;
    }
    return false;
}

/* Whether removing m keeps etcd's quorum (rule 6); else refuses, naming why. */
static bool may_remove(const struct view *v, const struct etcd_member *m,
                       struct etcd_members_decision *out)
{
    const struct etcd_member *bad;
    char b1[96], b2[96];
    int others;

    if (m->is_learner)
        return true;
    if (member_healthy(v, m)) {
        bad = unhealthy_voter(v, m);
        if (!bad)
            return true;
        say(out, ETCD_MEMBERS_PHASE_REFUSED, "MemberUnhealthy",
            "member %s is not ready; removing member %s waits", label(v, bad, b1, sizeof(b1)),
            label(v, m, b2, sizeof(b2)));
        return false;
    }
    others = v->healthy_voters;
    if (others >= v->voters / 2 + 1)
        return true;
    say(out, ETCD_MEMBERS_PHASE_REFUSED, "QuorumLost",
        "member %s is down and %d of the other %d voting members are ready, %d needed to "
        "remove it",
        label(v, m, b1, sizeof(b1)), others, v->voters - 1, v->voters / 2 + 1);
    return false;
}

static void remove_member(const struct view *v, const struct etcd_member *m,
                          struct etcd_members_decision *out)
{
    out->action = ETCD_MEMBERS_REMOVE;
    out->member_id = m->id;
    out->ordinal = etcd_members_ordinal(v, m);
    out->endpoint = endpoint(v, out->ordinal);
}

/* Rule 6: removals of members that lost their data, then of stale members. */
static bool removals(const struct view *v, struct etcd_members_decision *out)
{
    const struct etcd_member_list *l = v->in->list;
    char b[96];

    for (int i = 0; i < v->n; i++) {
        const struct etcd_members_pod *p = &v->in->pods[i];
        const struct etcd_member *m = v->member[i];

        if (!m || !p->exists || !p->gated || p->deleting)
            continue;
        if (v->in->storage == API_STORAGE_PVC && !p->data_uid)
            continue;
        if (!etcd_members_data_lost(v, i, m))
            continue;
        if (may_remove(v, m, out)) {
            remove_member(v, m, out);
            say(out, ETCD_MEMBERS_PHASE_REPLACING, NULL,
                "removing member %s, which lost its data, to add it again", v->pod[i]);
        }
        return true;
    }
    for (size_t k = 0; k < l->n_members; k++) {
        const struct etcd_member *m = &l->members[k];
        int i = etcd_members_ordinal(v, m);

        if (i >= 0 && i < v->keep)
            continue;
        if (may_remove(v, m, out)) {
            remove_member(v, m, out);
            say(out, ETCD_MEMBERS_PHASE_REMOVING, NULL,
                "removing member %s: its peer URL is no ordinal below %d",
                label(v, m, b, sizeof(b)), v->keep);
        }
        return true;
    }
    return false;
}

/* Refuses a scale step while a voting member is unhealthy; returns whether it did. */
static bool refuse_unhealthy(const struct view *v, struct etcd_members_decision *out)
{
    const struct etcd_member *bad = unhealthy_voter(v, NULL);
    char b[96];

    if (!bad)
        return false;
    say(out, ETCD_MEMBERS_PHASE_REFUSED, "MemberUnhealthy",
        started(bad) ? "member %s is not ready; membership changes wait"
                     : "member %s has not started; membership changes wait",
        label(v, bad, b, sizeof(b)));
    return true;
}

static void wait_learner(const struct view *v, int i, struct etcd_members_decision *out)
{
    say(out, ETCD_MEMBERS_PHASE_ADDING, "WaitingForLearner",
        "waiting for learner %s to start and become ready", v->pod[i]);
}

/* RECORD_ADDING, then ADD_LEARNER, for ordinal i. */
static void add(const struct view *v, int i, struct etcd_members_decision *out)
{
    enum etcd_members_phase phase =
        i < v->n ? ETCD_MEMBERS_PHASE_REPLACING : ETCD_MEMBERS_PHASE_ADDING;

    if (refuse_unhealthy(v, out))
        return;
    if (v->learners) {
        const struct etcd_member_list *l = v->in->list;
        for (size_t k = 0; k < l->n_members; k++) {
            int j = etcd_members_ordinal(v, &l->members[k]);
            if (l->members[k].is_learner && j >= 0) {
                wait_learner(v, j, out);
                return;
            }
        }
        say(out, ETCD_MEMBERS_PHASE_WAITING, "WaitingForLearner", "waiting for a learner");
        return;
    }
    out->ordinal = i;
    snprintf(out->peer_url, sizeof(out->peer_url), "%s", v->url[i]);
    if (v->in->adding && strcmp(v->in->adding, v->url[i]) == 0) {
        out->action = ETCD_MEMBERS_ADD_LEARNER;
        out->endpoint = endpoint(v, -1);
        say(out, phase, NULL, "adding member %s as a learner", v->pod[i]);
        return;
    }
    out->action = ETCD_MEMBERS_RECORD_ADDING;
    say(out, phase, NULL, "recording member %s before adding it", v->pod[i]);
}

static void set_replicas(const struct view *v, int n, enum etcd_members_phase phase,
                         struct etcd_members_decision *out)
{
    out->action = ETCD_MEMBERS_SET_REPLICAS;
    out->replicas = n;
    if (n > v->n)
        say(out, phase, NULL, "scaling the StatefulSet up to %d to create pod %s", n, v->pod[v->n]);
    else
        say(out, phase, NULL, "scaling the StatefulSet down to %d: pod %s is no member", n,
            v->pod[n]);
}

/* Re-adding the member of ordinal i, which has none (rule 7). */
static void readd(const struct view *v, int i, struct etcd_members_decision *out)
{
    const struct etcd_members_pod *p = &v->in->pods[i];
    bool recorded = v->in->adding && strcmp(v->in->adding, v->url[i]) == 0;

    if ((recorded && !pod_running(p)) ||
        (p->exists && p->gated && !p->deleting && data_clean(v, i))) {
        add(v, i, out);
        return;
    }
    if (!p->exists || p->deleting) {
        say(out, ETCD_MEMBERS_PHASE_WAITING, "WaitingForPod", "waiting for pod %s", v->pod[i]);
        return;
    }
    if (p->gated && v->in->storage == API_STORAGE_PVC && !p->data_uid) {
        say(out, ETCD_MEMBERS_PHASE_WAITING, "WaitingForClaim", "waiting for the claim of pod %s",
            v->pod[i]);
        return;
    }
    if (i == v->n - 1) {
        if (!refuse_unhealthy(v, out))
            set_replicas(v, v->n - 1, ETCD_MEMBERS_PHASE_REPLACING, out);
        return;
    }
    say(out, ETCD_MEMBERS_PHASE_REFUSED, "StaleMemberData",
        "pod %s is no member and may hold a removed member's data; delete the pod and its "
        "claim to add it again",
        v->pod[i]);
}

/* Rule 7 and 8. */
static void scale(const struct view *v, struct etcd_members_decision *out)
{
    const struct etcd_members_input *in = v->in;
    int lim = in->desired < v->n ? in->desired : v->n;

    /* A learner added for scale-up gets its pod before anything else is added. */
    if (v->n < in->desired && v->member[v->n]) {
        if (!refuse_unhealthy(v, out))
            set_replicas(v, v->n + 1, ETCD_MEMBERS_PHASE_ADDING, out);
        return;
    }
    for (int i = 0; i < lim; i++)
        if (!v->member[i]) {
            readd(v, i, out);
            return;
        }
    if (v->n > in->desired) {
        const struct etcd_member *m = v->member[v->n - 1];
        if (m) {
            if (may_remove(v, m, out)) {
                remove_member(v, m, out);
                say(out, ETCD_MEMBERS_PHASE_REMOVING, NULL,
                    "removing member %s to scale down to %d", v->pod[v->n - 1], in->desired);
            }
        } else if (!refuse_unhealthy(v, out)) {
            set_replicas(v, v->n - 1, ETCD_MEMBERS_PHASE_SCALING, out);
        }
        return;
    }
    if (v->n < in->desired) {
        add(v, v->n, out);
        return;
    }
    if (v->waiting_learner >= 0) {
        wait_learner(v, v->waiting_learner, out);
        return;
    }
    if (v->wait_claim >= 0) {
        say(out, ETCD_MEMBERS_PHASE_WAITING, "WaitingForClaim", "waiting for the claim of pod %s",
            v->pod[v->wait_claim]);
        return;
    }
    if (out->converged)
        say(out, ETCD_MEMBERS_PHASE_SCALED, NULL, "%d members, all voting", in->desired);
    else
        say(out, ETCD_MEMBERS_PHASE_WAITING, NULL, "waiting for the members to settle");
}

void etcd_members_decide(const struct etcd_members_input *in, struct etcd_members_decision *out)
{
    struct view v;

    memset(out, 0, sizeof(*out));
    memset(&v, 0, sizeof(v));
    out->action = ETCD_MEMBERS_NONE;
    out->ordinal = out->endpoint = -1;
    if (!check_input(in, &v, out))
        return;
    view_init(&v, in);
    out->converged = converged(&v);
    if (!in->cluster_id && !in->list) {
        out->forget_adding = in->adding != NULL;
        etcd_members_bootstrap(&v, out);
        return;
    }
    out->forget_adding = adding_done(&v);
    if (!in->sts_exists) {
        int top = -1;
        for (int i = 0; i < MAXR; i++)
            if (v.member[i])
                top = i;
        out->action = ETCD_MEMBERS_SET_REPLICAS;
        out->replicas = top >= 0 ? top + 1 : in->desired;
        say(out, ETCD_MEMBERS_PHASE_SCALING, NULL,
            "recreating the StatefulSet with %d replicas for the existing members", out->replicas);
        return;
    }
    if (etcd_members_releases(&v, out))
        return;
    if (!v.fresh) {
        etcd_members_observe(&v, out);
        return;
    }
    if (promotions(&v, out) || removals(&v, out))
        return;
    scale(&v, out);
}
