package kvbench

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/ringstore/ringstore/bench/walbench"
)

// PebbleModule is the Go module of the peer.
const PebbleModule = "github.com/cockroachdb/pebble/v2"

// buildPeers builds bench/peers/cmd/kvpeers into dir and returns its path
// and the versions of the peer modules it holds.
func buildPeers(o Options, dir string) (string, map[string]string, error) {
	src := o.PeersSrc
	if src == "" {
		var err error
		if src, err = walbench.FindPeersSource(); err != nil {
			return "", nil, err
		}
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		return "", nil, fmt.Errorf("the go command is not on PATH: %w", err)
	}
	fmt.Fprintf(o.Progress, "building the peers from %s...\n", src)
	bin := filepath.Join(dir, "kvpeers")
	cmd := exec.Command(goTool, "build", "-o", bin, "./cmd/kvpeers")
	cmd.Dir = src
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return "", nil, fmt.Errorf("go build ./cmd/kvpeers in %s: %v: %s", src, err, lastLines(out.String(), 8))
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
