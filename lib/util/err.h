#ifndef NESTCP_UTIL_ERR_H
#define NESTCP_UTIL_ERR_H

/*
 * Error detail, the one kind there is. Functions return 0 or a negative errno-style code; when
 * the caller passes a `struct err *`, the callee also leaves a human-readable message there
 * that names the object and field at fault. The message never contains key material or
 * Secret data.
 *
 * Where a user should see every problem at once rather than the first (validating a
 * manifest), the callee collects the same kind of message, one a line, in a struct api_errors
 * (api/errors.h, as Kubernetes' field.ErrorList collects field.Errors), which the caller sums
 * up into a struct err (api_errors_to_err) or prints whole.
 */

#include <stddef.h>

#define ERR_MSG_MAX 1024

struct err {
    int code;              /* the negative errno-style code that was returned */
    char msg[ERR_MSG_MAX]; /* "" when no detail was recorded */
};

/* Clears an error (NULL is accepted). */
void err_clear(struct err *e);

/* Records code and a printf-style message into e (NULL is accepted) and returns code, so a
 * caller can write `return err_set(e, -EINVAL, "spec.replicas: %d is negative", n);`. */
int err_set(struct err *e, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Prefixes the message already in e with a printf-style context ("NestedEtcd default/x: ").
 * Returns e->code (0 if e is NULL). */
int err_prefix(struct err *e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* A short, stable name for a code as errno means it: "not found", "busy", "timed out", ...;
 * never NULL. A layer that gives a code a meaning of its own names it too (kube_code_name:
 * -EBUSY is an API server's "conflict"). */
const char *err_code_name(int code);

#endif
