package nexmarkbench

import (
	"cmp"
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
// mode kept in flight, interpolated between the measured depths, ÷ its
// block reads per event. Both depths are the device's own count of the
// reads it had in flight (bench.DeviceCounts: the mean over the run), so
// the floor and ON are compared at the same depth as the device saw it;
// where the device's counts cannot be read, the depths submitted.
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

// curvePoint is one measured point of a curve: the device's IOPS by
// depth, or its CPU per read by reads per call.
type curvePoint struct{ x, y float64 }

// interpolateLog is the curve's y at x, interpolated linearly on log(x)
// between its points (in any order; those at x ≤ 0 left out) and clamped
// to their range; 0 without points.
func interpolateLog(points []curvePoint, x float64) float64 {
	ps := slices.DeleteFunc(slices.Clone(points), func(p curvePoint) bool { return p.x <= 0 })
	if len(ps) == 0 {
		return 0
	}
	slices.SortFunc(ps, func(a, b curvePoint) int { return cmp.Compare(a.x, b.x) })
	if x <= ps[0].x {
		return ps[0].y
	}
	for i := 1; i < len(ps); i++ {
		if x <= ps[i].x {
			lo, hi := ps[i-1], ps[i]
			f := (math.Log(x) - math.Log(lo.x)) / (math.Log(hi.x) - math.Log(lo.x))
			return lo.y + f*(hi.y-lo.y)
		}
	}
	return ps[len(ps)-1].y
}
