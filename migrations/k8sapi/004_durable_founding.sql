-- Founding and deletion as durable operations (issue: founding that survives
-- being cut off). The cluster and its intended nodes are committed before the
-- first remote call; every side effect is recorded as it happens; a lease
-- says which invocation (a function or the reconciler) is driving the
-- operation, and until when. A lease that ran out means its holder died:
-- the reconciler claims the cluster and finishes or undoes the operation.
ALTER TABLE kube_clusters
    -- The validated request (founding.Spec) the VMs are created from, so
    -- whoever resumes a founding creates the same VMs.
    ADD COLUMN founding_spec            jsonb,
    -- Why the cluster is failed, or why a deletion is being retried.
    ADD COLUMN status_reason            text        NOT NULL DEFAULT '',
    ADD COLUMN lease_owner              text,
    ADD COLUMN lease_until              timestamptz,
    -- Set before the security group create is sent: a group may exist
    -- even though its id was never recorded (the answer was lost).
    ADD COLUMN security_group_requested boolean     NOT NULL DEFAULT false,
    -- The caller can still obtain the kubeconfig (it holds the idempotency
    -- key: its own, or the one a 202 answer gave it), so a founding whose
    -- driver died is finished; otherwise it is undone.
    ADD COLUMN resumable                boolean     NOT NULL DEFAULT false;

-- The reconciler's query: unfinished operations by lease expiry.
CREATE INDEX kube_clusters_unfinished ON kube_clusters (lease_until)
    WHERE status IN ('founding', 'deleting');

ALTER TABLE kube_nodes
    -- NULL until the compute API answered the create.
    ALTER COLUMN vm_id DROP NOT NULL,
    -- Set before the create is sent (see security_group_requested).
    ADD COLUMN create_requested boolean NOT NULL DEFAULT false,
    -- The addresses the compute API reported, polled after the create; the
    -- bundle reads them here, never from the platform's interfaces table.
    ADD COLUMN ipv4        text NOT NULL DEFAULT '',
    ADD COLUMN ipv6        text NOT NULL DEFAULT '',
    ADD COLUMN public_ipv4 text NOT NULL DEFAULT '';

-- Nodes founded before this migration had a VM and addresses the platform
-- recorded: copy them, so their bundles render unchanged. The platform's
-- table exists wherever such nodes do; a database without it has none.
UPDATE kube_nodes SET create_requested = true;
DO $$
BEGIN
    IF to_regclass('interfaces') IS NOT NULL THEN
        UPDATE kube_nodes n SET ipv4 = i.ipv4, ipv6 = i.ipv6, public_ipv4 = i.public_ipv4
        FROM (SELECT DISTINCT ON (vm_id) vm_id, ipv4, ipv6, public_ipv4 FROM interfaces
              ORDER BY vm_id, is_primary DESC, id) i
        WHERE i.vm_id = n.vm_id;
    END IF;
END $$;
