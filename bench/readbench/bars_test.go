package readbench

import (
	"bytes"
	"strings"
	"testing"

	"github.com/ringstore/ringstore/bench"
)

func TestFioBars(t *testing.T) {
	rows := []Result{
		{Mode: "serial-pread", IOPS: 10_000, CPUPerM: 40},
		{Mode: "uring-b64", IOPS: 90_000, CPUPerM: 6},
		{Mode: "fio-qd64-batch", IOPS: 100_000, CPUPerM: 3.5},
	}
	bars := fioBars(rows)
	if len(bars) != 2 {
		t.Fatalf("%d bars", len(bars))
	}
	if b := bars[0]; b.Value != 0.9 || !b.Valid || !b.Met || b.AtMost {
		t.Errorf("IOPS bar %+v: want 0.90, met", b)
	}
	// 6 ÷ 3.5 = 1.71 > 1.5: not met.
	if b := bars[1]; b.Value < 1.71 || b.Value > 1.72 || !b.Valid || b.Met || !b.AtMost {
		t.Errorf("CPU bar %+v: want 1.71, not met", b)
	}
	var out bytes.Buffer
	bench.WriteBars(&out, bars)
	if s := out.String(); !strings.Contains(s, "(bar ≥ 0.85): met") || !strings.Contains(s, "(bar ≤ 1.50): NOT met") {
		t.Errorf("written:\n%s", s)
	}

	// Without fio both are there, not tested.
	for _, b := range fioBars(rows[:2]) {
		if b.Valid || b.Met || !strings.Contains(b.Why, "fio") {
			t.Errorf("bar %+v without fio", b)
		}
	}
}
