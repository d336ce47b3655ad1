-- Node trust, second pass: the bootstrap window belongs to the operator,
-- a node's identities are issued once per window, renewals are recorded,
-- and every VM route is limited per VM.

-- ready_at: when the node first reported ready in its current bootstrap.
-- Once set, the node's window stays closed whatever the VM reports next
-- (a failed after ready is a report, not a re-open); only the operator's
-- re-open clears it. Nodes ready when this runs count as ready from now.
ALTER TABLE kube_nodes ADD COLUMN IF NOT EXISTS ready_at timestamptz;
UPDATE kube_nodes SET ready_at = now() WHERE phase = 'ready' AND ready_at IS NULL;

-- window_opened_at: the bootstrap window an identity was issued for (the
-- node's bootstrap_opened_at then). NULL: issued at founding, for the
-- node's life. Identities issued at a fetch are kept for their window, so
-- every fetch inside it serves the same ones instead of minting new ones.
ALTER TABLE node_identities ADD COLUMN IF NOT EXISTS window_opened_at timestamptz;

-- bootstrap_only: an identity that serves the bootstrap alone (the initial
-- node's system:masters one, for the addons): short-lived, never renewed,
-- left out of the node's certificate expiry.
ALTER TABLE node_identities ADD COLUMN IF NOT EXISTS bootstrap_only boolean NOT NULL DEFAULT false;

-- Renewals are recorded with the fetches: each asked renewal that passed
-- the four proofs, renewed (certificates answered) or refused.
ALTER TABLE bootstrap_fetches DROP CONSTRAINT IF EXISTS bootstrap_fetches_outcome_check;
ALTER TABLE bootstrap_fetches ADD CONSTRAINT bootstrap_fetches_outcome_check
    CHECK (outcome IN ('served', 'bootstrap_closed', 'renewed', 'renewal_refused'));

-- One counter per VM and route: calls in the current fixed window. A row
-- per VM and route, never per call, so a VM that calls in a loop fills
-- nothing; rows exist only for VMs that passed the four proofs.
CREATE TABLE IF NOT EXISTS vm_call_limits (
    vm_id        bigint      NOT NULL,
    route        text        NOT NULL CHECK (octet_length(route) <= 64),
    window_start timestamptz NOT NULL,
    calls        integer     NOT NULL CHECK (calls > 0),
    PRIMARY KEY (vm_id, route)
);
