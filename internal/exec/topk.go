package exec

import (
	"go.mongodb.org/mongo-driver/v2/bson"
)

// A $sort followed by a $limit (or by $skip then $limit) keeps only the
// first skip+limit documents in sort order, as MongoDB's coalesced
// $sort+$limit does: its memory is that many documents, whatever the
// input, so it needs neither disk nor the 100 MB limit unless those
// documents themselves exceed it.

// sortKeep is how many sorted documents the stages after a $sort can
// use: skip+limit when they start with $limit or $skip then $limit, else
// 0 (all of them).
func sortKeep(after []bson.D) int64 {
	var skip int64
	if len(after) > 0 && after[0][0].Key == "$skip" {
		n, err := stageCount("$skip", after[0][0].Value)
		if err != nil {
			return 0
		}
		skip, after = n, after[1:]
	}
	if len(after) == 0 || after[0][0].Key != "$limit" {
		return 0
	}
	n, err := stageCount("$limit", after[0][0].Value)
	if err != nil || n > maxKeep-skip {
		return 0
	}
	return skip + n
}

// maxKeep bounds what a kept top may be; past it the $sort holds
// everything (and spills) as without a limit.
const maxKeep = 1 << 40

// trimToKeep sorts what the stage holds and drops what falls past keep,
// once it holds twice that: a stable sort of documents kept in input
// order, so ties keep their input order as in a full sort.
func (s *sortStage) trimToKeep() {
	if s.keep == 0 || int64(len(s.docs)) < 2*s.keep {
		return
	}
	sortDocs(s.docs, s.sort)
	for i := s.keep; i < int64(len(s.docs)); i++ {
		s.docs[i] = nil
	}
	s.docs = s.docs[:s.keep]
	s.mem = 0
	for _, d := range s.docs {
		s.mem += DocMemory(d)
	}
}
