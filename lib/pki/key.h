#ifndef NESTCP_PKI_KEY_H
#define NESTCP_PKI_KEY_H

/*
 * Private keys as PEM text. Generated keys are written the way kubeadm and Cluster API write
 * them: "EC PRIVATE KEY" (SEC 1) for ECDSA and "RSA PRIVATE KEY" (PKCS #1) for RSA. Reading
 * accepts those and PKCS #8 "PRIVATE KEY"; encrypted keys are refused.
 *
 * Every function returns 0 or a negative errno-style code and leaves a message in e (when
 * given) that names the input; no message ever holds key material.
 */

#include <stdbool.h>
#include <stddef.h>

#include "lib/util/err.h"

/* The largest PEM text (certificate, key or chain) any function here reads. */
#define PKI_PEM_MAX (64 * 1024)

/* The algorithms kubeadm v1beta4's `encryptionAlgorithm` names. ECDSA-P256 is the default. */
enum pki_key_alg {
    PKI_KEY_ECDSA_P256 = 0,
    PKI_KEY_ECDSA_P384,
    PKI_KEY_RSA_2048,
    PKI_KEY_RSA_3072,
    PKI_KEY_RSA_4096,
};

/* "ECDSA-P256", "ECDSA-P384", "RSA-2048", "RSA-3072", "RSA-4096" (kubeadm's spelling). */
const char *pki_key_alg_name(enum pki_key_alg alg);

/* Parses one of the names above (case-sensitive, as kubeadm). Returns 0 or -EINVAL. */
int pki_key_alg_parse(const char *s, enum pki_key_alg *ret_alg);

/* Generates a key; *ret_key_pem is a NUL-terminated PEM string the caller frees.
 * RSA keys cost tens of milliseconds or more of CPU (see docs/certificates.md).
 * Returns 0, -EINVAL (unknown alg), -ENOMEM. */
int pki_key_generate(enum pki_key_alg alg, char **ret_key_pem, struct err *e);

/* Reads the algorithm of a private key. Keys that are neither RSA of 2048/3072/4096 bits nor
 * ECDSA on P-256/P-384 are -ENOTSUP. Returns 0, -EINVAL (no key in the PEM), -ENOTSUP. */
int pki_key_alg_of(const char *key_pem, enum pki_key_alg *ret_alg, struct err *e);

/* Writes the public half of a private key as a "PUBLIC KEY" (PKIX) PEM, the form the
 * service-account Secret keeps in tls.crt. Returns 0, -EINVAL, -ENOMEM. */
int pki_key_public_pem(const char *key_pem, char **ret_pub_pem, struct err *e);

/* Checks that key_pem is the private half of the public key in pub_or_cert_pem, which is
 * either a certificate (the first of a chain) or a "PUBLIC KEY" PEM. Returns 0 when it is,
 * -EKEYREJECTED when it is not ("tls.key does not match tls.crt"), -EINVAL when either does
 * not parse. `key_what`/`cert_what` name the inputs in messages (NULL: "key", "certificate"). */
int pki_key_check_match(const char *key_pem, const char *pub_or_cert_pem, const char *key_what,
                        const char *cert_what, struct err *e);

/* Checks that pub_pem is a readable "PUBLIC KEY" PEM (`what` names it in messages). Returns
 * 0, -EINVAL, -ENOBUFS, -ENOMEM. */
int pki_key_public_check(const char *pub_pem, const char *what, struct err *e);

#endif
