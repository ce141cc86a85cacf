#ifndef NESTCP_CONTROLLERS_ETCDMEMBERSVIEW_H
#define NESTCP_CONTROLLERS_ETCDMEMBERSVIEW_H

/*
 * What one membership decision (controllers/etcdmembers.h) works from, shared by its two
 * files:
 *
 *   etcdmembers.c       the view of the input, the rules that change the membership
 *                       (promotions, removals, scaling and re-adding: 5 to 8) and the decision
 *   etcdmembersstart.c  the rules that start members (bootstrap, releases, no fresh list: 1, 3
 *                       and 4) and the initial cluster a released pod starts with
 *
 * Internal to those files; nothing else includes it.
 */

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "controllers/etcdmembers.h"

#define MAXR ETCD_MEMBERS_REPLICAS_MAX
#define NAME_MAX_LEN 96

/* What one decision works from, derived once from the input. */
struct view {
    const struct etcd_members_input *in;
    char url[MAXR][ETCD_MEMBERS_URL_MAX];
    char pod[MAXR][NAME_MAX_LEN];
    const struct etcd_member *member[MAXR]; /* by ordinal, from a usable list */
    int n;                                  /* the StatefulSet's replicas */
    int keep;                               /* max(desired, n): the ordinals members may have */
    bool usable, fresh, running;
    bool listable; /* a quorum of the StatefulSet's pods runs: a LIST may be answered */
    int voters, healthy_voters, learners;
    int wait_claim;      /* a gated pod whose claim is not seen yet; -1: none */
    int waiting_learner; /* a learner still starting; -1: none */
};

/* Sets phase, reason (NULL: the phase's name) and message. */
static inline void say(struct etcd_members_decision *out, enum etcd_members_phase phase,
                       const char *reason, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static inline void say(struct etcd_members_decision *out, enum etcd_members_phase phase,
                       const char *reason, const char *fmt, ...)
{
    va_list ap;

    out->phase = phase;
    out->reason = reason ? reason : etcd_members_phase_name(phase);
    va_start(ap, fmt);
    vsnprintf(out->message, sizeof(out->message), fmt, ap);
    va_end(ap);
}

static inline bool same_uid(const char *a, const char *b)
{
    return a && b && strcmp(a, b) == 0;
}

static inline bool started(const struct etcd_member *m)
{
    return m->name && m->name[0];
}

static inline bool pod_running(const struct etcd_members_pod *p)
{
    return p->exists && !p->gated;
}

/* ---- etcdmembers.c ---- */

/* The ordinal whose peer URL m has; -1 for a foreign member. */
int etcd_members_ordinal(const struct view *v, const struct etcd_member *m);

/* The gated pod i has lost the data of its member m (NULL: not known). */
bool etcd_members_data_lost(const struct view *v, int i, const struct etcd_member *m);

/* LIST, at a member or pod that may answer, in the given phase; why goes into the message. */
void etcd_members_list_members(const struct view *v, struct etcd_members_decision *out,
                               enum etcd_members_phase phase, const char *why);

/* ---- etcdmembersstart.c ---- */

/* Rule 1: the cluster never formed. */
void etcd_members_bootstrap(const struct view *v, struct etcd_members_decision *out);

/* Rule 3: releases; true when one decided. */
bool etcd_members_releases(struct view *v, struct etcd_members_decision *out);

/* Rule 4: the list is not fresh. */
void etcd_members_observe(const struct view *v, struct etcd_members_decision *out);

#endif
