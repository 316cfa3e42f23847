package filter

import "sync"

// Cache remembers compiled expressions and compile errors by their text,
// as SelectorParser's parse cache does, so that requests carrying their
// expression (lite pull, CHECK_CLIENT_CONFIG) compile it once. It holds at
// most its size; when full, an arbitrary entry makes room. The zero value
// is not usable: call NewCache. A Cache is safe for concurrent use.
type Cache struct {
	mu      sync.Mutex // guards entries
	entries map[string]cacheEntry
	size    int
}

type cacheEntry struct {
	e   *Expression
	err error
}

// NewCache returns a cache of at most size expressions (at least 1).
func NewCache(size int) *Cache {
	return &Cache{entries: make(map[string]cacheEntry), size: max(size, 1)}
}

// Compile returns the compiled expr, from the cache if it is there.
func (c *Cache) Compile(expr string) (*Expression, error) {
	c.mu.Lock()
	ent, ok := c.entries[expr]
	c.mu.Unlock()
	if ok {
		return ent.e, ent.err
	}
	e, err := Compile(expr)
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.entries) >= c.size {
		for k := range c.entries {
			delete(c.entries, k)
			break
		}
	}
	c.entries[expr] = cacheEntry{e, err}
	return e, err
}
