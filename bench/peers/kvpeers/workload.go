package kvpeers

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/magiconair/properties"
	"github.com/pingcap/go-ycsb/pkg/client"
	"github.com/pingcap/go-ycsb/pkg/measurement"
	"github.com/pingcap/go-ycsb/pkg/prop"
	_ "github.com/pingcap/go-ycsb/pkg/workload" // registers the core workload
	"github.com/pingcap/go-ycsb/pkg/ycsb"
)

// CoreWorkloads are YCSB's workloads A–F as the original YCSB defines them
// (workloads/workload[a-f] of brianfrankcooper/YCSB): zipfian request
// keys, except D (latest) and E's scan lengths (uniform up to 100).
var CoreWorkloads = map[string]string{
	"a": "readproportion=0.5\nupdateproportion=0.5\nscanproportion=0\ninsertproportion=0\nrequestdistribution=zipfian\n",
	"b": "readproportion=0.95\nupdateproportion=0.05\nscanproportion=0\ninsertproportion=0\nrequestdistribution=zipfian\n",
	"c": "readproportion=1\nupdateproportion=0\nscanproportion=0\ninsertproportion=0\nrequestdistribution=zipfian\n",
	"d": "readproportion=0.95\nupdateproportion=0\nscanproportion=0\ninsertproportion=0.05\nrequestdistribution=latest\n",
	"e": "readproportion=0\nupdateproportion=0\nscanproportion=0.95\ninsertproportion=0.05\nrequestdistribution=zipfian\nmaxscanlength=100\nscanlengthdistribution=uniform\n",
	"f": "readproportion=0.5\nupdateproportion=0\nscanproportion=0\ninsertproportion=0\nreadmodifywriteproportion=0.5\nrequestdistribution=zipfian\n",
}

// Workload is one YCSB run: load Records records, then run Operations
// operations of workload Name on Threads client threads.
type Workload struct {
	DB         string // DBRingstore or DBPebble
	Name       string // a to f
	Dir        string
	Records    int64
	Operations int64
	Threads    int
	// Batch is go-ycsb's batch.size for workloads A–D: reads go through
	// BatchRead (ringstore: one MultiGet), inserts and updates in batches.
	// Workloads E and F run one operation at a time: go-ycsb's batch mode
	// has no scan (it panics) and skips read-modify-write.
	Batch      int
	CacheBytes int64
	IOMode     string // ringstore's backend
	// Props are more properties, set last.
	Props map[string]string
}

// WorkloadResult is what a run did.
type WorkloadResult struct {
	Load, Run time.Duration
	// Ops and Errors are the binding's counts over both phases (see
	// Counter).
	Ops, Errors int64
}

// RunWorkload loads the store at w.Dir and runs the workload, and with
// print prints go-ycsb's measurements (to standard output: go-ycsb writes
// them there). go-ycsb keeps its measurements in globals: one RunWorkload at
// a time in a process.
func RunWorkload(w Workload, print bool) (WorkloadResult, error) {
	spec, ok := CoreWorkloads[strings.ToLower(w.Name)]
	if !ok {
		return WorkloadResult{}, fmt.Errorf("unknown workload %q (a to f)", w.Name)
	}
	p, err := properties.LoadString("workload=core\nreadallfields=true\n" + spec)
	if err != nil {
		return WorkloadResult{}, err
	}
	set := func(k, v string) { p.Set(k, v) }
	set(prop.RecordCount, strconv.FormatInt(w.Records, 10))
	set(prop.OperationCount, strconv.FormatInt(w.Operations, 10))
	set(prop.ThreadCount, strconv.Itoa(max(1, w.Threads)))
	set(PropDir, w.Dir)
	if w.CacheBytes > 0 {
		set(PropCacheMB, strconv.FormatInt(max(1, w.CacheBytes>>20), 10))
	}
	if w.IOMode != "" {
		set(PropIOMode, w.IOMode)
	}
	batch := max(1, w.Batch)
	if n := strings.ToLower(w.Name); n == "e" || n == "f" {
		batch = 1
	}
	set(prop.Silence, "true")
	set(prop.LogInterval, "3600")
	for k, v := range w.Props {
		set(k, v)
	}
	measurement.InitMeasure(p)

	creator := ycsb.GetDBCreator(w.DB)
	if creator == nil {
		return WorkloadResult{}, fmt.Errorf("no go-ycsb binding named %q", w.DB)
	}
	db, err := creator.Create(p)
	if err != nil {
		return WorkloadResult{}, fmt.Errorf("%s: open: %w", w.DB, err)
	}
	var res WorkloadResult
	phase := func(transactions bool, batch int) (time.Duration, error) {
		q := p.FilterPrefix("") // a copy
		q.Set(prop.DoTransactions, strconv.FormatBool(transactions))
		q.Set(prop.BatchSize, strconv.Itoa(batch))
		wl, err := ycsb.GetWorkloadCreator("core").Create(q)
		if err != nil {
			return 0, err
		}
		defer wl.Close()
		t0 := time.Now()
		client.NewClient(q, wl, db).Run(context.Background())
		return time.Since(t0), nil
	}
	// Loading uses batches for every workload: only inserts.
	if res.Load, err = phase(false, max(1, w.Batch)); err != nil {
		db.Close()
		return res, err
	}
	if res.Run, err = phase(true, batch); err != nil {
		db.Close()
		return res, err
	}
	if c, ok := db.(Counter); ok {
		res.Ops, res.Errors = c.Ops(), c.Errors()
	}
	if print {
		measurement.Output()
	}
	return res, db.Close()
}
