-- Bootstrap progress: where each node's bootstrap stands, as its VM reports
-- it (internal/progress holds the order and the rules; this CHECK only
-- keeps anything but a phase out). Existing nodes start pending: nothing
-- was recorded for them, and a bundle fetch or a report moves them on.
ALTER TABLE kube_nodes
    ADD COLUMN phase      text        NOT NULL DEFAULT 'pending'
        CHECK (phase IN ('pending', 'bundle_fetched', 'prerequisites_installed', 'etcd_started',
                         'kubelet_started', 'apiserver_ready', 'addons_installed', 'ready', 'failed')),
    -- the last report's message: for failed, the step and the tail of its output
    ADD COLUMN message    text        NOT NULL DEFAULT ''
        CHECK (octet_length(message) <= 4096),
    ADD COLUMN updated_at timestamptz NOT NULL DEFAULT now();
