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
		"cluster_name":      defaultClusterName,
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
