package arrowscan

import (
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/ringstore/ringstore/internal/intscan"
)

// validateColumn checks that reading any value of arr cannot panic:
// array.Validate's O(1) structure checks (buffer sizes for offset and
// length, bitmaps, children and their types, first and last offsets; it
// recurses into children and dictionaries), then the O(rows) checks that
// need the values: offsets non-decreasing (binary, string, list, map),
// list views and binary views inside their buffers, dictionary indices
// inside the dictionary.
//
// It does less than array.ValidateFull on purpose: that one also checks
// that every string is valid UTF-8 and recounts every null bitmap, which
// took a fifth of a 12-query scan's CPU time here, and neither can make a
// read panic (a Go string may hold any bytes; a wrong null count misleads,
// but IsNull reads the bitmap).
//
// arrow-go's IPC reader builds a null-type array (one that holds only
// nulls, no buffers) with no buffer slot, where array.Validate asks for one:
// such arrays, at any depth, are checked as a copy with an empty slot.
func validateColumn(arr arrow.Array) error {
	if fixed, ok := withNullSlots(arr.Data(), 0); ok {
		copyArr := array.MakeFromData(fixed)
		defer copyArr.Release()
		fixed.Release()
		if err := array.Validate(copyArr); err != nil {
			return err
		}
	} else if err := array.Validate(arr); err != nil {
		return err
	}
	return checkValues(arr, 0)
}

// withNullSlots returns a copy of d in which every null-type array lacking
// a buffer slot has one (nil), and true; or false when d has none such.
func withNullSlots(d arrow.ArrayData, depth int) (arrow.ArrayData, bool) {
	if depth > maxDepth {
		return nil, false // checkValues reports the depth
	}
	changed := d.DataType().ID() == arrow.NULL && len(d.Buffers()) == 0
	children := d.Children()
	fixedChildren := make([]arrow.ArrayData, len(children))
	for i, c := range children {
		if fc, ok := withNullSlots(c, depth+1); ok {
			fixedChildren[i], changed = fc, true
		} else {
			c.Retain()
			fixedChildren[i] = c
		}
	}
	var dict arrow.ArrayData
	if d.DataType().ID() == arrow.DICTIONARY {
		dd := d.Dictionary()
		if fd, ok := withNullSlots(dd, depth+1); ok {
			dict, changed = fd, true
		} else {
			dd.Retain()
			dict = dd
		}
	}
	release := func() {
		for _, c := range fixedChildren {
			c.Release()
		}
		if dict != nil {
			dict.Release()
		}
	}
	if !changed {
		release()
		return nil, false
	}
	buffers := d.Buffers()
	if d.DataType().ID() == arrow.NULL && len(buffers) == 0 {
		buffers = []*memory.Buffer{nil}
	}
	out := array.NewData(d.DataType(), d.Len(), buffers, fixedChildren, d.NullN(), d.Offset())
	if dict != nil {
		out.SetDictionary(dict)
	}
	release()
	return out, true
}

func checkValues(arr arrow.Array, depth int) error {
	if depth > maxDepth {
		return fmt.Errorf("arrays nested deeper than %d", maxDepth)
	}
	off, n := arr.Data().Offset(), arr.Len()
	switch a := arr.(type) {
	case *array.String:
		return nonDecreasing(a.ValueOffsets(), "string")
	case *array.Binary:
		return nonDecreasing(a.ValueOffsets(), "binary")
	case *array.LargeString:
		return nonDecreasing(a.ValueOffsets(), "large string")
	case *array.LargeBinary:
		return nonDecreasing(a.ValueOffsets(), "large binary")
	case *array.Map:
		if err := listOffsets(a.Offsets(), off, n); err != nil {
			return err
		}
		return checkValues(a.ListValues(), depth+1)
	case *array.List:
		if err := listOffsets(a.Offsets(), off, n); err != nil {
			return err
		}
		return checkValues(a.ListValues(), depth+1)
	case *array.LargeList:
		if err := listOffsets(a.Offsets(), off, n); err != nil {
			return err
		}
		return checkValues(a.ListValues(), depth+1)
	case *array.ListView:
		if err := a.ValidateFull(); err != nil {
			return err
		}
		return checkValues(a.ListValues(), depth+1)
	case *array.LargeListView:
		if err := a.ValidateFull(); err != nil {
			return err
		}
		return checkValues(a.ListValues(), depth+1)
	case *array.BinaryView:
		return a.ValidateFull()
	case *array.StringView:
		// The same layout check without the UTF-8 check.
		bv := array.NewBinaryViewData(a.Data())
		defer bv.Release()
		return bv.ValidateFull()
	case *array.FixedSizeList:
		return checkValues(a.ListValues(), depth+1)
	case *array.Struct:
		for i := 0; i < a.NumField(); i++ {
			if err := checkValues(a.Field(i), depth+1); err != nil {
				return err
			}
		}
	case *array.RunEndEncoded:
		if err := a.ValidateFull(); err != nil {
			return err
		}
		return checkValues(a.Values(), depth+1)
	case *array.Dictionary:
		dict := a.Dictionary()
		if err := indicesInRange(a.Indices(), dict.Len()); err != nil {
			return err
		}
		return checkValues(dict, depth+1)
	case array.ExtensionArray:
		return checkValues(a.Storage(), depth+1)
	case array.Union:
		for i := 0; i < a.NumFields(); i++ {
			if err := checkValues(a.Field(i), depth+1); err != nil {
				return err
			}
		}
	}
	return nil
}

// nonDecreasing checks offsets (already sliced to the array: length+1
// entries, first and last in bounds per array.Validate); only when the
// branch-free pass finds a decrease does it look for where.
func nonDecreasing[T int32 | int64](offs []T, kind string) error {
	if len(offs) == 0 {
		return nil
	}
	if offs[0] < 0 {
		return fmt.Errorf("%s offset 0 is negative: %d", kind, offs[0])
	}
	if intscan.NonDecreasing(offs) {
		return nil
	}
	for i := 1; i < len(offs); i++ {
		if offs[i] < offs[i-1] {
			return fmt.Errorf("%s offsets decrease at %d: %d after %d", kind, i, offs[i], offs[i-1])
		}
	}
	return nil
}

// listOffsets checks a list's offsets [off, off+n] (Offsets returns the
// whole buffer).
func listOffsets[T int32 | int64](offs []T, off, n int) error {
	if n == 0 {
		return nil
	}
	if off < 0 || off+n+1 > len(offs) {
		return fmt.Errorf("list offsets buffer of %d entries for offset %d and length %d", len(offs), off, n)
	}
	return nonDecreasing(offs[off:off+n+1], "list")
}

func indicesInRange(idx arrow.Array, dictLen int) error {
	switch a := idx.(type) {
	case *array.Int8:
		return inRange(a, a.Int8Values(), dictLen)
	case *array.Int16:
		return inRange(a, a.Int16Values(), dictLen)
	case *array.Int32:
		return inRange(a, a.Int32Values(), dictLen)
	case *array.Int64:
		return inRange(a, a.Int64Values(), dictLen)
	case *array.Uint8:
		return inRange(a, a.Uint8Values(), dictLen)
	case *array.Uint16:
		return inRange(a, a.Uint16Values(), dictLen)
	case *array.Uint32:
		return inRange(a, a.Uint32Values(), dictLen)
	case *array.Uint64:
		return inRange(a, a.Uint64Values(), dictLen)
	}
	return fmt.Errorf("dictionary index type %s is not an integer", idx.DataType())
}

// inRange checks that every index of a non-null slot is below dictLen;
// only when the branch-free pass finds one out of range does it look for
// the first, skipping nulls.
func inRange[T intscan.Integer](a arrow.Array, vals []T, dictLen int) error {
	if intscan.AllBelow(vals, uint64(dictLen)) {
		return nil
	}
	nulls := a.NullN() > 0
	for i, v := range vals {
		if uint64(v) >= uint64(dictLen) || v < 0 {
			if nulls && a.IsNull(i) {
				continue
			}
			return fmt.Errorf("dictionary index %d at %d outside dictionary of %d values", v, i, dictLen)
		}
	}
	return nil
}
