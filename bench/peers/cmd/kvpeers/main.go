// Command kvpeers runs the peers of `ringstore bench kv`, and YCSB
// workloads against ringstore's kv and Pebble:
//
//	kvpeers __bench-child kv-peer '<kvbench.ChildConfig JSON>'
//	    loads or reads Pebble for one trial; prints "RESULT <bench.Trial JSON>"
//	kvpeers versions
//	    prints the peer modules' versions as a JSON object
//	kvpeers ycsb -db ringstore|pebble -workload a..f -dir DIR [flags]
//	    loads DIR with a YCSB workload's records and runs its operations
//	    (go-ycsb's core workload; the bindings are package kvpeers')
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/ringstore/ringstore/bench"
	"github.com/ringstore/ringstore/bench/kvbench"
	"github.com/ringstore/ringstore/bench/peers/kvpeers"
)

// modules are the peer modules whose versions the binary reports.
var modules = []string{kvbench.PebbleModule, kvpeers.YCSBModule}

func main() {
	bench.RegisterChild(kvbench.PeerWorkload, kvpeers.RunTrial)
	bench.MaybeChild()
	if len(os.Args) == 2 && os.Args[1] == "versions" {
		out, _ := json.Marshal(bench.ModuleVersions(modules))
		fmt.Println(string(out))
		return
	}
	if len(os.Args) >= 2 && os.Args[1] == "ycsb" {
		if err := ycsb(os.Args[2:]); err != nil {
			fmt.Fprintf(os.Stderr, "kvpeers ycsb: %v\n", err)
			os.Exit(1)
		}
		return
	}
	fmt.Fprintf(os.Stderr, "usage: kvpeers %s %s '<config JSON>' | kvpeers versions | kvpeers ycsb -db ringstore|pebble -workload a..f -dir DIR\n", "__bench-child", kvbench.PeerWorkload)
	os.Exit(2)
}

func ycsb(args []string) error {
	fs := flag.NewFlagSet("kvpeers ycsb", flag.ContinueOnError)
	db := fs.String("db", "ringstore", "store: ringstore or pebble")
	workload := fs.String("workload", "a", "YCSB core workload: a, b, c, d, e or f")
	dir := fs.String("dir", "", "directory of the store (made empty first)")
	records := fs.Int64("records", 100_000, "records loaded")
	ops := fs.Int64("ops", 100_000, "operations run")
	threads := fs.Int("threads", 4, "client threads")
	batch := fs.Int("batch", 64, "keys per batch for reads, inserts and updates (workloads a–d; e and f run one operation at a time: go-ycsb's batch mode has no scan or read-modify-write)")
	cache := fs.Int64("cache-mb", 64, "block cache MiB")
	ioMode := fs.String("io-mode", "uring", "ringstore's backend: uring or syscall")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *dir == "" {
		return fmt.Errorf("-dir is required")
	}
	if err := os.RemoveAll(*dir); err != nil {
		return err
	}
	w := kvpeers.Workload{DB: *db, Name: *workload, Dir: *dir, Records: *records, Operations: *ops, Threads: *threads,
		Batch: *batch, CacheBytes: *cache << 20, IOMode: *ioMode}
	res, err := kvpeers.RunWorkload(w, true)
	if err != nil {
		return err
	}
	fmt.Printf("workload %s on %s: loaded %d records in %s, ran %d operations in %s (%.0f ops/s); %d keys touched, %d operations failed\n",
		*workload, *db, *records, res.Load.Round(time.Millisecond), *ops, res.Run.Round(time.Millisecond), float64(*ops)/res.Run.Seconds(), res.Ops, res.Errors)
	return nil
}
