package commands

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"tierdb/internal/auth"
	"tierdb/internal/mongoerr"
	"tierdb/internal/qos"
)

// The argument checks of the commands clients send most, dispatched as
// OP_MSG over the fake store, with the codes MongoDB answers (the same
// the pytest suite asserts against a running server: tests/
// test_admin_commands.py, test_index_kinds.py, test_ddl.py,
// test_refusals.py, test_capped.py, test_handshake.py).

// argCase is one command and the code its reply must carry: 0 for ok; a
// statement's refusal counts as its first write error's code.
type argCase struct {
	db   string
	cmd  bson.D
	code mongoerr.Code
}

// codeOf is the code of a reply as the pytest suite reads it: the
// command's, else its first write error's, else 0.
func codeOf(reply bson.D) mongoerr.Code {
	if v, _ := lookup(reply, "ok"); v != 1.0 {
		c, _ := lookup(reply, "code")
		n, _ := c.(int32)
		return mongoerr.Code(n)
	}
	if we, ok := lookup(reply, "writeErrors"); ok {
		if a, _ := we.(bson.A); len(a) > 0 {
			c, _ := lookup(a[0].(bson.D), "code")
			n, _ := c.(int32)
			return mongoerr.Code(n)
		}
	}
	return 0
}

// runCases sends each case and reports every reply whose code differs.
func runCases(t *testing.T, h *Handlers, cases []argCase) {
	t.Helper()
	for _, c := range cases {
		db := c.db
		if db == "" {
			db = "test"
		}
		if r := run(t, h, db, c.cmd); codeOf(r) != c.code {
			t.Errorf("%v on %s: reply %v, want code %d", c.cmd, db, r, c.code)
		}
	}
}

func TestArgsSkipLimitBatchSize(t *testing.T) {
	h, _ := newFakeHandlers(t)
	seed(t, h)
	var cases []argCase
	for _, field := range []string{"skip", "limit", "batchSize"} {
		cases = append(cases,
			argCase{cmd: doc("find", "c", field, int32(-1)), code: mongoerr.ValueNegative},
			argCase{cmd: doc("find", "c", field, int64(-1)), code: mongoerr.ValueNegative},
			argCase{cmd: doc("find", "c", field, -0.5), code: 0}, // truncated to 0
			argCase{cmd: doc("find", "c", field, "2"), code: mongoerr.TypeMismatch},
			argCase{cmd: doc("find", "c", field, int32(2)), code: 0},
		)
	}
	cases = append(cases,
		argCase{cmd: doc("aggregate", "c", "pipeline", bson.A{}, "cursor", doc("batchSize", int32(-1))), code: mongoerr.ValueNegative},
		argCase{cmd: doc("aggregate", "c", "pipeline", bson.A{}, "cursor", doc("batchSize", "1")), code: mongoerr.TypeMismatch},
		argCase{cmd: doc("count", "c", "skip", int32(-1)), code: mongoerr.ValueNegative},
		argCase{cmd: doc("count", "c", "limit", int32(-2)), code: 0},
	)
	runCases(t, h, cases)

	// The message names the field, as MongoDB's IDL parser does.
	r := run(t, h, "test", doc("find", "c", "limit", int32(-1)))
	if msg, _ := lookup(r, "errmsg"); !strings.Contains(fmt.Sprint(msg), "BSON field 'limit' value must be >= 0") {
		t.Errorf("negative limit: %v", r)
	}
	// A fraction is truncated; count takes a negative limit as its absolute value.
	r = ok(t, run(t, h, "test", doc("find", "c", "skip", 1.7, "limit", 2.2)))
	if got := ids(t, get(t, r, "cursor", "firstBatch")); got != "[2 3]" {
		t.Errorf("skip 1.7, limit 2.2: %s", got)
	}
	if r = ok(t, run(t, h, "test", doc("count", "c", "limit", int32(-2)))); get(t, r, "n") != int32(2) {
		t.Errorf("count with limit -2: %v", r)
	}
	// A driver's negative limit: limit and singleBatch, one batch, no
	// cursor; a smaller batchSize bounds that one batch.
	r = ok(t, run(t, h, "test", doc("find", "c", "limit", int32(3), "singleBatch", true)))
	if got := ids(t, get(t, r, "cursor", "firstBatch")); got != "[1 2 3]" || get(t, r, "cursor", "id") != int64(0) {
		t.Errorf("singleBatch: %v", r)
	}
	r = ok(t, run(t, h, "test", doc("find", "c", "limit", int32(3), "singleBatch", true, "batchSize", int32(2))))
	if got := ids(t, get(t, r, "cursor", "firstBatch")); got != "[1 2]" || get(t, r, "cursor", "id") != int64(0) {
		t.Errorf("singleBatch with a batchSize: %v", r)
	}
	// getMore's batchSize is its own check: a negative one is BadValue.
	r = ok(t, run(t, h, "test", doc("find", "c", "batchSize", int32(1))))
	id := get(t, r, "cursor", "id").(int64)
	failsWith(t, run(t, h, "test", doc("getMore", id, "collection", "c", "batchSize", int32(-1))), mongoerr.BadValue)
	r = ok(t, run(t, h, "test", doc("getMore", id, "collection", "c", "batchSize", int32(2))))
	if got := ids(t, get(t, r, "cursor", "nextBatch")); got != "[2 3]" {
		t.Errorf("getMore after a refused one: %v", r)
	}
}

func TestArgsMaxTimeMS(t *testing.T) {
	h, _ := newFakeHandlers(t)
	seed(t, h)
	var cases []argCase
	for _, bad := range []any{int32(-1), int32(-1000), int64(-5), 1.5, "100", int64(math.MaxInt32) + 1, true, math.NaN(), doc("ms", int32(1))} {
		cases = append(cases,
			argCase{cmd: doc("find", "c", "maxTimeMS", bad), code: mongoerr.BadValue},
			argCase{cmd: doc("aggregate", "c", "pipeline", bson.A{}, "cursor", bson.D{}, "maxTimeMS", bad), code: mongoerr.BadValue},
			argCase{cmd: doc("count", "c", "maxTimeMS", bad), code: mongoerr.BadValue},
			argCase{cmd: doc("ping", int32(1), "maxTimeMS", bad), code: mongoerr.BadValue},
		)
	}
	for _, good := range []any{int32(0), int32(5000), int64(math.MaxInt32), 5000.0, int64(5000), nil} {
		cases = append(cases,
			argCase{cmd: doc("find", "c", "maxTimeMS", good), code: 0},
			argCase{cmd: doc("ping", int32(1), "maxTimeMS", good), code: 0},
		)
	}
	runCases(t, h, cases)
}

func TestArgsCreateIndexes(t *testing.T) {
	h, _ := newFakeHandlers(t)
	seed(t, h)
	ix := func(spec ...any) bson.D { return doc("createIndexes", "c", "indexes", bson.A{doc(spec...)}) }
	cases := []argCase{
		{cmd: ix("key", doc("a", int32(1))), code: mongoerr.FailedToParse}, // name is required
		{cmd: ix("name", "a_1"), code: mongoerr.FailedToParse},             // key is required
		{cmd: doc("createIndexes", "c"), code: mongoerr.MissingField},
		{cmd: doc("createIndexes", "c", "indexes", bson.A{}), code: mongoerr.BadValue},
		{cmd: ix("key", doc("a", int32(1)), "name", "ix", "bogus", int32(1)), code: mongoerr.InvalidIndexSpecificationOpt},
		{cmd: ix("key", doc("a", "nosuchkind"), "name", "ix"), code: mongoerr.CannotCreateIndex},
		{cmd: ix("key", doc("a", "2dsphere"), "name", "ix"), code: mongoerr.NotImplemented},
		{cmd: ix("key", doc("$**", int32(1)), "name", "ix"), code: mongoerr.NotImplemented},
		{cmd: ix("key", doc("a", int32(1)), "name", "ix", "expireAfterSeconds", int32(-1)), code: mongoerr.CannotCreateIndex},
		{cmd: ix("key", doc("a", int32(1)), "name", "ix", "expireAfterSeconds", "soon"), code: mongoerr.CannotCreateIndex},
		{cmd: ix("key", doc("a", int32(1), "b", int32(1)), "name", "ix", "expireAfterSeconds", int32(10)), code: mongoerr.CannotCreateIndex},
		{cmd: ix("key", doc("h", "hashed"), "name", "ix", "unique", true), code: mongoerr.CannotCreateIndex},
	}
	for _, bad := range []any{int32(0), true, doc("x", int32(1)), nil, bson.A{int32(1)}} {
		cases = append(cases, argCase{cmd: ix("key", doc("a", bad), "name", "ix"), code: mongoerr.CannotCreateIndex})
	}
	runCases(t, h, cases)
	r := run(t, h, "test", ix("key", doc("a", int32(1))))
	if msg, _ := lookup(r, "errmsg"); !strings.Contains(fmt.Sprint(msg), "'name' field is a required property") {
		t.Errorf("no name: %v", r)
	}

	// None of the refused specs made an index; then the two conflicts.
	ok(t, run(t, h, "test", ix("key", doc("a", int32(1)), "name", "first")))
	runCases(t, h, []argCase{
		{cmd: ix("key", doc("a", int32(1)), "name", "second"), code: mongoerr.IndexOptionsConflict}, // same keys, another name
		{cmd: ix("key", doc("b", int32(1)), "name", "first"), code: mongoerr.IndexKeySpecsConflict}, // same name, other keys
		{cmd: ix("key", doc("a", int32(1)), "name", "first"), code: 0},                              // the same spec again
	})
	r = ok(t, run(t, h, "test", doc("listIndexes", "c")))
	var names []string
	for _, d := range get(t, r, "cursor", "firstBatch").(bson.A) {
		names = append(names, get(t, d, "name").(string))
	}
	if fmt.Sprint(names) != "[_id_ first]" || get(t, r, "cursor", "ns") != "test.c" {
		t.Errorf("listIndexes after the refusals: %v", r)
	}
}

func TestArgsGetParameter(t *testing.T) {
	h, _ := newFakeHandlers(t)
	every := ok(t, run(t, h, "admin", doc("getParameter", "*")))
	if fmt.Sprint(get(t, every, "featureCompatibilityVersion")) != fmt.Sprint(doc("version", "6.0")) ||
		get(t, every, "cursorTimeoutMillis") != int64(600000) {
		t.Errorf("getParameter '*': %v", every)
	}
	if same := ok(t, run(t, h, "admin", doc("getParameter", doc("allParameters", true)))); fmt.Sprint(same) != fmt.Sprint(every) {
		t.Errorf("allParameters %v differs from '*' %v", same, every)
	}
	detailed := ok(t, run(t, h, "admin", doc("getParameter", doc("allParameters", true, "showDetails", true))))
	if fmt.Sprint(get(t, detailed, "cursorTimeoutMillis")) != fmt.Sprint(doc("value", int64(600000), "settableAtRuntime", false, "settableAtStartup", true)) {
		t.Errorf("showDetails: %v", detailed)
	}
	// Named ones only; unknown names beside known ones are skipped.
	for _, cmd := range []bson.D{
		doc("getParameter", int32(1), "cursorTimeoutMillis", int32(1)),
		doc("getParameter", int32(1), "cursorTimeoutMillis", int32(1), "noSuchParameter", int32(1)),
	} {
		if r := ok(t, run(t, h, "admin", cmd)); len(r) != 2 || r[0].Key != "cursorTimeoutMillis" {
			t.Errorf("%v: %v", cmd, r)
		}
	}
	runCases(t, h, []argCase{
		{db: "admin", cmd: doc("getParameter", int32(1), "noSuchParameter", int32(1)), code: mongoerr.InvalidOptions},
		{db: "admin", cmd: doc("getParameter", int32(1)), code: mongoerr.InvalidOptions},
		{db: "admin", cmd: doc("getParameter", doc("allParameters", false)), code: mongoerr.InvalidOptions},
		{db: "admin", cmd: doc("getParameter", doc("allParameters", true, "bogus", int32(1))), code: mongoerr.UnknownField},
		{db: "test", cmd: doc("getParameter", int32(1), "cursorTimeoutMillis", int32(1)), code: mongoerr.Unauthorized},
	})
}

// usersInfo needs an auth registry (in memory here); once users exist,
// the connection must be a user's, so it runs as a root user.
func TestArgsUsersInfo(t *testing.T) {
	reg := auth.New(auth.Options{Store: &usersStore{users: map[string][]byte{}, roles: map[string][]byte{}}})
	h, _ := newFakeHandlers(t, func(o *Options) { o.Auth = reg })
	root := auth.UserName{User: "root", DB: "admin"}
	if err := reg.CreateUser(context.Background(), &auth.User{Name: root, DefaultTier: qos.Normal, Roles: []auth.RoleName{{Role: "root", DB: "admin"}}}); err != nil {
		t.Fatal(err)
	}
	s := &Session{ID: 1, Tier: qos.Normal, User: reg.Lookup(root)}
	as := func(db string, cmd bson.D) bson.D { t.Helper(); return sendAs(t, h, s, opMsg(t, db, cmd)) }
	if r := send(t, h, opMsg(t, "shop", doc("usersInfo", "ann"))); codeOf(r) != mongoerr.Unauthorized {
		t.Fatalf("usersInfo without a user: %v", r)
	}
	ok(t, as("shop", doc("createUser", "ann", "pwd", "pw-ann", "roles", bson.A{"read"}, "customData", doc("team", "x"))))
	ok(t, as("shop", doc("createUser", "bob", "pwd", "pw-bob", "roles", bson.A{"readWrite"})))

	users := func(db string, arg any, opts ...any) bson.A {
		t.Helper()
		return get(t, ok(t, as(db, append(doc("usersInfo", arg), doc(opts...)...))), "users").(bson.A)
	}
	names := func(us bson.A) string {
		var out []string
		for _, u := range us {
			out = append(out, get(t, u, "user").(string))
		}
		return fmt.Sprint(out)
	}
	ann := users("shop", "ann")
	if len(ann) != 1 || get(t, ann, 0, "_id") != "shop.ann" || get(t, ann, 0, "db") != "shop" ||
		fmt.Sprint(get(t, ann, 0, "roles")) != fmt.Sprint(bson.A{doc("role", "read", "db", "shop")}) ||
		get(t, ann, 0, "customData", "team") != "x" {
		t.Fatalf("usersInfo ann: %v", ann)
	}
	id, isBinary := get(t, ann, 0, "userId").(bson.Binary)
	if !isBinary || id.Subtype != bson.TypeBinaryUUID || len(id.Data) != 16 {
		t.Errorf("userId is not a UUID: %v", get(t, ann, 0, "userId"))
	}
	if _, has := lookup(ann[0].(bson.D), "credentials"); has {
		t.Errorf("credentials shown: %v", ann)
	}
	if got := users("admin", doc("user", "ann", "db", "shop")); fmt.Sprint(get(t, got, 0, "userId")) != fmt.Sprint(id) {
		t.Errorf("usersInfo {user, db}: %v", got)
	}
	for _, tc := range []struct {
		db   string
		arg  any
		want string
	}{
		{"shop", bson.A{doc("user", "bob", "db", "shop"), "ann", "ann"}, "[ann bob]"}, // in name order, each once
		{"shop", int32(1), "[ann bob]"},
		{"shop", "nobody", "[]"},
		{"other", int32(1), "[]"},
		{"admin", doc("forAllDBs", true), "[ann bob root]"},
	} {
		if got := names(users(tc.db, tc.arg)); got != tc.want {
			t.Errorf("usersInfo %v on %s: %s, want %s", tc.arg, tc.db, got, tc.want)
		}
	}
	if _, has := lookup(users("shop", "ann", "showCustomData", false)[0].(bson.D), "customData"); has {
		t.Errorf("showCustomData: false shows it")
	}
	if got := names(users("shop", int32(1), "filter", doc("roles.role", "readWrite"))); got != "[bob]" {
		t.Errorf("usersInfo with a filter: %s", got)
	}
	cases := []argCase{
		{db: "shop", cmd: doc("usersInfo", "ann", "showCredentials", true), code: mongoerr.NotImplemented},
		{db: "shop", cmd: doc("usersInfo", "ann", "bogus", int32(1)), code: mongoerr.UnknownField},
		{db: "shop", cmd: doc("usersInfo", int32(2)), code: mongoerr.BadValue},
	}
	for _, bad := range []any{nil, true, bson.A{}, doc("foo", "bar"), doc("user", int32(123), "db", "shop"), doc("user", "ann", "db", int32(1)),
		bson.A{doc("user", "missing_db")}, bson.A{doc("db", "shop")}, bson.A{int32(5)}} {
		cases = append(cases, argCase{db: "shop", cmd: doc("usersInfo", bad), code: mongoerr.BadValue})
	}
	for _, c := range cases {
		if r := as(c.db, c.cmd); codeOf(r) != c.code {
			t.Errorf("%v: reply %v, want code %d", c.cmd, r, c.code)
		}
	}
}

// Fields tierdb does not know are 40415, fields it does not implement
// NotImplemented (tests/test_refusals.py); unknown commands 59.
func TestArgsUnknownAndUnimplementedFields(t *testing.T) {
	h, st := newFakeHandlers(t)
	seed(t, h)
	set := doc("$set", doc("a", int32(7)))
	runCases(t, h, []argCase{
		{cmd: doc("find", "c", "filtre", bson.D{}), code: mongoerr.UnknownField},
		{cmd: doc("insert", "c", "documents", bson.A{bson.D{}}, "orderd", false), code: mongoerr.UnknownField},
		{cmd: doc("count", "c", "qurey", bson.D{}), code: mongoerr.UnknownField},
		{cmd: doc("aggregate", "c", "pipeline", bson.A{}, "cursor", bson.D{}, "bogus", int32(1)), code: mongoerr.UnknownField},
		{cmd: doc("find", "c", "returnKey", true), code: mongoerr.NotImplemented},
		{cmd: doc("find", "c", "min", doc("a", int32(1))), code: mongoerr.NotImplemented},
		{cmd: doc("find", "c", "tailable", true), code: mongoerr.BadValue}, // c is not capped
		{cmd: doc("create", "c2", "capped", true), code: mongoerr.InvalidOptions},
		{cmd: doc("create", "c2", "validator", doc("a", doc("$exists", true))), code: mongoerr.NotImplemented},
		{cmd: doc("update", "c", "updates", bson.A{doc("q", bson.D{}, "u", set, "sort", doc("a", int32(1)))}), code: mongoerr.NotImplemented},
		{cmd: doc("update", "c", "updates", bson.A{doc("q", bson.D{}, "u", set, "mutli", true)}), code: mongoerr.UnknownField},
		{cmd: doc("delete", "c", "deletes", bson.A{doc("q", bson.D{}, "limit", int32(0), "hint2", int32(1))}), code: mongoerr.UnknownField},
		{cmd: doc("find", "c", "readConcern", doc("level", "linearizable")), code: mongoerr.NotImplemented},
		{cmd: doc("find", "c", "readConcern", doc("level", "snapshot")), code: mongoerr.NotImplemented},
		{cmd: doc("find", "c", "readConcern", doc("level", "eventual")), code: mongoerr.BadValue},
		{cmd: doc("find", "c", "readConcern", doc("level", "majority")), code: 0},
		{cmd: doc("frobnicate", int32(1)), code: mongoerr.CommandNotFound},
		{cmd: doc("noSuchCommand", "c"), code: mongoerr.CommandNotFound},
	})
	// Nothing was applied: the five documents, a = 0 or 1, no c2.
	for _, d := range st.Docs("test", "c") {
		if a := get(t, d, "a"); a != int32(0) && a != int32(1) {
			t.Errorf("a refused command changed %v", d)
		}
	}
	if n := len(st.Docs("test", "c")); n != 5 {
		t.Errorf("%d documents after refusals", n)
	}
	r := ok(t, run(t, h, "test", doc("listCollections", int32(1), "nameOnly", true)))
	if n := len(get(t, r, "cursor", "firstBatch").(bson.A)); n != 1 {
		t.Errorf("listCollections after refusals: %v", r)
	}
}

// What tierdb does not implement answers NotImplemented (238), never a
// partial result nor CommandNotFound for a command MongoDB has.
func TestRefusedFeatures(t *testing.T) {
	h, st := newFakeHandlers(t)
	seed(t, h)
	ok(t, run(t, h, "test", doc("create", "capped", "capped", true, "size", int32(1000), "max", int32(10))))
	runCases(t, h, []argCase{
		{cmd: doc("aggregate", "c", "cursor", bson.D{}, "pipeline", bson.A{doc("$changeStream", doc("showExpandedEvents", true))}), code: mongoerr.NotImplemented},
		{cmd: doc("collMod", "capped", "cappedSize", int32(8192)), code: mongoerr.NotImplemented},
		{cmd: doc("collMod", "capped", "cappedMax", int32(5)), code: mongoerr.NotImplemented},
		{cmd: doc("aggregate", "c", "cursor", bson.D{}, "pipeline", bson.A{doc("$project", doc("z", doc("$getNumberOfTrailingZeros", "$a")))}), code: mongoerr.NotImplemented},
		{cmd: doc("aggregate", "c", "cursor", bson.D{}, "pipeline", bson.A{doc("$project", doc("z", doc("$noSuchOperator", "$a")))}), code: mongoerr.InvalidPipelineOperator},
		{cmd: doc("convertToCapped", "c", "size", int32(4096)), code: mongoerr.NotImplemented},
		{cmd: doc("cloneCollectionAsCapped", "c", "toCollection", "cc", "size", int32(4096)), code: mongoerr.NotImplemented},
	})
	r := run(t, h, "test", doc("convertToCapped", "c", "size", int32(4096)))
	if msg, _ := lookup(r, "errmsg"); !strings.Contains(fmt.Sprint(msg), "convertToCapped is not supported") {
		t.Errorf("convertToCapped: %v", r)
	}
	// Neither touched anything: c is as it was and not capped, no cc.
	if n := len(st.Docs("test", "c")); n != 5 {
		t.Errorf("%d documents in c", n)
	}
	if r := ok(t, run(t, h, "test", doc("collStats", "c"))); get(t, r, "capped") != false {
		t.Errorf("c became capped: %v", r)
	}
	r = ok(t, run(t, h, "test", doc("listCollections", int32(1), "filter", doc("name", "cc"))))
	if n := len(get(t, r, "cursor", "firstBatch").(bson.A)); n != 0 {
		t.Errorf("cloneCollectionAsCapped made cc: %v", r)
	}
	// listCommands does not advertise them as working.
	cmds := get(t, ok(t, run(t, h, "admin", doc("listCommands", int32(1)))), "commands")
	for _, name := range []string{"convertToCapped", "cloneCollectionAsCapped"} {
		if help := get(t, cmds, name, "help").(string); !strings.HasPrefix(help, "not supported") {
			t.Errorf("listCommands %s: %q", name, help)
		}
	}
}

func TestStatsReplies(t *testing.T) {
	h, _ := newFakeHandlers(t)
	seed(t, h)
	ok(t, run(t, h, "test", doc("createIndexes", "c", "indexes", bson.A{doc("key", doc("a", int32(1)), "name", "a_1")})))
	ok(t, run(t, h, "test", doc("create", "v1", "viewOn", "c", "pipeline", bson.A{})))
	ok(t, run(t, h, "test", doc("create", "v2", "viewOn", "v1", "pipeline", bson.A{})))
	ok(t, run(t, h, "test", doc("create", "capped", "capped", true, "size", int32(1000), "max", int32(10))))

	r := ok(t, run(t, h, "test", doc("dbStats", int32(1))))
	if get(t, r, "db") != "test" || get(t, r, "views") != int64(2) || get(t, r, "scaleFactor") != int64(1) {
		t.Errorf("dbStats: %v", r)
	}
	if r = ok(t, run(t, h, "test", doc("dbStats", int32(1), "scale", 1023.999))); get(t, r, "scaleFactor") != int64(1023) {
		t.Errorf("dbStats scale 1023.999: %v", r)
	}
	r = ok(t, run(t, h, "test", doc("collStats", "c")))
	sizes := get(t, r, "indexSizes").(bson.D)
	if get(t, r, "ns") != "test.c" || get(t, r, "nindexes") != int64(2) || len(sizes) != 2 || sizes[0].Key != "_id_" || sizes[1].Key != "a_1" ||
		get(t, r, "capped") != false {
		t.Errorf("collStats: %v", r)
	}
	// A capped collection's limits; size 1000 is rounded up to 4096.
	r = ok(t, run(t, h, "test", doc("collStats", "capped", "scale", int32(2))))
	if get(t, r, "capped") != true || fmt.Sprint(get(t, r, "max")) != "10" || fmt.Sprint(get(t, r, "maxSize")) != "2048" || get(t, r, "scaleFactor") != int64(2) {
		t.Errorf("collStats of a capped collection: %v", r)
	}
	r = ok(t, run(t, h, "test", doc("collStats", "missing")))
	if get(t, r, "count") != int64(0) || get(t, r, "nindexes") != int64(0) {
		t.Errorf("collStats of a missing collection: %v", r)
	}
	runCases(t, h, []argCase{
		{cmd: doc("dbStats", int32(1), "scale", int32(0)), code: mongoerr.ValueNegative},
		{cmd: doc("dbStats", int32(1), "scale", int32(-5)), code: mongoerr.ValueNegative},
		{cmd: doc("dbStats", int32(1), "scale", "big"), code: mongoerr.TypeMismatch},
		{cmd: doc("dbStats", int32(1), "freeStorage", int32(1)), code: mongoerr.NotImplemented},
		{cmd: doc("dbStats", int32(1), "freeStorage", int32(0)), code: 0},
		{cmd: doc("collStats", "c", "scale", int32(0)), code: mongoerr.ValueNegative},
		{cmd: doc("collStats", "v1"), code: mongoerr.CommandNotSupportedOnView},
		{cmd: doc("listIndexes", "v1"), code: mongoerr.CommandNotSupportedOnView},
		{cmd: doc("collStats", "c", "bogus", int32(1)), code: mongoerr.UnknownField},
	})
}

func TestRenameCollectionReplies(t *testing.T) {
	h, st := newFakeHandlers(t)
	seed(t, h)
	ok(t, run(t, h, "test", doc("createIndexes", "c", "indexes", bson.A{doc("key", doc("a", int32(1)), "name", "a_1")})))
	ok(t, run(t, h, "test", doc("insert", "b", "documents", bson.A{doc("_id", "b")})))
	runCases(t, h, []argCase{
		{db: "admin", cmd: doc("renameCollection", "test.missing", "to", "test.x"), code: mongoerr.NamespaceNotFound},
		{db: "admin", cmd: doc("renameCollection", "test.c", "to", "test.c"), code: mongoerr.IllegalOperation},
		{db: "test", cmd: doc("renameCollection", "test.c", "to", "test.x"), code: mongoerr.Unauthorized},
		{db: "admin", cmd: doc("renameCollection", "nodot", "to", "test.x"), code: mongoerr.InvalidNamespace},
		{db: "admin", cmd: doc("renameCollection", "test.c"), code: mongoerr.MissingField},
		{db: "admin", cmd: doc("renameCollection", "test.c", "to", "test.b"), code: mongoerr.NamespaceExists},
	})
	if got := st.Docs("test", "b"); len(got) != 1 || len(st.Docs("test", "c")) != 5 {
		t.Fatalf("refused renames changed b %v or c", got)
	}
	ok(t, run(t, h, "admin", doc("renameCollection", "test.c", "to", "other.moved")))
	if len(st.Docs("other", "moved")) != 5 || len(st.Docs("test", "c")) != 0 {
		t.Errorf("after rename: moved %v, c %v", st.Docs("other", "moved"), st.Docs("test", "c"))
	}
	r := ok(t, run(t, h, "other", doc("listIndexes", "moved")))
	if get(t, r, "cursor", "firstBatch", 1, "name") != "a_1" {
		t.Errorf("indexes after rename: %v", r)
	}
	ok(t, run(t, h, "admin", doc("renameCollection", "other.moved", "to", "test.b", "dropTarget", true)))
	if got := st.Docs("test", "b"); len(got) != 5 {
		t.Errorf("rename with dropTarget: b holds %v", got)
	}
}

func TestCurrentOpReplies(t *testing.T) {
	h, _ := newFakeHandlers(t)
	r := ok(t, run(t, h, "admin", doc("currentOp", int32(1))))
	var mine []bson.D
	for _, op := range get(t, r, "inprog").(bson.A) {
		if c, ok := lookup(op.(bson.D), "command"); ok && slices.ContainsFunc(c.(bson.D), func(e bson.E) bool { return e.Key == "currentOp" }) {
			mine = append(mine, op.(bson.D))
		}
	}
	if len(mine) != 1 || get(t, mine[0], "active") != true || get(t, mine[0], "tier") != "normal" {
		t.Fatalf("currentOp does not list itself: %v", r)
	}
	// The other fields are a query over the operation documents.
	if r = ok(t, run(t, h, "admin", doc("currentOp", int32(1), "command.find", "nothing"))); len(get(t, r, "inprog").(bson.A)) != 0 {
		t.Errorf("currentOp with a filter matching nothing: %v", r)
	}
	runCases(t, h, []argCase{
		{db: "test", cmd: doc("currentOp", int32(1)), code: mongoerr.Unauthorized},
		{db: "admin", cmd: doc("currentOp", int32(1), "$ownOps", "yes"), code: mongoerr.TypeMismatch},
		{db: "admin", cmd: doc("currentOp", int32(1), "a", doc("$bogus", int32(1))), code: mongoerr.BadValue},
	})
}
