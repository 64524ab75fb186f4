package rig

import (
	"errors"
	"fmt"
	"os"
	"runtime"

	"golang.org/x/sys/unix"

	"tierdb/internal/osprio"
)

// PinSelf moves every thread of this process to cpus and sizes GOMAXPROCS
// to match. Threads the runtime starts later inherit the affinity of the
// thread that creates them, so after a pass that finds no new thread the
// whole process stays on cpus.
func PinSelf(cpus []int) error {
	done := map[int]bool{}
	for range 10 {
		tids, err := ThreadIDs(os.Getpid())
		if err != nil {
			return err
		}
		fresh := false
		for _, tid := range tids {
			if done[tid] {
				continue
			}
			fresh = true
			if err := osprio.SetAffinity(tid, cpus); err != nil && !osprio.IsNoSuchProcess(err) {
				return fmt.Errorf("pinning the load generator: %w", err)
			}
			done[tid] = true
		}
		if !fresh {
			runtime.GOMAXPROCS(len(cpus))
			return nil
		}
	}
	return errors.New("pinning the load generator: threads keep appearing")
}

// PinTree moves a process, all its descendants and all their threads to
// cpus; processes they fork later inherit it. It returns how many
// processes it moved.
func PinTree(root int, cpus []int) (int, error) {
	tree, err := ProcessTree(root)
	if err != nil {
		return 0, err
	}
	for _, p := range tree {
		tids, err := ThreadIDs(p.PID)
		if err != nil {
			continue // exited meanwhile, e.g. an autovacuum worker
		}
		for _, tid := range tids {
			if err := osprio.SetAffinity(tid, cpus); err != nil && !osprio.IsNoSuchProcess(err) {
				return 0, err
			}
		}
	}
	return len(tree), nil
}

// withThreadAffinity runs fn on the calling OS thread with its affinity set
// to cpus, then restores it: a process forked in fn inherits cpus from its
// first instruction on, which beats pinning it afterwards, when the Go
// runtime of a child may already have started threads elsewhere. The
// caller must have locked its goroutine to the thread.
func withThreadAffinity(cpus []int, fn func() error) error {
	if len(cpus) == 0 {
		return fn()
	}
	tid := unix.Gettid()
	was, err := osprio.Affinity(tid)
	if err != nil {
		return err
	}
	if err := osprio.SetAffinity(tid, cpus); err != nil {
		return err
	}
	defer func() { _ = osprio.SetAffinity(tid, was) }()
	return fn()
}
