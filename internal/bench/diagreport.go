package bench

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// diagnosticsText renders the runs' diagnostics: per variant and tier, the
// latency the clients saw against the time tierdb's handler took, and what
// the tier's PostgreSQL backends were doing; then WAL fsyncs. All
// repetitions are pooled.
func diagnosticsText(res *Results) string {
	var b strings.Builder
	tiers := []string{"high", "normal", "low"}
	wrote := false
	for _, v := range VariantOrder(res.Scenario, res.Runs) {
		for _, tier := range tiers {
			var clientNs, clientOps float64
			var tierdbUs, tierdbN float64
			waits := map[string]int{}
			rounds := 0
			var pgCPU float64
			for _, r := range res.Runs {
				if r.Variant != v {
					continue
				}
				for _, g := range r.Groups {
					if g.Tier == tier && g.Latency != nil && g.Latency.Count() > 0 {
						clientNs += float64(g.Latency.Mean()) * float64(g.Latency.Count())
						clientOps += float64(g.Latency.Count())
					}
				}
				if tr, ok := r.Diagnostics.Tierdb[tier]; ok {
					tierdbUs += tr.MeanUs * float64(tr.Count)
					tierdbN += float64(tr.Count)
				}
				for ev, n := range r.Diagnostics.Waits[tier] {
					waits[ev] += n
				}
				rounds += r.Diagnostics.WaitRounds
				pgCPU += r.Diagnostics.BackendCPU[tier]
			}
			if clientOps == 0 {
				continue
			}
			if !wrote {
				b.WriteString("Per tier, pooled over the repetitions: the mean latency the clients saw; the mean time tierdb's request handler took " +
					"(its `tierdb_request_duration_seconds`, admission wait included); the difference, spent outside the handler " +
					"(reading and parsing the request, waiting for the Go scheduler, the network, the load generator); " +
					"the CPU time of the tier's PostgreSQL backends per operation; " +
					"and what those backends were doing, sampled from `pg_stat_activity` every 50 ms " +
					"(CPU = running or waiting for a CPU).\n\n")
				b.WriteString("| variant | tier | client mean | tierdb handler mean | outside the handler | PostgreSQL CPU/op | backends active (avg) | backend states |\n|---|---|--:|--:|--:|--:|--:|---|\n")
				wrote = true
			}
			client := clientNs / clientOps / 1e3
			handler, outside := "–", "–"
			if tierdbN > 0 {
				h := tierdbUs / tierdbN
				handler, outside = fmtMicros(h), fmtMicros(client-h)
			}
			active := "–"
			if rounds > 0 {
				total := 0
				for _, n := range waits {
					total += n
				}
				active = fmt.Sprintf("%.2f", float64(total)/float64(rounds))
			}
			pg := "–"
			if pgCPU > 0 {
				pg = fmtMicros(pgCPU * 1e6 / clientOps)
			}
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s | %s |\n", v, tier, fmtMicros(client), handler, outside, pg, active, waitShares(waits))
		}
	}
	if !wrote {
		return ""
	}
	b.WriteString("\n| variant | WAL fsyncs/s | mean fsync |\n|---|--:|--:|\n")
	for _, v := range VariantOrder(res.Scenario, res.Runs) {
		var syncs int64
		var ms, secs float64
		for _, r := range res.Runs {
			if r.Variant == v {
				syncs += r.Diagnostics.WALSyncs
				ms += r.Diagnostics.WALSyncMs
				secs += r.WallSeconds
			}
		}
		if syncs == 0 || secs == 0 {
			continue
		}
		fmt.Fprintf(&b, "| %s | %.0f | %s |\n", v, float64(syncs)/secs, fmtMicros(ms*1e3/float64(syncs)))
	}
	return b.String()
}

// waitShares lists the states that make up at least 2% of the samples,
// largest first.
func waitShares(waits map[string]int) string {
	total := 0
	for _, n := range waits {
		total += n
	}
	if total == 0 {
		return "–"
	}
	keys := slices.SortedFunc(maps.Keys(waits), func(a, b string) int {
		return cmp.Or(cmp.Compare(waits[b], waits[a]), cmp.Compare(a, b))
	})
	var parts []string
	for _, k := range keys {
		if pct := 100 * float64(waits[k]) / float64(total); pct >= 2 {
			parts = append(parts, fmt.Sprintf("%s %.0f%%", k, pct))
		}
	}
	return strings.Join(parts, ", ")
}
