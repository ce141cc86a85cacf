#include "controllers/sakeyrotation.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "controllers/rotation.h"
#include "lib/util/strutil.h"

/* A request not yet taken up. */
static bool pending(const struct sakey_input *in)
{
    return rotation_pending(in->requested, in->taken);
}

bool sakey_running(const struct sakey_input *in)
{
    return in->has_next || in->has_previous || rotation_phase_running(in->phase);
}

static void waiting(struct sakey_output *out, const char *phase, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* A rotation waits: the condition says for what. */
static void waiting(struct sakey_output *out, const char *phase, const char *fmt, ...)
{
    va_list ap;

    out->rotating = true;
    out->reason = phase;
    out->phase = phase;
    va_start(ap, fmt);
    vsnprintf(out->message, sizeof(out->message), fmt, ap);
    va_end(ap);
}

/* How the messages name this rotation: "rotation \"r1\"", "... of the service-account key"
 * beside another rotation. */
static const struct rotation_subject who = {NULL, "the service-account key"};

/* What the shared gate reads of this request. */
static struct rotation_request request_of(const struct sakey_input *in)
{
    return (struct rotation_request){in->requested, in->taken, in->upgrading, in->busy, in->rolled};
}

/* A request made while a rotation runs waits for it; the condition says so. */
static void refuse_second(const struct sakey_input *in, struct sakey_output *out)
{
    struct rotation_request rq = request_of(in);
    struct rotation_hold hold;

    if (rotation_refuse_second(&who, &rq, out->message, &hold)) {
        out->reason = hold.reason;
        out->refusal = hold.refusal;
    }
}

/* The condition once no rotation of the key runs: the request last taken up, either rotated
 * to the end or taken up while the control plane was being set up (the key was new). */
static void done(const char *request, bool rotated, struct sakey_output *out)
{
    out->reason = SAKEY_PHASE_COMPLETE;
    if (rotated)
        str_printf(out->message, sizeof(out->message),
                   "rotation \"%.63s\" is complete: tokens signed by the old key are refused",
                   request ? request : "");
    else
        str_printf(out->message, sizeof(out->message),
                   "rotation \"%.63s\" was taken up while the control plane was being set up: "
                   "its key was new, so nothing was rotated",
                   request ? request : "");
}

void sakey_rotation_step(const struct sakey_input *in, struct sakey_output *out)
{
    const struct rotation_request rq = request_of(in);
    struct rotation_hold hold;
    char when[32], since[32];

    memset(out, 0, sizeof(*out));
    if (in->signing_since)
        out->drop_after = in->signing_since + in->overlap;

    /* Rule 1: nestcp never writes a <c>-sa it did not make, so it rotates none. */
    if (!in->owned && (pending(in) || in->has_next || in->has_previous)) {
        out->refusal = out->reason = "ServiceAccountKeySupplied";
        str_printf(
            out->message, sizeof(out->message),
            "the service-account key Secret was supplied, not made by nestcp: nestcp does not "
            "rotate it (replace it yourself, docs/certificates.md)");
        return;
    }

    /* Rule 2, phase 1: the new key is trusted once every API server has rolled to verify with
     * both; then it signs. */
    if (in->has_next) {
        if (in->rolled) {
            out->action = SAKEY_SWITCH;
            out->phase = SAKEY_PHASE_SIGNING;
            out->rotating = true;
            out->reason = SAKEY_PHASE_SIGNING;
            str_printf(out->message, sizeof(out->message),
                       "phase 2 of 3: the API servers, then the controller manager, roll to sign "
                       "service-account tokens with the new key");
            out->event_reason = "ServiceAccountKeyTrusted";
            str_printf(
                out->event_message, sizeof(out->event_message),
                "rotation \"%.63s\", phase 1 of 3 done: every API server verifies tokens with the "
                "old and the new key; the new key now signs (phase 2)",
                in->taken ? in->taken : "");
        } else {
            waiting(out, SAKEY_PHASE_TRUSTING,
                    "phase 1 of 3: waiting for the API servers to roll to verify "
                    "service-account tokens with the old and the new key (still signing with "
                    "the old one)");
        }
        refuse_second(in, out);
        return;
    }

    /* Rule 3, phase 2 and the overlap: the old public key is kept until the overlap has
     * passed since every component signs with the new key. */
    if (in->has_previous) {
        if (!in->signing_since) {
            if (in->rolled) {
                out->action = SAKEY_SIGNED;
                out->drop_after = in->now + in->overlap;
                time_format_rfc3339((double)out->drop_after, when);
                waiting(out, SAKEY_PHASE_OVERLAP,
                        "every component signs with the new key; tokens signed by the old key "
                        "are accepted until %s, then it is dropped (phase 3)",
                        when);
                out->event_reason = "ServiceAccountKeySigning";
                str_printf(out->event_message, sizeof(out->event_message),
                           "rotation \"%.63s\", phase 2 of 3 done: every API server and controller "
                           "manager signs with the new key; the old key is dropped after %s",
                           in->taken ? in->taken : "", when);
                out->requeue_after = (double)in->overlap;
            } else {
                waiting(out, SAKEY_PHASE_SIGNING,
                        "phase 2 of 3: waiting for the API servers, then the controller "
                        "manager, to roll to sign service-account tokens with the new key");
            }
        } else if (in->now >= out->drop_after) {
            out->action = SAKEY_DROP;
            waiting(out, SAKEY_PHASE_DROPPING,
                    "phase 3 of 3: waiting for the API servers to roll without the old key");
            time_format_rfc3339((double)in->signing_since, since);
            out->event_reason = "ServiceAccountKeyDropped";
            str_printf(out->event_message, sizeof(out->event_message),
                       "rotation \"%.63s\": the old public key was removed, %lld s after every "
                       "component signed with the new key (%s); the API servers roll without it",
                       in->taken ? in->taken : "", (long long)in->overlap, since);
        } else {
            time_format_rfc3339((double)out->drop_after, when);
            waiting(out, SAKEY_PHASE_OVERLAP,
                    "every component signs with the new key; tokens signed by the old key "
                    "are accepted until %s, then it is dropped (phase 3)",
                    when);
            out->requeue_after = (double)(out->drop_after - in->now);
        }
        refuse_second(in, out);
        return;
    }

    /* Rule 4, phase 3: complete once the API servers run without the old key. A phase other
     * than Complete without rotation keys is this one too: the drop was written and the
     * status write after it was not. */
    if (rotation_phase_running(in->phase)) {
        if (in->rolled) {
            out->action = SAKEY_COMPLETE;
            out->phase = SAKEY_PHASE_COMPLETE;
            done(in->taken, true, out);
            out->event_reason = "ServiceAccountKeyRotated";
            str_printf(
                out->event_message, sizeof(out->event_message),
                "rotation \"%.63s\", phase 3 of 3 done: no API server accepts tokens signed by "
                "the old key",
                in->taken ? in->taken : "");
        } else {
            waiting(out, SAKEY_PHASE_DROPPING,
                    "phase 3 of 3: waiting for the API servers to roll without the old key");
        }
        refuse_second(in, out);
        return;
    }

    /* Rule 5: no rotation runs. */
    if (!pending(in)) {
        /* A request rotated to the end recorded Complete; one taken up, no phase. */
        if (in->taken)
            done(in->taken, in->phase && strcmp(in->phase, SAKEY_PHASE_COMPLETE) == 0, out);
        return;
    }
    /* Rule 6: a control plane not yet set up has a new key: nothing to rotate. */
    if (!in->initialized && !in->taken) {
        out->action = SAKEY_TAKE;
        done(in->requested, false, out);
        return;
    }
    /* Rule 7: one change at a time. */
    if (rotation_gate(&who, &rq, out->message, sizeof(out->message), &hold)) {
        out->reason = hold.reason;
        out->refusal = hold.refusal;
        return;
    }
    /* Rule 8: start. */
    out->action = SAKEY_START;
    waiting(out, SAKEY_PHASE_TRUSTING,
            "phase 1 of 3: waiting for the API servers to roll to verify service-account "
            "tokens with the old and the new key (still signing with the old one)");
    out->event_reason = "ServiceAccountKeyRotationStarted";
    str_printf(
        out->event_message, sizeof(out->event_message),
        "rotation \"%.63s\" started: a new service-account key was made; phase 1 of 3: the API "
        "servers roll to verify tokens with the old and the new key",
        in->requested);
}
