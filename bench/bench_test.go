package bench

import (
	"slices"
	"testing"
)

// TestRoundRatios: each round's trial of a against the same round's of b,
// rounds where b's figure is not positive left out, as many as the shorter
// mode ran.
func TestRoundRatios(t *testing.T) {
	a := &ModeResult{Trials: []Trial{{Ops: 300, Seconds: 1}, {Ops: 200, Seconds: 1}, {Ops: 100, Seconds: 1}, {Ops: 50, Seconds: 1}}}
	b := &ModeResult{Trials: []Trial{{Ops: 100, Seconds: 1}, {Ops: 0, Seconds: 1}, {Ops: 200, Seconds: 1}}}
	got := RoundRatios(a, b, Trial.Rate)
	if want := []float64{3, 0.5}; !slices.Equal(got, want) {
		t.Errorf("RoundRatios = %v, want %v", got, want)
	}
	if got := RoundRatios(a, &ModeResult{}, Trial.Rate); len(got) != 0 {
		t.Errorf("against no trials: %v", got)
	}
}
