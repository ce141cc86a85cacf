#include "controllers/rollout.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "api/version.h"
#include "lib/render/cluster.h"

/* A component is indexed alike here and in lib/render (render_part). */
_Static_assert(ROLLOUT_ETCD == (int)RENDER_PART_ETCD &&
                   ROLLOUT_APISERVER == (int)RENDER_PART_APISERVER &&
                   ROLLOUT_CONTROLLER_MANAGER == (int)RENDER_PART_CONTROLLER_MANAGER &&
                   ROLLOUT__COUNT == (int)RENDER_PART__COUNT,
               "rollout_component and render_part differ");

const char *rollout_component_name(enum rollout_component c)
{
    return c < ROLLOUT__COUNT ? render_part_component((enum render_part)c) : "unknown";
}

const char *rollout_phase_name(enum rollout_phase p)
{
    switch (p) {
    case ROLLOUT_PHASE_PROVISIONING:
        return "Provisioning";
    case ROLLOUT_PHASE_READY:
        return "Ready";
    case ROLLOUT_PHASE_UPGRADING:
        return "Upgrading";
    case ROLLOUT_PHASE_REFUSED:
        return "Refused";
    case ROLLOUT_PHASE_WAITING:
        return "Waiting";
    case ROLLOUT_PHASE_QUEUED:
        return "Queued";
    case ROLLOUT_PHASE_STALLED:
        return "Stalled";
    }
    return "Unknown";
}

static bool str_eq(const char *a, const char *b)
{
    if (!a || !b)
        return a == b;
    return strcmp(a, b) == 0;
}

static bool version_eq(const char *a, const char *b)
{
    if (!a || !b)
        return a == b;
    return api_version_equal(a, b);
}

/* The component's target is its desired state. */
static bool at_desired(const struct rollout_component_state *s)
{
    return s->desired.hash && str_eq(s->desired.hash, s->target.hash) &&
           version_eq(s->desired.version, s->target.version);
}

/* Checks one component's version change from its target to its desired state. Returns the
 * refusal reason, or NULL when allowed. */
static const char *check_step(enum rollout_component i, const struct rollout_component_state *s,
                              char *msg, size_t msgsz)
{
    struct api_version from, to;
    const char *name = rollout_component_name(i);

    if (!s->desired.hash || !s->target.version || !s->desired.version)
        return NULL;
    if (version_eq(s->target.version, s->desired.version))
        return NULL;
    if (api_version_parse(s->target.version, &from) < 0 ||
        api_version_parse(s->desired.version, &to) < 0)
        return NULL; /* unparsable versions are refused by validation, not here */
    if (api_version_cmp(&to, &from) < 0) {
        snprintf(msg, msgsz, "%s: downgrade from %s to %s is not supported", name,
                 s->target.version, s->desired.version);
        return "DowngradeRefused";
    }
    if (to.major != from.major || to.minor > from.minor + 1) {
        snprintf(msg, msgsz,
                 "%s: %s to %s skips a minor version; upgrade one minor version at a time", name,
                 s->target.version, s->desired.version);
        return "MinorSkipRefused";
    }
    return NULL;
}

/* Appends one "; "-separated part to msg. */
static void append(char *msg, size_t msgsz, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void append(char *msg, size_t msgsz, const char *fmt, ...)
{
    size_t n = strlen(msg);
    va_list ap;

    if (n + 3 >= msgsz)
        return;
    if (n) {
        memcpy(msg + n, "; ", 3);
        n += 2;
    }
    va_start(ap, fmt);
    vsnprintf(msg + n, msgsz - n, fmt, ap);
    va_end(ap);
}

/* The version skew policy (render_version_skew_ok) between the versions the API servers and
 * the controller manager are to run, each possibly an override of the control plane's. While
 * the API servers roll to a new version, the controller manager still runs its target (its
 * turn comes after theirs), so that pair must keep the policy as well. */
static const char *check_skew(const struct rollout_input *in, char *msg, size_t msgsz)
{
    const struct rollout_component_state *as = &in->c[ROLLOUT_APISERVER];
    const struct rollout_component_state *cm = &in->c[ROLLOUT_CONTROLLER_MANAGER];

    if (!render_version_skew_ok(as->desired.version, cm->desired.version, msg, msgsz))
        return "VersionSkewRefused";
    if (as->target.version && !version_eq(as->desired.version, as->target.version) &&
        cm->target.version &&
        !render_version_skew_ok(as->desired.version, cm->target.version, msg, msgsz)) {
        append(msg, msgsz,
               "kube-controller-manager runs %s until kube-apiserver has rolled out; upgrade "
               "kube-controller-manager first",
               cm->target.version);
        return "VersionSkewRefused";
    }
    return NULL;
}

static bool serving(const struct rollout_input *in)
{
    const struct rollout_component_state *e = &in->c[ROLLOUT_ETCD];

    if (e->replicas <= 0 || e->ready_replicas < e->replicas / 2 + 1)
        return false;
    for (int i = ROLLOUT_APISERVER; i < ROLLOUT__COUNT; i++)
        if (in->c[i].replicas <= 0 || in->c[i].ready_replicas < 1)
            return false;
    return true;
}

/* Component i is created together with the one before it: the control plane was never
 * complete, and i either never had a target or its target is its desired state (it is being
 * created already). The controller manager is created with the API servers:
 * kube-controller-manager started before its API server answers retries until it does. The API
 * servers are created once etcd, at its desired state, answers: kube-apiserver started before
 * etcd answers exits after 20 s (its blocking etcd dial), but an etcd that answers will go on
 * answering while its other members join, and the API servers' flags name every member from
 * the start. A change of a component that has another target keeps the waves, and so does
 * every roll once the control plane was complete. */
static bool created_alongside(const struct rollout_input *in, int i)
{
    if (in->initialized || i >= ROLLOUT__COUNT || (in->c[i].target.hash && !at_desired(&in->c[i])))
        return false;
    if (i == ROLLOUT_CONTROLLER_MANAGER)
        return true;
    return i == ROLLOUT_APISERVER && in->c[ROLLOUT_ETCD].answers &&
           at_desired(&in->c[ROLLOUT_ETCD]);
}

void rollout_step(const struct rollout_input *in, struct rollout_output *out)
{
    int i, active = -1, last = -1;
    bool tail = true; /* list the components after the last one looked at as waiting */
    const char *refused = NULL;

    memset(out, 0, sizeof(*out));
    for (i = 0; i < ROLLOUT__COUNT; i++)
        out->target[i] = in->c[i].target;
    out->initialized = in->initialized;
    out->serving = serving(in);

    /* Version rules across every component, before anything moves. */
    for (i = 0; i < ROLLOUT__COUNT && !refused; i++)
        refused =
            check_step((enum rollout_component)i, &in->c[i], out->message, sizeof(out->message));
    if (!refused)
        refused = check_skew(in, out->message, sizeof(out->message));
    if (refused) {
        out->phase = ROLLOUT_PHASE_REFUSED;
        out->reason = refused;
        return;
    }

    for (i = 0; i < ROLLOUT__COUNT; i++) {
        const struct rollout_component_state *s = &in->c[i];

        last = i;
        if (!s->desired.hash) {
            /* While earlier components are being created this one waits for its
             * certificates as part of the creation. */
            if (active < 0) {
                out->phase = ROLLOUT_PHASE_WAITING;
                out->reason = "WaitingForInputs";
                active = i;
            }
            append(out->message, sizeof(out->message), "%s waiting for its certificates",
                   rollout_component_name((enum rollout_component)i));
            break;
        }
        if (s->held && at_desired(s)) {
            active = i;
            out->phase = ROLLOUT_PHASE_STALLED;
            out->reason = "RolloutStalled";
            append(out->message, sizeof(out->message),
                   "%s: the roll to config %.12s failed and is held back (%s): its pods go back "
                   "to the last good revision; change the spec to roll again",
                   rollout_component_name((enum rollout_component)i), s->target.hash, s->held);
            break;
        }
        if (!at_desired(s)) {
            int busy = -1;
            /* Only one component rolls at a time: a change to an earlier component waits for
             * a later one that is still rolling out. A component being created (the control
             * plane was never complete) does not hold the change of one before it: it may
             * wait for exactly that change to become ready. */
            for (int j = i + 1; j < ROLLOUT__COUNT && busy < 0; j++)
                if (in->c[j].target.hash && !in->c[j].complete && in->initialized)
                    busy = j;
            if (active < 0)
                active = i;
            if (busy >= 0) {
                const struct rollout_component_state *b = &in->c[busy];
                append(out->message, sizeof(out->message), "%s %d/%d updated",
                       rollout_component_name((enum rollout_component)busy), b->updated_replicas,
                       b->replicas);
                append(out->message, sizeof(out->message), "%s waiting for %s to finish",
                       rollout_component_name((enum rollout_component)i),
                       rollout_component_name((enum rollout_component)busy));
                tail = false;
                break;
            }
            out->target[i] = s->desired;
            out->target_changed[i] = true;
            append(out->message, sizeof(out->message), "%s 0/%d updated",
                   rollout_component_name((enum rollout_component)i), s->replicas);
            if (created_alongside(in, i + 1))
                continue;
            break;
        }
        if (!s->complete) {
            if (active < 0)
                active = i;
            append(out->message, sizeof(out->message), "%s %d/%d updated",
                   rollout_component_name((enum rollout_component)i), s->updated_replicas,
                   s->replicas);
            if (created_alongside(in, i + 1))
                continue;
            break;
        }
    }
    if (active < 0) {
        out->phase = ROLLOUT_PHASE_READY;
        out->reason = "Ready";
        out->initialized = true;
        snprintf(out->message, sizeof(out->message), "every component runs its desired state");
        return;
    }
    for (i = last + 1; tail && i < ROLLOUT__COUNT; i++)
        append(out->message, sizeof(out->message), "%s waiting",
               rollout_component_name((enum rollout_component)i));
    if (out->phase != ROLLOUT_PHASE_WAITING && out->phase != ROLLOUT_PHASE_STALLED) {
        out->phase = in->initialized ? ROLLOUT_PHASE_UPGRADING : ROLLOUT_PHASE_PROVISIONING;
        out->reason = in->initialized ? "RollingOut" : "Provisioning";
    }
}
