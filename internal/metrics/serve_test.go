package metrics

import (
	"context"
	"io"
	"net/http"
	"testing"
)

// With Pprof the endpoint serves Go's profiles, the execution trace among
// them; without it, none.
func TestServePprof(t *testing.T) {
	for _, pprof := range []bool{true, false} {
		ctx, cancel := context.WithCancel(context.Background())
		addr, err := Serve(ctx, ServeOptions{Addr: "127.0.0.1:0", Registry: NewRegistry("6.0.0"), Pprof: pprof})
		if err != nil {
			t.Fatal(err)
		}
		for _, path := range []string{"/debug/pprof/trace?seconds=0.05", "/debug/pprof/profile?seconds=1", "/debug/pprof/heap"} {
			resp, err := http.Get("http://" + addr.String() + path)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if pprof && (resp.StatusCode != http.StatusOK || len(body) < 32) {
				t.Errorf("%s: %d, %d bytes: %.80q", path, resp.StatusCode, len(body), body)
			}
			if !pprof && resp.StatusCode != http.StatusNotFound {
				t.Errorf("%s without pprof: %d", path, resp.StatusCode)
			}
		}
		cancel()
	}
}
