-- Reads of a fleet (issue 42): what a sweep with work due and a page of
-- clusters read must grow with what is due or shown, not with the fleet.
--
-- The reconciler's claim (store.ClaimDue) takes the live operation whose
-- lease ran out first. Over migration 025's operations_due its condition
-- (no lease, or a lease before now) is an OR the index cannot bound, and
-- the planner read every live operation over operations_live_of_cluster
-- and sorted them, once per claim: a sweep with 100 operations due read
-- 100 rows for each. Here the lease's end is one expression (no lease is
-- -infinity), so the due operations are the index's first entries in the
-- claim's order and a claim reads the one it takes. The index holds the
-- running operations (the same rows as ended_at IS NULL: the table's
-- operations_ended check), which the claim names so that no index of the
-- live operations can stand in for this one.
CREATE INDEX IF NOT EXISTS operations_due_by_lease
    ON operations ((coalesce(lease_until, '-infinity'::timestamptz)), id) WHERE state = 'running';
DROP INDEX IF EXISTS operations_due;
