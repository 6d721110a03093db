package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ringstore/ringstore/internal/testdir"
	"github.com/ringstore/ringstore/ioengine"
)

func TestCheckRefusesBadFlags(t *testing.T) {
	good := options{Keys: 100, Partitions: 8, Seconds: 1, Trials: 1, CacheMiB: 1, MemtableMiB: 1, LimitMiB: 64, Systems: sysURing}
	for _, c := range []struct {
		edit func(*options)
		want string
	}{
		{func(o *options) { o.Keys = 3 }, "--keys 3"},
		{func(o *options) { o.Restore = -1 }, "--restore -1"},
		{func(o *options) { o.Partitions = 0 }, "--partitions 0"},
		{func(o *options) { o.Seconds = 0 }, "--seconds 0"},
		{func(o *options) { o.Trials = 0 }, "--trials 0"},
		{func(o *options) { o.CacheMiB = 0 }, "--cache-mib 0"},
		{func(o *options) { o.Systems = "rocksdb" }, `unknown system "rocksdb"`},
	} {
		o := good
		c.edit(&o)
		if err := o.check(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("check = %v, want an error with %q", err, c.want)
		}
	}
	o := good
	if err := o.check(); err != nil || o.Restore != o.Keys {
		t.Fatalf("check of good flags = %v, restore %d", err, o.Restore)
	}
}

func TestBidRoundTrip(t *testing.T) {
	b := bid{Bidder: 7, Auction: 9, Price: 11, Time: -3}
	copy(b.Extra[:], "extra bytes of the bid")
	got, err := decodeBid(b.encode(nil))
	if err != nil || got != b {
		t.Fatalf("decode(encode(%+v)) = %+v, %v", b, got, err)
	}
	if _, err := decodeBid(make([]byte, 5)); err == nil || !strings.Contains(err.Error(), "5 bytes") {
		t.Fatalf("decode of 5 bytes = %v", err)
	}
}

// TestChildSmall runs one tiny trial of every system in this process.
func TestChildSmall(t *testing.T) {
	for _, sys := range []string{sysURing, sysSyscall, sysLevelDB} {
		t.Run(sys, func(t *testing.T) {
			c := childConfig{System: sys, Dir: filepath.Join(testdir.Direct(t), "store"), Partitions: 4, Keys: 4000, Restore: 6000,
				Seconds: 0.2, Warmup: 0.05, CacheBytes: 1 << 20, MemBytes: 1 << 20, Seed: 1}
			raw, _ := json.Marshal(c)
			tr, err := child(raw)
			if err != nil {
				t.Fatal(err)
			}
			if tr.Ops == 0 || tr.P99us <= 0 || tr.Extra[xRestoreSeconds] <= 0 || tr.Extra[xStateBytes] <= 0 {
				t.Fatalf("trial %+v", tr)
			}
			// The io_uring child measures the device's floor on its tables.
			if ok, _ := ioengine.ProbeKernel().Usable(); ok && sys == sysURing && (tr.Extra[xDeviceIOPS] <= 0 || tr.Extra[xDeviceP99] <= 0) {
				t.Fatalf("trial %+v: no device floor", tr)
			}
		})
	}
}
