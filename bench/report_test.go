package bench

import (
	"bytes"
	"strings"
	"testing"
)

func TestWriteRatiosTrials(t *testing.T) {
	var b bytes.Buffer
	WriteRatios(&b, []Ratio{
		{A: "x", B: "y", Median: 2, Best: 2, EveryTrialWins: true, Trials: 1},
		{A: "x", B: "z", Median: 2, Best: 2, EveryTrialWins: true, Trials: 3},
		{A: "x", B: "w", Median: 1.1, Best: 0.9, EveryTrialWins: false, Trials: 3},
	}, nil)
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if len(lines) != 3 {
		t.Fatalf("%d lines:\n%s", len(lines), b.String())
	}
	if !strings.Contains(lines[0], "1 trial: too few to say") || strings.Contains(lines[0], "(every trial") {
		t.Errorf("one trial claims too much: %s", lines[0])
	}
	if !strings.Contains(lines[1], "(every trial of the first above every trial of the second)") {
		t.Errorf("three winning trials: %s", lines[1])
	}
	if !strings.Contains(lines[2], "(not every trial of the first above") {
		t.Errorf("three mixed trials: %s", lines[2])
	}
}
