package sensors

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"

	"github.com/monagent/monagent/internal/closing"
)

// FS is where sysfs and the device nodes are: /sys and /dev on a board, a
// fixture tree in tests.
type FS struct {
	Sys string // default /sys
	Dev string // default /dev
}

// NewFS returns an FS with the given roots ("" for the defaults).
func NewFS(sys, dev string) FS {
	if sys == "" {
		sys = "/sys"
	}
	if dev == "" {
		dev = "/dev"
	}
	return FS{Sys: sys, Dev: dev}
}

// Kind is what a sensor measures; each has one unit.
type Kind uint8

// The kinds of sensors and their units.
const (
	KindTemperature Kind = iota + 1 // µ°C
	KindVoltage                     // nV
	KindCurrent                     // nA
	KindPower                       // µW
	KindEnergy                      // µJ
	KindFan                         // rpm
	KindHumidity                    // m%RH
)

var kindNames = [...]string{"", "temperature", "voltage", "current", "power", "energy", "fan", "humidity"}
var kindUnits = [...]string{"", "u°C", "nV", "nA", "uW", "uJ", "rpm", "m%RH"}

func (k Kind) String() string {
	if int(k) < len(kindNames) && k != 0 {
		return kindNames[k]
	}
	return "kind(" + strconv.Itoa(int(k)) + ")"
}

// Unit is the unit of the kind's values.
func (k Kind) Unit() string {
	if int(k) < len(kindUnits) {
		return kindUnits[k]
	}
	return ""
}

// Sensor is one value the kernel exports in a sysfs attribute. Read it with
// Read; Close releases its file. Not safe for concurrent use.
type Sensor struct {
	Source string // hwmon, thermal or iio
	Device string // the chip's, zone's or ADC's name (hwmon "name", thermal "type", IIO "name")
	Node   string // its sysfs node (hwmon3, thermal_zone0, iio:device0): tells apart chips of one name
	Path   string // the attribute read
	Name   string // the channel: temp1, power2, zone type, voltage3
	Label  string // hwmon's label when the driver gives one
	Kind   Kind

	// value = (raw + offset) * scale, in the kind's unit. hwmon and thermal
	// attributes are integers in a fixed unit: scale is a power of ten.
	offset float64
	scale  float64
	exact  int64 // integer multiplier when scale is exact (hwmon, thermal); 0 otherwise

	f    *os.File
	buf  [32]byte
	gone bool // the last Read found the attribute or its device gone
}

// Read reads the sensor's value now.
func (s *Sensor) Read() (int64, error) {
	s.gone = false
	if s.f == nil {
		f, err := os.Open(s.Path)
		if err != nil {
			s.gone = isGone(err)
			return 0, fmt.Errorf("sensors: %w", err)
		}
		s.f = f
	}
	n, err := s.f.ReadAt(s.buf[:], 0)
	if err != nil && !errors.Is(err, io.EOF) {
		// The device went away or refused (a disabled thermal zone): reopen next time.
		s.f.Close()
		s.f = nil
		s.gone = isGone(err)
		return 0, fmt.Errorf("sensors: %w", err) // a *PathError: "read PATH: why"
	}
	raw, err := parseInt(s.buf[:n])
	if err != nil {
		return 0, fmt.Errorf("sensors: %s: %w", s.Path, err)
	}
	if s.exact != 0 {
		return raw * s.exact, nil
	}
	return roundInt((float64(raw) + s.offset) * s.scale), nil
}

// Gone says whether the last Read failed because the sensor is no longer
// there: its attribute file is gone (ENOENT) or its device was removed
// while the file was open (ENODEV), as when a chip is deleted from its bus
// or its driver unloaded. A listing again finds it if it came back, at a
// new path perhaps (hwmon nodes are numbered anew).
func (s *Sensor) Gone() bool { return s.gone }

func isGone(err error) bool { return errors.Is(err, os.ErrNotExist) || errors.Is(err, syscall.ENODEV) }

// Close closes the attribute file.
func (s *Sensor) Close() error { return closing.Clear(&s.f) }

func roundInt(v float64) int64 {
	if v < 0 {
		return int64(v - 0.5)
	}
	return int64(v + 0.5)
}

// errNotInteger is what a sysfs value that is not a decimal integer gives.
var errNotInteger = errors.New("not a decimal integer")

// parseInt parses a sysfs integer ("-12345\n") without allocating.
func parseInt(b []byte) (int64, error) {
	for len(b) > 0 && (b[len(b)-1] == '\n' || b[len(b)-1] == ' ' || b[len(b)-1] == 0) {
		b = b[:len(b)-1]
	}
	neg := false
	if len(b) > 0 && (b[0] == '-' || b[0] == '+') {
		neg = b[0] == '-'
		b = b[1:]
	}
	if len(b) == 0 || len(b) > 19 {
		return 0, fmt.Errorf("%q: %w", b, errNotInteger)
	}
	var v int64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, fmt.Errorf("%q: %w", b, errNotInteger)
		}
		v = v*10 + int64(c-'0')
	}
	if v < 0 {
		return 0, fmt.Errorf("%q: %w", b, errNotInteger) // overflow
	}
	if neg {
		v = -v
	}
	return v, nil
}

// readString reads a short sysfs text attribute, trimmed of white space and
// of the NUL some attributes end with (IIO's current_timestamp_clock gives
// "realtime\n\x00").
func readString(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(strings.TrimRight(string(b), "\x00")), nil
}

// dirsMatching lists the entries of dir whose names start with prefix,
// sorted by their numeric suffix (hwmon2 before hwmon10).
func dirsMatching(dir, prefix string) ([]string, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, nil
		}
		return nil, fmt.Errorf("sensors: %w", err)
	}
	var out []string
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), prefix) {
			out = append(out, e.Name())
		}
	}
	sortNatural(out)
	for i, n := range out {
		out[i] = filepath.Join(dir, n)
	}
	return out, nil
}

// entryNames returns a directory's entry names in natural order, and the set
// of them.
func entryNames(ents []os.DirEntry) ([]string, map[string]bool) {
	names := make([]string, 0, len(ents))
	have := make(map[string]bool, len(ents))
	for _, e := range ents {
		names = append(names, e.Name())
		have[e.Name()] = true
	}
	sortNatural(names)
	return names, have
}

// sortNatural sorts names by their non-digit prefix, then by the number in
// them (temp2 before temp10).
func sortNatural(s []string) {
	key := func(n string) (string, int, string) {
		i := strings.IndexAny(n, "0123456789")
		if i < 0 {
			return n, -1, ""
		}
		j := i
		for j < len(n) && n[j] >= '0' && n[j] <= '9' {
			j++
		}
		v, _ := strconv.Atoi(n[i:j])
		return n[:i], v, n[j:]
	}
	sort.Slice(s, func(a, b int) bool {
		pa, na, ra := key(s[a])
		pb, nb, rb := key(s[b])
		if pa != pb {
			return pa < pb
		}
		if na != nb {
			return na < nb
		}
		return ra < rb
	})
}

// CloseAll closes every sensor.
func CloseAll(ss []*Sensor) error {
	var errs []error
	for _, s := range ss {
		errs = append(errs, s.Close())
	}
	return errors.Join(errs...)
}
