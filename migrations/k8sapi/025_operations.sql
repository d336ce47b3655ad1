-- One table of durable operations (issue 37, item 1). A founding, a
-- deletion, a node pool's operation and a control-plane node's
-- replacement each kept their own status reason and lease in their own
-- table (kube_clusters, node_pools; a replacement borrowed its cluster's
-- lease), with a claim statement each. From here every operation is a row
-- of operations: its kind, its target, its state, its typed reason and
-- message, its lease, the spec it was asked for, its times. The reconciler
-- claims the oldest due row of any kind with one statement; "no live
-- operation on this cluster" is one check over it (store.BeginDeleting).
-- The resource's own state (kube_clusters.status, node_pools.state,
-- node_replacements.state) stays where it was: it is what the resource is,
-- not who drives it.
--
-- The columns this replaces (kube_clusters.status_reason, lease_owner,
-- lease_until, founding_spec; node_pools.state_reason, lease_owner,
-- lease_until; node_replacements.state_reason) are carried over below and
-- left in place, unread and unwritten from here, so the version still
-- serving during a deployment keeps its schema (docs/RUNBOOK.md, "Safe
-- deployments"); a later migration drops them. That one first carries
-- over again, as below, what a previous version still wrote there while
-- this one was rolled out: a founding, deletion, pool operation or
-- replacement begun by it has no row here yet. (Roll this one out all at
-- once: a previous version's reconciler claims by those columns, which
-- this version no longer writes.)
CREATE TABLE IF NOT EXISTS operations (
    id              bigserial   PRIMARY KEY,
    -- what the operation does (store.Kind*): founding, deletion, node-pool,
    -- node-replacement; a new kind is a new name here and its handler.
    kind            text        NOT NULL CHECK (kind ~ '^[a-z][a-z0-9-]{0,62}$'),
    kube_cluster_id bigint      NOT NULL REFERENCES kube_clusters (id) ON DELETE CASCADE,
    -- the resource it acts on: the cluster, a node pool, a replacement
    target_type     text        NOT NULL CHECK (target_type IN ('cluster', 'node_pool', 'node_replacement')),
    target_id       bigint      NOT NULL,
    -- running: a driver holds or will take its lease; succeeded, failed:
    -- ended (ended_at says when).
    state           text        NOT NULL CHECK (state IN ('running', 'succeeded', 'failed')),
    -- the step it stands at, when a driver recorded one
    step            text        NOT NULL DEFAULT '' CHECK (octet_length(step) <= 128),
    -- why it stands where it is: a CamelCase word (store.Reason*), and
    -- the message a human reads
    reason          text        NOT NULL CHECK (reason ~ '^[A-Z][A-Za-z]{0,62}$'),
    message         text        NOT NULL DEFAULT '' CHECK (octet_length(message) <= 4096),
    lease_owner     text,
    lease_until     timestamptz,
    -- what was asked for (a founding's validated request: the VMs are
    -- created from it by whoever resumes the founding)
    spec            jsonb,
    created_at      timestamptz NOT NULL DEFAULT now(),
    updated_at      timestamptz NOT NULL DEFAULT now(),
    ended_at        timestamptz,
    CONSTRAINT operations_ended CHECK ((state = 'running') = (ended_at IS NULL)),
    CONSTRAINT operations_ended_hold_no_lease CHECK (ended_at IS NULL OR lease_owner IS NULL)
);
-- One live operation per target: a second founding, pool operation or
-- replacement of the same resource would write over the first's rows.
CREATE UNIQUE INDEX IF NOT EXISTS operations_one_live ON operations (target_type, target_id)
    WHERE ended_at IS NULL;
-- The reconciler's one claim: the live operations by lease expiry.
CREATE INDEX IF NOT EXISTS operations_due ON operations (lease_until NULLS FIRST, id) WHERE ended_at IS NULL;
-- "No live operation on this cluster", and the fences.
CREATE INDEX IF NOT EXISTS operations_live_of_cluster ON operations (kube_cluster_id) WHERE ended_at IS NULL;
-- A resource's latest operation (its conditions, its reason).
CREATE INDEX IF NOT EXISTS operations_of_target ON operations (target_type, target_id, id);

-- Carried over, once (a database migrated already has its rows here).
DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM operations) THEN
        RETURN;
    END IF;

    -- Every cluster's founding. A cluster deleting or deleted whose reason
    -- is not its deletion's kept why its founding failed (store.EndOperation).
    INSERT INTO operations (kind, kube_cluster_id, target_type, target_id, state, reason, message,
        lease_owner, lease_until, spec, created_at, updated_at, ended_at)
    SELECT 'founding', k.id, 'cluster', k.id, f.state,
        CASE f.state WHEN 'running' THEN CASE WHEN k.status_reason = '' THEN 'InProgress' ELSE 'Retrying' END
            WHEN 'succeeded' THEN 'Succeeded' ELSE 'Failed' END,
        CASE WHEN f.state = 'succeeded' THEN '' ELSE k.status_reason END,
        CASE WHEN f.state = 'running' THEN k.lease_owner END, CASE WHEN f.state = 'running' THEN k.lease_until END,
        k.founding_spec, k.created_at, k.updated_at, CASE WHEN f.state <> 'running' THEN k.updated_at END
    FROM kube_clusters k, LATERAL (SELECT CASE
        WHEN k.status = 'founding' THEN 'running'
        WHEN k.status = 'failed' THEN 'failed'
        WHEN k.status IN ('deleting', 'deleted') AND k.status_reason <> ''
             AND k.status_reason NOT LIKE 'deleting failed%' THEN 'failed'
        ELSE 'succeeded' END AS state) f;

    -- Every deletion, in progress (with its lease and reason) or done.
    INSERT INTO operations (kind, kube_cluster_id, target_type, target_id, state, reason, message,
        lease_owner, lease_until, created_at, updated_at, ended_at)
    SELECT 'deletion', k.id, 'cluster', k.id,
        CASE k.status WHEN 'deleting' THEN 'running' ELSE 'succeeded' END,
        CASE WHEN k.status = 'deleted' THEN 'Succeeded' WHEN k.status_reason LIKE 'deleting failed%' THEN 'Retrying'
            ELSE 'InProgress' END,
        k.status_reason,
        CASE WHEN k.status = 'deleting' THEN k.lease_owner END, CASE WHEN k.status = 'deleting' THEN k.lease_until END,
        k.updated_at, k.updated_at, CASE WHEN k.status = 'deleted' THEN k.updated_at END
    FROM kube_clusters k WHERE k.status IN ('deleting', 'deleted');

    -- Every pool's latest operation: running (with its lease) in a state
    -- a lease drives, else ended as the pool settled.
    INSERT INTO operations (kind, kube_cluster_id, target_type, target_id, state, reason, message,
        lease_owner, lease_until, spec, created_at, updated_at, ended_at)
    SELECT 'node-pool', p.kube_cluster_id, 'node_pool', p.id, o.state,
        CASE WHEN p.state = 'failing' THEN 'TurningBack'
            WHEN o.state = 'running' THEN CASE WHEN p.state_reason = '' THEN 'InProgress' ELSE 'Retrying' END
            WHEN o.state = 'succeeded' THEN 'Succeeded' ELSE 'Failed' END,
        p.state_reason,
        CASE WHEN o.state = 'running' THEN p.lease_owner END, CASE WHEN o.state = 'running' THEN p.lease_until END,
        jsonb_build_object('count', p.count), p.created_at, p.updated_at,
        CASE WHEN o.state <> 'running' THEN p.updated_at END
    FROM node_pools p, LATERAL (SELECT CASE
        WHEN p.state IN ('creating', 'scaling', 'deleting', 'failing') THEN 'running'
        WHEN p.state = 'failed' THEN 'failed' ELSE 'succeeded' END AS state) o;

    -- Every replacement: one in progress takes its cluster's lease, which
    -- it borrowed until now.
    INSERT INTO operations (kind, kube_cluster_id, target_type, target_id, state, reason, message,
        lease_owner, lease_until, spec, created_at, updated_at, ended_at)
    SELECT 'node-replacement', r.kube_cluster_id, 'node_replacement', r.id, o.state,
        CASE WHEN r.state = 'failing' THEN 'TurningBack' WHEN r.state = 'replacing' THEN 'InProgress'
            WHEN r.state = 'done' THEN 'Succeeded' ELSE 'Failed' END,
        r.state_reason,
        CASE WHEN o.state = 'running' THEN k.lease_owner END, CASE WHEN o.state = 'running' THEN k.lease_until END,
        jsonb_build_object('old_node_id', r.old_node_id, 'old_vm_id', r.old_vm_id), r.created_at, r.updated_at,
        CASE WHEN o.state <> 'running' THEN r.updated_at END
    FROM node_replacements r JOIN kube_clusters k ON k.id = r.kube_cluster_id,
        LATERAL (SELECT CASE WHEN r.state IN ('replacing', 'failing') THEN 'running'
            WHEN r.state = 'done' THEN 'succeeded' ELSE 'failed' END AS state) o;
END $$;

-- Every function that reads a cluster, a pool or a replacement reads its
-- operations (their reasons and conditions); the ones that begin, drive
-- and end operations write them.
GRANT SELECT ON operations TO k8sapi_create_cluster, k8sapi_clusters, k8sapi_get_bundle, k8sapi_reconciler;
GRANT USAGE ON SEQUENCE operations_id_seq TO k8sapi_create_cluster, k8sapi_clusters, k8sapi_reconciler;
GRANT INSERT (kind, kube_cluster_id, target_type, target_id, state, reason, message, lease_owner, lease_until, spec)
    ON operations TO k8sapi_create_cluster, k8sapi_clusters, k8sapi_reconciler;
GRANT UPDATE (state, step, reason, message, lease_owner, lease_until, updated_at, ended_at)
    ON operations TO k8sapi_create_cluster, k8sapi_clusters, k8sapi_reconciler;
