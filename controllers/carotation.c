#include "controllers/carotation.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "controllers/rotation.h"
#include "lib/util/strutil.h"

/* A request not yet taken up. */
static bool pending(const struct carot_input *in)
{
    return rotation_pending(in->requested, in->taken);
}

bool carot_running(const struct carot_input *in)
{
    return in->has_next || in->has_previous || rotation_phase_running(in->phase);
}

static void say(char *buf, size_t size, const char *fmt, va_list ap)
{
    vsnprintf(buf, size, fmt, ap);
}

static void waiting(struct carot_output *out, const char *phase, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* A rotation waits for a roll: the condition says for what. */
static void waiting(struct carot_output *out, const char *phase, const char *fmt, ...)
{
    va_list ap;

    out->rotating = true;
    out->reason = out->phase = phase;
    va_start(ap, fmt);
    say(out->message, sizeof(out->message), fmt, ap);
    va_end(ap);
}

static void event(struct carot_output *out, const struct carot_input *in, const char *name,
                  const char *what, const char *fmt, ...) __attribute__((format(printf, 5, 6)));

/* The Event of an action: reason <prefix><what>, the message after the rotation's name. */
static void event(struct carot_output *out, const struct carot_input *in, const char *name,
                  const char *what, const char *fmt, ...)
{
    char rest[400];
    va_list ap;

    snprintf(out->event_reason, sizeof(out->event_reason), "%s%s", in->kind->event_prefix, what);
    va_start(ap, fmt);
    say(rest, sizeof(rest), fmt, ap);
    va_end(ap);
    str_printf(out->event_message, sizeof(out->event_message), "%s rotation \"%.63s\": %s",
               in->kind->what, name ? name : "", rest);
}

/* What the shared gate reads of this request. */
static struct rotation_request request_of(const struct carot_input *in)
{
    return (struct rotation_request){in->requested, in->taken, in->upgrading, in->busy, in->rolled};
}

/* A request made while this rotation runs waits for it; the condition says so. */
static void refuse_second(const struct carot_input *in, struct carot_output *out)
{
    const struct rotation_subject who = {in->kind->what, NULL};
    struct rotation_request rq = request_of(in);
    struct rotation_hold hold;

    if (rotation_refuse_second(&who, &rq, out->message, &hold)) {
        out->reason = hold.reason;
        out->refusal = hold.refusal;
    }
}

/* The condition once no rotation of this CA runs: the request last taken up, either rotated
 * to the end or taken up while the control plane was being set up (the CA was new). */
static void done(const struct carot_input *in, const char *request, bool rotated,
                 struct carot_output *out)
{
    const char *w = in->kind->what;

    out->reason = CAROT_PHASE_COMPLETE;
    if (rotated)
        str_printf(out->message, sizeof(out->message),
                   "%s rotation \"%.63s\" is complete: the old CA is trusted nowhere", w,
                   request ? request : "");
    else
        str_printf(out->message, sizeof(out->message),
                   "%s rotation \"%.63s\" was taken up while the control plane was being set "
                   "up: the CA was new, so nothing was rotated",
                   w, request ? request : "");
}

/* Rules 2 to 5: a running rotation, one phase per state of the Secret. */
static void step_running(const struct carot_input *in, struct carot_output *out)
{
    const char *w = in->kind->what;

    if (in->has_next) {
        if (!in->rolled) {
            waiting(out, CAROT_PHASE_TRUSTING,
                    "phase 1 of 4: waiting for the components to roll to trust the old and the "
                    "new %s (every certificate still issued from the old one)",
                    w);
            return;
        }
        out->action = CAROT_SWITCH;
        waiting(out, CAROT_PHASE_ISSUING,
                "phase 2 of 4: waiting for the components to roll to client certificates and "
                "kubeconfigs issued from the new %s (serving certificates still from the old "
                "one)",
                w);
        event(out, in, in->taken, "Trusted",
              "phase 1 of 4 done: every component trusts the old and the new CA; client "
              "certificates are issued from the new one (phase 2)");
        return;
    }
    if (in->has_previous && in->has_previous_key) {
        if (!in->rolled) {
            waiting(out, CAROT_PHASE_ISSUING,
                    "phase 2 of 4: waiting for the components to roll to client certificates "
                    "and kubeconfigs issued from the new %s (serving certificates still from "
                    "the old one)",
                    w);
            return;
        }
        out->action = CAROT_SERVE;
        waiting(out, CAROT_PHASE_SERVING,
                "phase 3 of 4: waiting for the components to roll to serving certificates "
                "issued from the new %s (clients that trust only the old one stop verifying "
                "them)",
                w);
        event(out, in, in->taken, "ClientsReissued",
              "phase 2 of 4 done: every client certificate and kubeconfig is issued from the new "
              "CA; serving certificates are issued from it too (phase 3)");
        return;
    }
    if (in->has_previous) {
        if (!in->rolled) {
            waiting(out, CAROT_PHASE_SERVING,
                    "phase 3 of 4: waiting for the components to roll to serving certificates "
                    "issued from the new %s (clients that trust only the old one stop verifying "
                    "them)",
                    w);
            return;
        }
        out->action = CAROT_DROP;
        waiting(out, CAROT_PHASE_DROPPING,
                "phase 4 of 4: waiting for the components to roll to trust only the new %s", w);
        event(out, in, in->taken, "ServingReissued",
              "phase 3 of 4 done: every certificate is issued from the new CA; the old one is "
              "no longer trusted once the components roll (phase 4)");
        return;
    }
    if (!in->rolled) {
        waiting(out, CAROT_PHASE_DROPPING,
                "phase 4 of 4: waiting for the components to roll to trust only the new %s", w);
        return;
    }
    out->action = CAROT_COMPLETE;
    out->phase = CAROT_PHASE_COMPLETE;
    done(in, in->taken, true, out);
    event(out, in, in->taken, "Rotated", "phase 4 of 4 done: no component trusts the old CA");
}

/* A supplied CA's owner moves its Secret from phase to phase (docs/certificates.md): the
 * condition says where it is and what the owner does next. */
static void step_supplied(const struct carot_input *in, struct carot_output *out)
{
    const char *phase, *now, *next;
    int n;

    if (in->has_next) {
        n = 1, phase = CAROT_PHASE_TRUSTING;
        now = "the components roll to trust the old and the new CA";
        next = "move tls.* to previous.* and next.* to tls.*";
    } else if (in->has_previous_key) {
        n = 2, phase = CAROT_PHASE_ISSUING;
        now = "the components roll to client certificates from the new CA";
        next = "remove previous.key";
    } else {
        n = 3, phase = CAROT_PHASE_SERVING;
        now = "the components roll to serving certificates from the new CA";
        next = "remove previous.crt";
    }
    out->rotating = true;
    out->reason = out->phase = phase;
    str_printf(out->message, sizeof(out->message),
               "phase %d of 4 of a rotation of the supplied %s, which its owner moves on: %s; %s "
               "%s",
               n, in->kind->what, in->rolled ? "every component runs this phase" : now,
               in->rolled ? "the owner may now" : "once they have, the owner may", next);
}

void carot_step(const struct carot_input *in, struct carot_output *out)
{
    const char *w = in->kind->what;
    const struct rotation_subject who = {w, NULL};
    const struct rotation_request rq = request_of(in);
    struct rotation_hold hold;

    memset(out, 0, sizeof(*out));

    /* Rule 1: nestcp never writes a CA Secret it did not make, so it rotates none; the
     * Secret's owner may, and each phase is then rendered and rolled from what it holds. */
    if (!in->owned && (in->has_next || in->has_previous)) {
        step_supplied(in, out);
        return;
    }
    if (!in->owned && pending(in) && !carot_running(in)) {
        out->refusal = out->reason = "CertificateAuthoritySupplied";
        str_printf(out->message, sizeof(out->message),
                   "the %s Secret was supplied, not made by nestcp: nestcp does not rotate it "
                   "(docs/certificates.md says how to rotate a supplied CA)",
                   w);
        return;
    }
    /* Rules 2 to 5: a rotation runs. */
    if (carot_running(in)) {
        step_running(in, out);
        refuse_second(in, out);
        return;
    }
    /* Rule 6: no rotation runs. */
    if (!pending(in)) {
        /* A request rotated to the end recorded Complete; one taken up, no phase. */
        if (in->taken)
            done(in, in->taken, in->phase && strcmp(in->phase, CAROT_PHASE_COMPLETE) == 0, out);
        return;
    }
    /* Rule 7: a control plane not yet set up has a new CA: nothing to rotate. */
    if (!in->initialized && !in->taken) {
        out->action = CAROT_TAKE;
        done(in, in->requested, false, out);
        return;
    }
    /* Rule 8: one change at a time. */
    if (rotation_gate(&who, &rq, out->message, sizeof(out->message), &hold)) {
        out->reason = hold.reason;
        out->refusal = hold.refusal;
        return;
    }
    /* Rule 9: start. */
    out->action = CAROT_START;
    waiting(out, CAROT_PHASE_TRUSTING,
            "phase 1 of 4: waiting for the components to roll to trust the old and the new %s "
            "(every certificate still issued from the old one)",
            w);
    event(out, in, in->requested, "RotationStarted",
          "a new CA was made; phase 1 of 4: the components roll to trust the old and the new "
          "CA");
}
