#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "test/nodeagent/hosts.h"

static bool has_line(const char *text, const char *line)
{
    size_t n = strlen(line);

    for (const char *p = text; (p = strstr(p, line)); p += n)
        if ((p == text || p[-1] == '\n') && (p[n] == '\n' || p[n] == '\0'))
            return true;
    return false;
}

static void test_hosts__services_and_statefulset_pods_resolve_to_pod_ips(void **state)
{
    cJSON *labels = cJSON_Parse("{\"app\":\"etcd\"}");
    cJSON *other = cJSON_Parse("{\"app\":\"api\"}");
    cJSON *svcs = cJSON_Parse(
        "[{\"metadata\":{\"name\":\"etcd\",\"namespace\":\"t\"},\"spec\":{\"clusterIP\":\"None\","
        "\"selector\":{\"app\":\"etcd\"}}},"
        " {\"metadata\":{\"name\":\"api\",\"namespace\":\"t\"},\"spec\":{\"clusterIP\":"
        "\"10.96.0.9\",\"selector\":{\"app\":\"api\"}}},"
        " {\"metadata\":{\"name\":\"lazy\",\"namespace\":\"t\"},\"spec\":{"
        "\"publishNotReadyAddresses\":true,\"selector\":{\"app\":\"api\"}}},"
        " {\"metadata\":{\"name\":\"none\",\"namespace\":\"t\"},\"spec\":{}}]");
    struct hosts_pod pods[] = {
        {"t", "etcd-1", "etcd-1", "etcd", labels, "127.0.1.3", true},
        {"t", "etcd-0", "etcd-0", "etcd", labels, "127.0.1.2", true},
        {"t", "api-0", "api-0", NULL, other, "127.0.1.4", false},
        {"t", "pending", "pending", "etcd", labels, NULL, false},
    };
    struct buf out = BUF_INIT;

    assert_int_equal(hosts_render(&pods[2], pods, 4, svcs, "cluster.local", &out), 0);
    assert_true(has_line(out.data, "127.0.0.1\tlocalhost"));
    assert_true(has_line(out.data, "127.0.1.4\tapi-0"));
    assert_true(has_line(out.data, "127.0.1.2\tetcd-0.etcd.t.svc.cluster.local etcd-0.etcd.t.svc "
                                   "etcd-0.etcd.t etcd-0.etcd"));
    assert_true(has_line(out.data, "127.0.1.3\tetcd-1.etcd.t.svc.cluster.local etcd-1.etcd.t.svc "
                                   "etcd-1.etcd.t etcd-1.etcd"));
    /* The Service name goes to the ready pod with the smallest name. */
    assert_true(has_line(out.data, "127.0.1.2\tetcd.t.svc.cluster.local etcd.t.svc etcd.t etcd"));
    /* api-0 is not ready: only the Service that publishes not-ready addresses resolves. */
    assert_null(strstr(out.data, "api.t.svc"));
    assert_true(has_line(out.data, "127.0.1.4\tlazy.t.svc.cluster.local lazy.t.svc lazy.t lazy"));
    assert_null(strstr(out.data, "none.t"));
    assert_null(strstr(out.data, "pending"));
    buf_done(&out);

    /* Seen from another namespace, the short forms are left out. */
    pods[2].namespace_ = "u";
    assert_int_equal(hosts_render(&pods[2], pods, 4, svcs, "example.org", &out), 0);
    assert_true(has_line(out.data, "127.0.1.2\tetcd.t.svc.example.org etcd.t.svc etcd.t"));
    buf_done(&out);
    cJSON_Delete(svcs);
    cJSON_Delete(labels);
    cJSON_Delete(other);
}

static void test_hosts__own_statefulset_names_come_first(void **state)
{
    struct hosts_pod self = {"t", "etcd-0", "etcd-0", "etcd", NULL, "127.0.1.2", false};
    struct buf out = BUF_INIT;

    assert_int_equal(hosts_render(&self, &self, 1, NULL, "cluster.local", &out), 0);
    assert_true(has_line(out.data, "127.0.1.2\tetcd-0.etcd.t.svc.cluster.local etcd-0.etcd.t.svc "
                                   "etcd-0.etcd.t etcd-0.etcd etcd-0"));
    /* Listed once, although self is also among the pods. */
    assert_non_null(strstr(out.data, "127.0.1.2"));
    assert_null(strstr(strstr(out.data, "127.0.1.2") + 1, "127.0.1.2"));
    buf_done(&out);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hosts__services_and_statefulset_pods_resolve_to_pod_ips),
        cmocka_unit_test(test_hosts__own_statefulset_names_come_first),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
