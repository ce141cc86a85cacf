#include "lib/kube/status.h"

#include <errno.h>
#include <stdbool.h>
#include <string.h>

#include "lib/util/err.h"
#include "lib/util/strutil.h"

static const char *status_reason(const cJSON *body)
{
    const cJSON *kind = cJSON_GetObjectItemCaseSensitive(body, "kind");
    const cJSON *reason = cJSON_GetObjectItemCaseSensitive(body, "reason");

    if (!cJSON_IsString(kind) || strcmp(kind->valuestring, "Status") != 0)
        return NULL;
    return cJSON_IsString(reason) ? reason->valuestring : NULL;
}

/* True when the Status says the requested resourceVersion is ahead of the server: a cause
 * ResourceVersionTooLarge, or (servers before 1.18.6) a Timeout whose message says so. */
static bool too_large_rv(const cJSON *body, const char *reason)
{
    const cJSON *details = cJSON_GetObjectItemCaseSensitive(body, "details");
    const cJSON *causes = cJSON_GetObjectItemCaseSensitive(details, "causes");
    const cJSON *msg = cJSON_GetObjectItemCaseSensitive(body, "message");

    for (const cJSON *c = cJSON_IsArray(causes) ? causes->child : NULL; c; c = c->next) {
        const cJSON *r = cJSON_GetObjectItemCaseSensitive(c, "reason");

        if (cJSON_IsString(r) && strcmp(r->valuestring, "ResourceVersionTooLarge") == 0)
            return true;
    }
    return reason && strcmp(reason, "Timeout") == 0 && cJSON_IsString(msg) &&
           strstr(msg->valuestring, "Too large resource version");
}

int kube_status_code(long http_status, const cJSON *body)
{
    const char *reason = status_reason(body);

    if (http_status == 0) {
        const cJSON *code = cJSON_GetObjectItemCaseSensitive(body, "code");

        /* A code outside the HTTP range means nothing (and 1e300 cannot be converted). */
        http_status = cJSON_IsNumber(code) && code->valuedouble >= 100 && code->valuedouble < 600
                          ? (long)code->valuedouble
                          : 500;
    }
    if (http_status >= 200 && http_status < 300)
        return 0;
    if (reason) {
        if (too_large_rv(body, reason))
            return -ERANGE;
        if (strcmp(reason, "AlreadyExists") == 0)
            return -EEXIST;
        if (strcmp(reason, "Conflict") == 0)
            return -EBUSY;
        if (strcmp(reason, "Expired") == 0 || strcmp(reason, "Gone") == 0)
            return -ESTALE;
    }
    switch (http_status) {
    case 400:
    case 422:
        return -EINVAL;
    case 401:
        return -EACCES;
    case 403:
        return -EPERM;
    case 404:
        return -ENOENT;
    case 409:
        return -EBUSY;
    case 410:
        return -ESTALE;
    case 429:
        return -EAGAIN;
    default:
        break;
    }
    if (http_status >= 400 && http_status < 500)
        return -EINVAL;
    return -EIO;
}

const char *kube_status_message(const cJSON *body)
{
    const cJSON *kind = cJSON_GetObjectItemCaseSensitive(body, "kind");
    const cJSON *msg = cJSON_GetObjectItemCaseSensitive(body, "message");

    if (!cJSON_IsString(kind) || strcmp(kind->valuestring, "Status") != 0)
        return NULL;
    return cJSON_IsString(msg) ? msg->valuestring : NULL;
}

double kube_status_retry_after(long http_status, const char *header, const cJSON *body)
{
    const cJSON *details = cJSON_GetObjectItemCaseSensitive(body, "details");
    const cJSON *secs = cJSON_GetObjectItemCaseSensitive(details, "retryAfterSeconds");
    int64_t v;

    if (header && header[0]) {
        if (str_to_int64(header, 0, 86400, &v) == 0)
            return (double)v;
        return 1.0; /* an HTTP date: do not trust the clocks, wait a little */
    }
    if (status_reason(body) && cJSON_IsNumber(secs) && secs->valuedouble > 0)
        return secs->valuedouble > 86400 ? 86400 : secs->valuedouble;
    return 0;
}

int kube_curl_code(CURLcode rc)
{
    switch (rc) {
    case CURLE_OK:
        return 0;
    case CURLE_OPERATION_TIMEDOUT:
        return -ETIMEDOUT;
    case CURLE_COULDNT_CONNECT:
    case CURLE_COULDNT_RESOLVE_HOST:
        return -ECONNREFUSED;
    case CURLE_SEND_ERROR:
    case CURLE_RECV_ERROR:
    case CURLE_GOT_NOTHING:
    case CURLE_PARTIAL_FILE:
    case CURLE_HTTP2:
    case CURLE_HTTP2_STREAM:
    case CURLE_SSL_CONNECT_ERROR:
        return -ECONNRESET;
    case CURLE_OUT_OF_MEMORY:
        return -ENOMEM;
    case CURLE_ABORTED_BY_CALLBACK:
        return -ECANCELED;
    default:
        return -EIO;
    }
}

const char *kube_code_name(int code)
{
    switch (code) {
    case -EBUSY:
        return "conflict";
    case -ESTALE:
        return "gone";
    case -ERANGE:
        return "resource version too large";
    case -EINVAL:
        return "invalid";
    case -EACCES:
        return "unauthorized";
    case -EPERM:
        return "forbidden";
    case -EAGAIN:
        return "too many requests";
    case -EIO:
        return "server error";
    default:
        return err_code_name(code);
    }
}
