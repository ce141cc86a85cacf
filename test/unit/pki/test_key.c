#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/core_names.h>

#include "lib/pki/base64.h"
#include "lib/pki/internal.h"
#include "lib/pki/key.h"
#include "test/unit/pki/pki_check.h"

static void test_key__algorithm_names_round_trip(void **state)
{
    enum pki_key_alg alg;
    const char *names[] = {"ECDSA-P256", "ECDSA-P384", "RSA-2048", "RSA-3072", "RSA-4096"};

    for (size_t i = 0; i < 5; i++) {
        assert_int_equal(pki_key_alg_parse(names[i], &alg), 0);
        assert_string_equal(pki_key_alg_name(alg), names[i]);
    }
    assert_int_equal(pki_key_alg_parse("rsa-2048", &alg), -EINVAL);
    assert_int_equal(pki_key_alg_parse("ECDSA-P521", &alg), -EINVAL);
    assert_int_equal(pki_key_alg_parse(NULL, &alg), -EINVAL);
}

/* Each algorithm gives a key of that type and size, in the PEM form kubeadm writes. */
static void test_key__generate_gives_requested_type_and_size(void **state)
{
    struct {
        enum pki_key_alg alg;
        const char *type;
        int bits;
        const char *header;
        const char *group;
    } cases[] = {
        {PKI_KEY_ECDSA_P256, "EC", 256, "-----BEGIN EC PRIVATE KEY-----", "prime256v1"},
        {PKI_KEY_ECDSA_P384, "EC", 384, "-----BEGIN EC PRIVATE KEY-----", "secp384r1"},
        {PKI_KEY_RSA_2048, "RSA", 2048, "-----BEGIN RSA PRIVATE KEY-----", NULL},
        {PKI_KEY_RSA_3072, "RSA", 3072, "-----BEGIN RSA PRIVATE KEY-----", NULL},
        {PKI_KEY_RSA_4096, "RSA", 4096, "-----BEGIN RSA PRIVATE KEY-----", NULL},
    };

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char *pem = NULL;
        enum pki_key_alg back;
        struct err e;
        char group[64];

        assert_int_equal(pki_key_generate(cases[i].alg, &pem, &e), 0);
        assert_true(strncmp(pem, cases[i].header, strlen(cases[i].header)) == 0);
        EVP_PKEY *k = pem_pkey(pem);
        assert_non_null(k);
        assert_true(EVP_PKEY_is_a(k, cases[i].type));
        assert_int_equal(EVP_PKEY_get_bits(k), cases[i].bits);
        if (cases[i].group) {
            assert_true(EVP_PKEY_get_utf8_string_param(k, OSSL_PKEY_PARAM_GROUP_NAME, group,
                                                       sizeof(group), NULL));
            assert_string_equal(group, cases[i].group);
        }
        assert_int_equal(pki_key_alg_of(pem, &back, &e), 0);
        assert_int_equal(back, cases[i].alg);
        EVP_PKEY_free(k);
        free(pem);
    }
}

static void test_key__public_pem_matches_private(void **state)
{
    char *key = NULL, *other = NULL, *pub = NULL;
    struct err e;

    assert_int_equal(pki_key_generate(PKI_KEY_ECDSA_P256, &key, NULL), 0);
    assert_int_equal(pki_key_generate(PKI_KEY_ECDSA_P256, &other, NULL), 0);
    assert_int_equal(pki_key_public_pem(key, &pub, &e), 0);
    assert_true(strncmp(pub, "-----BEGIN PUBLIC KEY-----", 26) == 0);
    assert_null(strstr(pub, "PRIVATE"));
    assert_int_equal(pki_key_check_match(key, pub, "tls.key", "tls.crt", &e), 0);
    assert_int_equal(pki_key_check_match(other, pub, "tls.key", "tls.crt", &e), -EKEYREJECTED);
    assert_string_equal(e.msg, "tls.key does not match tls.crt");
    free(key);
    free(other);
    free(pub);
}

/* A key parsed again is answered from the memo of parsed keys, and still only for its own
 * text: another key, a key one byte different, and a key whose text was overwritten in place
 * are each read from their text. More keys than the memo holds all still read right. */
static void test_key__parsed_keys_are_remembered_by_their_text(void **state)
{
    char *key = NULL, *other = NULL, *pub = NULL, *other_pub = NULL, *keys[40];
    unsigned long hits;
    struct err e;

    pki_ossl_parsed_clear();
    assert_int_equal(pki_key_generate(PKI_KEY_ECDSA_P256, &key, NULL), 0);
    assert_int_equal(pki_key_generate(PKI_KEY_ECDSA_P256, &other, NULL), 0);
    assert_int_equal(pki_key_public_pem(key, &pub, &e), 0);
    assert_int_equal(pki_key_public_pem(other, &other_pub, &e), 0);
    hits = pki_ossl_parsed_hits();
    assert_int_equal(pki_key_check_match(key, pub, "tls.key", "tls.crt", &e), 0);
    assert_int_equal(pki_ossl_parsed_hits(), hits + 1);
    assert_int_equal(pki_key_check_match(other, pub, "tls.key", "tls.crt", &e), -EKEYREJECTED);
    assert_int_equal(pki_key_check_match(other, other_pub, "tls.key", "tls.crt", &e), 0);

    /* the same buffer, now holding the other key: read as the other key */
    assert_int_equal(strlen(key), strlen(other));
    memcpy(key, other, strlen(other));
    assert_int_equal(pki_key_check_match(key, pub, "tls.key", "tls.crt", &e), -EKEYREJECTED);
    assert_int_equal(pki_key_check_match(key, other_pub, "tls.key", "tls.crt", &e), 0);

    /* a byte of its text changed: read from the text, not the memo */
    hits = pki_ossl_parsed_hits();
    key[40] = key[40] == 'A' ? 'B' : 'A';
    pki_key_check_match(key, other_pub, "tls.key", "tls.crt", &e);
    assert_int_equal(pki_ossl_parsed_hits(), hits);

    for (int i = 0; i < 40; i++)
        assert_int_equal(pki_key_generate(PKI_KEY_ECDSA_P256, &keys[i], NULL), 0);
    for (int round = 0; round < 2; round++)
        for (int i = 0; i < 40; i++) {
            char *p = NULL;
            assert_int_equal(pki_key_public_pem(keys[i], &p, &e), 0);
            assert_int_equal(pki_key_check_match(keys[i], p, "tls.key", "tls.crt", &e), 0);
            assert_int_equal(pki_key_check_match(keys[(i + 1) % 40], p, "tls.key", "tls.crt", &e),
                             -EKEYREJECTED);
            free(p);
        }
    for (int i = 0; i < 40; i++)
        free(keys[i]);
    pki_ossl_parsed_clear();
    free(key);
    free(other);
    free(pub);
    free(other_pub);
}

/* PKCS #8 keys (what `openssl genpkey` writes) are read as well; encrypted keys are refused
 * rather than prompting for a password. */
static void test_key__reads_pkcs8_and_refuses_encrypted(void **state)
{
    EVP_PKEY *k = EVP_PKEY_Q_keygen(NULL, NULL, "EC", "P-256");
    BIO *plain = BIO_new(BIO_s_mem()), *enc = BIO_new(BIO_s_mem());
    char *data;
    enum pki_key_alg alg;
    struct err e;

    assert_true(PEM_write_bio_PrivateKey(plain, k, NULL, NULL, 0, NULL, NULL));
    assert_true(
        PEM_write_bio_PrivateKey(enc, k, EVP_aes_128_cbc(), (unsigned char *)"pw", 2, NULL, NULL));
    BIO_write(plain, "", 1);
    BIO_write(enc, "", 1);
    BIO_get_mem_data(plain, &data);
    assert_true(strncmp(data, "-----BEGIN PRIVATE KEY-----", 27) == 0);
    assert_int_equal(pki_key_alg_of(data, &alg, &e), 0);
    assert_int_equal(alg, PKI_KEY_ECDSA_P256);
    BIO_get_mem_data(enc, &data);
    assert_int_equal(pki_key_alg_of(data, &alg, &e), -EINVAL);
    assert_non_null(strstr(e.msg, "key: no readable PEM private key"));
    BIO_free(plain);
    BIO_free(enc);
    EVP_PKEY_free(k);
}

static void test_key__unsupported_and_garbage_keys_are_named(void **state)
{
    EVP_PKEY *k = EVP_PKEY_Q_keygen(NULL, NULL, "RSA", (size_t)1024);
    BIO *b = BIO_new(BIO_s_mem());
    char *data, *pem = NULL;
    enum pki_key_alg alg;
    struct err e;

    PEM_write_bio_PrivateKey(b, k, NULL, NULL, 0, NULL, NULL);
    BIO_write(b, "", 1);
    BIO_get_mem_data(b, &data);
    assert_int_equal(pki_key_alg_of(data, &alg, &e), -ENOTSUP);
    assert_string_equal(
        e.msg, "key: RSA keys of 1024 bits are not supported (use RSA or ECDSA P-256/P-384)");
    assert_int_equal(pki_key_alg_of("not a key", &alg, &e), -EINVAL);
    assert_int_equal(pki_key_public_pem(NULL, &pem, &e), -EINVAL);
    assert_string_equal(e.msg, "key: missing");
    assert_int_equal(pki_key_generate((enum pki_key_alg)42, &pem, &e), -EINVAL);
    BIO_free(b);
    EVP_PKEY_free(k);
}

/* A key cut short at any byte is an error, never a crash or a different key. */
static void test_key__truncated_pem_at_every_byte_is_refused(void **state)
{
    char *pem = NULL;
    enum pki_key_alg alg;

    assert_int_equal(pki_key_generate(PKI_KEY_ECDSA_P256, &pem, NULL), 0);
    size_t n = strlen(pem);
    /* The END line's last dashes and the final newline are not needed by the PEM reader. */
    size_t needed = n - strlen("-----\n");
    for (size_t cut = 0; cut < n; cut++) {
        char *part = strndup(pem, cut);
        int r = pki_key_alg_of(part, &alg, NULL);
        if (cut < needed)
            assert_int_equal(r, -EINVAL);
        free(part);
    }
    free(pem);
}

static void test_base64__round_trips_and_rejects_junk(void **state)
{
    const char *cases[][2] = {{"", ""},        {"f", "Zg=="},        {"fo", "Zm8="},
                              {"foo", "Zm9v"}, {"foob", "Zm9vYg=="}, {"fooba", "Zm9vYmE="}};
    unsigned char *out;
    size_t len;
    char *text;

    for (size_t i = 0; i < 6; i++) {
        assert_int_equal(pki_base64_encode(cases[i][0], strlen(cases[i][0]), &text), 0);
        assert_string_equal(text, cases[i][1]);
        free(text);
        assert_int_equal(pki_base64_decode(cases[i][1], strlen(cases[i][1]), 100, &out, &len), 0);
        assert_int_equal(len, strlen(cases[i][0]));
        assert_memory_equal(out, cases[i][0], len);
        assert_int_equal(out[len], '\0');
        free(out);
    }
    assert_int_equal(pki_base64_decode("Zm9", 3, 100, &out, &len), -EINVAL);
    assert_int_equal(pki_base64_decode("Zm 9", 4, 100, &out, &len), -EINVAL);
    assert_int_equal(pki_base64_decode("Z=9v", 4, 100, &out, &len), -EINVAL);
    assert_int_equal(pki_base64_decode("Zm9v\n", 5, 100, &out, &len), -EINVAL);
    assert_int_equal(pki_base64_decode("Zm9vYmE=", 8, 4, &out, &len), -ENOBUFS);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_key__algorithm_names_round_trip),
        cmocka_unit_test(test_key__generate_gives_requested_type_and_size),
        cmocka_unit_test(test_key__public_pem_matches_private),
        cmocka_unit_test(test_key__parsed_keys_are_remembered_by_their_text),
        cmocka_unit_test(test_key__reads_pkcs8_and_refuses_encrypted),
        cmocka_unit_test(test_key__unsupported_and_garbage_keys_are_named),
        cmocka_unit_test(test_key__truncated_pem_at_every_byte_is_refused),
        cmocka_unit_test(test_base64__round_trips_and_rejects_junk),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
