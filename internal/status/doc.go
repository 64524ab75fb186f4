// Package status serves tierdb's live status page and health checks on the
// metrics listener (--metrics-listen):
//
//   - / is a small page (HTML, JavaScript and CSS embedded in the binary,
//     nothing fetched from elsewhere) that reloads /status.json every
//     second and shows the tiers, the users, each tier's PostgreSQL
//     backends with their OS priorities, the replicas and the recent slow
//     operations;
//   - /status.json is a Snapshot with per-second rates (admissions, user
//     throughput, reads per replica) worked out here from the cumulative
//     counts of the snapshots taken over the last few seconds;
//   - /healthz answers 200 while the process runs;
//   - /readyz answers 200 when PostgreSQL answers and the primary is known,
//     else 503 with the reason.
//
// The package knows nothing of the command layer: it is handed a function
// that takes a Snapshot (internal/commands fills it) and one that checks
// readiness. SlowLog, the bounded ring of recent slow operations, lives
// here so that the page and the command layer share its type.
package status
