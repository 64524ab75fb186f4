package pgmanage

import (
	"maps"
	"slices"
	"strconv"
)

// defaultClusterName appears in the servers' process titles
// ("postgres: tierdb: checkpointer") so they are recognizable in ps.
const defaultClusterName = "tierdb"

// serverSettings are the settings passed with -c on every start. They are
// not written to postgresql.conf so that a newer tierdb can change them.
func serverSettings(opts Options, socketDir string) map[string]string {
	s := map[string]string{
		"listen_addresses":        "",
		"unix_socket_directories": socketDir,
		// The directory is already private; this keeps the socket so too.
		"unix_socket_permissions": "0700",
		"port":                    strconv.Itoa(opts.port()),
		"max_connections":         strconv.Itoa(opts.MaxConnections),
		"shared_buffers":          opts.SharedBuffers,
		// Durability is not negotiable for a database: spell it out in case
		// the cluster's postgresql.conf was edited.
		"fsync":              "on",
		"synchronous_commit": "on",
		"full_page_writes":   "on",
		// tierdb captures stderr into DataDir/postgres.log itself.
		"logging_collector": "off",
		"log_destination":   "stderr",
		"log_min_messages":  "warning",
		"cluster_name":      opts.ClusterName,
		// Replication: every cluster can serve standbys, and a former
		// primary can be rewound (pg_rewind needs wal_log_hints) to follow
		// the standby promoted in its place. A slot never keeps more than
		// this much WAL for a standby that is gone.
		// logical: change streams decode the WAL (a logical slot of
		// tierdb's, created on the first change stream). Standbys and
		// pg_rewind work the same at this level.
		"wal_level":              "logical",
		"wal_log_hints":          "on",
		"max_wal_senders":        "10",
		"max_replication_slots":  "10",
		"max_slot_wal_keep_size": "4GB",
		"hot_standby":            "on",
	}
	if sb := opts.Standby; sb != nil {
		s["primary_conninfo"] = sb.PrimaryConnString + " application_name=" + opts.ClusterName
		s["primary_slot_name"] = sb.SlotName
		// Reads on the standby hold back vacuum on the primary instead of
		// being cancelled by replay conflicts.
		s["hot_standby_feedback"] = "on"
		// Replay positions reach the primary promptly, for status.
		s["wal_receiver_status_interval"] = "1s"
	}
	if opts.Port > 0 {
		s["listen_addresses"] = "127.0.0.1"
	}
	maps.Copy(s, opts.Settings)
	return s
}

// serverArgs is the postgres command line after the program name. Sorted so
// the command line is the same on every start.
func serverArgs(pgDir string, settings map[string]string) []string {
	args := []string{"-D", pgDir}
	for _, name := range slices.Sorted(maps.Keys(settings)) {
		args = append(args, "-c", name+"="+settings[name])
	}
	return args
}
