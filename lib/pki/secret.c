/* Cluster API Secrets holding key material (pki_secret_*). */

#include "lib/pki/secret.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>

#include "lib/pki/base64.h"
#include "lib/pki/cert.h"
#include "lib/pki/key.h"
#include "lib/pki/kubeconfig.h"

int pki_secret_name(const char *cluster, const char *purpose, char *out, size_t out_size)
{
    int n;

    if (!cluster || !*cluster || !purpose || !*purpose)
        return -EINVAL;
    n = snprintf(out, out_size, "%s-%s", cluster, purpose);
    return n < 0 || (size_t)n >= out_size || n > 253 ? -EINVAL : 0;
}

static int add_b64(cJSON *data, const char *key, const char *text, size_t len)
{
    char *b64 = NULL;
    cJSON *item;

    if (pki_base64_encode(text, len, &b64) < 0)
        return -ENOMEM;
    item = cJSON_CreateString(b64);
    OPENSSL_clear_free(b64, strlen(b64));
    if (!item || !cJSON_AddItemToObject(data, key, item)) {
        cJSON_Delete(item);
        return -ENOMEM;
    }
    return 0;
}

/* The Secret skeleton; *ret_data is its (empty) data object. */
static int secret_new(const char *cluster, const char *ns, const char *purpose, cJSON **ret_secret,
                      cJSON **ret_data, struct err *e)
{
    char name[254];
    cJSON *s, *meta, *labels, *data;

    if (!ns || !*ns)
        return err_set(e, -EINVAL, "Secret for cluster %.80s: namespace is required",
                       cluster ? cluster : "");
    if (pki_secret_name(cluster, purpose, name, sizeof(name)) < 0)
        return err_set(e, -EINVAL, "Secret name for cluster \"%.80s\" and purpose \"%.80s\"",
                       cluster ? cluster : "", purpose ? purpose : "");
    s = cJSON_CreateObject();
    if (!s || !cJSON_AddStringToObject(s, "apiVersion", "v1") ||
        !cJSON_AddStringToObject(s, "kind", "Secret") ||
        !(meta = cJSON_AddObjectToObject(s, "metadata")) ||
        !cJSON_AddStringToObject(meta, "name", name) ||
        !cJSON_AddStringToObject(meta, "namespace", ns) ||
        !(labels = cJSON_AddObjectToObject(meta, "labels")) ||
        !cJSON_AddStringToObject(labels, PKI_CLUSTER_NAME_LABEL, cluster) ||
        !cJSON_AddStringToObject(s, "type", PKI_SECRET_TYPE) ||
        !(data = cJSON_AddObjectToObject(s, "data"))) {
        cJSON_Delete(s);
        return err_set(e, -ENOMEM, "Secret %s/%s: out of memory", ns, name);
    }
    *ret_secret = s;
    *ret_data = data;
    return 0;
}

int pki_secret_tls_new(const char *cluster, const char *ns, const char *purpose,
                       const char *cert_pem, const char *key_pem, cJSON **ret_secret, struct err *e)
{
    cJSON *s = NULL, *data;
    int r;

    r = secret_new(cluster, ns, purpose, &s, &data, e);
    if (r < 0)
        return r;
    if ((cert_pem && add_b64(data, PKI_SECRET_TLS_CRT, cert_pem, strlen(cert_pem)) < 0) ||
        (key_pem && add_b64(data, PKI_SECRET_TLS_KEY, key_pem, strlen(key_pem)) < 0)) {
        cJSON_Delete(s);
        return err_set(e, -ENOMEM, "Secret %s/%s-%s: out of memory", ns, cluster, purpose);
    }
    *ret_secret = s;
    return 0;
}

int pki_secret_kubeconfig_new(const char *cluster, const char *ns, const char *kubeconfig,
                              cJSON **ret_secret, struct err *e)
{
    cJSON *s = NULL, *data;
    int r;

    if (!kubeconfig)
        return err_set(e, -EINVAL, "Secret %s-kubeconfig: no kubeconfig", cluster);
    r = secret_new(cluster, ns, PKI_PURPOSE_KUBECONFIG, &s, &data, e);
    if (r < 0)
        return r;
    if (add_b64(data, PKI_SECRET_KUBECONFIG_KEY, kubeconfig, strlen(kubeconfig)) < 0) {
        cJSON_Delete(s);
        return err_set(e, -ENOMEM, "Secret %s/%s-kubeconfig: out of memory", ns, cluster);
    }
    *ret_secret = s;
    return 0;
}

/* "ns/name" of a Secret object, for messages. */
static void secret_ref(const cJSON *secret, char *out, size_t size)
{
    const cJSON *meta = cJSON_GetObjectItemCaseSensitive(secret, "metadata");
    const cJSON *name = cJSON_GetObjectItemCaseSensitive(meta, "name");
    const cJSON *ns = cJSON_GetObjectItemCaseSensitive(meta, "namespace");

    snprintf(out, size, "%.253s/%.253s", cJSON_IsString(ns) ? ns->valuestring : "",
             cJSON_IsString(name) ? name->valuestring : "(unnamed)");
}

/* Decodes data[key] into a NUL-terminated string of at most max bytes. */
static int read_key(const cJSON *secret, const char *ref, const char *key, size_t max, char **ret,
                    size_t *ret_len, struct err *e)
{
    const cJSON *data = cJSON_GetObjectItemCaseSensitive(secret, "data");
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(data, key);
    unsigned char *bytes = NULL;
    size_t len = 0;
    int r;

    if (!v)
        return err_set(e, -ENOENT, "Secret %s: data.%s is missing", ref, key);
    if (!cJSON_IsString(v))
        return err_set(e, -EINVAL, "Secret %s: data.%s is not a string", ref, key);
    r = pki_base64_decode(v->valuestring, strlen(v->valuestring), max, &bytes, &len);
    if (r == -ENOBUFS)
        return err_set(e, r, "Secret %s: data.%s is larger than %zu bytes", ref, key, max);
    if (r < 0)
        return err_set(e, r, "Secret %s: data.%s is not base64", ref, key);
    if (memchr(bytes, '\0', len)) {
        OPENSSL_clear_free(bytes, len + 1);
        return err_set(e, -EINVAL, "Secret %s: data.%s is not text", ref, key);
    }
    *ret = (char *)bytes;
    if (ret_len)
        *ret_len = len;
    return 0;
}

static void free_key_text(char *s)
{
    if (s)
        OPENSSL_clear_free(s, strlen(s));
}

int pki_secret_read_tls(const cJSON *secret, char **ret_cert_pem, char **ret_key_pem, struct err *e)
{
    char ref[512];
    char *crt = NULL, *key = NULL;
    int r = 0;

    if (!cJSON_IsObject(secret))
        return err_set(e, -EINVAL, "not a Secret object");
    secret_ref(secret, ref, sizeof(ref));
    if (ret_cert_pem)
        r = read_key(secret, ref, PKI_SECRET_TLS_CRT, PKI_PEM_MAX, &crt, NULL, e);
    if (r == 0 && ret_key_pem)
        r = read_key(secret, ref, PKI_SECRET_TLS_KEY, PKI_PEM_MAX, &key, NULL, e);
    if (r < 0) {
        free(crt);
        free_key_text(key);
        return r;
    }
    if (ret_cert_pem)
        *ret_cert_pem = crt;
    if (ret_key_pem)
        *ret_key_pem = key;
    return 0;
}

int pki_secret_read_kubeconfig(const cJSON *secret, char **ret_kubeconfig, size_t *ret_len,
                               struct err *e)
{
    char ref[512];

    if (!cJSON_IsObject(secret))
        return err_set(e, -EINVAL, "not a Secret object");
    secret_ref(secret, ref, sizeof(ref));
    return read_key(secret, ref, PKI_SECRET_KUBECONFIG_KEY, PKI_KUBECONFIG_MAX, ret_kubeconfig,
                    ret_len, e);
}

int pki_secret_check_ca(const cJSON *secret, int64_t now, struct err *e)
{
    char ref[512];
    char *crt = NULL, *key = NULL;
    int r;

    r = pki_secret_read_tls(secret, &crt, &key, e);
    if (r < 0)
        return r;
    secret_ref(secret, ref, sizeof(ref));
    r = pki_cert_check_ca(crt, key, now, PKI_SECRET_TLS_CRT, PKI_SECRET_TLS_KEY, e);
    if (r < 0)
        err_prefix(e, "Secret %s: ", ref);
    free(crt);
    free_key_text(key);
    return r;
}

int pki_secret_check_sa(const cJSON *secret, struct err *e)
{
    char ref[512];
    char *crt = NULL, *key = NULL;
    int r;

    r = pki_secret_read_tls(secret, &crt, &key, e);
    if (r < 0)
        return r;
    secret_ref(secret, ref, sizeof(ref));
    r = pki_key_check_match(key, crt, PKI_SECRET_TLS_KEY, PKI_SECRET_TLS_CRT, e);
    if (r < 0)
        err_prefix(e, "Secret %s: ", ref);
    free(crt);
    free_key_text(key);
    return r;
}

/* read_key for a key that may be absent: 0 with *ret NULL then. */
static int read_optional(const cJSON *secret, const char *ref, const char *key, char **ret,
                         struct err *e)
{
    *ret = NULL;
    if (!cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(secret, "data"), key))
        return 0;
    return read_key(secret, ref, key, PKI_PEM_MAX, ret, NULL, e);
}

int pki_secret_read_sa_rotation(const cJSON *secret, char **ret_next_pub, char **ret_next_key,
                                char **ret_previous_pub, struct err *e)
{
    char ref[512];
    char *next_pub = NULL, *next_key = NULL, *prev = NULL;
    int r;

    if (!cJSON_IsObject(secret))
        return err_set(e, -EINVAL, "not a Secret object");
    secret_ref(secret, ref, sizeof(ref));
    if ((r = read_optional(secret, ref, PKI_SECRET_SA_NEXT_PUB, &next_pub, e)) < 0 ||
        (r = read_optional(secret, ref, PKI_SECRET_SA_NEXT_KEY, &next_key, e)) < 0 ||
        (r = read_optional(secret, ref, PKI_SECRET_SA_PREVIOUS_PUB, &prev, e)) < 0) {
        free(next_pub);
        free_key_text(next_key);
        free(prev);
        return r;
    }
    *ret_next_pub = next_pub;
    *ret_next_key = next_key;
    *ret_previous_pub = prev;
    return 0;
}

int pki_secret_check_sa_rotation(const cJSON *secret, struct err *e)
{
    char ref[512];
    char *next_pub, *next_key, *prev;
    int r;

    if ((r = pki_secret_read_sa_rotation(secret, &next_pub, &next_key, &prev, e)) < 0)
        return r;
    secret_ref(secret, ref, sizeof(ref));
    if (!next_pub != !next_key) {
        r = err_set(e, -EINVAL, "Secret %s: %s is present without %s", ref,
                    next_pub ? PKI_SECRET_SA_NEXT_PUB : PKI_SECRET_SA_NEXT_KEY,
                    next_pub ? PKI_SECRET_SA_NEXT_KEY : PKI_SECRET_SA_NEXT_PUB);
        goto out;
    }
    if (next_key && (r = pki_key_check_match(next_key, next_pub, PKI_SECRET_SA_NEXT_KEY,
                                             PKI_SECRET_SA_NEXT_PUB, e)) < 0) {
        err_prefix(e, "Secret %s: ", ref);
        r = -EINVAL;
        goto out;
    }
    if (prev && pki_key_public_check(prev, PKI_SECRET_SA_PREVIOUS_PUB, e) < 0) {
        err_prefix(e, "Secret %s: ", ref);
        r = -EINVAL;
        goto out;
    }
out:
    free(next_pub);
    free_key_text(next_key);
    free(prev);
    return r;
}

void pki_ca_rotation_done(struct pki_ca_rotation *rot)
{
    free(rot->next_crt);
    free_key_text(rot->next_key);
    free(rot->previous_crt);
    free_key_text(rot->previous_key);
    memset(rot, 0, sizeof(*rot));
}

/* The checks of pki_secret_check_ca_rotation; the reason in e, without the Secret. */
static int check_ca_rotation(const struct pki_ca_rotation *rot, int64_t now, struct err *e)
{
    struct pki_cert_info *info = NULL;
    int r;

    if (!rot->next_crt != !rot->next_key)
        return err_set(e, -EINVAL, "%s is present without %s",
                       rot->next_crt ? PKI_SECRET_CA_NEXT_CRT : PKI_SECRET_CA_NEXT_KEY,
                       rot->next_crt ? PKI_SECRET_CA_NEXT_KEY : PKI_SECRET_CA_NEXT_CRT);
    if (rot->previous_key && !rot->previous_crt)
        return err_set(e, -EINVAL, "%s is present without %s", PKI_SECRET_CA_PREVIOUS_KEY,
                       PKI_SECRET_CA_PREVIOUS_CRT);
    if (rot->next_crt && rot->previous_crt)
        return err_set(e, -EINVAL, "%s and %s are both present: a rotation has one of them",
                       PKI_SECRET_CA_NEXT_CRT, PKI_SECRET_CA_PREVIOUS_CRT);
    if (rot->next_crt &&
        (r = pki_cert_check_ca(rot->next_crt, rot->next_key, now, PKI_SECRET_CA_NEXT_CRT,
                               PKI_SECRET_CA_NEXT_KEY, e)) < 0)
        return r;
    if (rot->previous_key)
        return pki_cert_check_ca(rot->previous_crt, rot->previous_key, now,
                                 PKI_SECRET_CA_PREVIOUS_CRT, PKI_SECRET_CA_PREVIOUS_KEY, e);
    if (!rot->previous_crt)
        return 0;
    if ((r = pki_cert_info_read(rot->previous_crt, PKI_SECRET_CA_PREVIOUS_CRT, &info, e)) < 0)
        return r;
    r = info->is_ca ? 0
                    : err_set(e, -EINVAL, "%s is not a CA certificate", PKI_SECRET_CA_PREVIOUS_CRT);
    pki_cert_info_free(info);
    return r;
}

int pki_secret_read_ca_rotation(const cJSON *secret, struct pki_ca_rotation *ret, struct err *e)
{
    struct pki_ca_rotation rot = {0};
    char ref[512];
    int r;

    if (!cJSON_IsObject(secret))
        return err_set(e, -EINVAL, "not a Secret object");
    secret_ref(secret, ref, sizeof(ref));
    if ((r = read_optional(secret, ref, PKI_SECRET_CA_NEXT_CRT, &rot.next_crt, e)) < 0 ||
        (r = read_optional(secret, ref, PKI_SECRET_CA_NEXT_KEY, &rot.next_key, e)) < 0 ||
        (r = read_optional(secret, ref, PKI_SECRET_CA_PREVIOUS_CRT, &rot.previous_crt, e)) < 0 ||
        (r = read_optional(secret, ref, PKI_SECRET_CA_PREVIOUS_KEY, &rot.previous_key, e)) < 0) {
        pki_ca_rotation_done(&rot);
        return r;
    }
    *ret = rot;
    return 0;
}

int pki_secret_check_ca_rotation(const cJSON *secret, int64_t now, struct err *e)
{
    struct pki_ca_rotation rot;
    char ref[512];
    int r;

    if ((r = pki_secret_read_ca_rotation(secret, &rot, e)) < 0)
        return r;
    if ((r = check_ca_rotation(&rot, now, e)) < 0 && r != -ENOMEM) {
        secret_ref(secret, ref, sizeof(ref));
        err_prefix(e, "Secret %s: ", ref);
    }
    pki_ca_rotation_done(&rot);
    return r;
}
