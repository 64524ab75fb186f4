package storage

import (
	"fmt"
	"testing"
)

func TestVersionCacheEvictsLeastRecentlyUsedWithinBudget(t *testing.T) {
	v := newVersionCache(16 * 100)
	doc := func(i int) []byte { return []byte(fmt.Sprintf("%090d", i)) }
	for i := 0; i < 10; i++ {
		v.put(fmt.Sprint(i), doc(i))
	}
	if v.size > v.budget {
		t.Fatalf("size %d over budget %d", v.size, v.budget)
	}
	v.get("5") // now most recent
	for i := 10; i < 20; i++ {
		v.put(fmt.Sprint(i), doc(i))
	}
	if v.get("0") != nil {
		t.Fatal("oldest entry survived")
	}
	if string(v.get("5")) != string(doc(5)) {
		t.Fatal("recently used entry evicted while older ones stayed")
	}
	v.put("19", []byte("new"))
	if string(v.get("19")) != "new" {
		t.Fatal("put did not replace")
	}
	v.forget("19")
	if v.get("19") != nil {
		t.Fatal("forget kept the entry")
	}
	want := 0
	for e := v.lru.Front(); e != nil; e = e.Next() {
		ent := e.Value.(*versionEntry)
		want += len(ent.key) + len(ent.doc)
	}
	if v.size != want {
		t.Fatalf("accounted size %d, real %d", v.size, want)
	}
	off := newVersionCache(0)
	off.put("a", []byte("x"))
	if off.get("a") != nil {
		t.Fatal("a zero budget must cache nothing")
	}
}
