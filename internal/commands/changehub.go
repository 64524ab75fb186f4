package commands

import (
	"context"
	"errors"
	"sync"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"tierdb/internal/changes"
	"tierdb/internal/mongoerr"
	"tierdb/internal/qos"
	"tierdb/internal/storage"
)

// The change streams' hub: started by the first stream (or by the
// background pass once streams were enabled on the cluster), forgotten
// when its slot is lost.

type changeHub struct {
	mu  sync.Mutex
	hub *changes.Hub
}

// changeHub returns the hub, enabling change streams on the first call.
func (h *Handlers) changeHub(ctx context.Context) (*changes.Hub, error) {
	h.changes.mu.Lock()
	defer h.changes.mu.Unlock()
	if h.changes.hub != nil {
		return h.changes.hub, nil
	}
	slot, err := h.store.EnableChangeStreams(ctx)
	if errors.Is(err, storage.ErrNoLogicalDecoding) {
		return nil, mongoerr.New(mongoerr.Location40573, "The $changeStream stage needs PostgreSQL's wal_level = logical (the embedded PostgreSQL has it; set it on the server given with --postgres-url)")
	}
	if err != nil {
		return nil, err
	}
	admit := func(ctx context.Context) (func(), error) {
		if h.opts.Admission == nil {
			return func() {}, nil
		}
		e, err := h.opts.Admission.Admit(ctx, qos.Low, false)
		return e.Done, err
	}
	hub, err := changes.NewHub(ctx, slot, admit)
	if err != nil {
		return nil, err
	}
	h.changes.hub = hub
	return hub, nil
}

// changeStreamStats is serverStatus' tierdb.changeStreams: the open
// streams, those left behind (reading the slot on their own) or whose
// history is lost, and what the shared buffer holds.
func (h *Handlers) changeStreamStats() bson.D {
	h.changes.mu.Lock()
	hub := h.changes.hub
	h.changes.mu.Unlock()
	var st changes.Stats
	if hub != nil {
		st = hub.Stats()
	}
	return bson.D{
		{Key: "open", Value: int64(st.Streams)},
		{Key: "lagging", Value: int64(st.Lagging)},
		{Key: "lost", Value: int64(st.Lost)},
		{Key: "bufferedChanges", Value: int64(st.Buffered)},
		{Key: "bufferedBytes", Value: int64(st.Bytes)},
		{Key: "maxBufferedChanges", Value: int64(changes.MaxBufferedChanges)},
	}
}

// dropHub forgets the hub whose slot is gone, so the next stream enables
// change streams again (a new slot, on the current primary).
func (h *Handlers) dropHub(s *changes.Stream) {
	h.changes.mu.Lock()
	defer h.changes.mu.Unlock()
	if h.changes.hub != nil && s.Hub() == h.changes.hub {
		h.changes.hub = nil
	}
}

// maintainChanges keeps the change streams' slot moving while no stream
// reads it: at start, and then every half minute, it opens the hub if
// change streams were enabled on the cluster (so replacements are marked
// and the slot is trimmed even before the first stream of this process),
// then lets the hub trim.
func (h *Handlers) maintainChanges() {
	if h.store == nil {
		return
	}
	wait := time.NewTimer(2 * time.Second)
	defer wait.Stop()
	for {
		select {
		case <-h.stop:
			return
		case <-wait.C:
		}
		// The slot's queries run on the low tier's backends (storage's
		// ChangeSlot and EnableChangeStreams say so themselves).
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		h.changes.mu.Lock()
		hub := h.changes.hub
		h.changes.mu.Unlock()
		var err error
		if hub == nil {
			var on bool
			if on, err = h.store.ChangeStreamsEnabled(ctx); on && err == nil {
				_, err = h.changeHub(ctx)
			}
		} else if err = hub.Maintain(ctx); errors.Is(err, changes.ErrSlotLost) {
			h.changes.mu.Lock()
			if h.changes.hub == hub {
				h.changes.hub = nil // recreated on the next pass
			}
			h.changes.mu.Unlock()
		}
		if err != nil {
			h.log.Debug("change streams maintenance", "err", err)
		}
		cancel()
		wait.Reset(30 * time.Second)
	}
}
