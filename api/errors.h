#ifndef NESTCP_API_ERRORS_H
#define NESTCP_API_ERRORS_H

/*
 * A list of validation errors. Parsing and validation collect every problem they find instead
 * of stopping at the first, so a user fixes a manifest in one pass. Each entry is one line:
 *
 *     spec.clusterNetwork.services.cidrBlocks[0]: "10.96.0.0/33" is not a valid CIDR
 *
 * The list has a bound (API_ERRORS_MAX entries); past it one final "... and N more" line is
 * kept. Running out of memory is sticky: api_errors_oom() then reports it.
 */

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>

#include "lib/util/buf.h"
#include "lib/util/err.h"

#define API_ERRORS_MAX 100

struct api_errors {
    char **lines;
    size_t n;
    size_t dropped; /* entries past API_ERRORS_MAX */
    bool oom;
    /* The condition reason an error calls for when it is not a plain invalid spec
     * ("VersionUnsupported": a retired version line), or NULL. Static string. */
    const char *reason;
};

#define API_ERRORS_INIT                                                                            \
    {                                                                                              \
        NULL, 0, 0, false, NULL                                                                    \
    }

/* The reason for a condition about errs: errs->reason, else "InvalidSpec". */
static inline const char *api_errors_reason(const struct api_errors *errs)
{
    return errs->reason ? errs->reason : "InvalidSpec";
}

void api_errors_init(struct api_errors *errs);
void api_errors_done(struct api_errors *errs);

/* Appends "<path>: <message>". An empty or NULL path gives just the message. */
void api_errors_add(struct api_errors *errs, const char *path, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Appends "<path>: <value> <message>", the value written as JSON (strings quoted, long values
 * shortened), e.g. `spec.replicas: "three" is not an integer`. */
void api_errors_add_value(struct api_errors *errs, const char *path, const cJSON *value,
                          const char *fmt, ...) __attribute__((format(printf, 4, 5)));

/* Like api_errors_add_value for a C string value (written as a JSON string). */
void api_errors_add_str(struct api_errors *errs, const char *path, const char *value,
                        const char *fmt, ...) __attribute__((format(printf, 4, 5)));

static inline size_t api_errors_count(const struct api_errors *errs)
{
    return errs->n + errs->dropped;
}

static inline bool api_errors_oom(const struct api_errors *errs)
{
    return errs->oom;
}

/* True when some line equals s exactly (for tests and callers that look for one problem). */
bool api_errors_contains(const struct api_errors *errs, const char *s);

/* Writes every line followed by '\n' to out. Returns 0 or -ENOMEM. */
int api_errors_format(const struct api_errors *errs, struct buf *out);

/* Sums the list up into e: -ENOMEM when out of memory, otherwise -EINVAL with the lines joined
 * by "\n" (shortened to fit ERR_MSG_MAX), prefixed with `what` ("NestedEtcd ns/name") when
 * given. Returns the code it recorded, or 0 when the list is empty. */
int api_errors_to_err(const struct api_errors *errs, const char *what, struct err *e);

/* Writes v as short JSON text into out (at most outsz bytes, "..." when shortened). */
void api_errors_quote(const cJSON *v, char *out, size_t outsz);

#endif
