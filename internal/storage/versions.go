package storage

import (
	"container/list"
	"sync"
	"sync/atomic"
)

// versionCache remembers the last stored bytes of recently written
// documents. It is never used to answer a read: its only use is as the
// expected old version of a compare-and-swap update, which lets an update of
// a document tierdb wrote recently run as one statement instead of a read and
// a write. A stale entry (the document changed through another path or
// another tierdb) costs nothing but the fallback: the swap matches no row and
// the caller reads the document as usual.
type versionCache struct {
	hits, misses atomic.Int64

	mu     sync.Mutex
	budget int
	size   int
	lru    *list.List // front = most recent; values are *versionEntry
	byKey  map[string]*list.Element
}

type versionEntry struct {
	key string
	doc []byte
}

func newVersionCache(budget int) *versionCache {
	return &versionCache{budget: budget, lru: list.New(), byKey: map[string]*list.Element{}}
}

func cacheKey(c *Collection, idKey []byte) string { return c.tbl + "\x00" + string(idKey) }

func (v *versionCache) get(k string) []byte {
	if v.budget <= 0 {
		return nil
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	if e, ok := v.byKey[k]; ok {
		v.lru.MoveToFront(e)
		v.hits.Add(1)
		return e.Value.(*versionEntry).doc
	}
	v.misses.Add(1)
	return nil
}

func (v *versionCache) put(k string, doc []byte) {
	cost := len(k) + len(doc)
	if v.budget <= 0 || cost > v.budget/16 {
		return
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	if e, ok := v.byKey[k]; ok {
		ent := e.Value.(*versionEntry)
		v.size += len(doc) - len(ent.doc)
		ent.doc = doc
		v.lru.MoveToFront(e)
	} else {
		v.byKey[k] = v.lru.PushFront(&versionEntry{key: k, doc: doc})
		v.size += cost
	}
	for v.size > v.budget {
		e := v.lru.Back()
		ent := e.Value.(*versionEntry)
		v.lru.Remove(e)
		delete(v.byKey, ent.key)
		v.size -= len(ent.key) + len(ent.doc)
	}
}

func (v *versionCache) forget(k string) {
	if v.budget <= 0 {
		return
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	if e, ok := v.byKey[k]; ok {
		ent := e.Value.(*versionEntry)
		v.lru.Remove(e)
		delete(v.byKey, k)
		v.size -= len(ent.key) + len(ent.doc)
	}
}

// LastWritten returns the bytes tierdb last stored for the document with
// this _id key, or nil. The result may be stale: use it only as the old
// version of Replace.
func (s *Store) LastWritten(c *Collection, idKey []byte) []byte {
	return s.versions.get(cacheKey(c, idKey))
}

// VersionCacheStats reports lookups that found a version, lookups that did
// not, entries and bytes held.
func (s *Store) VersionCacheStats() (hits, misses int64, entries, bytes int) {
	v := s.versions
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.hits.Load(), v.misses.Load(), len(v.byKey), v.size
}
