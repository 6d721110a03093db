package readbench

import (
	"slices"
	"testing"
	"time"
)

// TestFioArgs: fio runs exactly as long as the modes it is compared with,
// their warm-up as its ramp, to the microsecond (not rounded to seconds).
func TestFioArgs(t *testing.T) {
	for _, c := range []struct {
		d             time.Duration
		runtime, ramp string
	}{
		{2 * time.Second, "--runtime=2000000us", "--ramp_time=200000us"},
		{1500 * time.Millisecond, "--runtime=1500000us", "--ramp_time=150000us"},
		{150 * time.Millisecond, "--runtime=150000us", "--ramp_time=15000us"},
	} {
		args := fioArgs("/f", c.d, "--iodepth_batch_submit=64")
		if !slices.Contains(args, c.runtime) || !slices.Contains(args, c.ramp) || !slices.Contains(args, "--time_based") {
			t.Errorf("%s: fio args %v, want %s and %s", c.d, args, c.runtime, c.ramp)
		}
		if warmup(c.d) != time.Duration(float64(c.d)*warmupFrac) || args[len(args)-1] != "--iodepth_batch_submit=64" || !slices.Contains(args, "--filename=/f") {
			t.Errorf("%s: fio args %v", c.d, args)
		}
	}
}

const fioSample = `fio: some warning before the document
{
  "jobs" : [ { "read" : { "total_ios" : 150000, "runtime" : 2000,
    "clat_ns" : { "max" : 9000000, "percentile" : { "50.000000" : 800000, "90.000000" : 1200000, "99.000000" : 2500000, "99.900000" : 4000000 } } },
    "usr_cpu" : 2.5, "sys_cpu" : 10.0 } ]
}`

func TestParseFio(t *testing.T) {
	tr, err := parseFio([]byte(fioSample))
	if err != nil {
		t.Fatal(err)
	}
	if tr.Rate() != 75000 || tr.P50us != 800 || tr.P90us != 1200 || tr.P99us != 2500 || tr.P999us != 4000 || tr.MaxUs != 9000 || tr.CPUSeconds != 0.25 {
		t.Errorf("parsed %+v (rate %v)", tr, tr.Rate())
	}
	for _, bad := range []string{"", "{}", `{"jobs":[]}`, `{"jobs":[{"read":{"runtime":0}}]}`, "not json"} {
		if _, err := parseFio([]byte(bad)); err == nil {
			t.Errorf("parseFio(%q) accepted", bad)
		}
	}
}

func FuzzParseFio(f *testing.F) {
	f.Add([]byte(fioSample))
	f.Add([]byte(`{"jobs":[{"read":{"runtime":-1}}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		tr, err := parseFio(data)
		if err == nil && tr.Seconds <= 0 {
			t.Fatalf("accepted a trial without time: %+v", tr)
		}
	})
}
