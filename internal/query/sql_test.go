package query

import (
	"bytes"
	"context"
	"encoding/hex"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"go.mongodb.org/mongo-driver/v2/bson"

	"tierdb/internal/pgmanage/pgtest"
)

func TestSQLText(t *testing.T) {
	id := KeyColumn{Column: `"_id"`, Fields: []string{"_id"}}
	a := KeyColumn{Column: "k_a", Fields: []string{"a"}, Nullable: true}
	ab := KeyColumn{Column: "k_ab", Fields: []string{"a", "b"}, Nullable: true}
	k := func(v any) []byte { return AppendKey(nil, v) }
	cases := []struct {
		filter string
		cols   []KeyColumn
		where  string
		args   []any
	}{
		{`{"_id": 5}`, []KeyColumn{id}, `"_id" = $3`, []any{k(5)}},
		{`{"_id": {"$in": [1, "x"]}}`, []KeyColumn{id}, `"_id" = ANY($3::bytea[])`, []any{[][]byte{k(1), k("x")}}},
		{`{"_id": {"$gt": 5}}`, []KeyColumn{id}, `"_id" > $3 AND "_id" < $4`, []any{k(5), []byte{byte(brNumber) + 1}}},
		{`{"_id": {"$lte": "m"}}`, []KeyColumn{id}, `"_id" >= $3 AND "_id" <= $4`, []any{[]byte{byte(brString)}, k("m")}},
		{`{"a": 5}`, []KeyColumn{a}, `((k_a = $3) OR k_a IS NULL)`, []any{k(5)}},
		{`{"a": [1]}`, []KeyColumn{a}, `k_a IS NULL`, nil},
		{`{"a": 5}`, []KeyColumn{ab}, `((k_ab >= $3 AND k_ab < $4) OR k_ab IS NULL)`, []any{k(5), prefixEnd(k(5))}},
		{`{"a": null}`, []KeyColumn{a}, `((k_a >= $3 AND k_a < $4) OR k_a IS NULL)`, []any{k(bson.Undefined{}), prefixEnd(k(nil))}},
		{`{"b": 5}`, []KeyColumn{id, a, ab}, `TRUE`, nil},
		{`{"a": {"$ne": 5}, "$or": [{"_id": 1}]}`, []KeyColumn{id, a}, `TRUE`, nil},
		{`{"a": {"$regularExpression": {"pattern": "x", "options": ""}}}`, []KeyColumn{a}, `TRUE`, nil},
		{`{"_id": {"$gt": {"$minKey": 1}}}`, []KeyColumn{id}, `TRUE`, nil},
		{`{"_id": {"$gt": null}}`, []KeyColumn{id}, `FALSE`, nil},
		{`{"_id": [1]}`, []KeyColumn{id}, `TRUE`, nil},
		{`{"$and": [{"_id": 1}, {"a": 2}]}`, []KeyColumn{id, a}, `"_id" = $3 AND ((k_a = $4) OR k_a IS NULL)`, []any{k(1), k(2)}},
	}
	for _, c := range cases {
		f, err := ParseFilter(ej(t, c.filter))
		if err != nil {
			t.Fatal(err)
		}
		where, args := f.SQL(c.cols, 3)
		if where != c.where || fmt.Sprint(args) != fmt.Sprint(c.args) {
			t.Errorf("SQL(%s) = %q %v\nwant %q %v", c.filter, where, args, c.where, c.args)
		}
	}
}

// missingValue marks "leave the field out" in the corpus value pool.
type missingValue struct{}

func corpusPool(t testing.TB) []any {
	d := func(s string) any { return dec(t, s) }
	e := func(k string, v any) bson.D { return bson.D{{Key: k, Value: v}} }
	return []any{
		missingValue{}, missingValue{},
		int32(1), int32(2), int64(2), 2.0, 2.5, -1.0, math.NaN(), 0.0, math.Copysign(0, -1),
		math.Inf(1), d("2"), d("2.5000"), d("0.1"), 0.1, int64(1<<53 + 1), float64(1 << 53),
		"x", "y", "", "x\x00", bson.Symbol("x"), nil, bson.Undefined{}, true, false,
		bson.DateTime(1000), bson.MinKey{}, bson.MaxKey{}, bson.Regex{Pattern: "x"},
		bson.Binary{Data: []byte{1}}, oid(1), bson.Timestamp{T: 1, I: 1},
		e("b", int32(1)), e("b", "x"), e("b", nil), bson.D{}, e("c", int32(1)),
		e("b", bson.A{int32(1), int32(2)}),
		bson.A{int32(1), int32(2)}, bson.A{}, bson.A{nil}, bson.A{"x", int32(5)},
		bson.A{e("b", int32(1)), e("b", int32(2))}, bson.A{bson.A{int32(1)}},
	}
}

func buildCorpus(t testing.TB, n int) []bson.D {
	r := rand.New(rand.NewPCG(7, 8))
	pool := corpusPool(t)
	docs := make([]bson.D, n)
	for i := range docs {
		var id any
		switch i % 5 {
		case 0:
			id = int32(i)
		case 1:
			id = fmt.Sprintf("id%03d", i)
		case 2:
			id = oid(byte(i))
		case 3:
			id = float64(i) + 0.5
		default:
			id = bson.D{{Key: "k", Value: int64(i)}}
		}
		doc := bson.D{{Key: "_id", Value: id}}
		for _, f := range []string{"a", "b"} {
			if v := pool[r.IntN(len(pool))]; v != (missingValue{}) {
				doc = append(doc, bson.E{Key: f, Value: v})
			}
		}
		docs[i] = doc
	}
	return docs
}

// corpusFilters generates filters over a, b, a.b and _id with operands of
// every kind, including the subtle ones (null, arrays, NaN, MinKey).
func corpusFilters(t testing.TB, docs []bson.D) []bson.D {
	r := rand.New(rand.NewPCG(9, 10))
	var operands []any
	for _, v := range corpusPool(t) {
		switch v.(type) {
		case missingValue, bson.Undefined:
			continue
		}
		operands = append(operands, v)
	}
	for _, d := range docs[:10] {
		operands = append(operands, d[0].Value) // some real _ids
	}
	var filters []bson.D
	for _, path := range []string{"a", "b", "a.b", "_id"} {
		for _, v := range operands {
			filters = append(filters, bson.D{{Key: path, Value: v}})
			for _, op := range []string{"$eq", "$gt", "$gte", "$lt", "$lte", "$in"} {
				arg := v
				switch op {
				case "$gt", "$gte", "$lt", "$lte":
					if _, isRegex := v.(bson.Regex); isRegex {
						continue
					}
				case "$in":
					arg = bson.A{v, operands[r.IntN(len(operands))]}
				}
				filters = append(filters, bson.D{{Key: path, Value: bson.D{{Key: op, Value: arg}}}})
			}
		}
	}
	// Combinations: several pushable conditions at once, inside $and, next
	// to ones that cannot be pushed.
	for i := 0; i < 150; i++ {
		pick := func() bson.E {
			f := filters[r.IntN(len(filters))]
			return f[0]
		}
		switch i % 3 {
		case 0:
			filters = append(filters, bson.D{pick(), pick()})
		case 1:
			filters = append(filters, bson.D{{Key: "$and", Value: bson.A{bson.D{pick()}, bson.D{pick()}}}, pick()})
		default:
			filters = append(filters, bson.D{pick(), {Key: "$or", Value: bson.A{bson.D{pick()}, bson.D{pick()}}},
				{Key: "b", Value: bson.D{{Key: "$ne", Value: int32(1)}}}})
		}
	}
	return filters
}

func TestSQLAgainstPostgres(t *testing.T) {
	if testing.Short() {
		t.Skip("starts PostgreSQL")
	}
	ctx := context.Background()
	cluster := pgtest.Start(t)
	conn, err := pgx.Connect(ctx, cluster.ConnString())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)

	t.Run("superset", func(t *testing.T) { testSQLSuperset(ctx, t, conn) })
	t.Run("explain", func(t *testing.T) { testSQLUsesIndex(ctx, t, conn) })
}

func exec(ctx context.Context, t *testing.T, conn *pgx.Conn, sql string, args ...any) {
	t.Helper()
	if _, err := conn.Exec(ctx, sql, args...); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

func testSQLSuperset(ctx context.Context, t *testing.T, conn *pgx.Conn) {
	docs := buildCorpus(t, 200)
	exec(ctx, t, conn, `CREATE TABLE q1 (_id bytea PRIMARY KEY, doc bytea NOT NULL)`)
	exec(ctx, t, conn, `CREATE TABLE q2 (_id bytea PRIMARY KEY, doc bytea NOT NULL, k_a bytea, k_ab bytea, k_adotb bytea)`)
	exec(ctx, t, conn, `CREATE INDEX ON q2 (k_a)`)
	exec(ctx, t, conn, `CREATE INDEX ON q2 (k_ab)`)
	exec(ctx, t, conn, `CREATE INDEX ON q2 (k_adotb)`)
	// q4 has the other index kinds: sparse on a, hashed on a, a on the
	// documents matching partialB, b on those matching partialA.
	exec(ctx, t, conn, `CREATE TABLE q4 (_id bytea PRIMARY KEY, doc bytea NOT NULL, k_sa bytea, k_ha bytea, k_pa bytea, k_pb bytea)`)
	partialB, err := ParseFilter(bson.D{{Key: "b", Value: bson.D{{Key: "$gt", Value: int32(1)}}}})
	if err != nil {
		t.Fatal(err)
	}
	partialA, err := ParseFilter(bson.D{{Key: "a", Value: bson.D{{Key: "$exists", Value: true}}}})
	if err != nil {
		t.Fatal(err)
	}
	// member is what storage writes for a sparse or partial index: the key
	// for a document it holds, the empty string for one it leaves out.
	member := func(in bool, key any) any {
		if !in {
			return []byte{}
		}
		return key
	}
	// indexCol is what storage writes: the key, or NULL when multikey.
	indexCol := func(doc bson.D, fields ...string) any {
		if k, ok := IndexKey(doc, fields); ok {
			return k
		}
		return nil
	}
	for _, d := range docs {
		raw, err := bson.Marshal(d)
		if err != nil {
			t.Fatal(err)
		}
		id := AppendKey(nil, d[0].Value)
		exec(ctx, t, conn, `INSERT INTO q1 VALUES ($1, $2)`, id, raw)
		exec(ctx, t, conn, `INSERT INTO q2 VALUES ($1, $2, $3, $4, $5)`, id, raw,
			indexCol(d, "a"), indexCol(d, "a", "b"), indexCol(d, "a.b"))
		var hashed any
		if k, ok := IndexKeyHashed(d, []string{"a"}, 0); ok {
			hashed = k
		}
		exec(ctx, t, conn, `INSERT INTO q4 VALUES ($1, $2, $3, $4, $5, $6)`, id, raw,
			member(len(LookupAll(d, "a")) > 0, indexCol(d, "a")), hashed,
			member(partialB.Match(d), indexCol(d, "a")), member(partialA.Match(d), indexCol(d, "b")))
	}

	idCol := KeyColumn{Column: "_id", Fields: []string{"_id"}}
	setups := []struct {
		table string
		cols  []KeyColumn
	}{
		{"q1", []KeyColumn{idCol}},
		{"q2", []KeyColumn{
			idCol,
			{Column: "k_a", Fields: []string{"a"}, Nullable: true},
			{Column: "k_ab", Fields: []string{"a", "b"}, Nullable: true},
			{Column: "k_adotb", Fields: []string{"a.b"}, Nullable: true},
		}},
		{"q2", []KeyColumn{{Column: "k_ab", Fields: []string{"a", "b"}, Nullable: true}}},
		{"q4", []KeyColumn{
			{Column: "k_sa", Fields: []string{"a"}, Nullable: true, Sparse: true},
			{Column: "k_ha", Fields: []string{"a"}, Nullable: true, Hashed: true},
			{Column: "k_pa", Fields: []string{"a"}, Nullable: true, Partial: partialB},
			{Column: "k_pb", Fields: []string{"b"}, Nullable: true, Partial: partialA},
		}},
	}

	filters := corpusFilters(t, docs)
	pushed, narrowed := 0, 0
	for _, fd := range filters {
		f, err := ParseFilter(fd)
		if err != nil {
			t.Fatalf("ParseFilter(%v): %v", fd, err)
		}
		var want []string
		for _, d := range docs {
			if f.Match(d) {
				want = append(want, hex.EncodeToString(AppendKey(nil, d[0].Value)))
			}
		}
		for _, s := range setups {
			where, args := f.SQL(s.cols, 1)
			if where != "TRUE" {
				pushed++
			}
			rows, err := conn.Query(ctx, "SELECT doc FROM "+s.table+" WHERE "+where, args...)
			if err != nil {
				t.Fatalf("filter %v: %s: %v", fd, where, err)
			}
			var got []string
			selected := 0
			for rows.Next() {
				var raw []byte
				if err := rows.Scan(&raw); err != nil {
					t.Fatal(err)
				}
				selected++
				var d bson.D
				if err := bson.Unmarshal(raw, &d); err != nil {
					t.Fatal(err)
				}
				if f.Match(d) {
					got = append(got, hex.EncodeToString(AppendKey(nil, d[0].Value)))
				}
			}
			if err := rows.Err(); err != nil {
				t.Fatalf("filter %v: %s: %v", fd, where, err)
			}
			if selected < len(docs) {
				narrowed++
			}
			slices.Sort(got)
			slices.Sort(want)
			if !slices.Equal(got, want) {
				t.Errorf("filter %v on %s: SQL %s selected rows matching %d docs, Match over all finds %d",
					fd, s.table, where, len(got), len(want))
			}
		}
	}
	t.Logf("%d filters, %d SQL conditions pushed down, %d queries narrowed", len(filters), pushed, narrowed)
	// The prefilter must actually do something, not just answer TRUE.
	if pushed < len(filters) || narrowed < len(filters) {
		t.Errorf("too little pushed down: %d conditions, %d narrowed queries for %d filters", pushed, narrowed, len(filters))
	}
}

func testSQLUsesIndex(ctx context.Context, t *testing.T, conn *pgx.Conn) {
	exec(ctx, t, conn, `CREATE TABLE q3 (_id bytea PRIMARY KEY, doc bytea NOT NULL)`)
	batch := &pgx.Batch{}
	for i := 0; i < 5000; i++ {
		id := any(int32(i))
		if i%10 == 0 {
			id = fmt.Sprintf("s%05d", i)
		}
		raw, err := bson.Marshal(bson.D{{Key: "_id", Value: id}, {Key: "pad", Value: strings.Repeat("x", 50)}})
		if err != nil {
			t.Fatal(err)
		}
		batch.Queue(`INSERT INTO q3 VALUES ($1, $2)`, AppendKey(nil, id), raw)
	}
	if err := conn.SendBatch(ctx, batch).Close(); err != nil {
		t.Fatal(err)
	}
	exec(ctx, t, conn, `ANALYZE q3`)

	idCols := []KeyColumn{{Column: "_id", Fields: []string{"_id"}}}
	for _, s := range []string{
		`{"_id": 1234}`,
		`{"_id": 1234.0}`,
		`{"_id": "s00100"}`,
		`{"_id": {"$in": [5, 77, 4001, "s00020"]}}`,
		`{"_id": {"$gte": 100, "$lt": 130}}`,
		`{"_id": {"$gt": 4990}}`,
		`{"_id": {"$lte": 3}}`,
		`{"_id": {"$gt": "s04980"}}`,
		`{"$and": [{"_id": {"$gt": 10}}, {"_id": {"$lt": 12}}], "x": {"$exists": false}}`,
	} {
		f, err := ParseFilter(ej(t, s))
		if err != nil {
			t.Fatal(err)
		}
		where, args := f.SQL(idCols, 1)
		rows, err := conn.Query(ctx, "EXPLAIN SELECT doc FROM q3 WHERE "+where, args...)
		if err != nil {
			t.Fatalf("%s: %v", where, err)
		}
		var plan bytes.Buffer
		for rows.Next() {
			var line string
			if err := rows.Scan(&line); err != nil {
				t.Fatal(err)
			}
			plan.WriteString(line + "\n")
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		p := plan.String()
		if strings.Contains(p, "Seq Scan") || !strings.Contains(p, "Index") {
			t.Errorf("filter %s (%s) is not served by the index:\n%s", s, where, p)
		}
	}
}
