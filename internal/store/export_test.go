package store

import "time"

// SetFeedPing sets how long s's listener waits quietly before it pings its
// connection; call it before the first Subscribe.
func SetFeedPing(s *Store, d time.Duration) { s.changes.ping = d }
