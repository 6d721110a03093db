package nexmark

import (
	"errors"
	"strings"
	"testing"

	"github.com/ringstore/ringstore"
)

// TestDecodersReportCorruption: damaged checkpoint metas, final-stage
// snapshots and stored operator values are *ringstore.CorruptError, naming
// the checkpoint part or file (and the offset where one applies) and what
// was wrong.
func TestDecodersReportCorruption(t *testing.T) {
	meta := checkpointMeta{sink: Sink{Rows: 3}, parallelism: 2, worker: 1, keyGroups: 8, from: []groupFrom{{4, 7, 100}}}.encode()
	badWorker := checkpointMeta{parallelism: 2, worker: 2, keyGroups: 8}.encode()
	outOfOrder := checkpointMeta{parallelism: 2, worker: 1, keyGroups: 8, from: []groupFrom{{4, 5, 1}, {5, 7, 1}}}.encode()
	fin := newFinalStage(mustQuery("q5"), 2)
	fin.wms = []int64{1, 2}
	snap, err := fin.encodeSnapshot()
	if err != nil {
		t.Fatal(err)
	}
	flipped := append([]byte(nil), snap...)
	flipped[len(flipped)/2] ^= 1
	const part, file = "/d/ck-g0-p2-n000001-w1", "/d/ck-g0-p2-n000001-final"
	for _, c := range []struct {
		name string
		err  error
		path string
		off  int64
		msg  string
	}{
		{"meta without magic", second(decodeCheckpointMeta(part, []byte("nxcj"))), part, -1, `does not start with "nxck"`},
		{"meta of worker 2 of 2", second(decodeCheckpointMeta(part, badWorker)), part, -1, "worker 2 of 2"},
		{"meta cut short", second(decodeCheckpointMeta(part, meta[:len(meta)-1])), part, -1, "1 key-group ranges in 11 bytes"},
		{"meta ranges out of order", second(decodeCheckpointMeta(part, outOfOrder)), part, -1, "range 1: 5–7 of 8 groups, out of order"},
		{"snapshot of 3 bytes", second(decodeFinalSnapshot(file, snap[:3])), file, 0, "a final-stage snapshot of 3 bytes"},
		{"snapshot with a flipped bit", second(decodeFinalSnapshot(file, flipped)), file, int64(len(snap) - 4), "fails its checksum"},
		{"stored value too short", second(fromU64s(make([]byte, 15), 2, "best bid")), "", -1, "a stored best bid of 15 bytes"},
	} {
		var ce *ringstore.CorruptError
		if !errors.As(c.err, &ce) || !ringstore.IsCorrupt(c.err) {
			t.Errorf("%s: %v: not a *ringstore.CorruptError", c.name, c.err)
			continue
		}
		if ce.Path != c.path || ce.Offset != c.off || !strings.Contains(ce.What, c.msg) {
			t.Errorf("%s: %s at offset %d: %q; want %s at offset %d: %q", c.name, ce.Path, ce.Offset, ce.What, c.path, c.off, c.msg)
		}
	}
	if m, err := decodeCheckpointMeta(part, meta); err != nil || m.worker != 1 || m.fromOf(5) != 100 {
		t.Fatalf("an intact meta: %+v, %v", m, err)
	}
	if _, err := decodeFinalSnapshot(file, snap); err != nil {
		t.Fatalf("an intact snapshot: %v", err)
	}
}

func second[T any](_ T, err error) error { return err }
