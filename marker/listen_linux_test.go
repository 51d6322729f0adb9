package marker

import (
	"encoding/binary"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/monagent/monagent/sockts"
)

// cmsg builds one control message of layout l.
func cmsg(l sockts.Layout, level, typ int32, data []byte) []byte {
	b := make([]byte, l.HeaderLen, l.HeaderLen+len(data)+8)
	n := l.HeaderLen + len(data)
	if l.HeaderLen == 16 {
		binary.NativeEndian.PutUint64(b, uint64(n))
	} else {
		binary.NativeEndian.PutUint32(b, uint32(n))
	}
	binary.NativeEndian.PutUint32(b[l.HeaderLen-8:], uint32(level))
	binary.NativeEndian.PutUint32(b[l.HeaderLen-4:], uint32(typ))
	b = append(b, data...)
	for len(b)%l.Align != 0 {
		b = append(b, 0)
	}
	return b
}

func TestKernelStampLayouts(t *testing.T) {
	const want = int64(1_700_000_000_123_456_789)
	ts64 := binary.NativeEndian.AppendUint64(binary.NativeEndian.AppendUint64(nil, uint64(want/1e9)), uint64(want%1e9))
	ts32 := binary.NativeEndian.AppendUint32(binary.NativeEndian.AppendUint32(nil, uint32(want/1e9)), uint32(want%1e9))
	other := func(l sockts.Layout) []byte { return cmsg(l, unix.SOL_SOCKET, unix.SCM_RIGHTS, []byte{1, 2, 3, 4}) }
	for _, tc := range []struct {
		name string
		l    sockts.Layout
		oob  []byte
	}{
		{"LP64 new", sockts.LayoutLP64, append(other(sockts.LayoutLP64), cmsg(sockts.LayoutLP64, unix.SOL_SOCKET, unix.SO_TIMESTAMPNS_NEW, ts64)...)},
		{"LP64 old", sockts.LayoutLP64, cmsg(sockts.LayoutLP64, unix.SOL_SOCKET, unix.SO_TIMESTAMPNS_OLD, ts64)},
		{"ILP32 new", sockts.LayoutILP32, append(other(sockts.LayoutILP32), cmsg(sockts.LayoutILP32, unix.SOL_SOCKET, unix.SO_TIMESTAMPNS_NEW, ts64)...)},
		{"ILP32 old", sockts.LayoutILP32, cmsg(sockts.LayoutILP32, unix.SOL_SOCKET, unix.SO_TIMESTAMPNS_OLD, ts32)},
	} {
		if got, ok := KernelStamp(tc.l, tc.oob); !ok || got != want {
			t.Errorf("%s: %d, %v", tc.name, got, ok)
		}
		if _, ok := KernelStamp(tc.l, tc.oob[:len(tc.oob)-4]); ok {
			t.Errorf("%s: a stamp in a cut buffer", tc.name)
		}
	}
	if _, ok := KernelStamp(sockts.LayoutLP64, nil); ok {
		t.Error("a stamp in nothing")
	}
	if _, ok := KernelStamp(sockts.LayoutLP64, other(sockts.LayoutLP64)); ok {
		t.Error("a stamp in SCM_RIGHTS")
	}
}
