package inventory

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/monagent/monagent/gpio"
	"github.com/monagent/monagent/phc"
	"github.com/monagent/monagent/timebase"
)

// Inventory is what monagent can measure on this machine. Whatever is missing is
// listed as absent, with the reason, rather than failing the probe.
type Inventory struct {
	Host       string          `json:"host"`
	GOOS       string          `json:"goos"`
	GOARCH     string          `json:"goarch"`
	Clocks     []ClockProbe    `json:"clocks"`
	Kernel     *KernelProbe    `json:"kernel_clock,omitempty"`
	KernelErr  string          `json:"kernel_clock_error,omitempty"`
	PHCs       []PHCProbe      `json:"phcs"`
	Interfaces []IfaceProbe    `json:"interfaces"`
	GPIOChips  []string        `json:"gpio_chips"`
	GPIO       []GPIOChipProbe `json:"gpio"`
	PPS        []PPSProbe      `json:"pps"`
	IIO        []DeviceProbe   `json:"iio"`
	Hwmon      []DeviceProbe   `json:"hwmon"`
	Thermal    []DeviceProbe   `json:"thermal_zones"`
	Daemons    []SocketProbe   `json:"daemons"`
	Influx     *InfluxProbe    `json:"influx,omitempty"`
	Notes      []string        `json:"notes,omitempty"`
}

// ClockProbe describes one system clock. NowNS counts in the clock's own
// domain: since the epoch for realtime (UTC) and tai, since boot for the
// monotonic family.
type ClockProbe struct {
	Name         string `json:"name"`
	ResolutionNS int64  `json:"resolution_ns"`
	NowNS        int64  `json:"now_ns"`
	OffsetNS     int64  `json:"offset_from_monotonic_raw_ns"`
	Error        string `json:"error,omitempty"`
}

// KernelProbe is the adjtimex state.
type KernelProbe struct {
	State      string `json:"state"`
	Status     string `json:"status"`
	Synced     bool   `json:"synced"`
	OffsetNS   int64  `json:"offset_ns"`
	FreqPPB    int64  `json:"freq_ppb"`
	MaxErrorNS int64  `json:"maxerror_ns"`
	EstErrorNS int64  `json:"esterror_ns"`
	TAIOffsetS int64  `json:"tai_offset_s"`
}

// PHCProbe is a PHC with its capabilities and a trial reading.
type PHCProbe struct {
	phc.Info
	Caps        *phc.Caps `json:"caps,omitempty"`
	PinFuncs    []phc.Pin `json:"pins,omitempty"`
	PinsError   string    `json:"pins_error,omitempty"`
	Method      string    `json:"method,omitempty"`
	OffsetNS    int64     `json:"offset_from_realtime_ns,omitempty"` // realtime - PHC
	PHCNS       int64     `json:"phc_ns,omitempty"`                  // the trial reading's PHC time
	RealtimeNS  int64     `json:"realtime_ns,omitempty"`             // REALTIME at the middle of its read window
	DelayNS     int64     `json:"read_delay_ns,omitempty"`
	Refusals    []string  `json:"method_refusals,omitempty"`
	Error       string    `json:"error,omitempty"`
	ClockGetRes int64     `json:"resolution_ns,omitempty"`
}

// IfaceProbe is a network interface's timestamping support and what it can
// serve. Hardware receive stamps need an RX filter that matches the packets:
// PTP event messages are matched by the PTP filters (the AM335x CPSW has only
// ptpv2-event), NTP packets only by "all" or "ntp-all".
type IfaceProbe struct {
	Name         string   `json:"name"`
	PHCIndex     int      `json:"phc_index"`
	Capabilities []string `json:"timestamping"`
	RxFilters    []string `json:"rx_filters"`      // HWTSTAMP_FILTER_* as ethtool names them
	TxTypes      []string `json:"tx_types"`        // HWTSTAMP_TX_*
	PTPHardware  bool     `json:"ptp_rx_hardware"` // PTP event messages stamped on receive by the NIC
	NTPHardware  bool     `json:"ntp_rx_hardware"` // NTP (any UDP) packets stamped on receive by the NIC
	TxHardware   bool     `json:"tx_hardware"`     // transmitted packets stamped by the NIC
	Error        string   `json:"error,omitempty"`
}

// InfluxProbe is the answer of the configured InfluxDB to a ping and to an
// empty write with the configured token.
type InfluxProbe struct {
	URL         string `json:"url"`
	Bucket      string `json:"bucket"`
	Reachable   bool   `json:"reachable"`
	PingStatus  int    `json:"ping_status,omitempty"`
	WriteStatus int    `json:"write_status,omitempty"`
	WriteOK     bool   `json:"write_ok"`
	Detail      string `json:"detail,omitempty"` // what is wrong and what to fix
}

// DeviceProbe is a device node or sysfs device with its name.
type DeviceProbe struct {
	Path string `json:"path"`
	Name string `json:"name,omitempty"`
}

// GPIOChipProbe is a GPIO chip with its lines, as the character device
// reports them (gpioinfo's view).
type GPIOChipProbe struct {
	Path  string          `json:"path"`
	Name  string          `json:"name,omitempty"`
	Label string          `json:"label,omitempty"`
	Lines int             `json:"num_lines"`
	Line  []GPIOLineProbe `json:"lines,omitempty"`
	Error string          `json:"error,omitempty"`
}

// GPIOLineProbe is one line: a line in use names its consumer (a driver,
// "sysfs", or the process that requested it).
type GPIOLineProbe struct {
	Offset   int      `json:"offset"`
	Name     string   `json:"name,omitempty"`
	Used     bool     `json:"used"`
	Consumer string   `json:"consumer,omitempty"`
	Flags    []string `json:"flags"`
}

// PPSProbe is a PPS device with its caps: which edges it can capture, and
// the mode in force (which it does capture now).
type PPSProbe struct {
	DeviceProbe
	AssertCapture bool     `json:"assert_capture"`
	ClearCapture  bool     `json:"clear_capture"`
	Caps          []string `json:"caps,omitempty"`
	Mode          []string `json:"mode,omitempty"`
	Error         string   `json:"error,omitempty"`
}

// SocketProbe says whether a daemon's control socket is there and answers.
type SocketProbe struct {
	Daemon    string `json:"daemon"`
	Address   string `json:"address"`
	Present   bool   `json:"present"`
	Reachable bool   `json:"reachable"`
	Detail    string `json:"detail,omitempty"`
}

// Paths are the roots the probe looks under: sysfs, /dev and /run (the
// agent's paths section), so that tests run on fixture trees.
type Paths struct {
	Sys, Dev, Run string
}

// Influx is the InfluxDB the agent is configured to write to (its influx
// section): where, which bucket, and the token.
type Influx struct {
	URL, Org, Bucket string
	// TokenFile or else TokenEnv is where the token comes from, named when
	// InfluxDB refuses it.
	TokenFile, TokenEnv string
	// Token reads the token; nil sends none.
	Token func() (string, error)
}

// Env is what the probe reads; tests substitute fixture trees and fakes.
type Env struct {
	Paths        Paths
	Timestamping func(iface string) (phc.Timestamping, error)
	ReadPHC      func(path string) PHCProbe      // opens and measures one PHC
	GPIOChip     func(path string) GPIOChipProbe // opens a GPIO chip and lists its lines
	PPS          func(path string) PPSProbe      // opens a PPS device and reads its caps
	Timex        func() (timebase.KernelState, error)
	Clocks       bool         // read the real system clocks
	ChronyUDP    string       // chronyd's command port, "" to skip
	Influx       *Influx      // nil: InfluxDB is not probed
	HTTP         *http.Client // for Influx; nil: a default client
}

// DefaultEnv probes the real machine under paths.
func DefaultEnv(p Paths) Env {
	return Env{Paths: p, Timestamping: phc.InterfaceTimestamping, ReadPHC: readPHC, GPIOChip: readGPIOChip, PPS: readPPS, Timex: timebase.ReadKernelState, Clocks: true, ChronyUDP: "127.0.0.1:323"}
}

// Probe inventories the machine.
func Probe(ctx context.Context, env Env) Inventory {
	inv := Inventory{GOOS: runtime.GOOS, GOARCH: runtime.GOARCH}
	inv.Host, _ = os.Hostname()
	if env.Clocks {
		inv.Clocks = probeClocks()
	}
	if env.Timex != nil {
		if k, err := env.Timex(); err != nil {
			inv.KernelErr = err.Error()
		} else {
			inv.Kernel = &KernelProbe{State: k.StateString(), Status: k.StatusString(), Synced: k.Synced(), OffsetNS: k.OffsetNS,
				FreqPPB: k.FreqPPB, MaxErrorNS: k.MaxErrorNS, EstErrorNS: k.EstErrorNS, TAIOffsetS: k.TAIOffsetS}
		}
	}
	p := env.Paths
	infos, err := phc.Discover(phc.Paths{Sys: p.Sys, Dev: p.Dev})
	if err != nil {
		inv.Notes = append(inv.Notes, "phc discovery: "+err.Error())
	}
	for _, info := range infos {
		pp := PHCProbe{Info: info}
		if env.ReadPHC != nil {
			r := env.ReadPHC(info.Device)
			r.Info = info
			pp = r
		}
		inv.PHCs = append(inv.PHCs, pp)
	}
	inv.Interfaces = probeInterfaces(p.Sys, env.Timestamping)
	inv.GPIOChips = glob(filepath.Join(p.Dev, "gpiochip*"))
	for _, d := range inv.GPIOChips {
		cp := GPIOChipProbe{Path: d}
		if env.GPIOChip != nil {
			cp = env.GPIOChip(d)
			cp.Path = d
		}
		inv.GPIO = append(inv.GPIO, cp)
	}
	for _, d := range glob(filepath.Join(p.Dev, "pps*")) {
		var pp PPSProbe
		if env.PPS != nil {
			pp = env.PPS(d)
		}
		pp.DeviceProbe = DeviceProbe{Path: d, Name: readTrim(filepath.Join(p.Sys, "class", "pps", filepath.Base(d), "name"))}
		inv.PPS = append(inv.PPS, pp)
	}
	for _, d := range glob(filepath.Join(p.Sys, "bus", "iio", "devices", "iio:device*")) {
		inv.IIO = append(inv.IIO, DeviceProbe{Path: d, Name: readTrim(filepath.Join(d, "name"))})
	}
	for _, d := range glob(filepath.Join(p.Sys, "class", "hwmon", "hwmon*")) {
		inv.Hwmon = append(inv.Hwmon, DeviceProbe{Path: d, Name: readTrim(filepath.Join(d, "name"))})
	}
	for _, d := range glob(filepath.Join(p.Sys, "class", "thermal", "thermal_zone*")) {
		inv.Thermal = append(inv.Thermal, DeviceProbe{Path: d, Name: readTrim(filepath.Join(d, "type"))})
	}
	inv.Daemons = []SocketProbe{probeUnixgram(ctx, "chronyd", filepath.Join(p.Run, "chrony", "chronyd.sock"))}
	if env.ChronyUDP != "" {
		inv.Daemons = append(inv.Daemons, probeUDP(ctx, "chronyd", env.ChronyUDP))
	}
	inv.Daemons = append(inv.Daemons, probeUnixgram(ctx, "ptp4l", filepath.Join(p.Run, "ptp4l")))
	if env.Influx != nil {
		client := env.HTTP
		if client == nil {
			client = &http.Client{}
		}
		ip := probeInflux(ctx, client, *env.Influx)
		inv.Influx = &ip
	}
	return inv
}

func probeClocks() []ClockProbe {
	var out []ClockProbe
	for _, c := range timebase.SystemClocks() {
		cp := ClockProbe{Name: c.Domain().String()}
		res, err := c.Resolution()
		if err == nil {
			var a, b, now int64
			a, err = timebase.MonotonicRaw.Now()
			if err == nil {
				now, err = c.Now()
			}
			if err == nil {
				b, err = timebase.MonotonicRaw.Now()
			}
			cp.ResolutionNS, cp.NowNS, cp.OffsetNS = res, now, now-(a+(b-a)/2)
		}
		if err != nil {
			cp.Error = err.Error()
		}
		out = append(out, cp)
	}
	return out
}

func probeInterfaces(sys string, ts func(string) (phc.Timestamping, error)) []IfaceProbe {
	var out []IfaceProbe
	for _, d := range glob(filepath.Join(sys, "class", "net", "*")) {
		ip := IfaceProbe{Name: filepath.Base(d), PHCIndex: -1}
		if ts != nil {
			t, err := ts(ip.Name)
			ip.PHCIndex, ip.Capabilities = t.PHCIndex, t.Capabilities()
			ip.RxFilters, ip.TxTypes = bitNames(t.RxFilters, rxFilterNames), bitNames(t.TxTypes, txTypeNames)
			ip.PTPHardware, ip.NTPHardware, ip.TxHardware = hardwareVerdict(t)
			if err != nil {
				ip.Error = err.Error()
			}
		}
		out = append(out, ip)
	}
	return out
}

func probeUnixgram(ctx context.Context, daemon, path string) SocketProbe {
	sp := SocketProbe{Daemon: daemon, Address: path}
	fi, err := os.Stat(path)
	switch {
	case err != nil:
		sp.Detail = "absent: " + errText(err)
		return sp
	case fi.Mode()&fs.ModeSocket == 0:
		sp.Detail = "exists but is not a socket"
		return sp
	}
	sp.Present = true
	d := net.Dialer{Timeout: time.Second}
	c, err := d.DialContext(ctx, "unixgram", path)
	if err != nil {
		sp.Detail = "does not answer: " + errText(err)
		return sp
	}
	c.Close()
	sp.Reachable = true
	return sp
}

// probeUDP checks a loopback UDP port by sending nothing and asking the kernel
// whether anything listens (a connected UDP socket reports ECONNREFUSED on read
// after an ICMP port unreachable).
func probeUDP(ctx context.Context, daemon, addr string) SocketProbe {
	sp := SocketProbe{Daemon: daemon, Address: "udp://" + addr}
	d := net.Dialer{Timeout: time.Second}
	c, err := d.DialContext(ctx, "udp", addr)
	if err != nil {
		sp.Detail = "absent: " + errText(err)
		return sp
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(200 * time.Millisecond))
	c.Write([]byte{0}) // a one-byte datagram: chronyd drops it as malformed
	_, err = c.Read(make([]byte, 1))
	if err != nil && strings.Contains(err.Error(), "refused") {
		sp.Detail = "absent: nothing listens"
		return sp
	}
	sp.Present, sp.Reachable = true, true
	return sp
}

func glob(pattern string) []string {
	m, _ := filepath.Glob(pattern)
	sort.Strings(m)
	return m
}

func readTrim(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// errText drops the path from a path error: the probe prints the path already.
func errText(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}

// rxFilterNames are the HWTSTAMP_FILTER_* values (linux/net_tstamp.h) as
// ethtool -T prints them; ethtool reports them as a bit mask of 1<<value.
var rxFilterNames = []string{
	"none", "all", "some",
	"ptpv1-l4-event", "ptpv1-l4-sync", "ptpv1-l4-delay-req",
	"ptpv2-l4-event", "ptpv2-l4-sync", "ptpv2-l4-delay-req",
	"ptpv2-l2-event", "ptpv2-l2-sync", "ptpv2-l2-delay-req",
	"ptpv2-event", "ptpv2-sync", "ptpv2-delay-req",
	"ntp-all",
}

// txTypeNames are the HWTSTAMP_TX_* values.
var txTypeNames = []string{"off", "on", "onestep-sync", "onestep-p2p"}

const (
	sofTxHardware  = 1 << 0 // SOF_TIMESTAMPING_TX_HARDWARE
	sofRxHardware  = 1 << 2 // SOF_TIMESTAMPING_RX_HARDWARE
	sofRawHardware = 1 << 6 // SOF_TIMESTAMPING_RAW_HARDWARE
	filterAll      = 1      // HWTSTAMP_FILTER_ALL
	filterNTPAll   = 15     // HWTSTAMP_FILTER_NTP_ALL
	txOn           = 1      // HWTSTAMP_TX_ON
)

func bitNames(mask uint32, names []string) []string {
	out := []string{}
	for i := range 32 {
		if mask&(1<<i) == 0 {
			continue
		}
		if i < len(names) {
			out = append(out, names[i])
		} else {
			out = append(out, fmt.Sprintf("bit%d", i))
		}
	}
	return out
}

// hardwareVerdict says which packets the NIC can stamp in hardware: PTP
// event messages on receive (any filter but none), NTP packets on receive
// (only "all" or "ntp-all": a PTP-only filter such as the CPSW's ptpv2-event
// leaves NTP replies software-stamped), and transmitted packets.
func hardwareVerdict(t phc.Timestamping) (ptpRX, ntpRX, tx bool) {
	if t.PHCIndex < 0 || t.SOFlags&sofRawHardware == 0 {
		return false, false, false
	}
	if t.SOFlags&sofRxHardware != 0 {
		ptpRX = t.RxFilters&^1 != 0 // any filter other than none
		ntpRX = t.RxFilters&(1<<filterAll|1<<filterNTPAll) != 0
	}
	tx = t.SOFlags&sofTxHardware != 0 && t.TxTypes&(1<<txOn) != 0
	return ptpRX, ntpRX, tx
}

// probeInflux asks the configured InfluxDB whether it answers (GET /ping) and
// whether it takes the token for the bucket (POST /api/v2/write with an empty
// body: 204 means yes), each request bounded to 2 s, and says what to fix.
func probeInflux(ctx context.Context, client *http.Client, c Influx) InfluxProbe {
	ip := InfluxProbe{URL: c.URL, Bucket: c.Bucket}
	base := strings.TrimRight(c.URL, "/")
	status, _, err := influxRequest(ctx, client, http.MethodGet, base+"/ping", "")
	if err != nil {
		ip.Detail = "unreachable: " + err.Error() + ": check influx.url and that InfluxDB runs"
		return ip
	}
	ip.Reachable, ip.PingStatus = true, status
	var token string
	if c.Token != nil {
		if token, err = c.Token(); err != nil {
			ip.Detail = err.Error()
			return ip
		}
	}
	q := url.Values{"bucket": {c.Bucket}, "org": {c.Org}, "precision": {"ns"}}
	status, body, err := influxRequest(ctx, client, http.MethodPost, base+"/api/v2/write?"+q.Encode(), token)
	if err != nil {
		ip.Detail = "write: " + err.Error()
		return ip
	}
	ip.WriteStatus = status
	tokenKey := "influx.token_file"
	if c.TokenFile == "" {
		tokenKey = "influx.token_env ($" + c.TokenEnv + ")"
	}
	switch {
	case status >= 200 && status < 300:
		ip.WriteOK = true
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		ip.Detail = "token refused: check " + tokenKey
	case status == http.StatusNotFound:
		ip.Detail = fmt.Sprintf("bucket/database not found: create %q or fix influx.bucket and influx.org", c.Bucket)
	default:
		ip.Detail = fmt.Sprintf("write answered %d", status)
	}
	if body != "" && !ip.WriteOK {
		ip.Detail += " (InfluxDB: " + body + ")"
	}
	return ip
}

// influxRequest makes one request with a 2 s limit and returns the status and
// the first line of the body (at most 200 bytes).
func influxRequest(ctx context.Context, client *http.Client, method, u, token string) (int, string, error) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, u, http.NoBody)
	if err != nil {
		return 0, "", err
	}
	if token != "" {
		req.Header.Set("Authorization", "Token "+token)
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 200))
	line, _, _ := strings.Cut(strings.TrimSpace(string(b)), "\n")
	return resp.StatusCode, line, nil
}

// fmtOffset prints a signed time difference: +1.234 µs, -12.5 ms, -37.000000123 s.
func fmtOffset(ns int64) string {
	switch {
	case ns > 0:
		return "+" + fmtNS(uint64(ns))
	case ns < 0:
		return "-" + fmtNS(-uint64(ns))
	}
	return "0 ns"
}

// fmtDuration prints a length of time: 850 ns, 1.52 µs.
func fmtDuration(ns int64) string {
	if ns < 0 {
		return fmtOffset(ns)
	}
	return fmtNS(uint64(ns))
}

// fmtNS picks the unit: ns, µs and ms to three decimals, seconds exact, and
// from a minute on [N d ]HH:MM:SS.fffffffff.
func fmtNS(u uint64) string {
	switch {
	case u < 1e3:
		return fmt.Sprintf("%d ns", u)
	case u < 1e6:
		return decimals(u, 3) + " µs"
	case (u+500)/1e3 < 1e6:
		return decimals((u+500)/1e3, 3) + " ms"
	case u < 60e9:
		return decimals(u, 9) + " s"
	}
	const day, hour, minute = 86400e9, 3600e9, 60e9
	sec := decimals(u%minute, 9)
	if u%minute < 10e9 {
		sec = "0" + sec
	}
	s := fmt.Sprintf("%02d:%02d:%s", u%day/hour, u%hour/minute, sec)
	if u >= day {
		s = fmt.Sprintf("%d d %s", u/day, s)
	}
	return s
}

// decimals prints q / 10^digits with the trailing zeros of the fraction dropped.
func decimals(q uint64, digits int) string {
	p := uint64(1)
	for range digits {
		p *= 10
	}
	s := fmt.Sprintf("%d.%0*d", q/p, digits, q%p)
	return strings.TrimRight(strings.TrimRight(s, "0"), ".")
}

// fmtDate prints an absolute time counted from the Unix epoch in the named
// timescale (UTC for REALTIME, TAI for CLOCK_TAI).
func fmtDate(ns int64, scale string) string {
	return time.Unix(0, ns).UTC().Format("2006-01-02 15:04:05.000000000") + " " + scale
}

// fmtClockNow prints a clock's reading as a date for the epoch clocks and as
// the time since boot for the monotonic family.
func fmtClockNow(name string, ns int64) string {
	switch name {
	case "realtime":
		return fmtDate(ns, "UTC")
	case "tai":
		return fmtDate(ns, "TAI")
	}
	return fmtDuration(ns) + " since boot"
}

// WriteText prints the inventory for a person: offsets signed with a unit,
// absolute times as dates. --json keeps the raw int64 ns.
func (inv *Inventory) WriteText(w io.Writer) {
	pf := func(format string, a ...any) { fmt.Fprintf(w, format, a...) }
	pf("monagent probe on %s (%s/%s)\n\n", inv.Host, inv.GOOS, inv.GOARCH)
	pf("System clocks:\n")
	for _, c := range inv.Clocks {
		if c.Error != "" {
			pf("  %-14s error: %s\n", c.Name, c.Error)
			continue
		}
		pf("  %-14s now %s\n  %14s resolution %s, offset from monotonic_raw %s\n", c.Name, fmtClockNow(c.Name, c.NowNS), "", fmtDuration(c.ResolutionNS), fmtOffset(c.OffsetNS))
	}
	pf("\nKernel clock discipline (adjtimex):\n")
	if k := inv.Kernel; k != nil {
		pf("  state %s, status %s, synced %v\n  offset %s, frequency %+d ppb, maxerror %s, esterror %s, TAI-UTC %d s\n",
			k.State, orNone(k.Status), k.Synced, fmtOffset(k.OffsetNS), k.FreqPPB, fmtDuration(k.MaxErrorNS), fmtDuration(k.EstErrorNS), k.TAIOffsetS)
		if k.TAIOffsetS == 0 {
			pf("  TAI-UTC not set (chronyd leapsectz or ptp4l/phc2sys set it): CLOCK_TAI reads UTC\n")
		}
	} else {
		pf("  unavailable: %s\n", inv.KernelErr)
	}
	pf("\nPTP hardware clocks:\n")
	if len(inv.PHCs) == 0 {
		pf("  absent: no /sys/class/ptp entries (no PHC driver loaded)\n")
	}
	for _, p := range inv.PHCs {
		pf("  %s  %q  interfaces %s  max adj %d ppb, extts %d, perout %d, pins %d, pps %v\n",
			p.Device, p.Name, orNone(strings.Join(p.Interfaces, ",")), p.MaxAdjPPB, p.ExtTS, p.PerOut, p.Pins, p.PPS)
		if p.Caps != nil {
			pf("    cross-timestamping %v, adjust phase %v\n", p.Caps.CrossTimestamping, p.Caps.AdjustPhase)
		}
		for _, pin := range p.PinFuncs {
			pf("    pin %d %q: %s channel %d\n", pin.Index, pin.Name, pin.Func, pin.Channel)
		}
		if len(p.PinFuncs) == 0 {
			pf("    pins: absent: %s\n", pinsAbsent(p))
		}
		if p.Error != "" {
			pf("    error: %s\n", p.Error)
		} else if p.Method != "" {
			pf("    trial reading (%s, read delay %s): PHC %s, realtime %s\n", p.Method, fmtDuration(p.DelayNS), fmtDate(p.PHCNS, "(PHC timescale)"), fmtDate(p.RealtimeNS, "UTC"))
			pf("    PHC - realtime %s\n", fmtOffset(-p.OffsetNS))
		}
		for _, r := range p.Refusals {
			pf("    refused: %s\n", r)
		}
	}
	pf("\nNetwork interfaces (timestamping):\n")
	for _, i := range inv.Interfaces {
		phcText := "no PHC"
		if i.PHCIndex >= 0 {
			phcText = fmt.Sprintf("PHC /dev/ptp%d", i.PHCIndex)
		}
		pf("  %-10s %s, %s", i.Name, phcText, orNone(strings.Join(i.Capabilities, " ")))
		if i.Error != "" {
			pf(" (%s)", i.Error)
		}
		pf("\n  %10s hardware timestamps: ", "")
		if !i.PTPHardware && !i.NTPHardware && !i.TxHardware {
			pf("none, software only\n")
			continue
		}
		pf("PTP %s, NTP %s (rx filters: %s; tx: %s)\n", yesNo(i.PTPHardware, i.TxHardware), yesNo(i.NTPHardware, i.TxHardware),
			orNone(strings.Join(slices.DeleteFunc(slices.Clone(i.RxFilters), func(f string) bool { return f == "none" }), " ")),
			orNone(strings.Join(i.TxTypes, " ")))
	}
	list := func(title, absent string, ds []DeviceProbe) {
		pf("\n%s:\n", title)
		if len(ds) == 0 {
			pf("  absent: %s\n", absent)
		}
		for _, d := range ds {
			pf("  %s %s\n", d.Path, d.Name)
		}
	}
	pf("\nGPIO chips:\n")
	if len(inv.GPIOChips) == 0 {
		pf("  absent: no /dev/gpiochip*\n")
	}
	for i, g := range inv.GPIOChips {
		if i >= len(inv.GPIO) {
			pf("  %s\n", g)
			continue
		}
		inv.GPIO[i].writeText(pf)
	}
	pf("\nPPS sources:\n")
	if len(inv.PPS) == 0 {
		pf("  absent: no /dev/pps*\n")
	}
	for _, d := range inv.PPS {
		pf("  %s %s", d.Path, orNone(d.Name))
		switch {
		case d.Error != "":
			pf(": %s\n", d.Error)
		case d.Caps == nil:
			pf("\n")
		default:
			pf(": assert capture %s, clear capture %s\n    caps %s; mode %s\n", canDo(d.AssertCapture, d.Mode, "capture_assert"),
				canDo(d.ClearCapture, d.Mode, "capture_clear"), strings.Join(d.Caps, " "), orNone(strings.Join(d.Mode, " ")))
		}
	}
	list("IIO devices", "no /sys/bus/iio/devices/iio:device*", inv.IIO)
	list("hwmon chips", "no /sys/class/hwmon/hwmon*", inv.Hwmon)
	list("Thermal zones", "no /sys/class/thermal/thermal_zone*", inv.Thermal)
	pf("\nTime daemons:\n")
	for _, d := range inv.Daemons {
		state := "reachable"
		if !d.Reachable {
			state = "not reachable"
		}
		pf("  %-8s %-32s %s", d.Daemon, d.Address, state)
		if d.Detail != "" {
			pf(" (%s)", d.Detail)
		}
		pf("\n")
	}
	if ip := inv.Influx; ip != nil {
		pf("\nInfluxDB %s, bucket %q:\n", ip.URL, ip.Bucket)
		switch {
		case ip.WriteOK:
			pf("  reachable, token accepted for the bucket\n")
		case ip.Reachable:
			pf("  reachable, but %s\n", ip.Detail)
		default:
			pf("  %s\n", ip.Detail)
		}
	}
	for _, n := range inv.Notes {
		pf("\nnote: %s\n", n)
	}
}

// ppsProbe lists a PPS device's caps and mode.
func ppsProbe(in gpio.PPSInfo) PPSProbe {
	return PPSProbe{AssertCapture: in.Caps&gpio.PPSCaptureAssert != 0, ClearCapture: in.Caps&gpio.PPSCaptureClear != 0,
		Caps: in.Caps.Names(), Mode: in.Mode.Names()}
}

// pinsAbsent says why a PHC lists no pins.
func pinsAbsent(p PHCProbe) string {
	switch {
	case p.PinsError != "":
		return p.PinsError
	case p.Pins == 0:
		return "the PHC has no programmable pins (n_programmable_pins 0)"
	case p.Caps == nil:
		return "not read: the PHC did not open"
	}
	return "the PHC listed none"
}

// canDo says whether a PPS device can capture an edge, and whether its mode
// captures it now.
func canDo(can bool, mode []string, bit string) string {
	switch {
	case !can:
		return "no"
	case slices.Contains(mode, bit):
		return "yes"
	}
	return "possible, not enabled (PPS_SETPARAMS)"
}

func (c *GPIOChipProbe) writeText(pf func(string, ...any)) {
	if c.Error != "" && c.Name == "" {
		pf("  %s  error: %s\n", c.Path, c.Error)
		return
	}
	pf("  %s  %s %q, %d lines\n", c.Path, c.Name, c.Label, c.Lines)
	if c.Error != "" {
		defer pf("    error: %s\n", c.Error)
	}
	for _, l := range c.Line {
		name := l.Name
		if name == "" {
			name = "unnamed"
		}
		state := "unused"
		switch {
		case l.Used && l.Consumer == "":
			state = "used (no consumer name)"
		case l.Used:
			state = fmt.Sprintf("used by %q", l.Consumer)
		}
		pf("    line %3d  %-12s %-24s %s\n", l.Offset, name, state, strings.Join(l.Flags, " "))
	}
}

// yesNo is a protocol's hardware verdict: receive stamps, and whether the
// NIC stamps what is sent too.
func yesNo(rx, tx bool) string {
	switch {
	case rx && tx:
		return "yes"
	case rx:
		return "rx only"
	}
	return "no"
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}
