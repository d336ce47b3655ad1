-- Bootstrap trust: when a node's bundle may be fetched, and every fetch.
--
-- Numbered after the founding operation (004) and certificate renewal
-- (005). It depends only on 002 (kube_nodes) and 003 (phase) and every
-- statement is IF NOT EXISTS, so it may take any number after them.
--
-- bootstrap_opened_at: when the node's bootstrap window opened, at founding
-- or at the last re-open (POST /clusters/{id}/nodes/{vm_id}/rebootstrap).
-- The window's length is configuration (BOOTSTRAP_WINDOW), not data, so
-- changing it applies to every node at once. Nodes that exist when this
-- runs get a window from now: nothing recorded when theirs began.
ALTER TABLE kube_nodes
    ADD COLUMN IF NOT EXISTS bootstrap_opened_at timestamptz NOT NULL DEFAULT now();

-- One row per bundle fetch that passed the four proofs: served, or refused
-- because the node's bootstrap was closed. Kept with the node, shown to its
-- org's operators (GET /clusters/{id}/nodes/{vm_id}/bootstrap).
CREATE TABLE IF NOT EXISTS bootstrap_fetches (
    id         bigserial   PRIMARY KEY,
    node_id    bigint      NOT NULL REFERENCES kube_nodes (id) ON DELETE CASCADE,
    vm_id      bigint      NOT NULL,
    request_id text        NOT NULL CHECK (octet_length(request_id) <= 200),
    outcome    text        NOT NULL CHECK (outcome IN ('served', 'bootstrap_closed')),
    fetched_at timestamptz NOT NULL
);
CREATE INDEX IF NOT EXISTS bootstrap_fetches_node ON bootstrap_fetches (node_id, fetched_at DESC);
