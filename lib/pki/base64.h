#ifndef NESTCP_PKI_BASE64_H
#define NESTCP_PKI_BASE64_H

/*
 * Standard base64 (RFC 4648 section 4, with padding, no line breaks), the encoding of a
 * Kubernetes Secret's `data` values and of a kubeconfig's `*-data` fields.
 */

#include <stddef.h>

#include "lib/util/err.h"

/* Encodes len bytes into a NUL-terminated string the caller frees. Returns 0 or -ENOMEM. */
int pki_base64_encode(const void *data, size_t len, char **ret_text);

/* Decodes text (exactly len characters, a multiple of 4, no whitespace) into a buffer the
 * caller frees, NUL-terminated for convenience (the terminator is not counted in
 * *ret_len). Output longer than max bytes is refused. Returns 0, -EINVAL (not base64),
 * -ENOBUFS (too long), -ENOMEM. */
int pki_base64_decode(const char *text, size_t len, size_t max, unsigned char **ret_data,
                      size_t *ret_len);

#endif
