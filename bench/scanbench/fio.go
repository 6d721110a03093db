package scanbench

import (
	"bytes"
	"encoding/json"
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
	// fio may print warnings before its JSON document.
	if i := bytes.IndexByte(data, '{'); i > 0 {
		data = data[i:]
	}
	var doc struct {
		Jobs []struct {
			Read struct {
				IOBytes  int64   `json:"io_bytes"`
				RuntimeM float64 `json:"runtime"` // milliseconds
			} `json:"read"`
			UsrCPU float64 `json:"usr_cpu"` // percent
			SysCPU float64 `json:"sys_cpu"`
		} `json:"jobs"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		return bench.Trial{}, fmt.Errorf("fio: cannot parse its JSON: %w", err)
	}
	if len(doc.Jobs) == 0 || doc.Jobs[0].Read.RuntimeM <= 0 || doc.Jobs[0].Read.IOBytes <= 0 {
		return bench.Trial{}, fmt.Errorf("fio: no read job with bytes and a run time in its output")
	}
	j := doc.Jobs[0]
	secs := j.Read.RuntimeM / 1e3
	return bench.Trial{Ops: j.Read.IOBytes >> 20, Seconds: secs, CPUSeconds: (j.UsrCPU + j.SysCPU) / 100 * secs,
		Extra: map[string]float64{xDeviceBytes: float64(j.Read.IOBytes)}}, nil
}
