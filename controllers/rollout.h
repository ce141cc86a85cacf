#ifndef NESTCP_CONTROLLERS_ROLLOUT_H
#define NESTCP_CONTROLLERS_ROLLOUT_H

/*
 * The per-cluster rollout state machine: a pure function from what the three components
 * should run (desired), what each is allowed to run (its target, kept in the control plane's
 * status.rollout) and how far each StatefulSet has got, to the next targets.
 *
 * Rules (docs/architecture.md, "The rollout state machine"):
 *   - Order: etcd, then every API server, then controller managers. A component's target moves
 *     to its desired state only when every component before it has completed its rollout at
 *     its own desired state. Creation is the first wave, with two differences: while the
 *     control plane was never complete, the API servers' first target moves as soon as etcd
 *     answers at its target (not once every member is ready: kube-apiserver gives up on an
 *     etcd that does not answer within 20 s, so it still waits for one that answers), and the
 *     controller manager's first target moves together with the API servers'
 *     (kube-controller-manager waits for its API server by itself). No component being
 *     created holds back a change of an earlier one.
 *   - Versions, checked across all components before any target moves. A component's desired
 *     version is the one it is to run: its own spec.version (an override) or the control
 *     plane's. No component's version goes down from its target; none skips a minor; a
 *     controller manager is never newer than the API servers nor more than one minor older
 *     (render_version_skew_ok), both between the desired versions and between the API
 *     servers' desired version and the controller manager's target, which it keeps running
 *     while the API servers roll. A refused change moves no target and says why.
 *   - A target never moves while the desired state of that component is unknown (e.g. its
 *     certificates are not issued yet).
 *   - A component whose roll failed (held) stops the rollout while its desired state is the
 *     target that failed; a new desired state rolls again.
 */

#include <stdbool.h>
#include <stddef.h>

enum rollout_component {
    ROLLOUT_ETCD = 0,
    ROLLOUT_APISERVER = 1,
    ROLLOUT_CONTROLLER_MANAGER = 2,
    ROLLOUT__COUNT
};

/* A version and the hash of everything else a component is rendered from. */
struct rollout_target {
    const char *version; /* canonical ("1.20.2", "3.4.23"); NULL: none */
    const char *hash;    /* NULL: none */
};

struct rollout_component_state {
    struct rollout_target desired; /* NULL hash: not known yet */
    struct rollout_target target;  /* NULL hash: never set */
    /* The StatefulSet has completed its rollout at target.hash: observedGeneration current,
     * updatedReplicas = readyReplicas = replicas, currentRevision = updateRevision, and its pod
     * template carries target.hash. */
    bool complete;
    int replicas, ready_replicas, updated_replicas;
    /* The roll to target failed and is held back (status.rollout rolledBack): what failed.
     * Nothing moves until the desired state changes; NULL: not held. */
    const char *held;
    /* etcd only: a member of the cluster answers (the NestedEtcd's status records the cluster
     * ID etcd gave). Read only while the control plane was never complete. */
    bool answers;
};

struct rollout_input {
    struct rollout_component_state c[ROLLOUT__COUNT];
    bool initialized; /* the control plane was complete once (status.initialized) */
};

enum rollout_phase {
    ROLLOUT_PHASE_PROVISIONING, /* first wave still running */
    ROLLOUT_PHASE_READY,        /* every component complete at its desired state */
    ROLLOUT_PHASE_UPGRADING,    /* a later wave running */
    ROLLOUT_PHASE_REFUSED,      /* a change was refused; nothing moves until it is undone */
    ROLLOUT_PHASE_WAITING,      /* waiting for a desired state to become known */
    ROLLOUT_PHASE_QUEUED,       /* a roll waits for a slot (controllers/brake.h) */
    ROLLOUT_PHASE_STALLED,      /* a roll failed and is held back (controllers/rollhealth.h) */
};

struct rollout_output {
    struct rollout_target target[ROLLOUT__COUNT]; /* borrowed from the input */
    bool target_changed[ROLLOUT__COUNT];
    enum rollout_phase phase;
    bool initialized; /* the first wave has completed (sticky) */
    bool serving;     /* every component has all its replicas ready (whatever version) */
    /* For conditions and events: */
    const char *reason; /* CamelCase: "Provisioning", "RollingOut", "Ready",
                           "DowngradeRefused", "MinorSkipRefused", "VersionSkewRefused",
                           "WaitingForCertificates", "RolloutStalled" */
    char message[512];  /* e.g. "kube-apiserver 1/3 updated; controller-manager waiting" */
};

/* Decides the next step. Never fails. */
void rollout_step(const struct rollout_input *in, struct rollout_output *out);

/* "etcd", "kube-apiserver", "kube-controller-manager". */
const char *rollout_component_name(enum rollout_component c);

const char *rollout_phase_name(enum rollout_phase p);

#endif
