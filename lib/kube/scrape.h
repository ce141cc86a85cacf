#ifndef NESTCP_KUBE_SCRAPE_H
#define NESTCP_KUBE_SCRAPE_H

/*
 * One HTTPS GET of a text endpoint of a tenant process (a kube-apiserver's /metrics), on the
 * shared transport (lib/kube/transport.h), handed to the caller line by line as it arrives:
 * a /metrics page of several megabytes is never held whole. The server is verified against
 * the given CA only, under the given host name, which CURLOPT_RESOLVE maps to the given IP
 * (a pod IP is not in a serving certificate's names); the client authenticates with a
 * certificate. Nothing here blocks the loop or logs.
 */

#include <stddef.h>

struct kube_scrape;
struct kube_transport;

/* The longest line handed on; a longer one is skipped whole. */
#define KUBE_SCRAPE_LINE_MAX 4096
/* The most bytes read before the GET fails with -EFBIG. */
#define KUBE_SCRAPE_BODY_MAX (64L * 1024 * 1024)

struct kube_scrape_target {
    const char *host; /* the name the serving certificate holds, e.g. c-apiserver.ns.svc */
    const char *ip;   /* where it is reached; NULL: host is resolved */
    int port;
    const char *path;                        /* "/metrics" */
    long timeout_ms;                         /* for the whole GET */
    const char *ca_pem, *cert_pem, *key_pem; /* copied; the key is wiped when freed */
};

/* Each line of the body without its newline, called from inside libcurl: it must not cancel. */
typedef void (*kube_scrape_line_fn)(void *userdata, const char *line, size_t len);
/* Called once: code 0 (a 2xx answer, every line handed on), -ECANCELED, -ETIMEDOUT,
 * -ECONNREFUSED, -ECONNRESET, -EKEYREJECTED (verification failed), -EFBIG, -EPROTO (another
 * HTTP status, in http) or -EIO; msg says what happened. The scrape is freed after it returns. */
typedef void (*kube_scrape_done_fn)(void *userdata, int code, long http, const char *msg);

/* Starts the GET. Returns 0 with a handle for kube_scrape_cancel in *ret_scrape (which may be
 * NULL), -EINVAL (a field missing), -ENOMEM or -EIO; done does not run then. */
int kube_scrape_start(struct kube_transport *t, const struct kube_scrape_target *tg,
                      kube_scrape_line_fn line, kube_scrape_done_fn done, void *userdata,
                      struct kube_scrape **ret_scrape);

/* Ends the GET: done runs with -ECANCELED before this returns. Accepts NULL. */
void kube_scrape_cancel(struct kube_scrape *s);

#endif
