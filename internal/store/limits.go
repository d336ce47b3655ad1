package store

import (
	"context"
	"fmt"
	"time"
)

// CallWindow is one VM's calls of one route in the current fixed window.
type CallWindow struct {
	Calls   int
	Started time.Time
}

// CountCall counts one call of route by vmID at now in one statement: the
// VM's window for the route starts over at now once it is per old, else
// its count goes up by one. Racing calls each get their own count.
func (s *Store) CountCall(ctx context.Context, vmID int64, route string, now time.Time, per time.Duration) (CallWindow, error) {
	var w CallWindow
	err := s.pool.QueryRow(ctx, `
		INSERT INTO vm_call_limits AS l (vm_id, route, window_start, calls) VALUES ($1, $2, $3, 1)
		ON CONFLICT (vm_id, route) DO UPDATE SET
			calls = CASE WHEN l.window_start <= $3 - $4::bigint * interval '1 microsecond' THEN 1 ELSE l.calls + 1 END,
			window_start = CASE WHEN l.window_start <= $3 - $4::bigint * interval '1 microsecond' THEN $3 ELSE l.window_start END
		RETURNING calls, window_start`, vmID, route, now, per.Microseconds()).Scan(&w.Calls, &w.Started)
	if err != nil {
		return w, fmt.Errorf("counting a call of %s by vm %d: %w", route, vmID, err)
	}
	return w, nil
}
