package gokastore

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/ringstore/ringstore/kv"
)

// The storage crash test re-executes the test binary as a child that writes
// (Set then SetOffset, as goka's recovery and processing do) until the
// parent kills it with SIGKILL; the parent reopens the store and checks that
// the offset on disk is never ahead of the values it covers.

const (
	crashChildEnv = "GOKASTORE_STORAGE_CRASH_CHILD" // "<dir> <mode>"
	crashKeys     = 300
	crashParts    = 2
)

func crashChildOptions() Options {
	return Options{
		KV:                  kv.Options{MemtableSize: 64 << 10, CacheSize: 1 << 20},
		FlushInterval:       20 * time.Millisecond,
		RecoveryOffsetEvery: 50,
	}
}

// storageCrashChild writes record i of each partition as key i%crashKeys =
// "i", then SetOffset(i). In mode "processing" each partition is marked
// recovered after 2000 records; in "recovery" never.
func storageCrashChild(dir, mode string) {
	b := Builder(dir, crashChildOptions())
	var mu sync.Mutex
	out := bufio.NewWriter(os.Stdout)
	var wg sync.WaitGroup
	for p := int32(0); p < crashParts; p++ {
		st, err := b("crash", p)
		if err != nil {
			fmt.Println("ERROR", err)
			os.Exit(2)
		}
		start, _ := st.GetOffset(-1)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := start + 1; ; i++ {
				if err := st.Set(strconv.Itoa(int(i%crashKeys)), []byte(strconv.FormatInt(i, 10))); err != nil {
					fmt.Println("ERROR", err)
					os.Exit(2)
				}
				if err := st.SetOffset(i); err != nil {
					fmt.Println("ERROR", err)
					os.Exit(2)
				}
				if mode == "processing" && i == start+2000 {
					if err := st.MarkRecovered(); err != nil {
						fmt.Println("ERROR", err)
						os.Exit(2)
					}
					mu.Lock()
					fmt.Fprintf(out, "recovered %d %d\n", p, i)
					out.Flush()
					mu.Unlock()
				}
				if i%500 == 0 {
					mu.Lock()
					fmt.Fprintf(out, "progress %d %d\n", p, i)
					out.Flush()
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
}

func TestMain(m *testing.M) {
	if spec := os.Getenv(crashChildEnv); spec != "" {
		f := strings.Fields(spec)
		storageCrashChild(f[0], f[1])
		os.Exit(0)
	}
	if spec := os.Getenv(processorChildEnv); spec != "" {
		os.Exit(processorChild(spec))
	}
	os.Exit(m.Run())
}

// runAndKill starts the child and SIGKILLs it once it has printed want
// "progress" lines (in mode processing: after every partition's "recovered"
// line). It returns the offsets at which MarkRecovered had returned.
func runAndKill(t *testing.T, dir, mode string, want int) map[int]int64 {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), crashChildEnv+"="+dir+" "+mode)
	stdout, err := cmd.StdoutPipe()
	must(t, err)
	cmd.Stderr = os.Stderr
	must(t, cmd.Start())
	sc := bufio.NewScanner(stdout)
	recovered, progress := 0, 0
	marked := map[int]int64{} // partition -> offset at which MarkRecovered returned
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "ERROR") {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("child: %s", line)
		}
		if strings.HasPrefix(line, "recovered") {
			recovered++
			var p int
			var at int64
			if _, err := fmt.Sscanf(line, "recovered %d %d", &p, &at); err != nil {
				t.Fatalf("child printed %q: %v", line, err)
			}
			marked[p] = at
		}
		if strings.HasPrefix(line, "progress") && (mode != "processing" || recovered == crashParts) {
			progress++
		}
		if progress >= want {
			break
		}
	}
	must(t, cmd.Process.Signal(syscall.SIGKILL))
	cmd.Wait()
	return marked
}

// checkCrashState reopens the store and checks every partition: for each
// key, the value is at least the newest version the stored offset covers.
func checkCrashState(t *testing.T, dir string) []int64 {
	t.Helper()
	b := Builder(dir, crashChildOptions())
	var offs []int64
	for p := int32(0); p < crashParts; p++ {
		st, err := b("crash", p)
		must(t, err)
		off, err := st.GetOffset(-1)
		must(t, err)
		offs = append(offs, off)
		for k := int64(0); k < crashKeys; k++ {
			// The newest version of k at or below off.
			newest := off - ((off-k)%crashKeys+crashKeys)%crashKeys
			v, err := st.Get(strconv.FormatInt(k, 10))
			must(t, err)
			if newest < 0 {
				continue
			}
			if v == nil {
				t.Fatalf("partition %d offset %d: key %d has no value, want version >= %d", p, off, k, newest)
			}
			got, err := strconv.ParseInt(string(v), 10, 64)
			must(t, err)
			if got < newest || got%crashKeys != k {
				t.Fatalf("partition %d offset %d: key %d holds version %d, want >= %d: the offset is ahead of the values", p, off, k, got, newest)
			}
		}
		must(t, st.Close())
	}
	return offs
}

func TestStorageCrash(t *testing.T) {
	for _, c := range []struct {
		mode string
		want int // progress lines before the kill
	}{{"recovery", 10}, {"processing", 8}} {
		t.Run(c.mode, func(t *testing.T) {
			dir := t.TempDir()
			var prev []int64
			for round := 0; round < 3; round++ {
				marked := runAndKill(t, dir, c.mode, c.want)
				offs := checkCrashState(t, dir)
				t.Logf("round %d: offsets on disk after SIGKILL %v", round, offs)
				for p, o := range offs {
					if at, ok := marked[p]; ok && o < at {
						t.Fatalf("partition %d: offset %d on disk, but MarkRecovered at %d had returned", p, o, at)
					}
					if c.mode == "processing" && len(marked) != crashParts {
						t.Fatalf("the child marked %d partitions recovered, want %d", len(marked), crashParts)
					}
					if prev != nil && o < prev[p] {
						t.Fatalf("partition %d: offset went back from %d to %d", p, prev[p], o)
					}
				}
				prev = offs
			}
		})
	}
}
