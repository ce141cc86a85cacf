#ifndef NESTCP_PKI_INTERNAL_H
#define NESTCP_PKI_INTERNAL_H

/*
 * Shared by the files of lib/pki and nothing else: the OpenSSL boundary. Public headers of
 * lib/pki speak PEM text; these helpers turn PEM into OpenSSL objects and back, and turn the
 * OpenSSL error queue into a `struct err` message exactly once.
 */

#include <openssl/evp.h>
#include <openssl/x509.h>

#include "lib/pki/key.h"
#include "lib/util/err.h"

/* Records code and a message in e, followed by ": <reason>" from the first entry of the
 * OpenSSL error queue when there is one, and empties the queue. Returns code. OpenSSL reason
 * strings never hold key material. */
int pki_ossl_err(struct err *e, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Parses the first private key in pem (any of "PRIVATE KEY", "RSA PRIVATE KEY",
 * "EC PRIVATE KEY"; encrypted keys are refused without prompting). `what` names the input in
 * messages ("tls.key"). Returns 0, -EINVAL, -ENOBUFS (larger than PKI_PEM_MAX), -ENOMEM. */
int pki_ossl_load_key(const char *pem, const char *what, EVP_PKEY **ret_key, struct err *e);

/* Parses the first certificate in pem. Same conventions as pki_ossl_load_key. */
int pki_ossl_load_cert(const char *pem, const char *what, X509 **ret_cert, struct err *e);

/* Both remember the last 32 keys and the last 32 certificates they parsed, by the sha256 of
 * their PEM text, and hand out a new reference to the same object for the same text (the
 * caller frees it as always; nothing may change it). How many loads the memo answered, and
 * forgetting every object (tests). */
unsigned long pki_ossl_parsed_hits(void);
void pki_ossl_parsed_clear(void);

/* PEM-encodes a private key the way kubeadm writes it ("RSA PRIVATE KEY" / "EC PRIVATE KEY"),
 * a public key as "PUBLIC KEY" (PKIX), or a certificate. The result is a NUL-terminated
 * string the caller frees. Return 0 or -ENOMEM. */
int pki_ossl_key_pem(EVP_PKEY *key, char **ret_pem, struct err *e);
int pki_ossl_pubkey_pem(EVP_PKEY *key, char **ret_pem, struct err *e);
int pki_ossl_cert_pem(X509 *cert, char **ret_pem, struct err *e);

/* Generates a key of alg. Returns 0, -EINVAL (unknown alg), -ENOMEM. */
int pki_ossl_keygen(enum pki_key_alg alg, EVP_PKEY **ret_key, struct err *e);

/* Maps an OpenSSL key to a supported algorithm (enum pki_key_alg, from lib/pki/key.h).
 * Returns 0 or -ENOTSUP. */
int pki_key_alg_of_pkey(EVP_PKEY *k, enum pki_key_alg *ret_alg);

/* Converts an ASN1_TIME to seconds since the epoch. Returns 0 or -EINVAL. */
int pki_ossl_time(const ASN1_TIME *t, int64_t *ret);

#endif
