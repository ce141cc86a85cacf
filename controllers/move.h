#ifndef NESTCP_CONTROLLERS_MOVE_H
#define NESTCP_CONTROLLERS_MOVE_H

/*
 * clusterctl move with an etcd snapshot (docs/clusterctl.md, "clusterctl move"): what the
 * control plane and component reconcilers share.
 *
 * In the source management cluster the user annotates the NestedControlPlane
 * controlplane.nestcp.x-k8s.io/move=<request>. The control plane (controllers/ncpmove.c)
 * records the preparation in status.move and goes through
 *
 *   Stopping      the API server and controller-manager StatefulSets are applied with 0
 *                 replicas (by their component reconcilers, which read the phase here) until
 *                 the caches show none of their pods;
 *   Snapshotting  a snapshot Job (controllers/snapshot.h) writes <snapshot>.db to the
 *                 NestedEtcd's snapshots claim; once complete, the NestedEtcd is annotated
 *                 etcd.nestcp.x-k8s.io/start-from-snapshot=<snapshot>, then the block-move
 *                 annotation leaves the control plane;
 *   Ready         clusterctl move may go on; the components stay stopped;
 *   Failed        no claim, or the Job failed: the components run again;
 *
 * and, in the target, Moved once the NestedEtcd started from the snapshot
 * (controllers/etcdrestore.h) and both annotations are removed. Removing the annotation
 * before the move cancels: the block comes back, start-from-snapshot goes, then status.move
 * and with it the stop.
 */

#include <stdbool.h>

#include <cjson/cJSON.h>

/* The user's request on a NestedControlPlane. */
#define MOVE_ANNOTATION "controlplane.nestcp.x-k8s.io/move"
/* On a NestedEtcd: the snapshot a cluster that never formed starts from. */
#define MOVE_START_FROM_SNAPSHOT "etcd.nestcp.x-k8s.io/start-from-snapshot"
/* clusterctl's mark on the source objects it deletes after copying them. */
#define MOVE_DELETE_FOR_MOVE "clusterctl.cluster.x-k8s.io/delete-for-move"

#define MOVE_STOPPING "Stopping"
#define MOVE_SNAPSHOTTING "Snapshotting"
#define MOVE_READY "Ready"
#define MOVE_FAILED "Failed"
#define MOVE_MOVED "Moved"

/* Whether the control plane ncp (as cached) keeps its API servers and controller managers
 * stopped for a move: its status.move phase is Stopping, Snapshotting or Ready. */
bool move_stops_components(const cJSON *ncp);

/* Whether clusterctl is deleting obj from this cluster after copying it elsewhere: nestcp does
 * no deletion work of its own on it. */
bool move_deleting_for_move(const cJSON *obj);

#endif
