package bsonx_test

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"tierdb/internal/bsonx"
	"tierdb/internal/wire"
)

func TestMaxDepthIsWireLimit(t *testing.T) {
	if bsonx.MaxDepth != wire.MaxBSONDepth {
		t.Fatalf("MaxDepth %d, wire.MaxBSONDepth %d", bsonx.MaxDepth, wire.MaxBSONDepth)
	}
}

// TestGoldenFrames decodes every document in the captured driver messages.
func TestGoldenFrames(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "wire", "testdata", "golden", "*.bin"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no golden frames (%v)", err)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			raw, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			m, err := wire.ReadMessage(bufio.NewReader(bytes.NewReader(raw)), wire.MaxMessageSize)
			if err != nil {
				t.Fatal(err)
			}
			var docs []bson.Raw
			switch {
			case m.Msg != nil:
				docs = append(docs, m.Msg.Body)
				for _, s := range m.Msg.Sequences {
					docs = append(docs, s.Documents...)
				}
			case m.Query != nil:
				docs = append(docs, m.Query.Query)
				if m.Query.ReturnFieldsSelector != nil {
					docs = append(docs, m.Query.ReturnFieldsSelector)
				}
			}
			if len(docs) == 0 {
				t.Fatal("frame has no documents")
			}
			for _, d := range docs {
				got := checkSame(t, d)
				if again := mustMarshal(t, got); !bytes.Equal(again, d) {
					t.Fatalf("re-marshalled\n got %x\nwant %x", again, []byte(d))
				}
			}
		})
	}
}
