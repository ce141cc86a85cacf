#ifndef NESTCP_CONTROLLERS_ROLLERRORS_H
#define NESTCP_CONTROLLERS_ROLLERRORS_H

/*
 * The error rate of the API servers a roll starts: the second half of a roll's health, next to
 * readiness and restarts (controllers/rollhealth.h). While an API server StatefulSet rolls,
 * each pod of its update revision that is Ready is scraped every ROLLHEALTH_SCRAPE_EVERY
 * seconds: a GET of https://<pod IP>:6443/metrics, verified against the tenant's cluster CA
 * under the name <cluster>-apiserver.<ns>.svc (the serving certificate holds it, not the pod
 * IP), with the client certificate of the admin kubeconfig <cluster>-kubeconfig. That user is
 * in system:masters, which the API server's in-flight limits exempt: the scrape goes through
 * on the server whose limits refuse the tenant's requests.
 *
 * What is counted, since the pod's API server started: resource requests only (a `resource`
 * label that is not empty; /readyz answers 500 while a server starts, and is left out), from
 * apiserver_request_total, failed when the code is 429 or 5xx; and
 * apiserver_request_terminations_total with another code than 429 (a request the timeout
 * filter answered with 504 is recorded as the handler's later 200 in the first, and a 429 of
 * the in-flight filters is in both). A pod that answered ROLLHEALTH_ERRORS_MIN requests or more,
 * ROLLHEALTH_ERRORS_PERCENT % of them failed, has failed the roll. A scrape that fails
 * (connection refused, TLS) is not a failure of the roll by itself: a pod that does not answer
 * is not Ready, which the readiness check covers.
 *
 * The answers are remembered by pod UID for the reconciles that follow; the calls run through
 * the manager's plan (plan_call) on the shared transport.
 */

#include <stdbool.h>
#include <stddef.h>

#include <cjson/cJSON.h>

#include "controllers/rollhealth.h" /* the thresholds, ROLLHEALTH_ERRORS_* */

struct kube_store;
struct plan;
struct rollerrors;

/* How long a scrape may take, milliseconds. */
#define ROLLHEALTH_SCRAPE_TIMEOUT_MS 4000L
/* Pods remembered; past this the memory starts again empty. */
#define ROLLERRORS_PODS_MAX 1024

/* What one /metrics page says. */
struct rollerrors_counts {
    double total;      /* resource requests */
    double code429;    /* of those answered 429 */
    double code5xx;    /* of those answered 5xx */
    double terminated; /* terminated by a filter with another code than 429 (504: timed out) */
};

/* Adds what one line of a Prometheus text page says to c; other lines add nothing. */
void rollerrors_count_line(struct rollerrors_counts *c, const char *line, size_t len);

/* Whether counts c say a pod failed the roll; when so, msg says how. */
bool rollerrors_failed(const struct rollerrors_counts *c, char *msg, size_t size);

int rollerrors_new(struct rollerrors **ret);
/* Accepts NULL. Calls in flight must have ended (the manager is freed first). */
void rollerrors_free(struct rollerrors *re);

struct rollerrors_input {
    const cJSON *sts; /* the API server StatefulSet, rolling */
    const struct kube_store *pods, *secrets;
    const char *ns, *cluster;
    double now;
};

/* Checks the pods of the update revision: true and in msg which pod failed and how when the
 * last answer of one says it failed (see above). Otherwise false, having planned a scrape of
 * each Ready pod not asked for ROLLHEALTH_SCRAPE_EVERY and a requeue after half that. *re is made
 * on first use. Returns 0 or -ENOMEM. */
int rollerrors_check(struct rollerrors **re, const struct rollerrors_input *in, struct plan *plan,
                     char *msg, size_t size, bool *ret_failed);

/* What the scrape a plan action carries asks (for tests): the pod and the address. Returns 0,
 * or -EINVAL when the action is no scrape. */
struct plan_action;
int rollerrors_call_of(const struct plan_action *a, const char **ret_pod, const char **ret_host,
                       const char **ret_ip);

/* Records counts as the answer of the scrape a plan action carries, as if it ran (tests). */
void rollerrors_answer(const struct plan_action *a, const struct rollerrors_counts *c, double now);

#endif
