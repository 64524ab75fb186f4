package exec

import (
	"bufio"
	"container/heap"
	"encoding/binary"
	"io"
	"os"

	"go.mongodb.org/mongo-driver/v2/bson"

	"tierdb/internal/bsonx"
	"tierdb/internal/mongoerr"
	"tierdb/internal/query"
)

// External sorting: a $sort allowed to use disk (the command's
// allowDiskUse) that reaches the memory limit writes what it holds,
// sorted, to a temporary file (a run) and starts over; at the end it
// merges the runs and what it still holds, holding one document per run.
// The files are unlinked as soon as they are created, so they vanish with
// the stage whatever happens to the request.

// sortRun is one sorted run on disk.
type sortRun struct {
	f   *os.File
	r   *bufio.Reader
	doc bson.D // the run's next document, nil when it is exhausted
}

// spillFile is a temporary file of documents, written in order and read
// back once.
type spillFile struct {
	f *os.File
	w *bufio.Writer
}

func newSpillFile(dir, what string) (*spillFile, error) {
	f, err := os.CreateTemp(dir, "tierdb-"+what+"-*")
	if err != nil {
		return nil, spillError(what, err)
	}
	os.Remove(f.Name()) //nolint:errcheck // the open file stays readable
	return &spillFile{f: f, w: bufio.NewWriterSize(f, 1<<20)}, nil
}

func spillError(what string, err error) error {
	return mongoerr.Newf(mongoerr.ExceededMemoryLimit, "%s could not spill to disk: %v", what, err)
}

func (s *spillFile) write(d bson.D) error {
	raw, err := bsonx.Marshal(d)
	if err != nil {
		return err
	}
	if _, err := s.w.Write(raw); err != nil {
		return spillError("a stage", err)
	}
	return nil
}

// run ends the writing and reads the file from its start.
func (s *spillFile) run() (*sortRun, error) {
	if err := s.w.Flush(); err != nil {
		s.f.Close()
		return nil, spillError("a stage", err)
	}
	if _, err := s.f.Seek(0, io.SeekStart); err != nil {
		s.f.Close()
		return nil, err
	}
	return &sortRun{f: s.f, r: bufio.NewReaderSize(s.f, 64<<10)}, nil
}

// spillRun writes the documents held, sorted, as a run.
func (s *sortStage) spillRun() error {
	sortDocs(s.docs, s.sort)
	f, err := newSpillFile(s.tempDir, "sort")
	if err != nil {
		return err
	}
	for i, d := range s.docs {
		if err := f.write(d); err != nil {
			f.f.Close()
			return err
		}
		s.docs[i] = nil
	}
	r, err := f.run()
	if err != nil {
		return err
	}
	s.runs = append(s.runs, r)
	s.docs, s.mem = nil, 0
	return nil
}

// next reads the run's next document; nil at its end.
func (r *sortRun) next() error {
	var size [4]byte
	if _, err := io.ReadFull(r.r, size[:]); err == io.EOF {
		r.doc = nil
		return nil
	} else if err != nil {
		return err
	}
	n := binary.LittleEndian.Uint32(size[:])
	if n < 5 || n > maxDocBytes+16*1024 {
		return mongoerr.New(mongoerr.InternalError, "a spilled sort run is corrupt")
	}
	raw := make([]byte, n)
	copy(raw, size[:])
	if _, err := io.ReadFull(r.r, raw[4:]); err != nil {
		return err
	}
	d, err := bsonx.Decode(raw)
	r.doc = d
	return err
}

// mergeRuns merges the runs and the documents still held (the last,
// in-memory run) into the next stage, in order; equal documents keep
// their input order, since earlier runs hold earlier input.
func (s *sortStage) mergeRuns() error {
	defer s.closeRuns()
	if len(s.docs) > 0 {
		if err := s.spillRun(); err != nil {
			return err
		}
	}
	h := &runHeap{sort: s.sort}
	for i, r := range s.runs {
		if err := r.next(); err != nil {
			return err
		}
		if r.doc != nil {
			heap.Push(h, runHead{run: r, index: i})
		}
	}
	for h.Len() > 0 {
		top := h.heads[0]
		doc := top.run.doc
		if err := top.run.next(); err != nil {
			return err
		}
		if top.run.doc == nil {
			heap.Pop(h)
		} else {
			heap.Fix(h, 0)
		}
		if err := s.next.Push(doc); err == ErrDone {
			break
		} else if err != nil {
			return err
		}
	}
	return s.next.Finish()
}

func (s *sortStage) closeRuns() {
	for _, r := range s.runs {
		r.f.Close()
	}
	s.runs = nil
}

type runHead struct {
	run   *sortRun
	index int
}

type runHeap struct {
	sort  query.Sort
	heads []runHead
}

func (h *runHeap) Len() int { return len(h.heads) }
func (h *runHeap) Less(i, j int) bool {
	if c := h.sort.Compare(h.heads[i].run.doc, h.heads[j].run.doc); c != 0 {
		return c < 0
	}
	return h.heads[i].index < h.heads[j].index
}
func (h *runHeap) Swap(i, j int) { h.heads[i], h.heads[j] = h.heads[j], h.heads[i] }
func (h *runHeap) Push(x any)    { h.heads = append(h.heads, x.(runHead)) }
func (h *runHeap) Pop() any {
	x := h.heads[len(h.heads)-1]
	h.heads = h.heads[:len(h.heads)-1]
	return x
}
