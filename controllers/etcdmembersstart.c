/* The membership rules that start members (controllers/etcdmembersview.h): bootstrap while
 * the cluster never formed (rule 1), the release of gated pods (rule 3), what is done without
 * a fresh list (rule 4), and the initial cluster a released pod starts with. */

#include <stdio.h>
#include <string.h>

#include "controllers/etcdmembersview.h"

/* Appends "name=url" to the ","-separated out. Returns false when it does not fit. */
static bool cluster_append(char *out, size_t size, size_t *len, const char *name, const char *url)
{
    int r = snprintf(out + *len, size - *len, "%s%s=%s", *len ? "," : "", name, url);

    if (r < 0 || (size_t)r >= size - *len)
        return false;
    *len += (size_t)r;
    return true;
}

/* The initial cluster of the listed members, named after their pods (a member that has not
 * started has no name yet), foreign members by their own names. */
static bool cluster_from_list(const struct view *v, char *out, size_t size)
{
    const struct etcd_member_list *l = v->in->list;
    size_t len = 0;

    out[0] = '\0';
    for (size_t k = 0; k < l->n_members; k++) {
        const struct etcd_member *m = &l->members[k];
        int i = etcd_members_ordinal(v, m);
        const char *name = i >= 0 ? v->pod[i] : m->name ? m->name : "";
        for (size_t j = 0; j < m->n_peer_urls; j++)
            if (!cluster_append(out, size, &len, name, m->peer_urls[j]))
                return false;
    }
    return true;
}

static bool cluster_from_ordinals(const struct view *v, int count, char *out, size_t size)
{
    size_t len = 0;

    out[0] = '\0';
    for (int i = 0; i < count; i++)
        if (!cluster_append(out, size, &len, v->pod[i], v->url[i]))
            return false;
    return true;
}

static void refuse_too_many(struct etcd_members_decision *out)
{
    out->action = ETCD_MEMBERS_NONE;
    out->ordinal = -1;
    out->state = NULL;
    out->initial_cluster[0] = '\0';
    say(out, ETCD_MEMBERS_PHASE_REFUSED, "TooManyMembers",
        "the member list does not fit an initial cluster of %zu bytes",
        sizeof(out->initial_cluster));
}

static void release(const struct view *v, int i, const char *state, bool from_list, int count,
                    struct etcd_members_decision *out)
{
    bool ok = from_list ? cluster_from_list(v, out->initial_cluster, sizeof(out->initial_cluster))
                        : cluster_from_ordinals(v, count, out->initial_cluster,
                                                sizeof(out->initial_cluster));

    out->action = ETCD_MEMBERS_RELEASE;
    out->ordinal = i;
    out->state = state;
    if (!ok)
        refuse_too_many(out);
}

static void release_new_alone(const struct view *v, int i, struct etcd_members_decision *out)
{
    size_t len = 0;

    out->action = ETCD_MEMBERS_RELEASE;
    out->ordinal = i;
    out->state = "new";
    out->initial_cluster[0] = '\0';
    cluster_append(out->initial_cluster, sizeof(out->initial_cluster), &len, v->pod[i],
                   v->url[i]); /* fits: check_input bounds both */
    out->data_lost = true;
    say(out, ETCD_MEMBERS_PHASE_REPLACING, "DataLost",
        "member %s lost its data and was the only member: it starts a new, empty cluster and "
        "every key is lost",
        v->pod[i]);
}

/* Rule 1: the cluster never formed. */
void etcd_members_bootstrap(const struct view *v, struct etcd_members_decision *out)
{
    const struct etcd_members_input *in = v->in;
    bool released = false;
    int n, wait_pod = -1, wait_lost = -1;

    for (int i = 0; i < MAXR; i++)
        if (pod_running(&in->pods[i]))
            released = true;
    if (!released && (!in->sts_exists || in->sts_replicas != in->desired)) {
        out->action = ETCD_MEMBERS_SET_REPLICAS;
        out->replicas = in->desired;
        say(out, ETCD_MEMBERS_PHASE_BOOTSTRAPPING, NULL, "creating a new cluster of %d members",
            in->desired);
        return;
    }
    n = released && in->sts_exists && in->sts_replicas > 0 ? in->sts_replicas : in->desired;
    for (int i = 0; i < n; i++) {
        const struct etcd_members_pod *p = &in->pods[i];
        bool lost = p->recorded_data_uid && !same_uid(p->recorded_data_uid, p->data_uid);

        if (!p->exists || p->deleting) {
            if (wait_pod < 0)
                wait_pod = i;
            continue;
        }
        if (!p->gated)
            continue;
        if (lost && v->running) {
            if (wait_lost < 0)
                wait_lost = i;
            continue;
        }
        release(v, i, "new", false, n, out);
        if (out->action != ETCD_MEMBERS_RELEASE)
            return;
        out->data_lost = lost;
        if (lost)
            say(out, ETCD_MEMBERS_PHASE_BOOTSTRAPPING, "DataLost",
                "member %s lost its data and no member runs: it starts in a new, empty cluster "
                "of %d members",
                v->pod[i], n);
        else
            say(out, ETCD_MEMBERS_PHASE_BOOTSTRAPPING, NULL,
                "starting member %s of a new cluster of %d", v->pod[i], n);
        return;
    }
    if (v->running) {
        char why[160];
        if (wait_lost >= 0)
            snprintf(why, sizeof(why), "member %s lost its data; did the cluster form?",
                     v->pod[wait_lost]);
        else
            snprintf(why, sizeof(why), "waiting for the new cluster of %d to form", n);
        etcd_members_list_members(v, out, ETCD_MEMBERS_PHASE_BOOTSTRAPPING, why);
        return;
    }
    say(out, ETCD_MEMBERS_PHASE_WAITING, "WaitingForPod", "waiting for pod %s",
        v->pod[wait_pod >= 0 ? wait_pod : 0]);
}

/* Rule 3: releases. */
bool etcd_members_releases(struct view *v, struct etcd_members_decision *out)
{
    const struct etcd_members_input *in = v->in;

    for (int i = 0; i < v->n; i++) {
        const struct etcd_members_pod *p = &in->pods[i];
        const struct etcd_member *m = v->member[i];

        if (!p->exists || !p->gated || p->deleting)
            continue;
        if (in->storage == API_STORAGE_PVC && !p->data_uid) {
            if (v->wait_claim < 0)
                v->wait_claim = i;
            continue;
        }
        if (v->usable) {
            if (!m)
                continue; /* removed: rules 6 and 7 */
            if (!etcd_members_data_lost(v, i, m)) {
                release(v, i, "existing", true, 0, out);
                if (out->action != ETCD_MEMBERS_RELEASE)
                    return true;
                if (started(m))
                    say(out, ETCD_MEMBERS_PHASE_STARTING, NULL, "starting member %s with its data",
                        v->pod[i]);
                else
                    say(out, ETCD_MEMBERS_PHASE_ADDING, NULL,
                        "starting member %s to join the cluster", v->pod[i]);
                return true;
            }
            if (!m->is_learner && v->voters == 1) {
                release_new_alone(v, i, out);
                return true;
            }
            continue; /* lost: rule 6 */
        }
        if (same_uid(p->recorded_data_uid, p->data_uid) ||
            (!v->listable && in->storage == API_STORAGE_PVC && !p->recorded_data_uid)) {
            release(v, i, "existing", false, v->n, out);
            if (out->action == ETCD_MEMBERS_RELEASE)
                say(out, ETCD_MEMBERS_PHASE_STARTING, NULL, "starting member %s with its data",
                    v->pod[i]);
            return true;
        }
        if (!v->listable && v->n == 1) {
            release_new_alone(v, i, out);
            return true;
        }
    }
    return false;
}

/* Counts the voting members whose gated pods lost their data; *ret_first: the first. */
static int lost_voters(const struct view *v, int *ret_first)
{
    int lost = 0;

    *ret_first = -1;
    for (int i = 0; i < v->n; i++) {
        const struct etcd_members_pod *p = &v->in->pods[i];
        const struct etcd_member *m = v->member[i];
        if (m && !m->is_learner && p->exists && p->gated && etcd_members_data_lost(v, i, m)) {
            if (*ret_first < 0)
                *ret_first = i;
            lost++;
        }
    }
    return lost;
}

/* Rule 4: the list is not fresh. */
void etcd_members_observe(const struct view *v, struct etcd_members_decision *out)
{
    const struct etcd_members_input *in = v->in;
    int first, lost;

    if (v->running) {
        char why[96];
        if (!in->list)
            snprintf(why, sizeof(why), "none known");
        else if (!v->usable)
            snprintf(why, sizeof(why), "the last list is older than the last change");
        else
            snprintf(why, sizeof(why), "the last list is %.0f s old", in->now - in->list_time);
        etcd_members_list_members(v, out, ETCD_MEMBERS_PHASE_OBSERVING, why);
        return;
    }
    lost = v->usable ? lost_voters(v, &first) : 0;
    if (lost && v->voters - lost < v->voters / 2 + 1) {
        say(out, ETCD_MEMBERS_PHASE_REFUSED, "QuorumLost",
            "member %s and %d more lost their data; the %d others cannot form a quorum of %d",
            v->pod[first], lost - 1, v->voters - lost, v->voters / 2 + 1);
        return;
    }
    if (v->wait_claim >= 0) {
        say(out, ETCD_MEMBERS_PHASE_WAITING, "WaitingForClaim", "waiting for the claim of pod %s",
            v->pod[v->wait_claim]);
        return;
    }
    say(out, ETCD_MEMBERS_PHASE_WAITING, "NoMemberRunning",
        "no etcd member runs; waiting for the StatefulSet's pods");
}
