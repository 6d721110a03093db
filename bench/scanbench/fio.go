package scanbench

import (
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/ringstore/ringstore/bench"
)

// modeFio is the device measured by fio, a tool that is not ours, with the
// same reads as modeDevice.
const modeFio = "device-fio"

// fioVersion returns the version fio at path prints, or "".
func fioVersion(path string) string {
	out, err := exec.Command(path, "--version").Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}

// fioArgs are fio's arguments for the reads measureDevice does: the files
// one after the other, sequentially, O_DIRECT, o.BlockSize reads, o.Depth in
// flight on io_uring, for o.Duration.
func fioArgs(files []string, o DeviceOptions) []string {
	o = o.withDefaults()
	secs := max(1, int(o.Duration.Round(time.Second)/time.Second))
	// fio separates file names with ':'; a name holding one is escaped.
	names := make([]string, len(files))
	for i, f := range files {
		names[i] = strings.ReplaceAll(f, ":", `\:`)
	}
	return []string{"--name=ringstore-seqread", "--filename=" + strings.Join(names, ":"), "--ioengine=io_uring", "--direct=1", "--rw=read",
		"--bs=" + strconv.Itoa(o.BlockSize), "--iodepth=" + strconv.Itoa(o.Depth), "--time_based", "--runtime=" + strconv.Itoa(secs),
		"--readonly", "--output-format=json"}
}

// fioExec runs fio once as a trial.
func fioExec(path string, files []string, o DeviceOptions) func() (bench.Trial, error) {
	return func() (bench.Trial, error) {
		out, err := bench.RunFio(path, fioArgs(files, o))
		if err != nil {
			return bench.Trial{}, err
		}
		return parseFio(out)
	}
}

// parseFio reads the bytes and the time of fio's first job.
func parseFio(data []byte) (bench.Trial, error) {
	r, err := bench.ParseFioRead(data)
	if err == nil && r.Bytes <= 0 {
		err = fmt.Errorf("fio: no read job with bytes in its output")
	}
	if err != nil {
		return bench.Trial{}, err
	}
	return bench.Trial{Ops: r.Bytes >> 20, Seconds: r.Seconds, CPUSeconds: r.CPUSeconds,
		Extra: map[string]float64{xDeviceBytes: float64(r.Bytes)}}, nil
}
