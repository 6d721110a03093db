package nexmarkbench

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"time"

	"github.com/ringstore/ringstore/bench"
	"github.com/ringstore/ringstore/directio"
	"github.com/ringstore/ringstore/ioengine"
)

// The device's floor: 4 KiB O_DIRECT reads at random aligned offsets of a
// file of the run's own, on io_uring, by Parallelism callers (as the
// workers are) each submitting a batch and waiting for all of it, at
// several depths. A query's device floor is the IOPS at the depth its ON
// mode kept in flight (workers × block reads per Load), interpolated
// between the measured depths, ÷ its block reads per event.
const (
	defaultDeviceFileSize = 256 << 20
	defaultDeviceTime     = 2 * time.Second
)

// deviceBatches are the per-caller batch sizes measured.
var deviceBatches = []int{1, 4, 16, 64}

// writeDeviceFile makes the file the device modes read, in dir.
func writeDeviceFile(dir string, size int64) (string, error) {
	f, err := os.CreateTemp(dir, "ringstore-nexmark-device-*.dat")
	if err != nil {
		return "", err
	}
	buf := make([]byte, 1<<20)
	r := rand.New(rand.NewPCG(1, 2))
	for i := int64(0); i < size/int64(len(buf)) && err == nil; i++ {
		for j := 0; j < len(buf); j += 8 {
			v := r.Uint64()
			for k := 0; k < 8; k++ {
				buf[j+k] = byte(v >> (8 * k))
			}
		}
		_, err = f.Write(buf)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(f.Name())
		return "", fmt.Errorf("bench nexmark: device file: %w", err)
	}
	return f.Name(), nil
}

// deviceChild measures the device in a child: callers × batch reads in
// flight.
func deviceChild(c childConfig) (bench.Trial, error) {
	f, err := directio.OpenFile(c.DeviceFile, os.O_RDONLY, 0)
	if err != nil {
		return bench.Trial{}, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return bench.Trial{}, err
	}
	blocks := uint64(st.Size() / directio.BlockSize)
	if blocks == 0 {
		return bench.Trial{}, fmt.Errorf("device file %s is empty", c.DeviceFile)
	}
	e, err := ioengine.New(ioengine.Options{Mode: ioengine.URing, Entries: 256})
	if err != nil {
		return bench.Trial{}, err
	}
	defer e.Close()
	if e.Backend() != ioengine.BackendURing {
		return bench.Trial{}, fmt.Errorf("wanted io_uring, got %s: %s", e.Backend(), e.FallbackReason())
	}
	callers, batch := max(1, c.Parallelism), max(1, c.DeviceBatch)
	mem, err := directio.Alloc(callers * batch * directio.BlockSize)
	if err != nil {
		return bench.Trial{}, err
	}
	defer directio.Free(mem)
	reqs := make([][]ioengine.Request, callers)
	rngs := make([]*rand.Rand, callers)
	for g := range reqs {
		reqs[g] = make([]ioengine.Request, batch)
		for i := range reqs[g] {
			at := (g*batch + i) * directio.BlockSize
			reqs[g][i] = ioengine.Request{Op: ioengine.OpRead, Fd: int(f.Fd()), Buf: mem[at : at+directio.BlockSize]}
		}
		rngs[g] = rand.New(rand.NewPCG(uint64(g), 7))
	}
	t := bench.Timed{Workers: callers, Step: func(g int) (int64, time.Duration, error) {
		for i := range reqs[g] {
			reqs[g][i].Off = int64(rngs[g].Uint64N(blocks)) * directio.BlockSize
		}
		t0 := time.Now()
		err := e.ReadBatch(reqs[g])
		return int64(batch), time.Since(t0), err
	}}
	return t.RunWarm(c.DeviceTime, 0.1)
}

// deviceIOPS is the device's IOPS at depth (reads in flight), interpolated
// on log(depth) between the measured depths and clamped to their range;
// iops maps depth to IOPS. 0 when nothing was measured.
func deviceIOPS(iops map[int]float64, depth float64) float64 {
	var ds []int
	for d := range iops {
		ds = append(ds, d)
	}
	if len(ds) == 0 {
		return 0
	}
	slices.Sort(ds)
	if depth <= float64(ds[0]) {
		return iops[ds[0]]
	}
	for i := 1; i < len(ds); i++ {
		if depth <= float64(ds[i]) {
			lo, hi := float64(ds[i-1]), float64(ds[i])
			f := (math.Log(depth) - math.Log(lo)) / (math.Log(hi) - math.Log(lo))
			return iops[ds[i-1]] + f*(iops[ds[i]]-iops[ds[i-1]])
		}
	}
	return iops[ds[len(ds)-1]]
}
