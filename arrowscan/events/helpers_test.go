package events

import (
	"fmt"
	"io"
	"os"
	"sync"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
)

// fileBatches reads a file with arrow-go's FileReader and delivers each
// record projected to cols, in that order, the way a scan does.
type fileBatches struct {
	r    *ipc.FileReader
	f    *os.File
	cols []string
	i    int
	rec  arrow.RecordBatch
	err  error
}

func openBatches(t testing.TB, path string, cols []string) *fileBatches {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	r, err := ipc.NewFileReader(f)
	if err != nil {
		f.Close()
		t.Fatal(err)
	}
	b := &fileBatches{r: r, f: f, cols: cols}
	t.Cleanup(b.close)
	return b
}

func (b *fileBatches) Next() bool {
	if b.rec != nil {
		b.rec.Release()
		b.rec = nil
	}
	if b.err != nil || b.i >= b.r.NumRecords() {
		return false
	}
	full, err := b.r.RecordBatchAt(b.i)
	if err != nil {
		b.err = err
		return false
	}
	defer full.Release()
	b.i++
	if b.cols == nil {
		full.Retain()
		b.rec = full
		return true
	}
	fs := make([]arrow.Field, len(b.cols))
	cs := make([]arrow.Array, len(b.cols))
	for i, c := range b.cols {
		idx := full.Schema().FieldIndices(c)
		if len(idx) != 1 {
			b.err = fmt.Errorf("no column %s", c)
			return false
		}
		fs[i], cs[i] = full.Schema().Field(idx[0]), full.Column(idx[0])
	}
	md := full.Schema().Metadata()
	b.rec = array.NewRecordBatch(arrow.NewSchema(fs, &md), cs, full.NumRows())
	return true
}

func (b *fileBatches) Record() arrow.RecordBatch { return b.rec }
func (b *fileBatches) Err() error                { return b.err }
func (b *fileBatches) close() {
	if b.rec != nil {
		b.rec.Release()
		b.rec = nil
	}
	b.r.Close()
	b.f.Close()
}

// paramsOfFiles reads the time range of the files' schemas.
func paramsOfFiles(t testing.TB, paths []string) Params {
	t.Helper()
	var schemas []*arrow.Schema
	for _, p := range paths {
		b := openBatches(t, p, nil)
		schemas = append(schemas, b.r.Schema())
	}
	p, err := ParamsOf(paths, schemas)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// runOverFiles runs the named query over the files through the fast path,
// each record projected to the query's columns.
func runOverFiles(t testing.TB, paths []string, name string) *Result {
	t.Helper()
	q, err := QueryByName(name)
	if err != nil {
		t.Fatal(err)
	}
	var srcs []Batches
	for _, p := range paths {
		srcs = append(srcs, openBatches(t, p, q.Columns))
	}
	r, err := RunBatches(name, paramsOfFiles(t, paths), srcs...)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// dataSet is a generated data set shared by the tests of one process.
type dataSet struct {
	once  sync.Once
	dir   string
	paths []string
	err   error
}

var testSets sync.Map // GenOptions.String() → *dataSet

// generated returns the files of opts, generated once per test binary into
// a directory removed when the binary exits (TestMain).
func generated(t testing.TB, opts GenOptions) []string {
	t.Helper()
	v, _ := testSets.LoadOrStore(opts.String(), &dataSet{})
	ds := v.(*dataSet)
	ds.once.Do(func() {
		ds.dir, ds.err = os.MkdirTemp(testRoot, "events-*")
		if ds.err == nil {
			ds.paths, ds.err = Generate(ds.dir, opts)
		}
	})
	if ds.err != nil {
		t.Fatal(ds.err)
	}
	return ds.paths
}

var testRoot string

func TestMain(m *testing.M) {
	var err error
	testRoot, err = os.MkdirTemp("", "events-test-*")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(testRoot)
	os.Exit(code)
}

// writeRenamed writes rec's first column, renamed to name, as an Arrow file
// without metadata.
func writeRenamed(w io.Writer, rec arrow.RecordBatch, name string) error {
	f := rec.Schema().Field(0)
	f.Name = name
	s := arrow.NewSchema([]arrow.Field{f}, nil)
	r := array.NewRecordBatch(s, []arrow.Array{rec.Column(0)}, rec.NumRows())
	defer r.Release()
	fw, err := ipc.NewFileWriter(w, ipc.WithSchema(s))
	if err != nil {
		return err
	}
	if err := fw.Write(r); err != nil {
		return err
	}
	return fw.Close()
}
