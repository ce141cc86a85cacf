#ifndef NESTCP_ETCD_JSON_H
#define NESTCP_ETCD_JSON_H

/*
 * The documents of etcd's v3 JSON gateway (grpc-gateway in front of the Cluster and
 * Maintenance services), read and written without I/O.
 *
 * The gateway writes every 64-bit integer (member IDs, cluster_id, revisions, sizes) as a JSON
 * string of decimal digits, and leaves out fields at their zero value: a learner that has not
 * started yet has no name and no clientURLs, a voting member no isLearner. IDs are read as
 * uint64_t from their digits, never through a double; a JSON number is accepted for such a
 * field only while it is an integer below 2^53 (cJSON reads numbers into doubles, and 2^53 may
 * be 2^53 + 1 rounded).
 *
 * Errors come as {"code": <gRPC code>, "message": "etcdserver: ..."} (etcd 3.6) or with an
 * "error" field beside them (older gateways), with an HTTP status derived from the gRPC code.
 * etcd_json_parse_error maps them, by etcd's message text first (the text is what etcd's own
 * clients compare), then by gRPC code, then by HTTP status:
 *
 *   -EAGAIN      "can only promote a learner member which is in sync with leader": the learner
 *                is still catching up; promote again later
 *   -EALREADY    "can only promote a learner member": the member already votes
 *   -EUSERS      "too many learner members in cluster": promote or remove the learner first
 *   -ENOENT      "member not found", "ID not found": no member has that ID
 *   -EEXIST      "Peer URLs already exists", "member ID already exist"
 *   -EHOSTDOWN   "re-configuration failed due to not enough started members": the change would
 *                leave fewer started voting members than a quorum; wait for members to start
 *   -ENETDOWN    "unhealthy cluster" (and an unhealthy /health): no healthy quorum now
 *   -EBUSY       transient server states: no leader, leader changed, a server-side request
 *                timeout, too many requests, server stopped. A membership change answered so
 *                may still have been applied: list the members before retrying it.
 *   -EINVAL      anything else etcd calls an invalid argument (bad URLs, a malformed request)
 *   -EACCES      unauthenticated (etcd's auth is enabled and the request carried no user)
 *   -EPERM       permission denied
 *   -EOPNOTSUPP  the gateway has no such endpoint, the RPC is not served by a learner, or the
 *                cluster's version is not capable of it
 *   -EIO         any other error status
 *   -EBADMSG     a body that is not the document expected (also: an ID that overflows uint64)
 *
 * Messages left in a struct err are etcd's text with control characters replaced by spaces.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lib/util/err.h"

/* Bounds on what a peer sends: documents, members per list, URLs per member, URL length. */
#define ETCD_JSON_MAX ((size_t)1 << 20)
#define ETCD_MEMBERS_MAX 256
#define ETCD_URLS_MAX 16
#define ETCD_URL_MAX 1024
/* Room for a uint64 in decimal with its terminator. */
#define ETCD_ID_STRLEN 21

/* The response header every call returns. Absent fields are 0. */
struct etcd_header {
    uint64_t cluster_id;
    uint64_t member_id; /* the member that answered */
    uint64_t revision;
    uint64_t raft_term;
};

struct etcd_member {
    uint64_t id;
    char *name;       /* "" until the member has started (a learner just added) */
    char **peer_urls; /* n_peer_urls strings */
    size_t n_peer_urls;
    char **client_urls; /* none until the member has started */
    size_t n_client_urls;
    bool is_learner;
};

/* What member/list, member/add, member/promote and member/remove return. */
struct etcd_member_list {
    struct etcd_header header;
    struct etcd_member *members; /* in etcd's order */
    size_t n_members;
    struct etcd_member *added; /* member/add: the new member (also in members); else NULL */
};

/* What maintenance/status returns. */
struct etcd_status {
    struct etcd_header header;
    char version[32];         /* "3.6.17" */
    char storage_version[32]; /* "3.6.0"; "" before etcd 3.6 */
    int64_t db_size;
    int64_t db_size_in_use;
    int64_t db_size_quota;
    uint64_t leader; /* the leader's member ID; 0 while there is none */
    uint64_t raft_index;
    uint64_t raft_term;
    uint64_t raft_applied_index;
    bool is_learner;
    size_t n_errors;  /* alarms and other errors the member reports */
    char errors[512]; /* those errors joined with "; ", truncated to fit */
};

/* Parses member/list, /add, /promote or /remove output (a "members" array, and for /add a
 * "member" object). *ret_list is freed with etcd_member_list_free. Returns 0, -EBADMSG (the
 * message names the field), -E2BIG (more than ETCD_MEMBERS_MAX members or ETCD_URLS_MAX URLs),
 * -ENOMEM. */
int etcd_json_parse_members(const char *json, size_t len, struct etcd_member_list **ret_list,
                            struct err *e);
void etcd_member_list_free(struct etcd_member_list *list);

/* Members of list by ID, or by one of their peer URLs (exact match); NULL when none. The result
 * is borrowed from list. */
const struct etcd_member *etcd_member_list_find(const struct etcd_member_list *list, uint64_t id);
const struct etcd_member *etcd_member_list_find_peer_url(const struct etcd_member_list *list,
                                                         const char *peer_url);

/* Parses maintenance/status output. Returns 0, -EBADMSG, -ENOMEM. */
int etcd_json_parse_status(const char *json, size_t len, struct etcd_status *ret_status,
                           struct err *e);

/* Parses /health output ({"health":"true","reason":""}). Returns 0 when healthy, -ENETDOWN
 * (the reason, or "unhealthy", in e) when not, -EBADMSG. */
int etcd_json_parse_health(const char *json, size_t len, struct err *e);

/* Maps an error response (http_status outside 2xx, its body, which may be empty or not JSON)
 * to the code in the table above, which it returns and records in e with etcd's message (or
 * "HTTP <status>" when the body has none). Returns 0 for a 2xx status. */
int etcd_json_parse_error(long http_status, const char *body, size_t len, struct err *e);

/* Parses a uint64 written in decimal: 1 to 20 digits, nothing else, at most UINT64_MAX.
 * Returns 0, -EINVAL (not digits), -ERANGE (too large). */
int etcd_json_parse_id(const char *s, uint64_t *ret_id);

/* Writes id in decimal, as the gateway expects it, into out; returns out. */
char *etcd_json_format_id(uint64_t id, char out[static ETCD_ID_STRLEN]);

/* Request bodies; *ret_body is a NUL-terminated string the caller frees.
 * member/add: {"peerURLs":[...],"isLearner":...}; 1 to ETCD_URLS_MAX non-empty URLs of at most
 * ETCD_URL_MAX bytes without control characters. Returns 0, -EINVAL, -ENOMEM. */
int etcd_json_add_body(const char *const *peer_urls, size_t n_peer_urls, bool is_learner,
                       char **ret_body, struct err *e);
/* member/promote and member/remove: {"ID":"<decimal>"}. Returns 0 or -ENOMEM. */
int etcd_json_id_body(uint64_t id, char **ret_body);

#endif
