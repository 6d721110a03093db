package nexmarkbench

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"time"

	"github.com/ringstore/ringstore/bench"
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
	return bench.RandomReads{Paths: []string{c.DeviceFile}, Batch: c.DeviceBatch, Callers: c.Parallelism, Seed: 7, Mode: ioengine.URing}.Run(c.DeviceTime, 0.1)
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
