/* `nestcp get kubeconfig NAME`: a tenant's admin kubeconfig, read from the Secret
 * <NAME>-kubeconfig (key `value`) that the NestedControlPlane controller writes in the
 * management cluster, as Cluster API names it. */

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd/nestcp/cmd.h"
#include "cmd/nestcp/flags.h"
#include "cmd/nestcp/kcserver.h"
#include "cmd/nestcp/mgmt.h"
#include "controllers/caches.h"
#include "lib/kube/client.h"
#include "lib/pki/kubeconfig.h"
#include "lib/pki/secret.h"
#include "lib/render/cluster.h"
#include "lib/util/buf.h"
#include "lib/util/strutil.h"

const char cmd_get_kubeconfig_help[] =
    "Prints the admin kubeconfig of the tenant cluster NAME, from the Secret\n"
    "<NAME>-kubeconfig (key value) in the management cluster, as Cluster API names it and as\n"
    "clusterctl get kubeconfig reads it. NAME is the cluster name: the Cluster API Cluster's\n"
    "name, else the NestedControlPlane's cluster.x-k8s.io/cluster-name label, else its name;\n"
    "the name of a NestedControlPlane is accepted too.\n"
    "\n"
    "The kubeconfig names the API server as the management cluster's pods reach it\n"
    "(https://<cluster>-apiserver.<namespace>.svc:6443 unless spec.controlPlaneEndpoint says\n"
    "otherwise). --server points it elsewhere, e.g. at a kubectl port-forward; the server's\n"
    "certificate is still verified, against the original host name (tls-server-name).\n"
    "\n"
    "Exit status: 0 success, 1 the Secret is missing or malformed, or the management cluster\n"
    "cannot be read, 2 bad usage.";

struct get_settings {
    const char *kubeconfig, *namespace_, *server;
};

static int get_flags(struct get_settings *s, struct flag *out, int cap)
{
    const struct flag flags[] = {
        {"namespace", 'n', FLAG_STRING, &s->namespace_, "NS",
         "the cluster's namespace; unset: the kubeconfig context's namespace"},
        {"server", 0, FLAG_STRING, &s->server, "URL",
         "print the kubeconfig with this API server URL (https://host:port)"},
        {"kubeconfig", 0, FLAG_STRING, &s->kubeconfig, "FILE",
         "kubeconfig of the management cluster; unset: $KUBECONFIG, ~/.kube/config, then the "
         "in-cluster service account"},
    };

    return flags_copy(flags, (int)(sizeof(flags) / sizeof(flags[0])), out, cap);
}

int cmd_get_kubeconfig_flags(struct flag *out, int cap)
{
    static struct get_settings defaults = {"", "", ""};

    return get_flags(&defaults, out, cap);
}

/* Reads the Secret <name>-kubeconfig in ns; when there is none but a NestedControlPlane is
 * called name, the Secret of its cluster. */
static int read_secret(struct mgmt *m, const char *name, char *secret_name, size_t size,
                       cJSON **ret_secret, struct err *e)
{
    const char *ns = m->namespace_;
    cJSON *ncp = NULL;
    int r;

    if (pki_secret_name(name, PKI_PURPOSE_KUBECONFIG, secret_name, size) < 0)
        return err_set(e, -EINVAL, "\"%s\" is too long for a cluster name", name);
    r = mgmt_get(m, &KUBE_SECRETS, ns, secret_name, ret_secret, e);
    if (r != -ENOENT)
        return r < 0 ? err_prefix(e, "Secret %s/%s: ", ns, secret_name) : 0;
    if (mgmt_get(m, &NESTCP_CONTROL_PLANES, ns, name, &ncp, NULL) == 0) {
        cJSON *capi = NULL;
        const char *cluster;

        r = mgmt_cluster_of(m, ncp, &capi, e);
        if (r < 0) {
            cJSON_Delete(ncp);
            return err_prefix(e, "the Cluster of NestedControlPlane %s/%s: ", ns, name);
        }
        cluster = mgmt_cluster_name(ncp, capi);
        if (cluster && strcmp(cluster, name) != 0 &&
            pki_secret_name(cluster, PKI_PURPOSE_KUBECONFIG, secret_name, size) == 0) {
            r = mgmt_get(m, &KUBE_SECRETS, ns, secret_name, ret_secret, e);
            cJSON_Delete(capi);
            cJSON_Delete(ncp);
            if (r == -ENOENT)
                return err_set(e, r,
                               "Secret %s/%s not found: NestedControlPlane %s/%s has no admin "
                               "kubeconfig yet (see nestcp describe %s -n %s)",
                               ns, secret_name, ns, name, name, ns);
            return r < 0 ? err_prefix(e, "Secret %s/%s: ", ns, secret_name) : 0;
        }
        cJSON_Delete(capi);
        cJSON_Delete(ncp);
        return err_set(e, -ENOENT,
                       "Secret %s/%s not found: NestedControlPlane %s/%s has no admin "
                       "kubeconfig yet (see nestcp describe %s -n %s)",
                       ns, secret_name, ns, name, name, ns);
    }
    return err_set(e, -ENOENT,
                   "Secret %s/%s not found: no cluster %s in namespace %s (nestcp writes the "
                   "admin kubeconfig of cluster NAME as the Secret NAME-kubeconfig)",
                   ns, secret_name, name, ns);
}

int cmd_get_kubeconfig(int argc, char **argv)
{
    struct get_settings s = {"", "", ""};
    struct flag flags[FLAGS_MAX];
    struct mgmt m = {0};
    struct pki_kubeconfig_creds *creds = NULL;
    struct buf out = BUF_INIT;
    struct err e = {0};
    char secret_name[RENDER_CLUSTER_NAME_MAX + 16], origin[600];
    char **rest = NULL, *text = NULL;
    cJSON *secret = NULL;
    size_t len = 0;
    int nflags, nrest = 0, status = 1, r;

    nflags = get_flags(&s, flags, FLAGS_MAX);
    if (nflags < 0)
        return 1;
    r = flags_parse("get kubeconfig", "NAME", cmd_get_kubeconfig_help, flags, nflags, argc, argv,
                    &rest, &nrest);
    if (r != 0)
        return r > 0 ? 0 : 2;
    if (nrest != 1 || !rest[0][0]) {
        fprintf(stderr,
                "nestcp get kubeconfig: %s (usage: nestcp get kubeconfig NAME [-n NS] "
                "[--server URL])\n",
                nrest == 0 || !rest[0][0] ? "which cluster? NAME is missing" : "one NAME only");
        free(rest);
        return 2;
    }
    if (s.server[0] && kcserver_check_url(s.server, &e) < 0) {
        fprintf(stderr, "nestcp get kubeconfig: %s\n", e.msg);
        free(rest);
        return 2;
    }
    if (mgmt_open(&m, s.kubeconfig, s.namespace_, &e) < 0) {
        fprintf(stderr, "nestcp get kubeconfig: management cluster: %s\n", e.msg);
        goto out;
    }
    if (read_secret(&m, rest[0], secret_name, sizeof(secret_name), &secret, &e) < 0) {
        fprintf(stderr, "nestcp get kubeconfig: %s\n", e.msg);
        goto out;
    }
    snprintf(origin, sizeof(origin), "Secret %s/%s: %s", m.namespace_, secret_name,
             PKI_SECRET_KUBECONFIG_KEY);
    /* The Secret must hold a kubeconfig this command can vouch for: a current context with a
     * server, a CA and embedded client credentials. */
    if (pki_secret_read_kubeconfig(secret, &text, &len, &e) < 0 ||
        pki_kubeconfig_read(text, len, origin, &creds, &e) < 0) {
        fprintf(stderr, "nestcp get kubeconfig: %s%s\n",
                str_has_prefix(e.msg, "Secret ") ? "" : "Secret ", e.msg);
        goto out;
    }
    if (!creds->server || !creds->ca_cert_pem) {
        fprintf(stderr, "nestcp get kubeconfig: %s: the current context has no %s\n", origin,
                !creds->server ? "cluster server" : "certificate-authority-data");
        goto out;
    }
    if (s.server[0]) {
        if (kcserver_rewrite(text, len, origin, s.server, &out, &e) < 0) {
            fprintf(stderr, "nestcp get kubeconfig: %s\n", e.msg);
            goto out;
        }
    } else if (buf_append(&out, text, len) < 0) {
        fprintf(stderr, "nestcp get kubeconfig: out of memory\n");
        goto out;
    }
    if (fwrite(out.data, 1, out.len, stdout) != out.len || fflush(stdout) != 0) {
        fprintf(stderr, "nestcp get kubeconfig: cannot write to stdout\n");
        goto out;
    }
    status = 0;
out:
    pki_kubeconfig_creds_free(creds);
    if (text) {
        explicit_bzero(text, len);
        free(text);
    }
    if (out.data)
        explicit_bzero(out.data, out.len);
    buf_done(&out);
    cJSON_Delete(secret);
    mgmt_close(&m);
    free(rest);
    return status;
}
