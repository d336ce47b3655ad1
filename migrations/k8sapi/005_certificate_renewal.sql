-- Certificate renewal: when each stored identity stops being valid, so the
-- cluster view shows the earliest expiry without parsing certificates and a
-- renewal records what it issued. NULL: stored before this migration; the
-- view reads such a row's certificate instead, and its first renewal fills
-- the column.
ALTER TABLE node_identities ADD COLUMN not_after timestamptz;
