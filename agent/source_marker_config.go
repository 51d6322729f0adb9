package agent

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/monagent/monagent/conf"
	"github.com/monagent/monagent/marker"
)

// MarkerConfig is the application-marker source (source_marker_linux.go): a
// Unix datagram socket to which local programs send one-line markers
// (package marker), each shipped as a marker record at its own time.
type MarkerConfig struct {
	Enabled bool `yaml:"enabled"`
	// Socket is the socket's path; a relative one is under paths.runtime_dir.
	Socket string `yaml:"socket"`
	// Mode is the socket file's permissions, octal ("0660"): who may write
	// to it may send markers.
	Mode     string        `yaml:"mode"`
	Ring     int           `yaml:"ring"`     // markers between the reader and the shipper, a power of two
	Interval time.Duration `yaml:"interval"` // how often the markers are shipped
	// MaxSeries bounds the distinct name and tag sets shipped; markers of
	// further ones are dropped and counted (series_dropped).
	MaxSeries int `yaml:"max_series"`
}

func (m *MarkerConfig) defaults() {
	*m = MarkerConfig{Socket: "marker.sock", Mode: "0660", Ring: 1024, Interval: time.Second, MaxSeries: 1000}
}

// path is the socket's path.
func (m *MarkerConfig) path(paths PathsConfig) string {
	if filepath.IsAbs(m.Socket) {
		return m.Socket
	}
	return filepath.Join(paths.Runtime(), m.Socket)
}

// fileMode is Mode as permission bits.
func (m *MarkerConfig) fileMode() (os.FileMode, error) {
	v, err := strconv.ParseUint(m.Mode, 8, 32)
	if err != nil || v > 0o777 {
		return 0, fmt.Errorf("%q is not an octal file mode such as 0660", m.Mode)
	}
	return os.FileMode(v), nil
}

func (m *MarkerConfig) check(ps *problems) {
	if !m.Enabled {
		return
	}
	ps.Interval("marker.interval", m.Interval)
	switch {
	case m.Socket == "":
		ps.Add("marker.socket", "must be set (a path, or a name under paths.runtime_dir)")
	case len(m.Socket) > marker.MaxPathLen:
		ps.Add("marker.socket", "%d bytes, at most %d (a Unix socket's path is short)", len(m.Socket), marker.MaxPathLen)
	}
	if mode, err := m.fileMode(); err != nil {
		ps.Add("marker.mode", "%v", err)
	} else if mode&0o200 == 0 {
		ps.Add("marker.mode", "%s: the owner (the agent) cannot write it: no one could send markers", m.Mode)
	}
	checkRing(ps, "marker.ring", m.Ring)
	conf.AtLeast(ps, "marker.max_series", m.MaxSeries, 1, "")
}

// board checks that the socket's directory exists and the whole path fits.
func (m *MarkerConfig) board(paths PathsConfig, ps *problems) {
	if !m.Enabled || m.Socket == "" {
		return
	}
	p := m.path(paths)
	if len(p) > marker.MaxPathLen {
		ps.Add("marker.socket", "%s: %d bytes, at most %d (a Unix socket's path is short)", p, len(p), marker.MaxPathLen)
		return
	}
	ps.Exists("marker.socket", "no directory for the socket", filepath.Dir(p))
}
