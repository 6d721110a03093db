package kvbench

import (
	"fmt"

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
	fmt.Fprintf(o.Progress, "building the peers from %s...\n", src)
	return walbench.BuildPeerProgram(src, dir, "kvpeers")
}
