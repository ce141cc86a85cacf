#ifndef NESTCP_PKI_TLS_H
#define NESTCP_PKI_TLS_H

/*
 * Serving TLS: an OpenSSL server context from a certificate chain and key (PEM), and a
 * self-signed serving pair for when none is given (a throwaway CA and a leaf it signs, as
 * client-go's self-signed serving certificates are made).
 */

#include <stddef.h>
#include <stdint.h>

#include <openssl/ssl.h>

#include "lib/util/err.h"

/* A server context for chain_pem (the leaf first, then any intermediates) and key_pem:
 * TLS 1.2 and newer, the leaf's key checked against key_pem. `what` names the pair in messages
 * ("--metrics-cert-dir /etc/certs"). Returns 0 with *ret_ctx (free with SSL_CTX_free), -EINVAL
 * (no certificate, no key, or they do not match; e says which), -ENOBUFS, -ENOMEM. */
int pki_tls_server_ctx(const char *chain_pem, const char *key_pem, const char *what,
                       SSL_CTX **ret_ctx, struct err *e);

/* A self-signed serving pair for the DNS names and IP addresses in names (n of them; the
 * leaf's common name is the first): an ECDSA P-256 CA "<first name>-ca@<time>" valid for
 * validity seconds (0: one year) and a serverAuth leaf it signs. *ret_chain_pem holds the
 * leaf then the CA, *ret_key_pem the leaf's key (the CA's key is not kept). Returns 0, -EINVAL
 * (a bad name), -ENOMEM. */
int pki_tls_self_signed(const char *const *names, size_t n, int64_t validity, char **ret_chain_pem,
                        char **ret_key_pem, struct err *e);

#endif
