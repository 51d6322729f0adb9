package timebase

import (
	"fmt"
	"strconv"
	"strings"
)

// Domain names the clock a nanosecond count belongs to. PHC n is PHC(n).
type Domain int32

// The clock domains. Values are stable: they appear in shipped data.
const (
	DomainUnknown Domain = iota
	DomainRealtime
	DomainTAI
	DomainMonotonic
	DomainMonotonicRaw
	DomainBoottime
	DomainGlobal // the HCA global timeline of a cluster of agents

	domainPHCBase Domain = 1 << 16 // PHC n is domainPHCBase + n
)

// PHC returns the domain of the PTP hardware clock /dev/ptp<index>.
func PHC(index int) Domain { return domainPHCBase + Domain(index) }

// PHCIndex reports the n of /dev/ptp<n> when d is a PHC domain.
func (d Domain) PHCIndex() (int, bool) {
	if d < domainPHCBase {
		return 0, false
	}
	return int(d - domainPHCBase), true
}

var domainNames = [...]string{
	DomainUnknown:      "unknown",
	DomainRealtime:     "realtime",
	DomainTAI:          "tai",
	DomainMonotonic:    "monotonic",
	DomainMonotonicRaw: "monotonic_raw",
	DomainBoottime:     "boottime",
	DomainGlobal:       "global",
}

// String returns the name used in configuration and in shipped data: realtime,
// tai, monotonic, monotonic_raw, boottime, global, phc0, phc1, ...
func (d Domain) String() string {
	if n, ok := d.PHCIndex(); ok {
		return "phc" + strconv.Itoa(n)
	}
	if d >= 0 && int(d) < len(domainNames) {
		return domainNames[d]
	}
	return "domain(" + strconv.Itoa(int(d)) + ")"
}

// ParseDomain is the inverse of Domain.String.
func ParseDomain(s string) (Domain, error) {
	for d, name := range domainNames {
		if s == name && Domain(d) != DomainUnknown {
			return Domain(d), nil
		}
	}
	if rest, ok := strings.CutPrefix(s, "phc"); ok {
		n, err := strconv.Atoi(rest)
		if err == nil && n >= 0 && n < 1<<15 {
			return PHC(n), nil
		}
	}
	return DomainUnknown, fmt.Errorf("unknown clock domain %q (want realtime, tai, monotonic, monotonic_raw, boottime, global or phcN)", s)
}

// Timestamp is a point in time in one clock domain. UncertaintyNS is zero for a
// direct clock read and the estimated error bound (ns) of a translated timestamp.
type Timestamp struct {
	NS            int64
	Domain        Domain
	UncertaintyNS int64
}

func (t Timestamp) String() string {
	s := strconv.FormatInt(t.NS, 10) + "ns@" + t.Domain.String()
	if t.UncertaintyNS != 0 {
		s += "±" + strconv.FormatInt(t.UncertaintyNS, 10) + "ns"
	}
	return s
}
