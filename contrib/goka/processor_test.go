package gokastore

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"math/rand"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/lovoo/goka"
	"github.com/lovoo/goka/codec"
	"github.com/lovoo/goka/storage"
	"github.com/twmb/franz-go/pkg/kfake"
)

// The processor tests run goka processors with this storage against a kfake
// cluster in the test process, listening on 127.0.0.1. The processor keeps,
// per key, the largest value it was sent: idempotent, so goka's
// at-least-once delivery does not change the result, and sensitive to a
// restore that loses a value (the largest value of a key usually comes
// early). The model is the largest value emitted per key.

const (
	testInput      = "input"
	testGroup      = goka.Group("maxer")
	testPartitions = 8
	// processorChildEnv makes the test binary a processor instance:
	// "<broker> <dir> <restore pause>".
	processorChildEnv = "GOKASTORE_PROCESSOR_CHILD"
)

// gokaConfig is the sarama configuration of every instance. goka sleeps 5s
// between a consumer-group session's end and its next join, without
// heartbeats, so a session must outlast that: 7s, and a killed instance's
// partitions move about 7s after its death.
func gokaConfig() *sarama.Config {
	cfg := goka.DefaultConfig()
	cfg.Version = sarama.V2_0_0_0
	cfg.Consumer.Offsets.Initial = sarama.OffsetOldest
	cfg.Consumer.Group.Session.Timeout = 7 * time.Second
	cfg.Consumer.Group.Heartbeat.Interval = 500 * time.Millisecond
	cfg.Consumer.Group.Rebalance.Timeout = 10 * time.Second
	cfg.Producer.Flush.Frequency = 10 * time.Millisecond
	return cfg
}

func newCluster(t *testing.T) []string {
	t.Helper()
	c, err := kfake.NewCluster(
		kfake.NumBrokers(1),
		kfake.SeedTopics(testPartitions, testInput),
		kfake.GroupMinSessionTimeout(500*time.Millisecond),
	)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c.ListenAddrs()
}

func topicManagerConfig() *goka.TopicManagerConfig {
	tmc := goka.NewTopicManagerConfig()
	tmc.Table.Replication = 1
	tmc.Stream.Replication = 1
	return tmc
}

// watched wraps the Builder to count what happens to the partitions it
// builds: restored records (SetOffset before MarkRecovered) and builds.
type watched struct {
	storage.Storage
	restored *atomic.Int64
	open     *atomic.Int64
	marked   *atomic.Int64
	done     atomic.Bool
	in       *instance
}

func (w *watched) Close() error {
	w.in.forget(w)
	w.open.Add(-1)
	return w.Storage.Close()
}

func (w *watched) SetOffset(o int64) error {
	if !w.done.Load() {
		if w.restored.Add(1)%100 == 0 && w.in.restorePause > 0 {
			time.Sleep(w.in.restorePause)
		}
	}
	return w.Storage.SetOffset(o)
}

func (w *watched) MarkRecovered() error {
	err := w.Storage.MarkRecovered()
	w.done.Store(true)
	w.marked.Add(1)
	return err
}

type instance struct {
	proc      *goka.Processor
	restored  atomic.Int64 // records restored from the changelog
	builds    atomic.Int64 // partitions built
	open      atomic.Int64 // partitions open now
	marked    atomic.Int64 // partitions marked recovered
	processed atomic.Int64 // messages processed
	cancel    context.CancelFunc
	done      chan error

	// restorePause slows the restore (a pause every 100 records) so that
	// the crash test can kill an instance in the middle of it.
	restorePause time.Duration

	mu    sync.Mutex
	parts map[*watched]bool // the open partitions; guarded by mu
}

func (in *instance) forget(w *watched) {
	in.mu.Lock()
	delete(in.parts, w)
	in.mu.Unlock()
}

// get reads key from whichever open partition of the group table has it,
// through the storage itself: goka's Processor.Get races with partition
// setup (goka v1.1.16).
func (in *instance) get(key string) (int64, bool, error) {
	in.mu.Lock()
	defer in.mu.Unlock()
	for w := range in.parts {
		v, err := w.Get(key)
		if errors.Is(err, ErrClosed) {
			continue
		}
		if err != nil {
			return 0, false, err
		}
		if v != nil {
			d, err := new(codec.Int64).Decode(v)
			if err != nil {
				return 0, false, err
			}
			return d.(int64), true, nil
		}
	}
	return 0, false, nil
}

// newInstance makes a processor instance with its storage in dir.
func newInstance(brokers []string, dir string) (*instance, error) {
	in := &instance{parts: map[*watched]bool{}}
	b := Builder(dir, Options{FlushInterval: 100 * time.Millisecond})
	builder := func(topic string, p int32) (storage.Storage, error) {
		st, err := b(topic, p)
		if err != nil {
			return nil, err
		}
		in.builds.Add(1)
		in.open.Add(1)
		w := &watched{Storage: st, restored: &in.restored, open: &in.open, marked: &in.marked, in: in}
		if topic == string(goka.GroupTable(testGroup)) {
			in.mu.Lock()
			in.parts[w] = true
			in.mu.Unlock()
		}
		return w, nil
	}
	cfg := gokaConfig()
	g := goka.DefineGroup(testGroup,
		goka.Input(goka.Stream(testInput), new(codec.Int64), func(ctx goka.Context, msg any) {
			v := msg.(int64)
			if cur, ok := ctx.Value().(int64); ok && cur > v {
				v = cur
			}
			ctx.SetValue(v)
			in.processed.Add(1)
		}),
		goka.Persist(new(codec.Int64)),
	)
	p, err := goka.NewProcessor(brokers, g,
		goka.WithStorageBuilder(builder),
		goka.WithTopicManagerBuilder(goka.TopicManagerBuilderWithConfig(cfg, topicManagerConfig())),
		goka.WithConsumerGroupBuilder(goka.ConsumerGroupBuilderWithConfig(cfg)),
		goka.WithConsumerSaramaBuilder(goka.SaramaConsumerBuilderWithConfig(cfg)),
		goka.WithProducerBuilder(goka.ProducerBuilderWithConfig(cfg)),
		goka.WithLogger(log.New(testLogOut, "goka ", log.Lmicroseconds)),
	)
	if err != nil {
		return nil, err
	}
	in.proc = p
	return in, nil
}

func (in *instance) start() {
	ctx, cancel := context.WithCancel(context.Background())
	in.cancel = cancel
	in.done = make(chan error, 1)
	go func() { in.done <- in.proc.Run(ctx) }()
}

func (in *instance) stop(t *testing.T) {
	t.Helper()
	in.cancel()
	select {
	case err := <-in.done:
		if err != nil {
			t.Fatalf("processor stopped with %v", err)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("processor did not stop within 60s")
	}
}

// model is the largest value emitted per key.
type model struct {
	mu      sync.Mutex
	max     map[string]int64 // guarded by mu
	pending sync.WaitGroup   // emits not yet acknowledged
}

// emit sends n messages over keys key0..key<keys-1> with values drawn from
// rng and records each in the model once the broker has acknowledged it (a
// failed emit fails the test: the model holds only what reached Kafka).
func (m *model) emit(t *testing.T, em *goka.Emitter, rng *rand.Rand, n, keys int, pause time.Duration) {
	for i := 0; i < n; i++ {
		k := "key" + strconv.Itoa(rng.Intn(keys))
		v := rng.Int63n(1 << 40)
		m.pending.Add(1)
		p, err := em.Emit(k, v)
		if err != nil {
			m.pending.Done()
			t.Errorf("emit: %v", err)
			return
		}
		p.Then(func(err error) {
			defer m.pending.Done()
			if err != nil {
				t.Errorf("emit %s=%d: %v", k, v, err)
				return
			}
			m.mu.Lock()
			if old, ok := m.max[k]; !ok || v > old {
				m.max[k] = v
			}
			m.mu.Unlock()
		})
		if pause > 0 && i%50 == 49 {
			time.Sleep(pause)
		}
	}
}

// waitTable polls the instances' tables (each key from the instance and
// partition that has it) until every key has the model's value.
func (m *model) waitTable(t *testing.T, within time.Duration, ins ...*instance) {
	t.Helper()
	m.pending.Wait()
	deadline := time.Now().Add(within)
	var diff string
	for time.Now().Before(deadline) {
		diff = m.diff(ins)
		if diff == "" {
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
	var progress []string
	for _, in := range ins {
		progress = append(progress, fmt.Sprintf("processed %d, restored %d, open %d", in.processed.Load(), in.restored.Load(), in.open.Load()))
	}
	t.Fatalf("the group table does not equal the model after %v: %s (instances: %s)", within, diff, strings.Join(progress, "; "))
}

func (m *model) diff(ins []*instance) string {
	m.mu.Lock()
	defer m.mu.Unlock()
	for k, want := range m.max {
		found := false
		for _, in := range ins {
			got, ok, err := in.get(k)
			if err != nil {
				return fmt.Sprintf("key %s: %v", k, err)
			}
			if ok {
				if got != want {
					return fmt.Sprintf("key %s = %d, want %d", k, got, want)
				}
				found = true
				break
			}
		}
		if !found {
			return fmt.Sprintf("key %s: no instance has it", k)
		}
	}
	return ""
}

func newEmitter(t *testing.T, brokers []string) *goka.Emitter {
	t.Helper()
	cfg := gokaConfig()
	em, err := goka.NewEmitter(brokers, goka.Stream(testInput), new(codec.Int64),
		goka.WithEmitterProducerBuilder(goka.ProducerBuilderWithConfig(cfg)),
		goka.WithEmitterTopicManagerBuilder(goka.TopicManagerBuilderWithConfig(cfg, topicManagerConfig())))
	if err != nil {
		t.Fatal(err)
	}
	return em
}

func waitFor(t *testing.T, what string, within time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waited %v for %s", within, what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestDistribution runs three instances in one group; one is stopped while
// input flows, its partitions move to the other two, which restore them from
// the changelog into their own stores; the table ends equal to the model.
func TestDistribution(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a Kafka group through rebalances (about 30s)")
	}
	brokers := newCluster(t)
	em := newEmitter(t, brokers)
	defer em.Finish()
	m := &model{max: map[string]int64{}}
	rng := rand.New(rand.NewSource(1))
	m.emit(t, em, rng, 3000, 400, 0)

	var ins []*instance
	for i := 0; i < 3; i++ {
		in, err := newInstance(brokers, t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		in.start()
		ins = append(ins, in)
	}
	start := time.Now()
	spread := func() bool {
		n := int64(0)
		for _, in := range ins {
			if in.open.Load() == 0 {
				return false
			}
			n += in.open.Load()
		}
		return n == testPartitions
	}
	waitFor(t, "the 8 partitions to spread over the 3 instances", 90*time.Second, spread)
	m.waitTable(t, 90*time.Second, ins...)
	t.Logf("3 instances own %d, %d, %d partitions and serve the model after %v", ins[0].open.Load(), ins[1].open.Load(), ins[2].open.Load(),
		time.Since(start).Round(time.Millisecond))

	// Stop instance 2 mid-stream.
	before := ins[0].restored.Load() + ins[1].restored.Load()
	emitted := make(chan struct{})
	go func() { defer close(emitted); m.emit(t, em, rng, 3000, 400, 2*time.Millisecond) }()
	time.Sleep(300 * time.Millisecond)
	stopAt := time.Now()
	ins[2].stop(t)
	<-emitted
	waitFor(t, "the 8 partitions to move to the 2 instances left", 90*time.Second, func() bool {
		return ins[2].open.Load() == 0 && ins[0].open.Load()+ins[1].open.Load() == testPartitions
	})
	m.waitTable(t, 90*time.Second, ins[0], ins[1])
	restored := ins[0].restored.Load() + ins[1].restored.Load() - before
	t.Logf("after stopping instance 2: the other two serve the model %v later, restoring %d records from the changelog",
		time.Since(stopAt).Round(time.Millisecond), restored)
	if restored == 0 {
		t.Fatal("the new owners restored nothing from the changelog")
	}
	ins[0].stop(t)
	ins[1].stop(t)
}

// processorChild runs one instance until it is killed, printing its
// counters every 50ms: "stat <restored> <processed> <builds> <marked>".
func processorChild(spec string) int {
	f := strings.Fields(spec)
	if len(f) != 3 {
		fmt.Println("ERROR bad spec", spec)
		return 2
	}
	pause, err := time.ParseDuration(f[2])
	if err != nil {
		fmt.Println("ERROR bad spec", spec, err)
		return 2
	}
	in, err := newInstance([]string{f[0]}, f[1])
	if err != nil {
		fmt.Println("ERROR", err)
		return 2
	}
	in.restorePause = pause
	in.start()
	tick := time.NewTicker(50 * time.Millisecond)
	for {
		select {
		case err := <-in.done:
			fmt.Println("ERROR processor stopped:", err)
			return 2
		case <-tick.C:
			fmt.Printf("stat %d %d %d %d\n", in.restored.Load(), in.processed.Load(), in.builds.Load(), in.marked.Load())
		}
	}
}

type child struct {
	cmd   *exec.Cmd
	stats chan [4]int64
	errs  chan string
}

func startChild(t *testing.T, broker, dir string, restorePause time.Duration) *child {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), processorChildEnv+"="+broker+" "+dir+" "+restorePause.String())
	out, err := cmd.StdoutPipe()
	must(t, err)
	cmd.Stderr = os.Stderr
	must(t, cmd.Start())
	c := &child{cmd: cmd, stats: make(chan [4]int64, 1), errs: make(chan string, 1)}
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			line := sc.Text()
			var s [4]int64
			if _, err := fmt.Sscanf(line, "stat %d %d %d %d", &s[0], &s[1], &s[2], &s[3]); err == nil {
				select {
				case <-c.stats:
				default:
				}
				c.stats <- s
			} else if strings.HasPrefix(line, "ERROR") {
				c.errs <- line
			}
		}
	}()
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	return c
}

// waitStat waits until the child's counters satisfy cond.
func (c *child) waitStat(t *testing.T, what string, within time.Duration, cond func(restored, processed, builds, marked int64) bool) {
	t.Helper()
	deadline := time.After(within)
	for {
		select {
		case s := <-c.stats:
			if cond(s[0], s[1], s[2], s[3]) {
				return
			}
		case e := <-c.errs:
			t.Fatalf("child: %s", e)
		case <-deadline:
			t.Fatalf("waited %v for the child to %s", within, what)
		}
	}
}

func (c *child) kill(t *testing.T) {
	t.Helper()
	must(t, c.cmd.Process.Signal(syscall.SIGKILL))
	err := c.cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		t.Fatalf("killed child: %v", err)
	}
}

// TestProcessorCrash kills instances with SIGKILL, once while it restores
// its partitions from the changelog and once while it processes; the
// instance that takes over (the first again, on its crashed store; then one
// in the test process) ends with the model's table.
func TestProcessorCrash(t *testing.T) {
	if testing.Short() {
		t.Skip("runs Kafka group takeovers after SIGKILL (about 40s)")
	}
	brokers := newCluster(t)
	em := newEmitter(t, brokers)
	defer em.Finish()
	m := &model{max: map[string]int64{}}
	rng := rand.New(rand.NewSource(2))

	// A first instance builds a long changelog, then is killed while it
	// processes.
	m.emit(t, em, rng, 20000, 2000, 0)
	c := startChild(t, brokers[0], t.TempDir(), 0)
	c.waitStat(t, "process 10000 messages", 90*time.Second, func(_, p, _, _ int64) bool { return p >= 10000 })
	c.kill(t)
	t.Log("killed the first instance while it processed")

	// A second one, on a new store, is killed while it restores the
	// changelog; a third, on the second's store, resumes from the offset
	// that store had made durable, and is killed while it processes.
	dir := t.TempDir()
	c = startChild(t, brokers[0], dir, 5*time.Millisecond)
	var atKill, builds, marked int64
	c.waitStat(t, "restore 3000 records", 90*time.Second, func(r, _, b, m int64) bool { atKill, builds, marked = r, b, m; return r >= 3000 })
	c.kill(t)
	t.Logf("killed the second instance after it had restored %d records, %d of its %d partitions marked recovered", atKill, marked, builds)
	if marked >= builds {
		t.Fatalf("the second instance had recovered all its %d partitions before the kill", builds)
	}
	emitted := make(chan struct{})
	go func() { defer close(emitted); m.emit(t, em, rng, 4000, 2000, time.Millisecond) }()
	c = startChild(t, brokers[0], dir, 0)
	var resumed int64
	c.waitStat(t, "process 1000 messages", 90*time.Second, func(r, p, _, _ int64) bool { resumed = r; return p >= 1000 })
	c.kill(t)
	t.Logf("killed the third instance (on the second's store) while it processed; it restored %d records", resumed)

	<-emitted
	// The last owner restores everything into its own store.
	in, err := newInstance(brokers, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	in.start()
	m.emit(t, em, rng, 2000, 2000, 0)
	start := time.Now()
	m.waitTable(t, 150*time.Second, in) // a minute under -race on 2 loaded cores
	t.Logf("the last instance serves the model %v after it started; it restored %d records", time.Since(start).Round(time.Millisecond), in.restored.Load())
	if in.restored.Load() == 0 {
		t.Fatal("the last instance restored nothing")
	}
	in.stop(t)
	m.checkView(t, brokers)
}

// checkView restores the whole group table from the changelog into a new
// store through a goka View and checks it against the model: no update that
// reached the changelog was lost, and the newest record of each key there is
// the model's.
func (m *model) checkView(t *testing.T, brokers []string) {
	t.Helper()
	cfg := gokaConfig()
	v, err := goka.NewView(brokers, goka.GroupTable(testGroup), new(codec.Int64),
		goka.WithViewStorageBuilder(Builder(t.TempDir(), Options{})),
		goka.WithViewTopicManagerBuilder(goka.TopicManagerBuilderWithConfig(cfg, topicManagerConfig())),
		goka.WithViewConsumerSaramaBuilder(goka.SaramaConsumerBuilderWithConfig(cfg)),
		goka.WithViewLogger(log.New(testLogOut, "goka view ", log.Lmicroseconds)))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- v.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("view: %v", err)
		}
	}()
	waitFor(t, "the view to restore the group table", 60*time.Second, v.Recovered)
	m.mu.Lock()
	defer m.mu.Unlock()
	for k, want := range m.max {
		got, err := v.Get(k)
		if err != nil {
			t.Fatalf("view Get %s: %v", k, err)
		}
		if g, ok := got.(int64); !ok || g != want {
			t.Fatalf("the changelog's newest record of %s is %v, want %d", k, got, want)
		}
	}
	t.Logf("a view restored the changelog into a new store: all %d keys equal the model", len(m.max))
}

var testLogOut io.Writer = io.Discard

func init() {
	if os.Getenv("GOKASTORE_TEST_LOG") != "" {
		testLogOut = os.Stderr
	}
}
