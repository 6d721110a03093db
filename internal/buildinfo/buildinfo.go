// Package buildinfo says which ringstore a binary is: the module version
// and the commit it was built from, from the build information the Go
// toolchain embeds (debug.ReadBuildInfo).
//
//   - Built in a checkout (go build, go run): version "(devel)", the commit
//     from vcs.revision, "+dirty" when the tree had changes.
//   - Installed with go install …@vX.Y.Z: that version; the commit is the
//     one a pseudo-version (v0.0.0-20261204011522-0123456789ab) names, or
//     unknown for a tagged release with no VCS stamp.
//   - As a last resort, a binary started inside a checkout asks git.
package buildinfo

import (
	"os/exec"
	"runtime/debug"
	"strings"
)

// Info is what the binary knows about its own build.
type Info struct {
	Module    string // module path of the main package, "github.com/ringstore/ringstore"
	Version   string // module version, "(devel)" for a build in a checkout
	Commit    string // 12 hex digits, "+dirty" appended for a modified tree; "unknown" when nothing says
	GoVersion string // the toolchain, "go1.26.8"
}

// Read returns the binary's build information.
func Read() Info {
	in := Info{Version: "(devel)", Commit: "unknown"}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		in.Commit = fromGit()
		return in
	}
	in.Module, in.GoVersion = bi.Main.Path, bi.GoVersion
	if bi.Main.Version != "" {
		in.Version = bi.Main.Version
	}
	rev, dirty := "", false
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	switch {
	case rev != "":
		in.Commit = short(rev)
		if dirty {
			in.Commit += "+dirty"
		}
	case pseudoCommit(in.Version) != "":
		in.Commit = pseudoCommit(in.Version)
	default:
		in.Commit = fromGit()
	}
	return in
}

// pseudoCommit returns the commit a pseudo-version names
// (vX.Y.Z-[pre.]yyyymmddhhmmss-abcdefabcdef), or "".
func pseudoCommit(v string) string {
	v = strings.TrimSuffix(v, "+incompatible")
	i := strings.LastIndexByte(v, '-')
	if i < 0 || len(v)-i-1 != 12 {
		return ""
	}
	h := v[i+1:]
	for _, c := range h {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return ""
		}
	}
	// The 14-digit timestamp before the hash is what makes it a pseudo-version.
	ts := v[:i]
	if j := strings.LastIndexAny(ts, "-."); j >= 0 {
		ts = ts[j+1:]
	}
	if len(ts) != 14 {
		return ""
	}
	return h
}

func fromGit() string {
	out, err := exec.Command("git", "rev-parse", "--short=12", "HEAD").Output()
	if err != nil {
		return "unknown"
	}
	return strings.TrimSpace(string(out)) + " (from git)"
}

func short(rev string) string {
	if len(rev) > 12 {
		return rev[:12]
	}
	return rev
}
