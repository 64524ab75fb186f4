package qos

import "time"

// waiter is one request blocked in Admit (the paper's session sitting on its
// condition variable). All fields except wake are guarded by Channel.mu.
type waiter struct {
	tier  Tier
	since time.Time
	// waited is how long it waited, set when it is admitted.
	waited time.Duration
	// wake carries at most one pending signal; signalled says one is in
	// flight so that repeated wake-ups of the same queue do not pile up.
	wake       chan struct{}
	signalled  bool
	guardPass  bool // the starvation guard picked this waiter: admit it regardless
	prev, next *waiter
}

// waitQueue is an intrusive FIFO of waiters. A waiter stays in it, at its
// place, until it is admitted or gives up; a woken waiter that has to wait
// again therefore keeps its position ahead of later arrivals. Removal from the
// middle is O(1) because cancellation can hit any waiter.
type waitQueue struct {
	head, tail *waiter
	n          int
	// unsignalled counts queued waiters with no wake-up in flight, so that
	// a release with nobody left to wake costs nothing.
	unsignalled int
}

func (q *waitQueue) push(w *waiter) {
	w.prev, w.next = q.tail, nil
	if q.tail == nil {
		q.head = w
	} else {
		q.tail.next = w
	}
	q.tail = w
	q.n++
	if !w.signalled {
		q.unsignalled++
	}
}

func (q *waitQueue) remove(w *waiter) {
	if w.prev == nil {
		q.head = w.next
	} else {
		w.prev.next = w.next
	}
	if w.next == nil {
		q.tail = w.prev
	} else {
		w.next.prev = w.prev
	}
	w.prev, w.next = nil, nil
	q.n--
	if !w.signalled {
		q.unsignalled--
	}
}
