package bench

import (
	"context"
	cryptorand "crypto/rand"
	"encoding/base64"
	"fmt"
	"strconv"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"go.mongodb.org/mongo-driver/v2/mongo/readpref"
	"go.mongodb.org/mongo-driver/v2/mongo/writeconcern"
	"go.mongodb.org/mongo-driver/v2/tag"
)

// clientOptions are shared by every connection the harness opens. Retries
// are off so a latency is one attempt and a failure is counted, not hidden.
func clientOptions(addr, appName string, poolSize uint64, cred *options.Credential) *options.ClientOptions {
	o := options.Client()
	if cred != nil {
		o.SetAuth(*cred)
	}
	return o.
		ApplyURI("mongodb://" + addr + "/?directConnection=true").
		SetMaxPoolSize(poolSize).
		SetServerMonitoringMode(options.ServerMonitoringModePoll).
		SetRetryWrites(false).
		SetRetryReads(false).
		SetConnectTimeout(10 * time.Second).
		SetAppName(appName)
}

// tierClient is one benchmark client. Its pool holds a single connection,
// so the connection that declared the tier with setClientPriority is the
// one every later operation runs on, as with the paper's clients.
type tierClient struct {
	client *mongo.Client
	coll   *mongo.Collection
	stale  *mongo.Collection // the S workload's documents
	tier   string
}

func connectTierClient(ctx context.Context, addr, appName, tier string, wc *WriteConcern, rp *ReadPreference, cred *options.Credential) (*tierClient, error) {
	c, err := mongo.Connect(clientOptions(addr, appName, 1, cred))
	if err != nil {
		return nil, err
	}
	tc := &tierClient{client: c, tier: tier}
	collOpts := options.Collection()
	if wc != nil {
		collOpts.SetWriteConcern(wc.driver())
	}
	if rp != nil {
		collOpts.SetReadPreference(rp.driver())
	}
	tc.coll = c.Database(benchDatabase).Collection(benchCollection, collOpts)
	tc.stale = c.Database(benchDatabase).Collection(stalenessCollection, collOpts)
	var reply bson.D
	err = c.Database("admin").RunCommand(ctx, bson.D{{Key: "setClientPriority", Value: tier}}).Decode(&reply)
	if err != nil {
		_ = c.Disconnect(context.Background())
		return nil, fmt.Errorf("setClientPriority %q: %w", tier, err)
	}
	return tc, nil
}

// checkTier asks the server which tier this connection has now: a
// reconnect would silently have dropped it to normal.
func (tc *tierClient) checkTier(ctx context.Context) error {
	var reply struct {
		Caller struct {
			Priority string `bson:"priority"`
		} `bson:"caller"`
	}
	if err := tc.client.Database("admin").RunCommand(ctx, bson.D{{Key: "qosStatus", Value: 1}}).Decode(&reply); err != nil {
		return fmt.Errorf("qosStatus: %w", err)
	}
	if reply.Caller.Priority != tc.tier {
		return fmt.Errorf("the connection runs at tier %q, not %q (did it reconnect?)", reply.Caller.Priority, tc.tier)
	}
	return nil
}

func (tc *tierClient) close() { _ = tc.client.Disconnect(context.Background()) }

func (wc *WriteConcern) driver() *writeconcern.WriteConcern {
	out := &writeconcern.WriteConcern{Journal: wc.Journal}
	switch w := wc.W.(type) {
	case int:
		out.W = w
	case float64: // as read back from JSON
		out.W = int(w)
	case string:
		out.W = w
	}
	return out
}

// benchUser is the administrator an auth variant creates at start.
const benchUser = "tierdb-bench"

// benchCredential makes a fresh password for an auth variant's run: the
// environment entry that hands it to tierdb, and the clients' credential.
func benchCredential() (env string, cred *options.Credential) {
	var b [18]byte
	_, _ = cryptorand.Read(b[:])
	pw := base64.RawURLEncoding.EncodeToString(b[:])
	return "TIERDB_ADMIN_PASSWORD=" + pw, &options.Credential{Username: benchUser, Password: pw, AuthSource: "admin", AuthMechanism: "SCRAM-SHA-256"}
}

// dropBenchUser removes the run's administrator: users live in the shared
// PostgreSQL, and the next variant must start without them (an auth-off
// server with a user would require authentication).
func dropBenchUser(ctx context.Context, addr string, cred *options.Credential) error {
	c, err := mongo.Connect(clientOptions(addr, "bench-cleanup", 1, cred))
	if err != nil {
		return err
	}
	defer c.Disconnect(context.Background())
	return c.Database("admin").RunCommand(ctx, bson.D{{Key: "dropUser", Value: benchUser}}).Err()
}

// driver is the driver's read preference. Bounds and adaptive routing
// travel as a tag set, which the driver passes through unchanged: its own
// maxStalenessSeconds is whole seconds (and has a 90 s floor when the
// driver sees a replica set; tierdb answers as a router, so it does not),
// tierdb's tag takes milliseconds.
func (rp *ReadPreference) driver() *readpref.ReadPref {
	var tags []tag.Set
	route := "route"
	if rp.Mode == "adaptive" {
		route = "adaptive"
	}
	if rp.Mode == "adaptive" || rp.MaxStalenessMS > 0 {
		set := tag.Set{{Name: "tierdb", Value: route}}
		if rp.MaxStalenessMS > 0 {
			set = append(set, tag.Tag{Name: "maxStalenessMS", Value: strconv.Itoa(rp.MaxStalenessMS)})
		}
		tags = []tag.Set{set}
	}
	var opts []readpref.Option
	if len(tags) > 0 {
		opts = append(opts, readpref.WithTagSets(tags...))
	}
	switch rp.Mode {
	case "primaryPreferred":
		return readpref.PrimaryPreferred(opts...)
	case "secondary":
		return readpref.Secondary(opts...)
	case "secondaryPreferred":
		return readpref.SecondaryPreferred(opts...)
	case "nearest", "adaptive":
		return readpref.Nearest(opts...)
	}
	return readpref.Primary()
}
