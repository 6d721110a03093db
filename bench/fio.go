package bench

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os/exec"
)

// RunFio runs fio (at path) with args and returns its standard output
// (the parsers skip warnings fio may print before its JSON). A failed run's
// error carries what fio printed on standard error.
func RunFio(path string, args []string) ([]byte, error) {
	cmd := exec.Command(path, args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("fio: %v: %s", err, bytes.TrimSpace(errb.Bytes()))
	}
	return out.Bytes(), nil
}

// FioRead is the read side of the first job of fio's JSON output.
type FioRead struct {
	IOs, Bytes int64
	Seconds    float64 // the job's run time
	CPUSeconds float64 // user + system, from fio's percentages
	// Completion latency of one read (submission to completion):
	// percentiles and the slowest, 0 where fio gave none.
	P50us, P90us, P99us, P999us, MaxUs float64
}

// ParseFioRead reads the first job's read figures from fio's JSON output
// (--output-format=json), skipping anything fio printed before it. A job
// without a read run time is an error.
func ParseFioRead(data []byte) (FioRead, error) {
	if i := bytes.IndexByte(data, '{'); i > 0 {
		data = data[i:]
	}
	var doc struct {
		Jobs []struct {
			Read struct {
				TotalIOs int64   `json:"total_ios"`
				IOBytes  int64   `json:"io_bytes"`
				RuntimeM float64 `json:"runtime"` // milliseconds
				ClatNs   struct {
					Max        float64            `json:"max"`
					Percentile map[string]float64 `json:"percentile"`
				} `json:"clat_ns"`
			} `json:"read"`
			UsrCPU float64 `json:"usr_cpu"` // percent
			SysCPU float64 `json:"sys_cpu"`
		} `json:"jobs"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		return FioRead{}, fmt.Errorf("fio: cannot parse its JSON: %w", err)
	}
	if len(doc.Jobs) == 0 || doc.Jobs[0].Read.RuntimeM <= 0 {
		return FioRead{}, fmt.Errorf("fio: no read job with a run time in its output")
	}
	j := doc.Jobs[0]
	secs := j.Read.RuntimeM / 1e3
	pct := j.Read.ClatNs.Percentile
	return FioRead{IOs: j.Read.TotalIOs, Bytes: j.Read.IOBytes, Seconds: secs, CPUSeconds: (j.UsrCPU + j.SysCPU) / 100 * secs,
		P50us: pct["50.000000"] / 1e3, P90us: pct["90.000000"] / 1e3, P99us: pct["99.000000"] / 1e3, P999us: pct["99.900000"] / 1e3,
		MaxUs: j.Read.ClatNs.Max / 1e3}, nil
}
