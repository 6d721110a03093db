package scanbench

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ringstore/ringstore/internal/testdir"
)

const fioSample = `fio: warning: something
{
  "fio version" : "fio-3.33",
  "jobs" : [
    {
      "jobname" : "ringstore-seqread",
      "read" : {"io_bytes" : 5027069952, "io_kbytes" : 4909248, "bw" : 1631000, "runtime" : 3010},
      "usr_cpu" : 1.5, "sys_cpu" : 20.5
    }
  ]
}`

func TestParseFio(t *testing.T) {
	tr, err := parseFio([]byte(fioSample))
	if err != nil {
		t.Fatal(err)
	}
	if tr.Seconds != 3.01 || tr.Extra[xDeviceBytes] != 5027069952 || gbps(tr) < 1.66 || gbps(tr) > 1.68 {
		t.Errorf("parsed %+v (%.3f GB/s)", tr, gbps(tr))
	}
	for _, bad := range []string{"", "not json", `{"jobs": []}`, `{"jobs": [{"read": {"io_bytes": 0, "runtime": 5}}]}`, `{"jobs": [{"read": {"io_bytes": 5, "runtime": 0}}]}`} {
		if _, err := parseFio([]byte(bad)); err == nil || !strings.HasPrefix(err.Error(), "fio: ") {
			t.Errorf("parseFio(%q): %v", bad, err)
		}
	}
}

func FuzzParseFio(f *testing.F) {
	f.Add([]byte(fioSample))
	f.Add([]byte(`{"jobs":[{"read":{"io_bytes":1,"runtime":1e-300}}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		tr, err := parseFio(data)
		if err == nil && (tr.Seconds <= 0 || tr.Extra[xDeviceBytes] <= 0) {
			t.Fatalf("accepted %+v", tr)
		}
	})
}

func TestFioArgs(t *testing.T) {
	args := fioArgs([]string{"/d/a", "/d/b:c"}, DeviceOptions{Duration: 1500 * time.Millisecond})
	for _, want := range []string{`--filename=/d/a:/d/b\:c`, "--bs=1048576", "--iodepth=16", "--runtime=2", "--direct=1", "--rw=read", "--readonly"} {
		if !slices.Contains(args, want) {
			t.Errorf("%v lacks %s", args, want)
		}
	}
}

// TestFioRuns runs the real fio, when it is installed, on a small file.
func TestFioRuns(t *testing.T) {
	path, err := exec.LookPath("fio")
	if err != nil {
		t.Skip("fio is not installed")
	}
	p := writeFile(t, testdir.Direct(t), 8<<20)
	tr, err := fioExec(path, []string{p}, DeviceOptions{BlockSize: 256 << 10, Depth: 4, Duration: time.Second})()
	if err != nil {
		t.Fatal(err)
	}
	if tr.Seconds < 0.5 || tr.Extra[xDeviceBytes] < 8<<20 {
		t.Errorf("fio: %+v", tr)
	}
	t.Logf("%s: %.2f GB/s", fioVersion(path), gbps(tr))
}
