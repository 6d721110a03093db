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
// reads it had in flight (bench.DeviceReads: the mean over the run), so
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

// devicePoint is one device mode's figure: the depth it submits (callers
// × batch), the mean reads in flight the device counted (0: not
// measured), its IOPS.
type devicePoint struct {
	depth, measured, iops float64
}

// deviceIOPS is the device's IOPS at depth (reads in flight), interpolated
// on log(depth) between the curve's points and clamped to their range; the
// points' depths are the device's own counts where measured is set, else
// the depths submitted. 0 when nothing was measured.
func deviceIOPS(curve []devicePoint, depth float64, measured bool) float64 {
	type pt struct{ d, iops float64 }
	var ps []pt
	for _, p := range curve {
		d := p.depth
		if measured {
			d = p.measured
		}
		if d > 0 {
			ps = append(ps, pt{d, p.iops})
		}
	}
	if len(ps) == 0 {
		return 0
	}
	slices.SortFunc(ps, func(a, b pt) int { return cmp.Compare(a.d, b.d) })
	if depth <= ps[0].d {
		return ps[0].iops
	}
	for i := 1; i < len(ps); i++ {
		if depth <= ps[i].d {
			lo, hi := ps[i-1], ps[i]
			f := (math.Log(depth) - math.Log(lo.d)) / (math.Log(hi.d) - math.Log(lo.d))
			return lo.iops + f*(hi.iops-lo.iops)
		}
	}
	return ps[len(ps)-1].iops
}

// readCostPoint is a device mode's CPU per read, µs, at its batch (reads
// per call): the process's and the machine's (0: not measured).
type readCostPoint struct {
	batch, cpu, machine float64
}

// readCPUAt is the CPU per read at batch reads per call, interpolated on
// log(batch) between the device modes' batches and clamped to their range:
// most of a call's cost (its io_uring_enter, its wait) is shared by its
// reads. machine picks the machine's CPU.
func readCPUAt(points []readCostPoint, batch float64, machine bool) float64 {
	var ps []readCostPoint
	for _, p := range points {
		if machine {
			p.cpu = p.machine
		}
		if p.batch > 0 && p.cpu > 0 {
			ps = append(ps, p)
		}
	}
	if len(ps) == 0 {
		return 0
	}
	slices.SortFunc(ps, func(a, b readCostPoint) int { return cmp.Compare(a.batch, b.batch) })
	if batch <= ps[0].batch {
		return ps[0].cpu
	}
	for i := 1; i < len(ps); i++ {
		if batch <= ps[i].batch {
			lo, hi := ps[i-1], ps[i]
			f := (math.Log(batch) - math.Log(lo.batch)) / (math.Log(hi.batch) - math.Log(lo.batch))
			return lo.cpu + f*(hi.cpu-lo.cpu)
		}
	}
	return ps[len(ps)-1].cpu
}
