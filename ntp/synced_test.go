package ntp

import "testing"

// What "synchronised" means for a server's reply, chronyd's tracking and
// ntpd's system variables.
func TestSynced(t *testing.T) {
	for _, c := range []struct {
		name string
		got  bool
		want bool
	}{
		{"reply stratum 2", (&Header{Leap: 0, Stratum: 2}).Synced(), true},
		{"reply alarm", (&Header{Leap: 3, Stratum: 2}).Synced(), false},
		{"reply stratum 0 (kiss)", (&Header{Stratum: 0}).Synced(), false},
		{"reply stratum 16", (&Header{Stratum: 16}).Synced(), false},
		{"chronyd with a reference", (&ChronyTracking{RefID: 0xc0000201, LeapStatus: 0}).Synced(), true},
		{"chronyd on its local reference", (&ChronyTracking{RefID: 0x7f7f0101, LeapStatus: 0, Stratum: 10}).Synced(), false},
		{"chronyd unsynchronised", (&ChronyTracking{RefID: 0xc0000201, LeapStatus: 3}).Synced(), false},
		{"chronyd without a reference", (&ChronyTracking{}).Synced(), false},
		{"ntpd with a system peer", (&NtpdSystem{Leap: 0, SysPeer: 4}).Synced(), true},
		{"ntpd alarm", (&NtpdSystem{Leap: 3, SysPeer: 4}).Synced(), false},
		{"ntpd without a system peer", (&NtpdSystem{}).Synced(), false},
	} {
		if c.got != c.want {
			t.Errorf("%s: synced %v, want %v", c.name, c.got, c.want)
		}
	}
}
