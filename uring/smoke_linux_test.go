//go:build linux && !ringstore_nouring

package uring

import "testing"

func TestSmokeNop(t *testing.T) {
	for _, cfg := range []Config{{}, {SQPoll: true}, {SingleIssuer: true}} {
		r, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 1000; i++ {
			s := r.GetSQE()
			s.PrepNop()
			s.UserData = uint64(i) + 7
			if _, err := r.SubmitAndWait(1); err != nil {
				t.Fatal(err)
			}
			c, err := r.WaitCQE()
			if err != nil || c.UserData != uint64(i)+7 || c.Res != 0 {
				t.Fatalf("%v %+v", err, c)
			}
			r.CQAdvance(1)
		}
		t.Logf("%s features=%v stats=%+v", SetupFlagString(r.SetupFlags()), FeatureNames(r.Features()), r.Stats())
		r.Close()
	}
}
