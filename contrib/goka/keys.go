package gokastore

import (
	"encoding/binary"
	"fmt"
	"math"
)

// Record kinds, the byte after a partition's prefix. The offset record sorts
// before every value of its partition, so a scan of the value range never
// meets it.
const (
	kindOffset byte = 0x00
	kindValue  byte = 0x01
)

// partitionPrefix returns 't' | u16 len(topic) | topic | u32 partition, the
// prefix of every record of one partition of one topic. The topic's length
// comes first, so no prefix is a prefix of another partition's prefix.
func partitionPrefix(topic string, partition int32) ([]byte, error) {
	if topic == "" {
		return nil, fmt.Errorf("gokastore: empty topic name (partition %d)", partition)
	}
	if len(topic) > math.MaxUint16 {
		return nil, fmt.Errorf("gokastore: topic name of %d bytes is longer than %d", len(topic), math.MaxUint16)
	}
	if partition < 0 {
		return nil, fmt.Errorf("gokastore: negative partition %d of topic %q", partition, topic)
	}
	p := make([]byte, 0, 1+2+len(topic)+4)
	p = append(p, 't')
	p = binary.BigEndian.AppendUint16(p, uint16(len(topic)))
	p = append(p, topic...)
	p = binary.BigEndian.AppendUint32(p, uint32(partition))
	return p, nil
}

// offsetKey is prefix | 0x00.
func offsetKey(prefix []byte) []byte {
	k := make([]byte, 0, len(prefix)+1)
	k = append(k, prefix...)
	return append(k, kindOffset)
}

// valueKey is prefix | 0x01 | key.
func valueKey(prefix []byte, key string) []byte {
	k := make([]byte, 0, len(prefix)+1+len(key))
	k = append(k, prefix...)
	k = append(k, kindValue)
	return append(k, key...)
}

// valueKeyBytes is valueKey for a []byte key.
func valueKeyBytes(prefix, key []byte) []byte {
	k := make([]byte, 0, len(prefix)+1+len(key))
	k = append(k, prefix...)
	k = append(k, kindValue)
	return append(k, key...)
}

// valueRangeEnd is prefix | 0x02, the first key after the partition's values.
func valueRangeEnd(prefix []byte) []byte {
	k := make([]byte, 0, len(prefix)+1)
	k = append(k, prefix...)
	return append(k, kindValue+1)
}

// prefixEnd returns the first key after every key that starts with p, or nil
// when there is none (p is all 0xff). Keys built by valueKeyBytes always
// have one: their kind byte is 0x01.
func prefixEnd(p []byte) []byte {
	end := append([]byte(nil), p...)
	for i := len(end) - 1; i >= 0; i-- {
		if end[i] != 0xff {
			end[i]++
			return end[:i+1]
		}
	}
	return nil
}

// encodeOffset is the offset record's value: the offset, int64 big-endian.
func encodeOffset(off int64) []byte {
	return binary.BigEndian.AppendUint64(nil, uint64(off))
}

// decodeOffset checks the offset record's length.
func decodeOffset(topic string, partition int32, v []byte) (int64, error) {
	if len(v) != 8 {
		return 0, fmt.Errorf("gokastore: offset record of topic %q partition %d has %d bytes, want 8", topic, partition, len(v))
	}
	return int64(binary.BigEndian.Uint64(v)), nil
}
