package storage

import "testing"

func TestParseAnalyze(t *testing.T) {
	c := newCollection("d", "c", "00000000-0000-0000-0000-000000000000", "c1_d_c", []Index{{Name: "a_1", Keys: []IndexKey{{Field: "a"}}, Column: "k1"}})
	// A bitmap scan over two index conditions (one per loop figure), then
	// an index scan of the primary key run twice.
	js := []byte(`[{"Plan": {"Node Type": "Append", "Actual Rows": 9, "Actual Loops": 1,
	  "Shared Hit Blocks": 12, "Shared Read Blocks": 3, "Plans": [
	  {"Node Type": "Bitmap Heap Scan", "Relation Name": "c1_d_c", "Actual Rows": 5, "Actual Loops": 1,
	   "Rows Removed by Filter": 2, "Rows Removed by Index Recheck": 1, "Plans": [
	    {"Node Type": "BitmapOr", "Actual Rows": 0, "Actual Loops": 1, "Plans": [
	      {"Node Type": "Bitmap Index Scan", "Index Name": "c1_d_c_k1", "Actual Rows": 7, "Actual Loops": 1},
	      {"Node Type": "Bitmap Index Scan", "Index Name": "c1_d_c_k1", "Actual Rows": 1, "Actual Loops": 1}]}]},
	  {"Node Type": "Index Scan", "Relation Name": "c1_d_c", "Index Name": "c1_d_c_pkey", "Actual Rows": 2, "Actual Loops": 2,
	   "Rows Removed by Filter": 1},
	  {"Node Type": "Seq Scan", "Relation Name": "other", "Actual Rows": 100, "Actual Loops": 1}]}}]`)
	w, err := parseAnalyze(c, js)
	if err != nil {
		t.Fatal(err)
	}
	// Docs: bitmap heap 5+2+1, index scan (2+1)*2; keys: 7+1, (2+1)*2.
	if w.Statements != 1 || w.Rows != 9 || w.Docs != 14 || w.Keys != 14 || w.SharedHit != 12 || w.SharedRead != 3 {
		t.Fatalf("work %+v", w)
	}
	if len(w.Scans) != 3 || w.Scans[0].Index != "a_1" || w.Scans[0].Keys != 8 || w.Scans[2].Index != "_id_" || w.Scans[2].Rows != 4 {
		t.Fatalf("scans %+v", w.Scans)
	}
	var sum Work
	sum.Add(w)
	sum.Add(w)
	if sum.Statements != 2 || sum.Keys != 28 || len(sum.Scans) != 3 || sum.Scans[0].Keys != 16 {
		t.Fatalf("sum %+v", sum)
	}
	if _, err := parseAnalyze(c, []byte(`{}`)); err == nil {
		t.Error("malformed output accepted")
	}
}
