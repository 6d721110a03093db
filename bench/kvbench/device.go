package kvbench

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/ringstore/ringstore/bench"
	"github.com/ringstore/ringstore/ioengine"
)

// deviceMeasurement says how the device's limit is measured.
const deviceMeasurement = "4 KiB O_DIRECT reads at random 4 KiB-aligned offsets of ringstore's SST files (the data the modes read, on the same file system), in batches of 64 on io_uring (submit 64, wait for all 64), one caller: readbench's uring-b64, the device's QD64 IOPS"

// sstFiles returns the .sst files under dir, largest first.
func sstFiles(dir string) ([]string, error) {
	var files []string
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type().IsRegular() && strings.HasSuffix(p, ".sst") {
			files = append(files, p)
		}
		return nil
	})
	if err == nil && len(files) == 0 {
		err = fmt.Errorf("no .sst files under %s", dir)
	}
	slices.Sort(files)
	return files, err
}

// deviceRead measures the device: batches of c.Batch random 4 KiB
// O_DIRECT reads over the SST files under c.Dir by c.Callers callers.
func deviceRead(c ChildConfig) (bench.Trial, error) {
	paths, err := sstFiles(c.Dir)
	if err != nil {
		return bench.Trial{}, err
	}
	mode := ioengine.URing
	if c.IOMode == "syscall" {
		mode = ioengine.Syscall
	}
	var io0, io1 int64
	var ioErr error
	tr, err := bench.RandomReads{Paths: paths, Batch: c.Batch, Callers: c.Callers, Seed: c.Seed, Mode: mode,
		Start: func() { io0, _ = readProcIO() },
		Stop:  func() { io1, ioErr = readProcIO() },
	}.Run(c.Duration, c.WarmupFrac)
	if err != nil {
		return tr, err
	}
	tr.Extra = map[string]float64{}
	if ioErr == nil {
		tr.Extra[XReadBytes] = float64(io1 - io0)
	}
	return tr, nil
}
