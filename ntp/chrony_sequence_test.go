package ntp

import (
	"testing"

	"github.com/facebook/time/ntp/chrony"
)

// TestSequenceOf reads the sequence number of each reply the monitor asks
// for, and of none where there is no reply head.
func TestSequenceOf(t *testing.T) {
	head := chrony.ReplyHead{Sequence: 0xdeadbeef}
	for _, r := range []chrony.ResponsePacket{
		&chrony.ReplyTracking{ReplyHead: head},
		&chrony.ReplySources{ReplyHead: head},
		&chrony.ReplySourceData{ReplyHead: head},
		&chrony.ReplySourceStats{ReplyHead: head},
		&chrony.ReplyNTPData{ReplyHead: head},
		&chrony.ReplyServerStats{ReplyHead: head},
		&chrony.ReplyServerStats2{ReplyHead: head},
		&chrony.ReplyServerStats3{ReplyHead: head},
		&chrony.ReplyServerStats4{ReplyHead: head},
	} {
		if seq, ok := sequenceOf(r); !ok || seq != head.Sequence {
			t.Errorf("%T: sequence %#x, %v", r, seq, ok)
		}
	}
	if _, ok := sequenceOf(nil); ok {
		t.Error("nil reply has a sequence")
	}
	if _, ok := sequenceOf((*chrony.ReplyTracking)(nil)); ok {
		t.Error("nil *ReplyTracking has a sequence")
	}
}
