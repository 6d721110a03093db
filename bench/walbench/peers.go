package walbench

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
)

// PeerWorkload is the child workload name the peers' program registers
// (bench/peers/cmd/walpeers).
const PeerWorkload = "wal-peer"

// Peer is one log library the benchmark compares with.
type Peer struct {
	Mode     string // the ChildConfig.Mode the peers' program knows it by
	System   string // the library, as its users name it
	Module   string // its Go module
	BatchAPI string // the call its batch mode makes, for labels
}

// Peers are the logs in bench/peers, in report order.
var Peers = []Peer{
	{Mode: "raft-wal", System: "hashicorp/raft-wal", Module: "github.com/hashicorp/raft-wal", BatchAPI: "StoreLogs"},
	{Mode: "tidwall-wal", System: "tidwall/wal", Module: "github.com/tidwall/wal", BatchAPI: "WriteBatch"},
	{Mode: "etcd-wal", System: "etcd wal", Module: "go.etcd.io/etcd/server/v3", BatchAPI: "Save"},
}

// PeerBatchWriters is the writers of the peers' batch modes, and the most
// entries their leader puts in one call.
const PeerBatchWriters = 64

// PeerModeName is the mode name of peer p with writers writers: one entry
// per call, or in its batch API when batch.
func PeerModeName(p Peer, writers int, batch bool) string {
	if batch {
		return fmt.Sprintf("%s-batch-w%d", p.Mode, writers)
	}
	return fmt.Sprintf("%s-w%d", p.Mode, writers)
}

const mainModule = "github.com/ringstore/ringstore"

// FindPeersSource returns the bench/peers directory of the ringstore source
// tree: the first directory at or above the working directory whose go.mod
// is ringstore's, else the tree this package was compiled from.
func FindPeersSource() (string, error) {
	var roots []string
	if wd, err := os.Getwd(); err == nil {
		for d := wd; ; d = filepath.Dir(d) {
			roots = append(roots, d)
			if filepath.Dir(d) == d {
				break
			}
		}
	}
	if _, file, _, ok := runtime.Caller(0); ok && filepath.IsAbs(file) {
		roots = append(roots, filepath.Join(filepath.Dir(file), "..", ".."))
	}
	for _, root := range roots {
		if moduleOf(filepath.Join(root, "go.mod")) != mainModule {
			continue
		}
		peers := filepath.Join(root, "bench", "peers")
		if moduleOf(filepath.Join(peers, "go.mod")) == mainModule+"/bench/peers" {
			return peers, nil
		}
		return "", fmt.Errorf("the source tree at %s has no bench/peers module", root)
	}
	return "", errors.New("no ringstore source tree at or above the working directory (the peers are built from its bench/peers)")
}

// moduleOf returns the module path a go.mod declares, or "".
func moduleOf(gomod string) string {
	data, err := os.ReadFile(gomod)
	if err != nil {
		return ""
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		if m, ok := strings.CutPrefix(strings.TrimSpace(sc.Text()), "module "); ok {
			return strings.Trim(strings.TrimSpace(m), `"`)
		}
	}
	return ""
}

// BuildPeers builds the peers' program from src into dir and returns its
// path and the versions of the peer modules it was built with.
func BuildPeers(src, dir string) (string, map[string]string, error) {
	return BuildPeerProgram(src, dir, "walpeers")
}

// BuildPeerProgram builds bench/peers/cmd/NAME from the peers module at src
// into dir, asks it for the versions of the peer modules it was built with
// (its "versions" command prints them as a JSON object) and returns its path
// and those versions.
func BuildPeerProgram(src, dir, name string) (string, map[string]string, error) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		return "", nil, fmt.Errorf("the go command is not on PATH: %w", err)
	}
	bin := filepath.Join(dir, name)
	cmd := exec.Command(goTool, "build", "-o", bin, "./cmd/"+name)
	cmd.Dir = src
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return "", nil, fmt.Errorf("go build ./cmd/%s in %s: %v: %s", name, src, err, lastLines(out.String(), 8))
	}
	vout, err := exec.Command(bin, "versions").Output()
	if err != nil {
		return "", nil, fmt.Errorf("%s versions: %w", bin, err)
	}
	versions := map[string]string{}
	if err := json.Unmarshal(vout, &versions); err != nil {
		return "", nil, fmt.Errorf("%s versions: %w", bin, err)
	}
	return bin, versions, nil
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "; ")
}
