/* The error rate of the API servers a roll starts (controllers/rollerrors.h): the count of a
 * /metrics page, the decision, what each pod's last scrape answered, and the scrape a plan
 * runs. */

#include "controllers/rollerrors.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>

#include "controllers/rollhealth.h"
#include "controllers/status.h"
#include "lib/ctrl/plan.h"
#include "lib/kube/client.h"
#include "lib/kube/scrape.h"
#include "lib/kube/store.h"
#include "lib/kube/transport.h"
#include "lib/pki/base64.h"
#include "lib/pki/kubeconfig.h"
#include "lib/util/strmap.h"
#include "lib/util/strutil.h"

#define UID_LEN 80
#define NAME_LEN 128

/* ---- one /metrics page ---- */

/* The value of label `name` inside the braces [p, end), unescaped into out; false when absent
 * or longer than size. */
static bool label_of(const char *p, const char *end, const char *name, char *out, size_t size)
{
    size_t n = strlen(name);

    while (p < end) {
        const char *eq = memchr(p, '=', (size_t)(end - p));
        size_t k = 0;
        bool match;

        if (!eq || eq + 1 >= end || eq[1] != '"')
            return false;
        match = (size_t)(eq - p) == n && memcmp(p, name, n) == 0;
        for (p = eq + 2; p < end && *p != '"'; p++) {
            if (*p == '\\' && p + 1 < end)
                p++;
            if (match && k + 1 < size)
                out[k++] = *p;
            else if (match)
                return false;
        }
        if (p >= end)
            return false;
        if (match) {
            out[k] = '\0';
            return true;
        }
        p++; /* the closing quote */
        if (p < end && *p == ',')
            p++;
    }
    return false;
}

void rollerrors_count_line(struct rollerrors_counts *c, const char *line, size_t len)
{
    static const char req[] = "apiserver_request_total{";
    static const char term[] = "apiserver_request_terminations_total{";
    const char *end = line + len, *open, *close;
    char code[8], resource[NAME_LEN], num[64], *stop;
    bool is_term;
    size_t n;
    double v;

    if (len > sizeof(req) - 1 && memcmp(line, req, sizeof(req) - 1) == 0)
        is_term = false;
    else if (len > sizeof(term) - 1 && memcmp(line, term, sizeof(term) - 1) == 0)
        is_term = true;
    else
        return;
    open = memchr(line, '{', len) + 1;
    /* The closing brace is the last one: label values may hold braces. */
    for (close = end - 1; close > open && *close != '}'; close--)
        ;
    if (close <= open || !label_of(open, close, "code", code, sizeof(code)) ||
        !label_of(open, close, "resource", resource, sizeof(resource)) || !resource[0])
        return;
    for (open = close + 1; open < end && *open == ' '; open++)
        ;
    n = (size_t)(end - open);
    if (n == 0 || n >= sizeof(num))
        return;
    memcpy(num, open, n);
    num[n] = '\0';
    v = strtod(num, &stop);
    if (stop == num || (*stop && *stop != ' ') || !(v >= 0) || v > 1e15)
        return;
    if (is_term) {
        if (strcmp(code, "429") != 0)
            c->terminated += v;
        return;
    }
    c->total += v;
    if (strcmp(code, "429") == 0)
        c->code429 += v;
    else if (code[0] == '5' && strlen(code) == 3)
        c->code5xx += v;
}

bool rollerrors_failed(const struct rollerrors_counts *c, char *msg, size_t size)
{
    double failed = c->code429 + c->code5xx + c->terminated;

    if (c->total < ROLLHEALTH_ERRORS_MIN || failed * 100 < c->total * ROLLHEALTH_ERRORS_PERCENT)
        return false;
    snprintf(msg, size,
             "%.0f of %.0f API requests since it started were refused or failed (429: %.0f, "
             "5xx: %.0f, terminated: %.0f)",
             failed, c->total, c->code429, c->code5xx, c->terminated);
    return true;
}

/* ---- what each pod answered ---- */

struct obs {
    char uid[UID_LEN];
    double asked;  /* when the last scrape was planned */
    bool answered; /* counts holds an answer */
    struct rollerrors_counts counts;
};

struct rollerrors {
    struct strmap obs;
    struct kube_transport *t; /* made on the first call, on that call's loop */
};

int rollerrors_new(struct rollerrors **ret)
{
    struct rollerrors *re = calloc(1, sizeof(*re));

    if (!re)
        return -ENOMEM;
    *ret = re;
    return 0;
}

void rollerrors_free(struct rollerrors *re)
{
    if (!re)
        return;
    strmap_done(&re->obs, free);
    kube_transport_free(re->t);
    free(re);
}

static struct obs *obs_of(struct rollerrors *re, const char *uid, bool create)
{
    struct obs *o = strmap_get(&re->obs, uid);

    if (o || !create)
        return o;
    if (strmap_size(&re->obs) >= ROLLERRORS_PODS_MAX)
        strmap_done(&re->obs, free);
    if (!(o = calloc(1, sizeof(*o))))
        return NULL;
    snprintf(o->uid, sizeof(o->uid), "%s", uid);
    if (strmap_put(&re->obs, o->uid, o) < 0) {
        free(o);
        return NULL;
    }
    return o;
}

static void record(struct rollerrors *re, const char *uid, const struct rollerrors_counts *c)
{
    struct obs *o = obs_of(re, uid, true);

    if (!o)
        return; /* out of memory: the next reconcile asks again */
    o->counts = *c;
    o->answered = true;
}

/* ---- the scrape a plan runs ---- */

struct op {
    struct rollerrors *re;
    char uid[UID_LEN];
    char pod[NAME_LEN];
    char host[NAME_LEN * 3];
    char ip[64];
    struct pki_kubeconfig_creds *creds; /* the admin's CA, certificate and key */
    struct rollerrors_counts counts;
    struct kube_scrape *scrape;
    plan_call_done_fn done;
    void *done_ctx;
};

static void op_free(void *arg)
{
    struct op *op = arg;

    if (!op)
        return;
    pki_kubeconfig_creds_free(op->creds);
    free(op);
}

static void op_line(void *userdata, const char *line, size_t len)
{
    struct op *op = userdata;

    rollerrors_count_line(&op->counts, line, len);
}

static void op_done(void *userdata, int code, long http, const char *msg)
{
    struct op *op = userdata;

    (void)http;
    (void)msg;
    op->scrape = NULL;
    if (code == 0)
        record(op->re, op->uid, &op->counts);
    /* A scrape that failed says nothing about the roll: the pod is asked again, and one that
     * does not answer at all is not Ready, which the readiness check covers. The plan goes
     * on either way. */
    op->done(op->done_ctx, code == -ECANCELED ? -ECANCELED : 0, NULL);
}

static int op_start(void *arg, struct ev_loop *loop, plan_call_done_fn done, void *done_ctx,
                    void **ret_handle)
{
    struct op *op = arg;
    struct kube_scrape_target tg = {
        .host = op->host,
        .ip = op->ip,
        .port = 6443,
        .path = "/metrics",
        .timeout_ms = ROLLHEALTH_SCRAPE_TIMEOUT_MS,
        .ca_pem = op->creds->ca_cert_pem,
        .cert_pem = op->creds->client_cert_pem,
        .key_pem = op->creds->client_key_pem,
    };
    int r;

    if (!op->re->t && (r = kube_transport_new(loop, &op->re->t)) < 0)
        return r;
    op->done = done;
    op->done_ctx = done_ctx;
    memset(&op->counts, 0, sizeof(op->counts));
    if ((r = kube_scrape_start(op->re->t, &tg, op_line, op_done, op, &op->scrape)) < 0)
        return r;
    *ret_handle = op;
    return 0;
}

static void op_cancel(void *handle)
{
    struct op *op = handle;

    if (op->scrape)
        kube_scrape_cancel(op->scrape);
}

static const struct plan_call_ops rollerrors_call_ops = {
    .name = "apiserver metrics",
    .start = op_start,
    .cancel = op_cancel,
    .free = op_free,
};

int rollerrors_call_of(const struct plan_action *a, const char **ret_pod, const char **ret_host,
                       const char **ret_ip)
{
    const struct op *op;

    if (a->call != &rollerrors_call_ops)
        return -EINVAL;
    op = a->call_arg;
    *ret_pod = op->pod;
    *ret_host = op->host;
    *ret_ip = op->ip;
    return 0;
}

void rollerrors_answer(const struct plan_action *a, const struct rollerrors_counts *c, double now)
{
    const struct op *op;

    (void)now;
    if (a->call != &rollerrors_call_ops)
        return;
    op = a->call_arg;
    record(op->re, op->uid, c);
}

/* ---- the check ---- */

/* The admin kubeconfig's credentials, or NULL (not cached yet, or not readable). */
static struct pki_kubeconfig_creds *admin_creds(const struct rollerrors_input *in)
{
    char name[NAME_LEN + 16];
    const cJSON *secret, *v;
    struct pki_kubeconfig_creds *creds = NULL;
    unsigned char *yaml = NULL;
    size_t len;
    struct err e;

    snprintf(name, sizeof(name), "%s-kubeconfig", in->cluster);
    secret = kube_store_get(in->secrets, in->ns, name);
    v = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(secret, "data"), "value");
    if (!cJSON_IsString(v) || pki_base64_decode(v->valuestring, strlen(v->valuestring),
                                                PKI_KUBECONFIG_MAX, &yaml, &len) < 0)
        return NULL;
    err_clear(&e);
    if (pki_kubeconfig_read((const char *)yaml, len, name, &creds, &e) < 0)
        creds = NULL;
    OPENSSL_clear_free(yaml, len + 1);
    if (creds && (!creds->ca_cert_pem || !creds->client_cert_pem || !creds->client_key_pem)) {
        pki_kubeconfig_creds_free(creds);
        creds = NULL;
    }
    return creds;
}

struct walk {
    struct rollerrors *re;
    const struct rollerrors_input *in;
    struct plan *plan;
    char *msg;
    size_t size;
    bool failed, soaking;
    int r;
};

static int plan_scrape(struct walk *w, const cJSON *pod, const char *uid, const char *ip)
{
    struct op *op = calloc(1, sizeof(*op));

    if (!op)
        return -ENOMEM;
    op->re = w->re;
    snprintf(op->uid, sizeof(op->uid), "%s", uid);
    snprintf(op->pod, sizeof(op->pod), "%s", kube_obj_name(pod));
    snprintf(op->host, sizeof(op->host), "%s-apiserver.%s.svc", w->in->cluster, w->in->ns);
    snprintf(op->ip, sizeof(op->ip), "%s", ip);
    if (!(op->creds = admin_creds(w->in))) {
        op_free(op);
        return 0; /* the kubeconfig Secret is not in the cache yet */
    }
    return plan_call(w->plan, &rollerrors_call_ops, op, "metrics of API server %s/%s", w->in->ns,
                     op->pod);
}

static bool check_pod(void *userdata, const cJSON *pod)
{
    struct walk *w = userdata;
    const cJSON *st = cJSON_GetObjectItemCaseSensitive(pod, "status");
    const cJSON *ip = cJSON_GetObjectItemCaseSensitive(st, "podIP");
    const char *uid = kube_obj_uid(pod);
    struct obs *o;
    char why[300];

    if (!uid || strlen(uid) >= UID_LEN || !cJSON_IsString(ip) || !status_pod_ready(pod) ||
        cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(pod, "metadata"),
                                         "deletionTimestamp"))
        return true;
    w->soaking = true;
    o = obs_of(w->re, uid, false);
    if (o && o->answered && rollerrors_failed(&o->counts, why, sizeof(why))) {
        snprintf(w->msg, w->size, "pod %s: %s", kube_obj_name(pod), why);
        w->failed = true;
        return false;
    }
    if (o && w->in->now - o->asked < ROLLHEALTH_SCRAPE_EVERY)
        return true;
    if (!o && !(o = obs_of(w->re, uid, true))) {
        w->r = -ENOMEM;
        return false;
    }
    o->asked = w->in->now;
    if ((w->r = plan_scrape(w, pod, uid, ip->valuestring)) < 0)
        return false;
    return true;
}

int rollerrors_check(struct rollerrors **re, const struct rollerrors_input *in, struct plan *plan,
                     char *msg, size_t size, bool *ret_failed)
{
    struct walk w = {.in = in, .plan = plan, .msg = msg, .size = size};
    int r;

    if (!*re && (r = rollerrors_new(re)) < 0)
        return r;
    w.re = *re;
    rollhealth_foreach_updated(in->sts, in->pods, check_pod, &w);
    if (w.r < 0)
        return w.r;
    if (w.soaking && !w.failed)
        plan_requeue_after(plan, ROLLHEALTH_SCRAPE_EVERY / 2);
    *ret_failed = w.failed;
    return 0;
}
