package bench

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"time"
)

// cpuProfile takes a CPU profile of one tierdb (started with --pprof)
// from after the warm-up for d, into path, in the background; wait
// returns once it is written (or failed), so that the server is not
// stopped under it. A run shorter than warm-up + d leaves a profile that
// includes the idle time after it.
type cpuProfile struct {
	done chan error
}

func startCPUProfile(ctx context.Context, metricsAddr string, warmup, d time.Duration, path string) *cpuProfile {
	p := &cpuProfile{done: make(chan error, 1)}
	go func() {
		select {
		case <-time.After(warmup):
		case <-ctx.Done():
			p.done <- ctx.Err()
			return
		}
		url := fmt.Sprintf("http://%s/debug/pprof/profile?seconds=%d", metricsAddr, max(1, int(d.Round(time.Second)/time.Second)))
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			p.done <- err
			return
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			p.done <- err
			return
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			p.done <- fmt.Errorf("GET %s: %s", url, resp.Status)
			return
		}
		f, err := os.Create(path)
		if err != nil {
			p.done <- err
			return
		}
		_, err = io.Copy(f, resp.Body)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		p.done <- err
	}()
	return p
}

func (p *cpuProfile) wait() error {
	if p == nil {
		return nil
	}
	return <-p.done
}
