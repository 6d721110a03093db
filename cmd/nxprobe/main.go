package main

import (
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/ringstore/ringstore/ioengine"
	"github.com/ringstore/ringstore/nexmark"
)

func main() {
	q := flag.String("q", "q20", "")
	ev := flag.Int64("events", 1_000_000, "")
	batch := flag.Int("batch", 1000, "")
	cache := flag.Int64("cache", 1<<20, "")
	mem := flag.Int64("mem", 4<<20, "")
	ra := flag.Bool("ra", true, "")
	rw := flag.Int("rw", 0, "")
	sys := flag.Bool("sys", false, "")
	large := flag.Bool("large", true, "")
	flag.Parse()
	dir, _ := os.MkdirTemp("/work/tmp", "nxp-")
	defer os.RemoveAll(dir)
	g := nexmark.GenConfig{}
	if *large {
		g.InFlightAuctions, g.ActivePeople = 100_000, 100_000
	}
	mode := ioengine.URing
	if *sys {
		mode = ioengine.Syscall
	}
	t0 := time.Now()
	res, err := nexmark.Run(nexmark.RunConfig{Query: *q, Events: *ev, Batch: *batch, Dir: dir, Cache: *cache, Memtable: *mem, IOMode: mode, Gen: g,
		ReadAhead: *ra, ReadWorkers: *rw, CheckpointEvery: time.Second})
	if err != nil {
		fmt.Println(err)
		os.Exit(1)
	}
	fmt.Printf("%s eps %.0f load %.0f%% state %.1f MiB misses %d hits %d blockreads/ev %.2f ra %d wall %.1fs\n", *q, float64(res.Events)/res.Seconds, 100*res.LoadSeconds/(res.Seconds*4),
		float64(res.StateBytes)/(1<<20), res.CacheMisses, res.CacheHits, float64(res.BlockReads)/float64(res.Events), res.ReadAheadBlocks, time.Since(t0).Seconds())
}
