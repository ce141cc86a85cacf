#include "controllers/brake.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

int brake_limit_parse(const char *s, struct brake_limit *ret_limit)
{
    size_t n = s ? strlen(s) : 0;
    bool percent = n > 0 && s[n - 1] == '%';
    long v = 0;

    if (percent)
        n--;
    if (n == 0 || n > 6)
        return -EINVAL;
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return -EINVAL;
        v = v * 10 + (s[i] - '0');
    }
    if (v < 1 || (percent && v > 100))
        return -EINVAL;
    *ret_limit = (struct brake_limit){(int)v, percent};
    return 0;
}

int brake_limit_resolve(const struct brake_limit *limit, size_t total)
{
    size_t n = limit->percent ? total * (size_t)limit->value / 100 : (size_t)limit->value;

    return n < 1 ? 1 : n > 1000000 ? 1000000 : (int)n;
}

/* Whether peer p waits ahead of a request since `since` by ns/name. */
static bool ahead_of(const struct brake_peer *p, double since, const char *ns, const char *name)
{
    int c;

    if (p->queued_since != since)
        return p->queued_since < since;
    c = strcmp(p->ns ? p->ns : "", ns ? ns : "");
    if (c == 0)
        c = strcmp(p->name ? p->name : "", name ? name : "");
    return c < 0;
}

/* The message of a roll that waits, naming the first rolling control planes. */
static void waiting_message(const struct brake_input *in, struct brake_output *out)
{
    char names[256] = "";
    size_t n = 0;
    int shown = 0;

    for (size_t i = 0; i < in->n_peers && shown < BRAKE_NAMES_SHOWN; i++) {
        const struct brake_peer *p = &in->peers[i];
        if (!p->rolling || n >= sizeof(names))
            continue;
        n += (size_t)snprintf(names + n, sizeof(names) - n, "%s%s/%s", shown ? ", " : "",
                              p->ns ? p->ns : "", p->name ? p->name : "");
        shown++;
    }
    snprintf(out->message, sizeof(out->message),
             "waiting for a rollout slot: %d control plane%s rolling (%s%s), %d allowed at once "
             "(--max-concurrent-rollouts); %d waiting ahead of this one",
             out->rolling, out->rolling == 1 ? "" : "s", names, out->rolling > shown ? ", ..." : "",
             in->limit, out->ahead);
}

void brake_decide(const struct brake_input *in, struct brake_output *out)
{
    memset(out, 0, sizeof(*out));
    for (size_t i = 0; i < in->n_peers; i++) {
        const struct brake_peer *p = &in->peers[i];
        if (p->rolling)
            out->rolling++;
        else if (p->queued && ahead_of(p, in->queued_since, in->ns, in->name))
            out->ahead++;
    }
    if (in->rolling) {
        out->go = true;
        snprintf(out->message, sizeof(out->message), "the roll in progress goes on");
        return;
    }
    if (in->urgent) {
        out->go = true;
        snprintf(out->message, sizeof(out->message),
                 "renews a certificate that expires within 7 days: never waits (%d rolling, "
                 "%d allowed at once)",
                 out->rolling, in->limit);
        return;
    }
    out->go = out->rolling + out->ahead < in->limit;
    if (out->go)
        snprintf(out->message, sizeof(out->message), "%d of %d allowed at once rolling",
                 out->rolling, in->limit);
    else
        waiting_message(in, out);
}
