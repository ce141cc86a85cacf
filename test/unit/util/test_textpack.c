#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>

#include "lib/util/textpack.h"

/* A CA certificate and its key, as a CA Secret holds them once decoded. */
static const char PAIR[] = "-----BEGIN CERTIFICATE-----\n"
                           "MIIBlDCCATqgAwIBAgIUML0xEvnmmMGs5nVvwDxNNtOByTswCgYIKoZIzj0EAwIw\n"
                           "FTETMBEGA1UEAwwKa3ViZXJuZXRlczAgFw0yNjEyMDIxNDI3MjBaGA8yMTI2MTEw\n"
                           "ODE0MjcyMFowFTETMBEGA1UEAwwKa3ViZXJuZXRlczBZMBMGByqGSM49AgEGCCqG\n"
                           "SM49AwEHA0IABKDUtTnUTYjKhaAgA9LOmrichRjXSfD2KxN9gZC3igRAOLi7REvQ\n"
                           "u0Om7t6GBVjJecEwLos4p+9uXkJ2MW6+0aSjZjBkMB0GA1UdDgQWBBRXxzGMnRtz\n"
                           "8mGbb5Dk5PtDWBtPXTAfBgNVHSMEGDAWgBRXxzGMnRtz8mGbb5Dk5PtDWBtPXTAS\n"
                           "BgNVHRMBAf8ECDAGAQH/AgEAMA4GA1UdDwEB/wQEAwIBhjAKBggqhkjOPQQDAgNI\n"
                           "ADBFAiEAr+nDRSE5vzJoQS6yiFvJONVp7HD2bXmul5NdhAMJf4ICIDNA727z2QuI\n"
                           "uZ8hkRJHADEDgIunBGzTy37nuViza0uE\n"
                           "-----END CERTIFICATE-----\n"
                           "-----BEGIN EC PRIVATE KEY-----\n"
                           "MHcCAQEEIJwtyWgTLnHmz5qNZ7VHZrkQrxYnqTo8AzoqWMqA2HbYoAoGCCqGSM49\n"
                           "AwEHoUQDQgAEoNS1OdRNiMqFoCAD0s6auJyFGNdJ8PYrE32BkLeKBEA4uLtES9C7\n"
                           "Q6bu3oYFWMl5wTAuizin725eQnYxbr7RpA==\n"
                           "-----END EC PRIVATE KEY-----\n";

static char *base64_of(const char *s, size_t n)
{
    char *out = malloc((n + 2) / 3 * 4 + 1);

    assert_non_null(out);
    EVP_EncodeBlock((unsigned char *)out, (const unsigned char *)s, (int)n);
    return out;
}

/* Packs text, checks that unpacking gives it back byte for byte, and returns the packed length
 * (0: nothing packed). */
static size_t round_trip(const char *text, size_t len)
{
    struct buf packed = BUF_INIT, back = BUF_INIT;
    int r = textpack_pack(text, len, &packed);
    size_t n = packed.len;

    assert_true(r == 0 || r == 1);
    if (r == 0) {
        assert_int_equal(packed.len, 0);
    } else {
        assert_int_equal(textpack_unpack(packed.data, packed.len, &back), 0);
        assert_int_equal(back.len, len);
        assert_memory_equal(back.data, text, len);
    }
    buf_done(&packed);
    buf_done(&back);
    return r ? n : 0;
}

/* A Secret's text: each value base64 of PEM, as the API server sends it. */
static char *secret_text(const char *value)
{
    char *b64 = base64_of(value, strlen(value)), *text;
    size_t n = strlen(b64) + 256;

    text = malloc(n);
    assert_non_null(text);
    snprintf(text, n,
             "{\"metadata\":{\"name\":\"c1-ca\",\"namespace\":\"t\"},\"data\":{\"tls.crt\":\"%s\"},"
             "\"type\":\"cluster.x-k8s.io/secret\"}",
             b64);
    free(b64);
    return text;
}

/* Text with no long run of base64 and no PEM block is left as it is. */
static void test_textpack__plain_text_is_not_packed(void **state)
{
    const char *text = "{\"metadata\":{\"name\":\"c1-etcd\",\"uid\":\"2c4b2ccc-054f-48b8-b154-9fc9"
                       "306ea859\"},\"spec\":{\"replicas\":3}}";

    (void)state;
    assert_int_equal(round_trip(text, strlen(text)), 0);
    assert_int_equal(round_trip("", 0), 0);
}

/* A Secret whose value is base64 of a certificate and key packs to their DER, which is smaller
 * than the two layers of base64 by about the third each layer adds, and unpacks to the same
 * text. */
static void test_textpack__a_secret_of_pem_packs_to_der_and_back(void **state)
{
    char *text = secret_text(PAIR);
    size_t len = strlen(text), packed = round_trip(text, len);

    (void)state;
    assert_true(packed > 0);
    assert_true(packed < len * 6 / 10);
    free(text);
}

/* A kubeconfig in a Secret: base64 of YAML whose *-data fields are base64 of PEM, three layers;
 * each is undone and put back. */
static void test_textpack__a_kubeconfig_in_a_secret_packs_every_layer(void **state)
{
    char *data = base64_of(PAIR, strlen(PAIR)), yaml[4096], *text;
    size_t len, packed;

    (void)state;
    snprintf(yaml, sizeof(yaml),
             "apiVersion: v1\nclusters:\n- cluster:\n    certificate-authority-data: %s\n"
             "    server: https://c1-apiserver:6443\n  name: c1\nusers:\n- name: admin\n"
             "  user:\n    client-certificate-data: %s\n",
             data, data);
    text = secret_text(yaml);
    len = strlen(text);
    packed = round_trip(text, len);
    assert_true(packed > 0);
    /* Two copies of the pair's DER, and the YAML: well under half. */
    assert_true(packed < len / 2);
    free(data);
    free(text);
}

/* What only looks like base64 or PEM is kept as it is: encoding it again would not give back
 * the same characters. */
static void test_textpack__what_would_not_encode_back_stays_text(void **state)
{
    char run[80], text[512];
    const char *body = "MIIBlDCCATqgAwIBAgIUML0xEvnmmMGs5nVvwDxNNtOByTswCgYIKoZIzj0EAwIw";

    (void)state;
    /* Unused bits set in the last character before the padding ("R=" rather than "Q="). */
    memset(run, 'A', 66);
    memcpy(run + 66, "R=", 3);
    assert_int_equal(round_trip(run, strlen(run)), 0);
    /* A run of 68 characters ending with three '=' is not base64. */
    memset(run, 'A', 65);
    memcpy(run + 65, "===", 4);
    assert_int_equal(round_trip(run, strlen(run)), 0);
    /* PEM whose lines are not 64 characters, or end with CR LF, or whose footer names another
     * label: the lines themselves may pack as base64, the block as a whole does not. */
    snprintf(text, sizeof(text), "-----BEGIN CERTIFICATE-----\n%sAAAA\n-----END CERTIFICATE-----\n",
             body);
    round_trip(text, strlen(text));
    snprintf(text, sizeof(text),
             "-----BEGIN CERTIFICATE-----\r\n%s\r\n-----END CERTIFICATE-----\r\n", body);
    round_trip(text, strlen(text));
    snprintf(text, sizeof(text), "-----BEGIN CERTIFICATE-----\n%s\n-----END PRIVATE KEY-----\n",
             body);
    round_trip(text, strlen(text));
    snprintf(text, sizeof(text), "-----BEGIN CERTIFICATE-----\n%s\n-----END CERTIFICATE", body);
    round_trip(text, strlen(text));
}

/* A PEM block at the very end of the text, with no line break after its footer, and text
 * before and after every part. */
static void test_textpack__parts_anywhere_in_the_text_come_back(void **state)
{
    char text[4096];
    size_t len = strlen(PAIR) - 1;

    (void)state;
    memcpy(text, PAIR, len);
    text[len] = '\0';
    assert_true(round_trip(text, len) > 0);
    snprintf(text, sizeof(text), "before\n%safter", PAIR);
    assert_true(round_trip(text, strlen(text)) > 0);
}

/* Bytes that are not a packed form are refused, not read past their end. */
static void test_textpack__unpack_refuses_what_is_not_a_packed_form(void **state)
{
    static const struct {
        const char *bytes;
        size_t len;
    } bad[] = {
        {"X\x01a", 3}, /* no such part */
        {"T\x05"
         "ab",
         4},          /* longer than the bytes */
        {"T", 1},     /* no length */
        {"T\x80", 2}, /* a length cut short */
        {"P\x03"
         "abc",
         5}, /* a PEM part without its label's end */
        {"B\x02"
         "Tz",
         4}, /* a base64 part whose inside is cut short */
    };
    struct buf out = BUF_INIT;

    (void)state;
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        buf_reset(&out);
        assert_int_equal(textpack_unpack(bad[i].bytes, bad[i].len, &out), -EINVAL);
    }
    buf_reset(&out);
    assert_int_equal(textpack_unpack("T\x02"
                                     "ok",
                                     4, &out),
                     0);
    assert_string_equal(out.data, "ok");
    buf_done(&out);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_textpack__plain_text_is_not_packed),
        cmocka_unit_test(test_textpack__a_secret_of_pem_packs_to_der_and_back),
        cmocka_unit_test(test_textpack__a_kubeconfig_in_a_secret_packs_every_layer),
        cmocka_unit_test(test_textpack__what_would_not_encode_back_stays_text),
        cmocka_unit_test(test_textpack__parts_anywhere_in_the_text_come_back),
        cmocka_unit_test(test_textpack__unpack_refuses_what_is_not_a_packed_form),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
