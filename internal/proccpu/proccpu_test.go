package proccpu

import (
	"runtime"
	"testing"
	"time"
)

func TestSecondsAdvancesWithWork(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("read on Linux only")
	}
	before, ok := Seconds()
	if !ok {
		t.Fatal("getrusage refused")
	}
	x := uint64(1)
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); {
		for range 1 << 20 {
			x = x*6364136223846793005 + 1442695040888963407
		}
		if after, _ := Seconds(); after > before {
			return
		}
	}
	t.Fatalf("no CPU time counted over 10 s of spinning (%d)", x)
}
