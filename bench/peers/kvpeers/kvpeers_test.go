package kvpeers

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/magiconair/properties"
	"github.com/pingcap/go-ycsb/pkg/ycsb"

	"github.com/ringstore/ringstore/bench/kvbench"
)

// TestPebbleLoadAndRead loads a small data set into Pebble the way the
// benchmark does and reads it back in both modes; every value is checked
// by the loop.
func TestPebbleLoadAndRead(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "pebble")
	c := kvbench.ChildConfig{System: kvbench.SystemPebble, Mode: kvbench.ModeLoad, Dir: dir, Keys: 5000, Batch: 16, Callers: 2,
		CacheSize: 1 << 20, Duration: 100 * time.Millisecond}
	raw, _ := json.Marshal(c)
	lt, err := RunTrial(raw)
	if err != nil {
		t.Fatal(err)
	}
	if lt.Extra[kvbench.XLoadKeys] != 5000 || lt.Extra[kvbench.XDiskBytes] < float64(kvbench.DataBytes(5000)) {
		t.Errorf("implausible load %+v", lt)
	}
	for _, m := range []string{kvbench.ModeGetSerial, kvbench.ModeGetParallel} {
		c.Mode = m
		raw, _ := json.Marshal(c)
		tr, err := RunTrial(raw)
		if err != nil {
			t.Fatalf("%s: %v", m, err)
		}
		if tr.Ops <= 0 || tr.Ops%16 != 0 || tr.P99us < tr.P50us || tr.Extra[kvbench.XCacheMisses] <= 0 {
			t.Errorf("%s: implausible trial %+v", m, tr)
		}
	}
	c.Mode = kvbench.ModeMultiGet
	raw, _ = json.Marshal(c)
	if _, err := RunTrial(raw); err == nil {
		t.Error("Pebble ran a MultiGet mode")
	}
}

// TestBindings checks every operation of both go-ycsb bindings against
// the same expectations.
func TestBindings(t *testing.T) {
	for _, name := range []string{DBRingstore, DBPebble} {
		t.Run(name, func(t *testing.T) {
			p := properties.NewProperties()
			p.Set(PropDir, filepath.Join(t.TempDir(), name))
			p.Set(PropCacheMB, "1")
			p.Set("fieldcount", "3")
			db, err := ycsb.GetDBCreator(name).Create(p)
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			bdb := db.(ycsb.BatchDB)
			ctx := context.Background()
			row := func(i int) map[string][]byte {
				return map[string][]byte{"field0": fmt.Appendf(nil, "a%d", i), "field1": fmt.Appendf(nil, "b%d", i), "field2": fmt.Appendf(nil, "c%d", i)}
			}
			keys := make([]string, 20)
			rows := make([]map[string][]byte, 20)
			for i := range keys {
				keys[i], rows[i] = fmt.Sprintf("user%03d", i), row(i)
			}
			if err := bdb.BatchInsert(ctx, "t", keys[:10], rows[:10]); err != nil {
				t.Fatal(err)
			}
			for i := 10; i < 20; i++ {
				if err := db.Insert(ctx, "t", keys[i], rows[i]); err != nil {
					t.Fatal(err)
				}
			}
			if err := db.Update(ctx, "t", keys[3], map[string][]byte{"field1": []byte("new")}); err != nil {
				t.Fatal(err)
			}
			if err := bdb.BatchUpdate(ctx, "t", keys[4:6], []map[string][]byte{{"field2": []byte("x")}, {"field2": []byte("y")}}); err != nil {
				t.Fatal(err)
			}
			m, err := db.Read(ctx, "t", keys[3], nil)
			if err != nil || string(m["field0"]) != "a3" || string(m["field1"]) != "new" || string(m["field2"]) != "c3" {
				t.Errorf("read after update: %q, %v", m, err)
			}
			got, err := bdb.BatchRead(ctx, "t", keys, []string{"field2"})
			if err != nil || len(got) != 20 {
				t.Fatalf("BatchRead: %d rows, %v", len(got), err)
			}
			for i, g := range got {
				want := fmt.Sprintf("c%d", i)
				if i == 4 {
					want = "x"
				} else if i == 5 {
					want = "y"
				}
				if string(g["field2"]) != want || len(g) != 1 {
					t.Errorf("BatchRead row %d: %q, want field2=%s only", i, g, want)
				}
			}
			scan, err := db.Scan(ctx, "t", keys[15], 10, nil)
			if err != nil || len(scan) != 5 || string(scan[0]["field0"]) != "a15" {
				t.Errorf("Scan from %s: %d rows (%q), %v", keys[15], len(scan), scan, err)
			}
			if err := db.Delete(ctx, "t", keys[0]); err != nil {
				t.Fatal(err)
			}
			if err := bdb.BatchDelete(ctx, "t", keys[1:3]); err != nil {
				t.Fatal(err)
			}
			if _, err := db.Read(ctx, "t", keys[1], nil); err == nil {
				t.Error("a deleted key was read")
			}
			if got, _ := bdb.BatchRead(ctx, "t", keys[:4], nil); got[0] != nil || got[2] != nil || got[3] == nil {
				t.Errorf("BatchRead after deletes: %q", got)
			}
			if n := db.(Counter).Errors(); n != 4 {
				t.Errorf("%d errors counted, want 4 (a read and a batch read of three deleted keys)", n)
			}
		})
	}
}

// TestWorkloads runs a tiny YCSB workload A–F against both stores.
func TestWorkloads(t *testing.T) {
	for _, name := range []string{DBRingstore, DBPebble} {
		for _, wl := range []string{"a", "b", "c", "d", "e", "f"} {
			t.Run(name+"/"+wl, func(t *testing.T) {
				// Workload D reads the latest inserts, and go-ycsb v1.0.3's
				// batch insert (doBatchTransactionInsert) acknowledges each
				// key before the batch is written: with two threads a read
				// may pick a key the other thread has not written yet and
				// count the miss as a failed read, on either store.
				threads := 2
				if wl == "d" {
					threads = 1
				}
				res, err := RunWorkload(Workload{DB: name, Name: wl, Dir: filepath.Join(t.TempDir(), "db"), Records: 300, Operations: 400,
					Threads: threads, Batch: 16, CacheBytes: 1 << 20, Props: map[string]string{"fieldcount": "4", "fieldlength": "20"}}, false)
				if err != nil {
					t.Fatal(err)
				}
				if res.Errors != 0 {
					t.Errorf("%d operations failed", res.Errors)
				}
				if res.Run <= 0 || res.Ops < 700 {
					t.Errorf("the workload did too little: %+v", res)
				}
			})
		}
	}
}
