-- Placeholder: number 010 belongs to another branch (a sealed column of
-- kube_clusters). tern refuses a gap in the numbers, so this branch holds the
-- place; the merge replaces this file with that branch's 010.
SELECT 1; -- tern refuses a migration without SQL
