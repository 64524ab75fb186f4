package bench

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// userName is the k-th database user of a per-user group.
func userName(group string, k int) string { return fmt.Sprintf("%s-u%d", group, k) }

// runUsers are the database users of one run's per-user groups, created
// through the run's administrator and dropped when the run ends (users
// live in the shared PostgreSQL).
type runUsers struct {
	admin *mongo.Client
	pw    string
	names []string
}

// userSpec is one user to create: its name, tier role, weight and SLO.
type userSpec struct {
	name   string
	tier   string
	weight float64
	slo    *SLO
}

// createUsers creates the users with one password (the credential's) and
// returns them; four at a time, as createUser derives SCRAM keys.
func createUsers(ctx context.Context, addr string, admin *options.Credential, specs []userSpec) (*runUsers, error) {
	const parallel = 4
	c, err := mongo.Connect(clientOptions(addr, "bench-users", parallel, admin))
	if err != nil {
		return nil, err
	}
	ru := &runUsers{admin: c, pw: admin.Password}
	db := c.Database("admin")
	errs := make([]error, len(specs))
	var wg sync.WaitGroup
	work := make(chan int)
	for range parallel {
		wg.Go(func() {
			for i := range work {
				errs[i] = createUser(ctx, db, specs[i], ru.pw)
			}
		})
	}
	for i, s := range specs {
		ru.names = append(ru.names, s.name)
		work <- i
	}
	close(work)
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		_ = ru.drop(context.Background())
		return nil, err
	}
	return ru, nil
}

func createUser(ctx context.Context, db *mongo.Database, s userSpec, pw string) error {
	cmd := bson.D{
		{Key: "createUser", Value: s.name},
		{Key: "pwd", Value: pw},
		{Key: "roles", Value: bson.A{
			bson.D{{Key: "role", Value: "readWrite"}, {Key: "db", Value: benchDatabase}},
			bson.D{{Key: "role", Value: "tier" + strings.ToUpper(s.tier[:1]) + s.tier[1:]}, {Key: "db", Value: "admin"}},
		}},
		{Key: "mechanisms", Value: bson.A{"SCRAM-SHA-256"}},
	}
	if s.weight > 0 {
		cmd = append(cmd, bson.E{Key: "weight", Value: s.weight})
	}
	if s.slo != nil {
		cmd = append(cmd, bson.E{Key: "slo", Value: bson.D{{Key: "p999Ms", Value: s.slo.P999Ms}}})
	}
	err := db.RunCommand(ctx, cmd).Err()
	if ce, ok := errors.AsType[mongo.CommandError](err); ok && ce.Code == 51003 { // left by a cut-off run
		if err = db.RunCommand(ctx, bson.D{{Key: "dropUser", Value: s.name}}).Err(); err == nil {
			err = db.RunCommand(ctx, cmd).Err()
		}
	}
	if err != nil {
		return fmt.Errorf("createUser %s: %w", s.name, err)
	}
	return nil
}

// credential is how user name logs in.
func (ru *runUsers) credential(name string) *options.Credential {
	return &options.Credential{Username: name, Password: ru.pw, AuthSource: "admin", AuthMechanism: "SCRAM-SHA-256"}
}

// drop removes the users and closes the administrator's connections.
func (ru *runUsers) drop(ctx context.Context) error {
	defer ru.admin.Disconnect(context.Background())
	var errs []error
	for _, name := range ru.names {
		if err := ru.admin.Database("admin").RunCommand(ctx, bson.D{{Key: "dropUser", Value: name}}).Err(); err != nil {
			errs = append(errs, fmt.Errorf("dropUser %s: %w", name, err))
		}
	}
	return errors.Join(errs...)
}
