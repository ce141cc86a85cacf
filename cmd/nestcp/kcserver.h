#ifndef NESTCP_CMD_KCSERVER_H
#define NESTCP_CMD_KCSERVER_H

/*
 * Pointing a tenant's admin kubeconfig at another address (`nestcp get kubeconfig --server`),
 * e.g. a `kubectl port-forward` to the tenant's API server Service. The certificate that server
 * presents is still verified: when the new URL names another host than the kubeconfig's, the
 * cluster gets `tls-server-name: <the original host>`, so kubectl checks the serving
 * certificate against the name it was issued for rather than against 127.0.0.1.
 */

#include <stddef.h>

#include "lib/util/buf.h"
#include "lib/util/err.h"

/* Checks a server URL given by a user: "https://host[:port][/path]" with a host, a port in
 * 1..65535 when given, no user info, query or fragment, no whitespace. Returns 0 or -EINVAL
 * with a message naming --server. */
int kcserver_check_url(const char *url, struct err *e);

/* Writes the host of an https:// URL (without brackets for an IPv6 literal) to out.
 * Returns 0 or -EINVAL. */
int kcserver_url_host(const char *url, char *out, size_t out_size);

/* Parses kubeconfig text (origin names it in messages), sets the server of the current
 * context's cluster to server (and tls-server-name as described above), and appends the
 * result as YAML to out. Every other field is kept as it is. Returns 0, -EINVAL (server, or the
 * kubeconfig malformed: no current context, its cluster missing; the field named in e),
 * -ENOMEM. */
int kcserver_rewrite(const char *text, size_t len, const char *origin, const char *server,
                     struct buf *out, struct err *e);

#endif
