#ifndef NESTCP_CONTROLLERS_ACCESS_H
#define NESTCP_CONTROLLERS_ACCESS_H

/*
 * What the manager does to the API, in one table: every (group, resource, verb) it sends, and
 * why. config/rbac grants exactly this and nothing more; test/unit/controllers/test_access.c
 * holds the two to each other, and checks the table against what the code does (the caches,
 * the plans of a whole create / renew / upgrade / delete cycle, the kinds every package line
 * renders). A new request the manager makes is a new row here and a new verb in config/rbac.
 *
 * The executor refuses an action the table does not list (-EPERM, naming the table), so a
 * test of any reconciler fails where, in a cluster, the API server would answer 403.
 */

#include <stdbool.h>

#include "lib/ctrl/plan.h"

/* Where a right is used; the test checks each kind of use its own way. */
enum access_use {
    ACCESS_CACHE,     /* an informer lists and watches it (the runtime's caches) */
    ACCESS_PLAN,      /* reconcilers' plans send it (seen in the test's cycle) */
    ACCESS_EVENTS,    /* the event recorder (lib/kube/events.c) */
    ACCESS_ADMISSION, /* not sent: asked by admission for what the manager sends */
    ACCESS_LEADER,    /* leader election (lib/kube/leader.c): leader_election_role.yaml */
    ACCESS_METRICS,   /* reviews of /metrics scrapes (lib/ctrl/httpserver.c):
                         metrics_auth_role.yaml */
};

struct access_rule {
    const char *group;         /* "" for the core group */
    const char *resource;      /* "secrets", or with a subresource "nestedetcds/status" */
    const char *verbs;         /* space-separated: "create patch delete" */
    const char *resource_name; /* the only name it applies to, or NULL */
    enum access_use use;
    const char *why;
};

/* The table, ended by a row whose resource is NULL. */
extern const struct access_rule access_rules[];

/* The RBAC verb of a plan action: create, patch (merge and server-side apply), update,
 * delete. A server-side apply that creates its object needs create too (access_allows_action
 * asks for both). */
const char *access_action_verb(const struct plan_action *a);

/* Whether the table lets the controllers send verb to group/resource (resource with its
 * subresource, "nestedetcds/status"): the rows of config/rbac/role.yaml. */
bool access_allows(const char *group, const char *resource, const char *verb);

/* Whether the table lets a plan action through. */
bool access_allows_action(const struct plan_action *a);

#endif
