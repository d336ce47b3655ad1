package founding

import "github.com/excloud/k8sapi/internal/paging"

// The listing's cursor is k8sapi's one (internal/paging), shared with the
// audit trail's pages.

func encodeCursor(id int64) string { return paging.Encode(id) }

func decodeCursor(cursor string) (int64, bool) { return paging.Decode(cursor) }
