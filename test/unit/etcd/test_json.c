/* The documents of etcd's JSON gateway: member lists, status, health and errors as etcd 3.6
 * writes them, uint64 IDs beyond 2^53, request bodies, and malformed input. */

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "lib/etcd/json.h"
#include "lib/util/buf.h"

/* What etcd 3.6.17 answered to member/add of a learner in a 1-member cluster. */
static const char ADD_RESPONSE[] =
    "{\"header\":{\"cluster_id\":\"1126502087536705\", \"member_id\":\"14593247367553392847\", "
    "\"raft_term\":\"2\"}, \"member\":{\"ID\":\"6940122672365168004\", "
    "\"peerURLs\":[\"http://127.0.77.2:23800\"], \"isLearner\":true}, "
    "\"members\":[{\"ID\":\"6940122672365168004\", \"peerURLs\":[\"http://127.0.77.2:23800\"], "
    "\"isLearner\":true}, {\"ID\":\"14593247367553392847\", \"name\":\"m0\", "
    "\"peerURLs\":[\"http://127.0.77.1:23800\"], \"clientURLs\":[\"http://127.0.77.1:23790\"]}]}";

/* What etcd 3.6.17 answered to maintenance/status. */
static const char STATUS_RESPONSE[] =
    "{\"header\":{\"cluster_id\":\"1126502087536705\", \"member_id\":\"14593247367553392847\", "
    "\"revision\":\"1\", \"raft_term\":\"2\"}, \"version\":\"3.6.17\", \"dbSize\":\"20480\", "
    "\"leader\":\"14593247367553392847\", \"raftIndex\":\"4\", \"raftTerm\":\"2\", "
    "\"raftAppliedIndex\":\"4\", \"dbSizeInUse\":\"16384\", \"storageVersion\":\"3.6.0\", "
    "\"dbSizeQuota\":\"2147483648\", \"downgradeInfo\":{}}";

static int parse_members(const char *json, struct etcd_member_list **ret, struct err *e)
{
    return etcd_json_parse_members(json, strlen(json), ret, e);
}

static void test_json__member_list_as_etcd_writes_it(void **state)
{
    struct etcd_member_list *l = NULL;
    const struct etcd_member *m;
    struct err e;

    assert_int_equal(parse_members(ADD_RESPONSE, &l, &e), 0);
    assert_int_equal(l->header.cluster_id, UINT64_C(1126502087536705));
    assert_int_equal(l->header.member_id, UINT64_C(14593247367553392847));
    assert_int_equal(l->header.raft_term, 2);
    assert_int_equal(l->header.revision, 0);
    assert_int_equal(l->n_members, 2);

    /* The learner that has not started: no name, no client URLs. */
    m = &l->members[0];
    assert_int_equal(m->id, UINT64_C(6940122672365168004));
    assert_string_equal(m->name, "");
    assert_true(m->is_learner);
    assert_int_equal(m->n_peer_urls, 1);
    assert_string_equal(m->peer_urls[0], "http://127.0.77.2:23800");
    assert_int_equal(m->n_client_urls, 0);

    m = &l->members[1];
    assert_int_equal(m->id, UINT64_C(14593247367553392847));
    assert_string_equal(m->name, "m0");
    assert_false(m->is_learner);
    assert_int_equal(m->n_client_urls, 1);
    assert_string_equal(m->client_urls[0], "http://127.0.77.1:23790");

    assert_non_null(l->added);
    assert_int_equal(l->added->id, UINT64_C(6940122672365168004));
    assert_true(l->added->is_learner);

    assert_ptr_equal(etcd_member_list_find(l, UINT64_C(14593247367553392847)), &l->members[1]);
    assert_null(etcd_member_list_find(l, 1));
    assert_ptr_equal(etcd_member_list_find_peer_url(l, "http://127.0.77.2:23800"), &l->members[0]);
    assert_null(etcd_member_list_find_peer_url(l, "http://127.0.77.2:2380"));
    assert_null(etcd_member_list_find_peer_url(NULL, "x"));
    etcd_member_list_free(l);
    etcd_member_list_free(NULL);
}

/* IDs are read from their digits: 2^53 + 1 and UINT64_MAX survive, where a double would round
 * them. */
static void test_json__ids_above_2_53_are_exact(void **state)
{
    struct etcd_member_list *l = NULL;
    struct err e;

    assert_int_equal(
        parse_members("{\"members\":[{\"ID\":\"9007199254740993\"},"
                      "{\"ID\":\"18446744073709551615\"},{\"ID\":\"9007199254740992\"}]}",
                      &l, &e),
        0);
    assert_int_equal(l->n_members, 3);
    assert_true(l->members[0].id == UINT64_C(9007199254740993));
    assert_true(l->members[1].id == UINT64_MAX);
    assert_true(l->members[2].id == UINT64_C(9007199254740992));
    /* The neighbours a double would confuse stay apart. */
    assert_ptr_equal(etcd_member_list_find(l, UINT64_C(9007199254740993)), &l->members[0]);
    assert_ptr_equal(etcd_member_list_find(l, UINT64_C(9007199254740992)), &l->members[2]);
    etcd_member_list_free(l);
}

/* A JSON number is taken only below 2^53, where a double cannot have rounded it. */
static void test_json__number_ids_only_while_exact(void **state)
{
    static const char *const refused[] = {
        /* 2^53 + 1 parses into the double 2^53, so 2^53 is refused too. */
        "9007199254740992", "9007199254740993", "1e19", "-1", "1.5", "18446744073709551615",
    };
    struct etcd_member_list *l = NULL;
    char doc[128];
    struct err e;

    assert_int_equal(parse_members("{\"members\":[{\"ID\":12345}]}", &l, &e), 0);
    assert_int_equal(l->members[0].id, 12345);
    etcd_member_list_free(l);
    assert_int_equal(parse_members("{\"members\":[{\"ID\":9007199254740991}]}", &l, &e), 0);
    assert_true(l->members[0].id == UINT64_C(9007199254740991));
    etcd_member_list_free(l);
    for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
        l = NULL;
        snprintf(doc, sizeof(doc), "{\"members\":[{\"ID\":%s}]}", refused[i]);
        assert_int_equal(parse_members(doc, &l, &e), -EBADMSG);
        assert_null(l);
        assert_non_null(strstr(e.msg, "members[0].ID"));
    }
}

static void test_json__parse_id_is_strict(void **state)
{
    static const char *const bad[] = {"", "-1", "+1", " 1", "1 ", "0x10", "1e3", "12a", "١"};
    uint64_t id = 7;
    char out[ETCD_ID_STRLEN];

    assert_int_equal(etcd_json_parse_id("0", &id), 0);
    assert_int_equal(id, 0);
    assert_int_equal(etcd_json_parse_id("00000000000000000000000042", &id), 0);
    assert_int_equal(id, 42);
    assert_int_equal(etcd_json_parse_id("18446744073709551615", &id), 0);
    assert_true(id == UINT64_MAX);
    id = 7;
    assert_int_equal(etcd_json_parse_id("18446744073709551616", &id), -ERANGE);
    assert_int_equal(etcd_json_parse_id("99999999999999999999", &id), -ERANGE);
    assert_int_equal(id, 7);
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        assert_int_equal(etcd_json_parse_id(bad[i], &id), -EINVAL);
    assert_int_equal(etcd_json_parse_id(NULL, &id), -EINVAL);
    assert_int_equal(id, 7);

    assert_string_equal(etcd_json_format_id(UINT64_MAX, out), "18446744073709551615");
    assert_string_equal(etcd_json_format_id(UINT64_C(9007199254740993), out), "9007199254740993");
}

static void test_json__malformed_member_lists_are_refused(void **state)
{
    static const struct {
        const char *doc;
        int code;
        const char *says;
    } cases[] = {
        {"", -EBADMSG, "empty"},
        {"not json", -EBADMSG, "not a JSON object"},
        {"[]", -EBADMSG, "not a JSON object"},
        {"\"members\"", -EBADMSG, "not a JSON object"},
        {"{\"members\":{}}", -EBADMSG, "members: not an array"},
        {"{\"members\":[1]}", -EBADMSG, "members[0]: not an object"},
        {"{\"members\":[{\"name\":\"m0\"}]}", -EBADMSG, "members[0].ID: missing"},
        {"{\"members\":[{\"ID\":\"abc\"}]}", -EBADMSG, "members[0].ID"},
        {"{\"members\":[{\"ID\":\"-1\"}]}", -EBADMSG, "members[0].ID"},
        {"{\"members\":[{\"ID\":\"0\"}]}", -EBADMSG, "members[0].ID: is 0"},
        {"{\"members\":[{\"ID\":\"18446744073709551616\"}]}", -EBADMSG, "larger than a uint64"},
        {"{\"members\":[{\"ID\":true}]}", -EBADMSG, "members[0].ID: not an integer"},
        {"{\"members\":[{\"ID\":\"1\",\"name\":7}]}", -EBADMSG, "members[0].name"},
        {"{\"members\":[{\"ID\":\"1\",\"peerURLs\":\"http://a\"}]}", -EBADMSG,
         "members[0].peerURLs: not an array"},
        {"{\"members\":[{\"ID\":\"1\",\"peerURLs\":[\"http://a\",3]}]}", -EBADMSG,
         "members[0].peerURLs[1]: not a string"},
        {"{\"members\":[{\"ID\":\"1\",\"clientURLs\":[null]}]}", -EBADMSG,
         "members[0].clientURLs[0]"},
        {"{\"members\":[{\"ID\":\"1\",\"isLearner\":\"true\"}]}", -EBADMSG,
         "members[0].isLearner: not a boolean"},
        {"{\"members\":[{\"ID\":\"1\"},{\"ID\":\"2\"},{\"ID\":\"1\"}]}", -EBADMSG,
         "members[2].ID: appears twice"},
        {"{\"header\":[],\"members\":[]}", -EBADMSG, "header: not an object"},
        {"{\"header\":{\"cluster_id\":\"x\"}}", -EBADMSG, "header.cluster_id"},
        {"{\"member\":{\"peerURLs\":[]}}", -EBADMSG, "member.ID: missing"},
        {"{\"members\":[{\"ID\":\"1\"}]", -EBADMSG, "not a JSON object"},
    };
    struct etcd_member_list *l;
    struct err e;

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        l = NULL;
        err_clear(&e);
        assert_int_equal(parse_members(cases[i].doc, &l, &e), cases[i].code);
        assert_null(l);
        if (!strstr(e.msg, cases[i].says))
            fail_msg("%s: message \"%s\" lacks \"%s\"", cases[i].doc, e.msg, cases[i].says);
    }
    /* Fields at their zero value may be absent, and null reads as absent. */
    l = NULL;
    assert_int_equal(parse_members("{}", &l, &e), 0);
    assert_int_equal(l->n_members, 0);
    assert_null(l->added);
    etcd_member_list_free(l);
    assert_int_equal(
        parse_members("{\"members\":[{\"ID\":\"5\",\"name\":null,\"peerURLs\":null}]}", &l, &e), 0);
    assert_string_equal(l->members[0].name, "");
    assert_int_equal(l->members[0].n_peer_urls, 0);
    etcd_member_list_free(l);
}

static void test_json__bounds(void **state)
{
    struct etcd_member_list *l = NULL;
    struct buf b;
    struct err e;

    /* ETCD_MEMBERS_MAX members pass, one more does not. */
    buf_init(&b, 0);
    assert_int_equal(buf_puts(&b, "{\"members\":["), 0);
    for (int i = 1; i <= ETCD_MEMBERS_MAX + 1; i++)
        assert_int_equal(buf_printf(&b, "%s{\"ID\":\"%d\"}", i > 1 ? "," : "", i), 0);
    assert_int_equal(buf_puts(&b, "]}"), 0);
    assert_int_equal(etcd_json_parse_members(b.data, b.len, &l, &e), -E2BIG);
    assert_null(l);
    buf_reset(&b);

    assert_int_equal(buf_puts(&b, "{\"members\":[{\"ID\":\"1\",\"peerURLs\":["), 0);
    for (int i = 0; i <= ETCD_URLS_MAX; i++)
        assert_int_equal(buf_printf(&b, "%s\"https://10.0.0.%d:2380\"", i ? "," : "", i), 0);
    assert_int_equal(buf_puts(&b, "]}]}"), 0);
    assert_int_equal(etcd_json_parse_members(b.data, b.len, &l, &e), -E2BIG);
    buf_reset(&b);

    /* A URL past its bound. */
    assert_int_equal(buf_puts(&b, "{\"members\":[{\"ID\":\"1\",\"peerURLs\":[\"https://"), 0);
    for (int i = 0; i < ETCD_URL_MAX; i++)
        assert_int_equal(buf_puts(&b, "a"), 0);
    assert_int_equal(buf_puts(&b, "\"]}]}"), 0);
    assert_int_equal(etcd_json_parse_members(b.data, b.len, &l, &e), -EBADMSG);
    assert_non_null(strstr(e.msg, "longer than its bound"));
    buf_reset(&b);

    /* A document past ETCD_JSON_MAX is not even parsed. */
    assert_int_equal(buf_puts(&b, "{\"members\":[]"), 0);
    while (b.len <= ETCD_JSON_MAX)
        assert_int_equal(buf_puts(&b, "                                "), 0);
    assert_int_equal(buf_puts(&b, "}"), 0);
    assert_int_equal(etcd_json_parse_members(b.data, b.len, &l, &e), -EBADMSG);
    assert_non_null(strstr(e.msg, "larger than"));
    buf_done(&b);
    assert_null(l);
}

/* Every truncation of a valid document is refused cleanly (the sanitizers watch the rest). */
static void test_json__every_truncation_is_refused(void **state)
{
    size_t n = strlen(ADD_RESPONSE), ns = strlen(STATUS_RESPONSE);
    struct etcd_member_list *l;
    struct etcd_status s;
    struct err e;

    for (size_t i = 0; i < n; i++) {
        char *copy = malloc(i + 1);

        assert_non_null(copy);
        memcpy(copy, ADD_RESPONSE, i);
        l = NULL;
        assert_int_equal(etcd_json_parse_members(copy, i, &l, &e), -EBADMSG);
        assert_null(l);
        free(copy);
    }
    for (size_t i = 0; i < ns; i++) {
        char *copy = malloc(i + 1);

        assert_non_null(copy);
        memcpy(copy, STATUS_RESPONSE, i);
        assert_int_equal(etcd_json_parse_status(copy, i, &s, &e), -EBADMSG);
        free(copy);
    }
}

static void test_json__status_as_etcd_writes_it(void **state)
{
    struct etcd_status s;
    struct err e;

    assert_int_equal(etcd_json_parse_status(STATUS_RESPONSE, strlen(STATUS_RESPONSE), &s, &e), 0);
    assert_int_equal(s.header.cluster_id, UINT64_C(1126502087536705));
    assert_true(s.header.member_id == UINT64_C(14593247367553392847));
    assert_int_equal(s.header.revision, 1);
    assert_string_equal(s.version, "3.6.17");
    assert_string_equal(s.storage_version, "3.6.0");
    assert_int_equal(s.db_size, 20480);
    assert_int_equal(s.db_size_in_use, 16384);
    assert_int_equal(s.db_size_quota, INT64_C(2147483648));
    assert_true(s.leader == UINT64_C(14593247367553392847));
    assert_int_equal(s.raft_index, 4);
    assert_int_equal(s.raft_term, 2);
    assert_int_equal(s.raft_applied_index, 4);
    assert_false(s.is_learner);
    assert_int_equal(s.n_errors, 0);
    assert_string_equal(s.errors, "");

    /* A learner with alarms; a control character in an error is not passed on. */
    static const char learner[] = "{\"leader\":\"0\",\"isLearner\":true,\"dbSize\":\"-5\","
                                  "\"errors\":[\"memberID:1 alarm:NOSPACE\",\"bad\\nline\"]}";
    assert_int_equal(etcd_json_parse_status(learner, strlen(learner), &s, &e), 0);
    assert_true(s.is_learner);
    assert_int_equal(s.leader, 0);
    assert_int_equal(s.db_size, -5);
    assert_int_equal(s.n_errors, 2);
    assert_string_equal(s.errors, "memberID:1 alarm:NOSPACE; bad line");

    static const char *const bad[] = {
        "{\"leader\":\"-1\"}",
        "{\"raftIndex\":1.5}",
        "{\"isLearner\":1}",
        "{\"errors\":\"x\"}",
        "{\"errors\":[1]}",
        "{\"version\":3}",
        "{\"dbSize\":\"9223372036854775808\"}",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        assert_int_equal(etcd_json_parse_status(bad[i], strlen(bad[i]), &s, &e), -EBADMSG);
    static const char min[] = "{\"dbSize\":\"-9223372036854775808\"}";
    assert_int_equal(etcd_json_parse_status(min, strlen(min), &s, &e), 0);
    assert_true(s.db_size == INT64_MIN);
}

static void test_json__health(void **state)
{
    static const char ok[] = "{\"health\":\"true\",\"reason\":\"\"}";
    static const char no[] = "{\"health\":\"false\",\"reason\":\"RAFT NO LEADER\"}";
    static const char odd[] = "{\"health\":true}";
    static const char bare[] = "{\"health\":\"false\"}";
    struct err e;

    assert_int_equal(etcd_json_parse_health(ok, strlen(ok), &e), 0);
    assert_int_equal(etcd_json_parse_health(no, strlen(no), &e), -ENETDOWN);
    assert_string_equal(e.msg, "RAFT NO LEADER");
    assert_int_equal(etcd_json_parse_health(bare, strlen(bare), &e), -ENETDOWN);
    assert_string_equal(e.msg, "unhealthy");
    assert_int_equal(etcd_json_parse_health(odd, strlen(odd), &e), -EBADMSG);
    assert_int_equal(etcd_json_parse_health("ok", 2, &e), -EBADMSG);
}

static int error_code(long status, const char *body, struct err *e)
{
    return etcd_json_parse_error(status, body, body ? strlen(body) : 0, e);
}

/* Each condition the controller acts on gets its own code, with etcd's text kept. */
static void test_json__errors_map_to_distinct_codes(void **state)
{
    static const struct {
        long status;
        int grpc;
        const char *message;
        int code;
    } cases[] = {
        {400, 9, "etcdserver: can only promote a learner member which is in sync with leader",
         -EAGAIN},
        {400, 9, "etcdserver: can only promote a learner member", -EALREADY},
        {400, 9, "etcdserver: too many learner members in cluster", -EUSERS},
        {404, 5, "etcdserver: member not found", -ENOENT},
        {400, 9, "membership: ID not found", -ENOENT},
        {400, 9, "etcdserver: Peer URLs already exists", -EEXIST},
        {400, 9, "etcdserver: member ID already exist", -EEXIST},
        /* etcd sends this one as UNKNOWN (2), an HTTP 500. */
        {500, 2, "etcdserver: re-configuration failed due to not enough started members",
         -EHOSTDOWN},
        {503, 14, "etcdserver: unhealthy cluster", -ENETDOWN},
        {503, 14, "etcdserver: no leader", -EBUSY},
        {503, 14, "etcdserver: leader changed", -EBUSY},
        {504, 14, "etcdserver: request timed out, possibly due to previous leader failure", -EBUSY},
        {429, 8, "etcdserver: too many requests", -EBUSY},
        {503, 14, "etcdserver: server stopped", -EBUSY},
        {400, 9, "etcdserver: rpc not supported for learner", -EOPNOTSUPP},
        {400, 9, "etcdserver: not capable", -EOPNOTSUPP},
        {400, 3, "etcdserver: given member URLs are invalid", -EINVAL},
        {400, 3, "proto: (line 1:7): invalid value for uint64 field ID: \"abc\"", -EINVAL},
        {404, 5, "Not Found", -EOPNOTSUPP},
        {401, 16, "etcdserver: invalid auth token", -EACCES},
        {403, 7, "etcdserver: permission denied", -EPERM},
        {500, 13, "something else", -EIO},
        {400, 9, "etcdserver: some precondition nobody knows", -EINVAL},
    };
    char body[512];
    struct err e;

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        snprintf(body, sizeof(body), "{\"code\":%d, \"message\":\"%s\"}", cases[i].grpc,
                 cases[i].message);
        /* The body is JSON: escape the one quote-bearing message by hand. */
        if (strstr(cases[i].message, "\"abc\""))
            snprintf(body, sizeof(body),
                     "{\"code\":3, \"message\":\"proto: (line 1:7): invalid "
                     "value for uint64 field ID: \\\"abc\\\"\"}");
        err_clear(&e);
        if (error_code(cases[i].status, body, &e) != cases[i].code)
            fail_msg("%s: got %d, want %d", cases[i].message, error_code(cases[i].status, body, &e),
                     cases[i].code);
        assert_int_equal(e.code, cases[i].code);
        assert_string_equal(e.msg, cases[i].message);
    }
}

static void test_json__error_shapes(void **state)
{
    struct err e;

    /* Older gateways: "error" beside "message"; either carries the text. */
    assert_int_equal(error_code(400,
                                "{\"error\":\"etcdserver: too many learner members in cluster\","
                                "\"code\":9}",
                                &e),
                     -EUSERS);
    assert_string_equal(e.msg, "etcdserver: too many learner members in cluster");
    assert_int_equal(error_code(400,
                                "{\"error\":\"x\",\"code\":9,\"message\":\"etcdserver: member "
                                "not found\"}",
                                &e),
                     -ENOENT);
    /* No body, or one that is not JSON: the HTTP status decides. */
    assert_int_equal(error_code(503, NULL, &e), -EBUSY);
    assert_string_equal(e.msg, "HTTP 503");
    assert_int_equal(error_code(500, "<html>oops</html>", &e), -EIO);
    assert_string_equal(e.msg, "HTTP 500");
    assert_int_equal(error_code(404, "", &e), -EOPNOTSUPP);
    assert_int_equal(error_code(401, "[]", &e), -EACCES);
    /* The gRPC code decides where the text is unknown; absurd codes are ignored. */
    assert_int_equal(error_code(500, "{\"code\":16,\"message\":\"who are you\"}", &e), -EACCES);
    assert_int_equal(error_code(500, "{\"code\":1e300,\"message\":\"m\"}", &e), -EIO);
    assert_int_equal(error_code(500, "{\"code\":-3,\"message\":\"m\"}", &e), -EIO);
    /* Control characters in etcd's text do not reach the message. */
    assert_int_equal(error_code(500, "{\"message\":\"line\\none\\u001b[31m\"}", &e), -EIO);
    assert_string_equal(e.msg, "line one [31m");
    /* Success is no error. */
    e.code = 1;
    assert_int_equal(error_code(200, "{\"message\":\"etcdserver: member not found\"}", &e), 0);
    assert_int_equal(e.code, 1);
}

static void test_json__request_bodies(void **state)
{
    const char *urls[] = {"https://10.0.0.2:2380", "https://m1.test.svc:2380"};
    const char *bad_urls[] = {"https://ok:2380", "https://a b:2380"};
    const char *empty[] = {""};
    char *body = NULL;
    uint64_t id;
    cJSON *o;
    struct err e;

    assert_int_equal(etcd_json_add_body(urls, 2, true, &body, &e), 0);
    assert_string_equal(body, "{\"peerURLs\":[\"https://10.0.0.2:2380\",\"https://m1.test.svc:"
                              "2380\"],\"isLearner\":true}");
    free(body);
    assert_int_equal(etcd_json_add_body(urls, 1, false, &body, &e), 0);
    assert_string_equal(body, "{\"peerURLs\":[\"https://10.0.0.2:2380\"],\"isLearner\":false}");
    free(body);
    body = NULL;
    assert_int_equal(etcd_json_add_body(urls, 0, true, &body, &e), -EINVAL);
    assert_int_equal(etcd_json_add_body(NULL, 1, true, &body, &e), -EINVAL);
    assert_int_equal(etcd_json_add_body(empty, 1, true, &body, &e), -EINVAL);
    assert_int_equal(etcd_json_add_body(bad_urls, 2, true, &body, &e), -EINVAL);
    assert_non_null(strstr(e.msg, "peer URL 1"));
    assert_int_equal(etcd_json_add_body(urls, ETCD_URLS_MAX + 1, true, &body, &e), -EINVAL);
    assert_null(body);

    /* The ID goes as a string of its digits, and reads back exactly. */
    assert_int_equal(etcd_json_id_body(UINT64_MAX, &body), 0);
    assert_string_equal(body, "{\"ID\":\"18446744073709551615\"}");
    o = cJSON_Parse(body);
    assert_true(cJSON_IsString(cJSON_GetObjectItem(o, "ID")));
    assert_int_equal(etcd_json_parse_id(cJSON_GetObjectItem(o, "ID")->valuestring, &id), 0);
    assert_true(id == UINT64_MAX);
    cJSON_Delete(o);
    free(body);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_json__member_list_as_etcd_writes_it),
        cmocka_unit_test(test_json__ids_above_2_53_are_exact),
        cmocka_unit_test(test_json__number_ids_only_while_exact),
        cmocka_unit_test(test_json__parse_id_is_strict),
        cmocka_unit_test(test_json__malformed_member_lists_are_refused),
        cmocka_unit_test(test_json__bounds),
        cmocka_unit_test(test_json__every_truncation_is_refused),
        cmocka_unit_test(test_json__status_as_etcd_writes_it),
        cmocka_unit_test(test_json__health),
        cmocka_unit_test(test_json__errors_map_to_distinct_codes),
        cmocka_unit_test(test_json__error_shapes),
        cmocka_unit_test(test_json__request_bodies),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
