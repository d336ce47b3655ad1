-- Placeholder: number 009 belongs to another branch (per-VM limits). tern
-- refuses a gap in the numbers, so this branch holds the place; the merge
-- replaces this file with that branch's 009.
SELECT 1; -- tern refuses a migration without SQL
