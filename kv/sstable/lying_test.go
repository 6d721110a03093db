package sstable

import (
	"errors"
	"testing"
)

// TestLyingMetadata builds files whose sections all carry correct
// checksums but contradict each other: one corrupt function per case. Each
// must fail Open, or the read of the block concerned, with a
// *CorruptError in the named region.
func TestLyingMetadata(t *testing.T) {
	path, data := smallFile(t)
	r, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	ft, err := decodeFooter(data[len(data)-FooterLen:], site{})
	if err != nil {
		t.Fatal(err)
	}
	blocks := data[:ft.index.off]
	filter := data[ft.filter.off : ft.filter.off+ft.filter.len]

	type parts struct {
		index []indexEntry
		props Properties
		foot  func(*footer)
	}
	build := func(p parts) []byte {
		out := append([]byte{}, blocks...)
		var f footer
		f.version = Version
		n := len(out)
		out = encodeIndex(out, p.index)
		f.index = section{uint64(n), uint64(len(out) - n)}
		n = len(out)
		out = append(out, filter...)
		f.filter = section{uint64(n), uint64(len(out) - n)}
		n = len(out)
		out = encodeProps(out, p.props)
		f.props = section{uint64(n), uint64(len(out) - n)}
		if p.foot != nil {
			p.foot(&f)
		}
		return encodeFooter(out, f)
	}
	fresh := func() parts {
		return parts{index: r.index.entries(), props: r.Properties()}
	}
	if err := checkBytes(build(fresh()), "lying", -1); err != nil {
		t.Fatalf("rebuilt file without a lie: %v", err)
	}
	mid := InternalKey{UserKey: append(append([]byte{}, r.index.userKey(0)...), 0), Seq: 1, Kind: KindSet}
	cases := []struct {
		name    string
		corrupt func(*parts)
		region  string // "footer", "index", "properties" or "block"
	}{
		{"index offset unaligned", func(p *parts) { p.foot = func(f *footer) { f.index.off++; f.index.len-- } }, "footer"},
		{"filter does not follow index", func(p *parts) { p.foot = func(f *footer) { f.filter.off++ } }, "footer"},
		{"properties overlap footer", func(p *parts) { p.foot = func(f *footer) { f.props.len++ } }, "footer"},
		{"index misses the last block", func(p *parts) { p.index = p.index[:len(p.index)-1] }, "index"},
		{"index block count lies", func(p *parts) { p.props.DataBlocks++; p.props.Entries++ }, "properties"},
		{"largest key lies", func(p *parts) { p.props.Largest.Seq++ }, "properties"},
		{"smallest key lies", func(p *parts) { p.props.Smallest = InternalKey{UserKey: []byte("a"), Seq: 1, Kind: KindSet} }, "block"},
		{"used length lies", func(p *parts) { p.index[1].used-- }, "block"},
		{"last key lies", func(p *parts) { p.index[0].lastKey = mid }, "block"},
	}
	for _, c := range cases {
		p := fresh()
		c.corrupt(&p)
		file := build(p)
		err := checkBytes(file, "lying", -1)
		var ce *CorruptError
		if !errors.As(err, &ce) || ce.Path != "lying" {
			t.Errorf("%s: %v; want a *CorruptError", c.name, err)
			continue
		}
		fo := int64(len(file) - FooterLen)
		var lo, hi int64
		switch c.region {
		case "footer":
			lo, hi = fo, int64(len(file))
		case "index", "properties":
			lo, hi = int64(ft.index.off), fo
		case "block":
			lo, hi = 0, int64(ft.index.off)
		}
		if ce.Offset < lo || ce.Offset >= hi {
			t.Errorf("%s: error at offset %d, want in the %s [%d, %d): %v", c.name, ce.Offset, c.region, lo, hi, err)
		}
		t.Logf("%s: %v", c.name, err)
	}
}
