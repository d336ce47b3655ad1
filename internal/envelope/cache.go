package envelope

import (
	"crypto/sha256"
	"sync"
	"time"
)

// Cache keeps unwrapped data keys in a warm container for a bounded age and
// use count, as the AWS Encryption SDK's caching materials manager does: a
// bundle fetch on a warm container then costs no KMS call, and a key
// compromised in memory is only useful until it ages out.
type Cache struct {
	MaxAge     time.Duration
	MaxUses    int
	MaxEntries int
	Now        func() time.Time

	mu      sync.Mutex
	entries map[cacheKey]*cacheEntry
}

type cacheKey struct {
	scope   Scope
	wrapped [sha256.Size]byte
}

type cacheEntry struct {
	key     *DataKey
	expires time.Time
	uses    int
}

// NewCache returns a cache with the given bounds.
func NewCache(maxAge time.Duration, maxUses, maxEntries int) *Cache {
	return &Cache{MaxAge: maxAge, MaxUses: maxUses, MaxEntries: maxEntries}
}

func (c *Cache) now() time.Time {
	if c.Now != nil {
		return c.Now()
	}
	return time.Now()
}

func (c *Cache) get(scope Scope, wrapped []byte) *DataKey {
	if c == nil {
		return nil
	}
	k := cacheKey{scope, sha256.Sum256(wrapped)}
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.entries[k]
	if e == nil {
		return nil
	}
	if c.now().After(e.expires) || e.uses >= c.MaxUses {
		delete(c.entries, k)
		return nil
	}
	e.uses++
	return e.key
}

func (c *Cache) put(key *DataKey) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.entries == nil {
		c.entries = map[cacheKey]*cacheEntry{}
	}
	now := c.now()
	if len(c.entries) >= c.MaxEntries {
		// Drop expired entries first; if still full, drop everything rather
		// than track recency: a miss costs one KMS call, nothing more.
		for k, e := range c.entries {
			if now.After(e.expires) {
				delete(c.entries, k)
			}
		}
		if len(c.entries) >= c.MaxEntries {
			clear(c.entries)
		}
	}
	c.entries[cacheKey{key.scope, sha256.Sum256(key.Wrapped)}] = &cacheEntry{key: key, expires: now.Add(c.MaxAge), uses: 1}
}
