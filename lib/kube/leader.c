#include "lib/kube/leader.h"

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <ev.h>

#include "lib/kube/client.h"
#include "lib/util/strutil.h"

enum leader_state {
    LEADER_IDLE,      /* created, not started */
    LEADER_CANDIDATE, /* polling the Lease */
    LEADER_LEADING,
    LEADER_STOPPING, /* kube_leader_stop() called; finishing the request in flight, releasing */
    LEADER_FINISHED, /* lost or stopped; no more requests */
};

enum leader_op {
    OP_NONE,
    OP_GET,
    OP_WRITE, /* CREATE or UPDATE that takes or renews the Lease */
    OP_RELEASE,
};

struct kube_leader {
    struct kube_client *client;
    struct ev_loop *loop;
    char *namespace_;
    char *name;
    char *identity;
    double lease_duration;
    double renew_deadline;
    double retry_period;
    void (*on_started_leading)(void *userdata);
    void (*on_stopped_leading)(void *userdata, int code);
    void (*on_new_leader)(void *userdata, const char *identity);
    void *userdata;

    enum leader_state state;
    enum leader_op op;      /* the request in flight */
    bool freed;             /* kube_leader_free() ran while a request was in flight */
    bool held;              /* our last write made us the holder and nothing since says otherwise */
    double attempt_started; /* time_mono() when the current attempt's GET was sent */
    double last_renew;      /* attempt_started of the last successful write */
    ev_timer tick;          /* next attempt, or the deferred stop completion */
    ev_timer deadline;      /* while leading: renew_deadline after last_renew */

    /* What this candidate last saw, and when it first saw it (monotonic, local). */
    char *observed_spec;
    char *observed_holder;
    double observed_time;
    cJSON *lease; /* the last Lease read or written, for its resourceVersion */

    void (*stop_done)(void *userdata, int code);
    void *stop_userdata;
    int stop_code;
    uint64_t rng;
};

static void on_tick(struct ev_loop *loop, ev_timer *w, int revents);
static void on_deadline(struct ev_loop *loop, ev_timer *w, int revents);
static void on_response(void *userdata, const struct kube_result *res);

static uint64_t random_u64(void)
{
    uint64_t v = 0;

    if (getrandom(&v, sizeof(v), GRND_NONBLOCK) != sizeof(v))
        v = (uint64_t)getpid() ^ (uint64_t)(time_mono() * 1e9);
    return v | 1;
}

/* xorshift64*: only for jitter. */
static double rand_unit(struct kube_leader *l)
{
    l->rng ^= l->rng >> 12;
    l->rng ^= l->rng << 25;
    l->rng ^= l->rng >> 27;
    return (double)((l->rng * 2685821657736338717ull) >> 11) / 9007199254740992.0;
}

int kube_leader_default_identity(char *out, size_t size)
{
    char host[256];
    int n;

    if (gethostname(host, sizeof(host)) < 0 || !host[0])
        snprintf(host, sizeof(host), "localhost");
    host[sizeof(host) - 1] = '\0';
    n = snprintf(out, size, "%s_%ld_%08x", host, (long)getpid(),
                 (unsigned)(random_u64() & 0xffffffffu));
    return n < 0 || (size_t)n >= size ? -ENOBUFS : 0;
}

/* Lease times are MicroTime: RFC 3339 with exactly six fractional digits. */
#define MICRO_TIME_MAX 96 /* room for any struct tm gcc can imagine; real ones take 27 */

static void format_micro_time(double t, char out[static MICRO_TIME_MAX])
{
    time_t sec = (time_t)floor(t);
    double frac = (t - (double)sec) * 1e6;
    unsigned usec = frac < 0 ? 0 : frac > 999999 ? 999999 : (unsigned)frac;
    struct tm tm;

    gmtime_r(&sec, &tm);
    snprintf(out, MICRO_TIME_MAX, "%04d-%02d-%02dT%02d:%02d:%02d.%06uZ", tm.tm_year + 1900,
             tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, usec);
}

int kube_leader_new(struct kube_client *c, const struct kube_leader_opts *opts,
                    struct kube_leader **ret_leader, struct err *e)
{
    struct kube_leader *l;
    char identity[320];
    double lease = opts->lease_duration ? opts->lease_duration : 15;
    double renew = opts->renew_deadline ? opts->renew_deadline : 10;
    double retry = opts->retry_period ? opts->retry_period : 2;

    if (!opts->namespace_ || !*opts->namespace_ || !opts->name || !*opts->name)
        return err_set(e, -EINVAL, "leader election: the Lease namespace and name are required");
    if (lease < 1 || lease != floor(lease) || lease > INT32_MAX)
        return err_set(e, -EINVAL,
                       "leader election: lease duration %g is not a whole number of "
                       "seconds >= 1",
                       lease);
    /* client-go's rules: the lease outlasts the renew deadline, which outlasts a jittered retry. */
    if (renew <= 0 || retry <= 0 || lease <= renew || renew <= 1.2 * retry)
        return err_set(e, -EINVAL,
                       "leader election: need lease duration (%g) > renew deadline (%g) > "
                       "1.2 * retry period (%g) > 0",
                       lease, renew, retry);
    if (!opts->identity && kube_leader_default_identity(identity, sizeof(identity)) < 0)
        return err_set(e, -EINVAL, "leader election: host name too long for an identity");
    if (opts->identity && !*opts->identity)
        return err_set(e, -EINVAL, "leader election: the identity must not be empty");

    l = calloc(1, sizeof(*l));
    if (!l)
        return -ENOMEM;
    l->client = c;
    l->loop = kube_client_loop(c);
    l->namespace_ = strdup(opts->namespace_);
    l->name = strdup(opts->name);
    l->identity = strdup(opts->identity ? opts->identity : identity);
    if (!l->namespace_ || !l->name || !l->identity) {
        kube_leader_free(l);
        return -ENOMEM;
    }
    l->lease_duration = lease;
    l->renew_deadline = renew;
    l->retry_period = retry;
    l->on_started_leading = opts->on_started_leading;
    l->on_stopped_leading = opts->on_stopped_leading;
    l->on_new_leader = opts->on_new_leader;
    l->userdata = opts->userdata;
    l->rng = random_u64();
    ev_timer_init(&l->tick, on_tick, 0, 0);
    l->tick.data = l;
    ev_timer_init(&l->deadline, on_deadline, 0, 0);
    l->deadline.data = l;
    *ret_leader = l;
    return 0;
}

static void destroy(struct kube_leader *l)
{
    ev_timer_stop(l->loop, &l->tick);
    ev_timer_stop(l->loop, &l->deadline);
    cJSON_Delete(l->lease);
    free(l->observed_spec);
    free(l->observed_holder);
    free(l->namespace_);
    free(l->name);
    free(l->identity);
    free(l);
}

void kube_leader_free(struct kube_leader *l)
{
    if (!l)
        return;
    if (l->op != OP_NONE) {
        /* The client has no per-request cancel: let the response arrive, then free. */
        ev_timer_stop(l->loop, &l->tick);
        ev_timer_stop(l->loop, &l->deadline);
        l->freed = true;
        return;
    }
    destroy(l);
}

bool kube_leader_is_leader(const struct kube_leader *l)
{
    return l->state == LEADER_LEADING;
}

const char *kube_leader_identity(const struct kube_leader *l)
{
    return l->identity;
}

static void schedule(struct kube_leader *l, double delay)
{
    ev_timer_stop(l->loop, &l->tick);
    ev_timer_set(&l->tick, delay > 0 ? delay : 0, 0);
    ev_timer_start(l->loop, &l->tick);
}

static int send(struct kube_leader *l, enum leader_op op, enum kube_verb verb, const cJSON *body)
{
    struct kube_request req = {
        .verb = verb,
        .resource = &KUBE_LEASES,
        .namespace_ = l->namespace_,
        .name = verb == KUBE_CREATE ? NULL : l->name,
        .body = body,
        /* Half the renew deadline, as controller-runtime sets it, leaves time for a retry. */
        .timeout_ms = (long)(l->renew_deadline * 500),
        .urgent = true,
    };
    int r = kube_request_send(l->client, &req, on_response, l);

    if (r == 0)
        l->op = op;
    return r;
}

static void lose(struct kube_leader *l, int code)
{
    ev_timer_stop(l->loop, &l->tick);
    ev_timer_stop(l->loop, &l->deadline);
    l->state = LEADER_FINISHED;
    l->held = false;
    if (l->on_stopped_leading)
        l->on_stopped_leading(l->userdata, code);
}

/* Standbys poll a little faster than retry_period (never slower, so the takeover bound holds)
 * and wake when the record they watch would expire. */
static void schedule_next(struct kube_leader *l)
{
    double delay = l->retry_period;

    if (l->state == LEADER_CANDIDATE) {
        delay -= 0.2 * l->retry_period * rand_unit(l);
        if (l->observed_spec && l->observed_holder && *l->observed_holder &&
            strcmp(l->observed_holder, l->identity) != 0) {
            const cJSON *spec = cJSON_Parse(l->observed_spec);
            const cJSON *d = cJSON_GetObjectItemCaseSensitive(spec, "leaseDurationSeconds");
            double expiry = l->observed_time + (cJSON_IsNumber(d) ? d->valuedouble : 0);
            double until = expiry - time_mono() + 0.001;

            if (until < delay)
                delay = until;
            cJSON_Delete((cJSON *)spec);
        }
    }
    schedule(l, delay);
}

static void start_attempt(struct kube_leader *l)
{
    l->attempt_started = time_mono();
    if (send(l, OP_GET, KUBE_GET, NULL) < 0)
        schedule_next(l);
}

static void finish_stop(struct kube_leader *l, int code)
{
    l->state = LEADER_FINISHED;
    l->stop_code = code;
    /* Report from the loop, never from inside kube_leader_stop(). */
    schedule(l, 0);
}

static void release(struct kube_leader *l)
{
    cJSON *body = l->held && l->lease ? cJSON_Duplicate(l->lease, true) : NULL;
    cJSON *spec = cJSON_GetObjectItemCaseSensitive(body, "spec");
    char now[MICRO_TIME_MAX];

    if (!body) {
        finish_stop(l, 0);
        return;
    }
    if (!cJSON_IsObject(spec)) {
        cJSON_Delete(body);
        finish_stop(l, -EIO);
        return;
    }
    format_micro_time(time_wall(), now);
    cJSON_DeleteItemFromObjectCaseSensitive(spec, "holderIdentity");
    cJSON_DeleteItemFromObjectCaseSensitive(spec, "leaseDurationSeconds");
    cJSON_DeleteItemFromObjectCaseSensitive(spec, "acquireTime");
    cJSON_DeleteItemFromObjectCaseSensitive(spec, "renewTime");
    if (!cJSON_AddStringToObject(spec, "holderIdentity", "") ||
        !cJSON_AddNumberToObject(spec, "leaseDurationSeconds", 1) ||
        !cJSON_AddStringToObject(spec, "acquireTime", now) ||
        !cJSON_AddStringToObject(spec, "renewTime", now)) {
        cJSON_Delete(body);
        finish_stop(l, -ENOMEM);
        return;
    }
    int r = send(l, OP_RELEASE, KUBE_UPDATE, body);
    cJSON_Delete(body);
    if (r < 0)
        finish_stop(l, r);
}

static void on_tick(struct ev_loop *loop, ev_timer *w, int revents)
{
    struct kube_leader *l = w->data;

    switch (l->state) {
    case LEADER_CANDIDATE:
    case LEADER_LEADING:
        start_attempt(l);
        break;
    case LEADER_STOPPING:
        release(l);
        break;
    case LEADER_FINISHED:
        if (l->stop_done) {
            void (*done)(void *, int) = l->stop_done;

            l->stop_done = NULL;
            done(l->stop_userdata, l->stop_code);
        }
        break;
    case LEADER_IDLE:
        break;
    }
}

static void on_deadline(struct ev_loop *loop, ev_timer *w, int revents)
{
    struct kube_leader *l = w->data;

    if (l->state == LEADER_LEADING)
        lose(l, -ETIMEDOUT);
}

/* Records the Lease as seen now; returns its holder (borrowed from l), "" when none. */
static const char *observe(struct kube_leader *l, const cJSON *lease)
{
    const cJSON *spec = cJSON_GetObjectItemCaseSensitive(lease, "spec");
    const cJSON *holder = cJSON_GetObjectItemCaseSensitive(spec, "holderIdentity");
    const char *h = cJSON_IsString(holder) ? holder->valuestring : "";
    char *text = cJSON_PrintUnformatted(spec ? spec : lease);

    if (text && (!l->observed_spec || strcmp(text, l->observed_spec) != 0)) {
        free(l->observed_spec);
        l->observed_spec = text;
        l->observed_time = time_mono();
        text = NULL;
    }
    free(text);
    if (!l->observed_holder || strcmp(l->observed_holder, h) != 0) {
        char *copy = strdup(h);

        if (copy) {
            free(l->observed_holder);
            l->observed_holder = copy;
            if (l->on_new_leader)
                l->on_new_leader(l->userdata, copy);
        }
    }
    return l->observed_holder ? l->observed_holder : "";
}

static bool expired(const struct kube_leader *l)
{
    const cJSON *spec = cJSON_Parse(l->observed_spec ? l->observed_spec : "{}");
    const cJSON *d = cJSON_GetObjectItemCaseSensitive(spec, "leaseDurationSeconds");
    double lease = cJSON_IsNumber(d) ? d->valuedouble : 0;
    bool r = l->observed_time + lease <= time_mono();

    cJSON_Delete((cJSON *)spec);
    return r;
}

/* The Lease this candidate writes to take or renew it: old (NULL when creating) with our record. */
static cJSON *build_lease(const struct kube_leader *l, const cJSON *old)
{
    cJSON *lease = old ? cJSON_Duplicate(old, true) : cJSON_CreateObject();
    cJSON *spec, *meta;
    const cJSON *old_spec = cJSON_GetObjectItemCaseSensitive(old, "spec");
    const cJSON *old_holder = cJSON_GetObjectItemCaseSensitive(old_spec, "holderIdentity");
    const cJSON *old_acquire = cJSON_GetObjectItemCaseSensitive(old_spec, "acquireTime");
    const cJSON *old_transitions = cJSON_GetObjectItemCaseSensitive(old_spec, "leaseTransitions");
    bool ours = cJSON_IsString(old_holder) && strcmp(old_holder->valuestring, l->identity) == 0;
    double transitions = cJSON_IsNumber(old_transitions) ? old_transitions->valuedouble : 0;
    char now[MICRO_TIME_MAX];

    if (!lease)
        return NULL;
    format_micro_time(time_wall(), now);
    if (!old) {
        if (!cJSON_AddStringToObject(lease, "apiVersion", "coordination.k8s.io/v1") ||
            !cJSON_AddStringToObject(lease, "kind", "Lease") ||
            !(meta = cJSON_AddObjectToObject(lease, "metadata")) ||
            !cJSON_AddStringToObject(meta, "name", l->name) ||
            !cJSON_AddStringToObject(meta, "namespace", l->namespace_))
            goto fail;
    }
    cJSON_DeleteItemFromObjectCaseSensitive(lease, "spec");
    spec = cJSON_AddObjectToObject(lease, "spec");
    if (!spec || !cJSON_AddStringToObject(spec, "holderIdentity", l->identity) ||
        !cJSON_AddNumberToObject(spec, "leaseDurationSeconds", l->lease_duration) ||
        !cJSON_AddStringToObject(spec, "acquireTime",
                                 ours && cJSON_IsString(old_acquire) ? old_acquire->valuestring
                                                                     : now) ||
        !cJSON_AddStringToObject(spec, "renewTime", now) ||
        !cJSON_AddNumberToObject(spec, "leaseTransitions",
                                 ours || !old ? transitions : transitions + 1))
        goto fail;
    return lease;
fail:
    cJSON_Delete(lease);
    return NULL;
}

static void handle_get(struct kube_leader *l, const struct kube_result *res)
{
    cJSON *body = NULL;
    const char *holder;
    int r;

    if (res->code == -ENOENT) {
        body = build_lease(l, NULL);
        r = body ? send(l, OP_WRITE, KUBE_CREATE, body) : -ENOMEM;
        goto out;
    }
    if (res->code < 0 || !cJSON_IsObject(res->body)) {
        r = res->code < 0 ? res->code : -EIO;
        goto out;
    }
    cJSON_Delete(l->lease);
    l->lease = cJSON_Duplicate(res->body, true);
    holder = observe(l, res->body);
    if (*holder && strcmp(holder, l->identity) != 0 && !expired(l)) {
        l->held = false;
        if (l->state == LEADER_LEADING) {
            lose(l, -EBUSY);
            return;
        }
        r = -EBUSY;
        goto out;
    }
    body = build_lease(l, res->body);
    r = body ? send(l, OP_WRITE, KUBE_UPDATE, body) : -ENOMEM;
out:
    cJSON_Delete(body);
    if (r < 0)
        schedule_next(l);
}

static void handle_write(struct kube_leader *l, const struct kube_result *res)
{
    if (res->code < 0 || !cJSON_IsObject(res->body)) {
        /* 409: another candidate wrote first; it is seen at the next attempt. */
        schedule_next(l);
        return;
    }
    cJSON_Delete(l->lease);
    l->lease = cJSON_Duplicate(res->body, true);
    observe(l, res->body);
    l->held = true;
    l->last_renew = l->attempt_started;
    if (l->state == LEADER_CANDIDATE) {
        l->state = LEADER_LEADING;
        if (l->on_started_leading)
            l->on_started_leading(l->userdata);
        if (l->state != LEADER_LEADING)
            return; /* the callback stopped us */
    }
    ev_timer_stop(l->loop, &l->deadline);
    ev_timer_set(&l->deadline, l->last_renew + l->renew_deadline - time_mono(), 0);
    ev_timer_start(l->loop, &l->deadline);
    schedule_next(l);
}

static void on_response(void *userdata, const struct kube_result *res)
{
    struct kube_leader *l = userdata;
    enum leader_op op = l->op;

    l->op = OP_NONE;
    if (l->freed) {
        destroy(l);
        return;
    }
    if (l->state == LEADER_STOPPING) {
        if (op == OP_WRITE && res->code == 0 && cJSON_IsObject(res->body)) {
            /* Took or renewed the Lease just as we were told to stop: release that. */
            cJSON_Delete(l->lease);
            l->lease = cJSON_Duplicate(res->body, true);
            l->held = true;
        }
        if (op == OP_RELEASE) {
            l->held = false;
            /* A conflict means the Lease changed hands already: nothing left to release. */
            finish_stop(l, res->code == -EBUSY ? 0 : res->code);
        } else {
            release(l);
        }
        return;
    }
    if (l->state != LEADER_CANDIDATE && l->state != LEADER_LEADING)
        return;
    if (op == OP_GET)
        handle_get(l, res);
    else if (op == OP_WRITE)
        handle_write(l, res);
}

int kube_leader_start(struct kube_leader *l)
{
    if (l->state != LEADER_IDLE)
        return -EALREADY;
    l->state = LEADER_CANDIDATE;
    schedule(l, 0);
    return 0;
}

int kube_leader_stop(struct kube_leader *l, void (*done)(void *userdata, int code), void *userdata)
{
    if (l->state == LEADER_STOPPING || (l->state == LEADER_FINISHED && l->stop_done))
        return -EALREADY;
    ev_timer_stop(l->loop, &l->deadline);
    ev_timer_stop(l->loop, &l->tick);
    l->stop_done = done;
    l->stop_userdata = userdata;
    if (l->state == LEADER_FINISHED || l->state == LEADER_IDLE) {
        finish_stop(l, 0);
        return 0;
    }
    l->state = LEADER_STOPPING;
    /* With a request in flight, its response continues the stop; otherwise the next loop
     * iteration releases. */
    if (l->op == OP_NONE)
        schedule(l, 0);
    return 0;
}
