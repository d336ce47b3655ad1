-- Placeholder: version 7 belongs to a change developed beside this one. tern
-- applies versions in an unbroken sequence, so 008 needs a 007; the real 007
-- replaces this file when both are merged.
SELECT 1;
