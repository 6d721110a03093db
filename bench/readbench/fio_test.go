package readbench

import "testing"

const fioSample = `fio: some warning before the document
{
  "jobs" : [ { "read" : { "total_ios" : 150000, "runtime" : 2000,
    "clat_ns" : { "percentile" : { "50.000000" : 800000, "99.000000" : 2500000 } } },
    "usr_cpu" : 2.5, "sys_cpu" : 10.0 } ]
}`

func TestParseFio(t *testing.T) {
	tr, err := parseFio([]byte(fioSample))
	if err != nil {
		t.Fatal(err)
	}
	if tr.Rate() != 75000 || tr.P50us != 800 || tr.P99us != 2500 || tr.CPUSeconds != 0.25 {
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
