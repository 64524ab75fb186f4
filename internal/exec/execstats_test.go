package exec

import (
	"context"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"tierdb/internal/storage"
)

// fakeAnalyzer reports one fixed Work per statement and counts them.
type fakeAnalyzer struct{ scans, counts int }

func (a *fakeAnalyzer) AnalyzeScan(context.Context, storage.On, *storage.Collection, storage.ScanParams) (storage.Work, error) {
	a.scans++
	return storage.Work{Statements: 1, Rows: 4, Docs: 4, Keys: 4, Scans: []storage.ScanWork{{Node: "Index Scan", Index: "_id_", Keys: 4, Docs: 4, Rows: 4}}}, nil
}

func (a *fakeAnalyzer) AnalyzeCount(context.Context, storage.On, *storage.Collection, string, []any) (storage.Work, error) {
	a.counts++
	return storage.Work{Statements: 1, Rows: 1, Docs: 4}, nil
}

func TestAnalyzedReadReportsWhatRan(t *testing.T) {
	docs := []bson.D{}
	for i := range 4 {
		docs = append(docs, bson.D{{Key: "_id", Value: int32(i)}, {Key: "b", Value: int32(i % 2)}})
	}
	a := &fakeAnalyzer{}
	r, st := (&Read{Store: newFakeStore(t, docs...), Col: testCol(), Spec: spec(t, bson.D{{Key: "b", Value: int32(1)}}, nil, nil, 0, 0)}).Analyzed(a)
	n, err := r.Drain(context.Background())
	if err != nil || n != 2 {
		t.Fatalf("drained %d, %v", n, err)
	}
	if a.scans != 1 || st.Received != 4 || st.Rechecked != 4 || !st.Scanned {
		t.Fatalf("scans %d, stats %+v", a.scans, st)
	}
	rep := st.Report(n, false, 0)
	want := map[string]any{"nReturned": int64(2), "totalKeysExamined": int64(4), "totalDocsExamined": int64(4)}
	for k, v := range want {
		if got, _ := lookupField(rep, k); got != v {
			t.Errorf("%s = %v, want %v", k, got, v)
		}
	}
	stages, _ := lookupField(rep, "executionStages")
	if s, _ := lookupField(stages.(bson.D), "stage"); s != "FILTER" {
		t.Errorf("top stage %v", s)
	}

	// An empty count is PostgreSQL's: no FILTER, COUNT over POSTGRESQL.
	r, st = (&Read{Store: newFakeStore(t, docs...), Col: testCol(), Spec: spec(t, nil, nil, nil, 0, 0)}).Analyzed(a)
	if n, err = r.Count(context.Background()); err != nil || n != 4 || a.counts != 1 {
		t.Fatalf("count %d, %v, %d analyzed", n, err, a.counts)
	}
	stages, _ = lookupField(st.Report(n, true, 0), "executionStages")
	input, _ := lookupField(stages.(bson.D), "inputStage")
	if s, _ := lookupField(input.(bson.D), "stage"); s != "POSTGRESQL" {
		t.Errorf("a count(*)'s input stage %v", s)
	}
}

func TestUnanalyzedStatementsLeaveTheTotalsOut(t *testing.T) {
	st := &ExecStats{Unknown: true}
	rep := st.Report(3, false, 0)
	for _, k := range []string{"totalKeysExamined", "totalDocsExamined"} {
		if _, ok := lookupField(rep, k); ok {
			t.Errorf("%s reported though PostgreSQL's work is not known", k)
		}
	}
}
