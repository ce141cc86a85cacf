#ifndef NESTCP_KUBE_STATUS_H
#define NESTCP_KUBE_STATUS_H

/*
 * The one place where HTTP statuses, Kubernetes Status objects and libcurl results become the
 * small set of codes listed in client.h.
 */

#include <curl/curl.h>
#include <cjson/cJSON.h>

/* Code for a response: http_status (0: take Status.code from body, as in a watch ERROR
 * event) refined by body's Status.reason when body is a Status. */
int kube_status_code(long http_status, const cJSON *body);

/* Status.message of body, or NULL. Borrowed from body. */
const char *kube_status_message(const cJSON *body);

/* Seconds to wait from a Retry-After header value (delta-seconds; NULL or an HTTP date gives
 * 1 s when the status asks for a retry) or, failing that, Status.details.retryAfterSeconds. */
double kube_status_retry_after(long http_status, const char *header, const cJSON *body);

/* Code for a libcurl failure. */
int kube_curl_code(CURLcode rc);

/* What a code of this layer means in the API server's words ("conflict", "gone", "forbidden",
 * "too many requests", "server error", ...), for logs and messages; other codes are named as
 * err_code_name names them. Never NULL. */
const char *kube_code_name(int code);

#endif
