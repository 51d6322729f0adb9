package main

import (
	"os/exec"
	"sort"
	"strings"
	"testing"
)

// allowedModules are the modules the monagent binary may link. A new one must be
// added here on purpose: every module costs flash and RAM on a 512 MB board.
var allowedModules = map[string]bool{
	"github.com/monagent/monagent":           true,
	"golang.org/x/sys":                       true,
	"go.yaml.in/yaml/v3":                     true,
	"github.com/influxdata/line-protocol/v2": true,
	// influxdb-client-go/v2 (WriteAPIBlocking under our own spool) and what it
	// brings: its generated API client and the old line-protocol package.
	"github.com/influxdata/influxdb-client-go/v2": true,
	"github.com/influxdata/line-protocol":         true,
	"github.com/oapi-codegen/runtime":             true,
	"github.com/apapsch/go-jsonmerge/v2":          true,
	"github.com/google/uuid":                      true,
	"golang.org/x/net":                            true,
	// facebook/time: ntp/protocol (NTP packets) and ntp/chrony (chronyd's
	// command protocol); never its timestamp or sptp packages, which do not
	// build for 32-bit ARM.
	"github.com/facebook/time": true,
	// PTP over IEEE 802.3: raw AF_PACKET sockets and Ethernet framing, and
	// what packet brings (its socket layer; x/sync's errgroup).
	"github.com/mdlayher/packet":   true,
	"github.com/mdlayher/ethernet": true,
	"github.com/mdlayher/socket":   true,
	"golang.org/x/sync":            true,
	// /metrics (issue 23): client_golang, the one Prometheus client every
	// exporter in the field uses, and what it brings (its data model in
	// protobuf, the text formats, content negotiation, /proc for the
	// process metrics, its hashing and summaries).
	"github.com/prometheus/client_golang": true,
	"github.com/prometheus/client_model":  true,
	"github.com/prometheus/common":        true,
	"github.com/prometheus/procfs":        true,
	"github.com/beorn7/perks":             true,
	"github.com/cespare/xxhash/v2":        true,
	"github.com/munnerz/goautoneg":        true,
	"google.golang.org/protobuf":          true,
}

func TestBinaryDependencies(t *testing.T) {
	cmd := exec.Command("go", "list", "-deps", "-f", "{{with .Module}}{{.Path}}{{end}}", ".")
	cmd.Env = append(cmd.Environ(), "GOOS=linux", "GOARCH=arm", "GOARM=7", "CGO_ENABLED=0")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	seen := map[string]bool{}
	for _, m := range strings.Fields(string(out)) {
		seen[m] = true
	}
	var unexpected []string
	for m := range seen {
		if !allowedModules[m] {
			unexpected = append(unexpected, m)
		}
	}
	sort.Strings(unexpected)
	if len(unexpected) > 0 {
		t.Fatalf("the linux/arm binary links modules not in allowedModules: %v", unexpected)
	}
}

// TestLayering checks the import rules of the architecture notes: the packages
// that measure (and the record they emit) never import the sinks that store and
// ship their records, nor the agent that wires them.
func TestLayering(t *testing.T) {
	const mod = "github.com/monagent/monagent/"
	lower := []string{"timebase", "ring", "sockts", "phc", "ntp", "ptp", "reject", "gpio", "sensors", "record", "hca", "marker", "inventory", "collect", "conf", "judge", "vote", "status", "notify", "faultlog"}
	forbidden := []string{mod + "sink", mod + "agent"}
	for _, p := range lower {
		cmd := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}}", mod+p)
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("go list %s: %v", p, err)
		}
		for _, dep := range strings.Fields(string(out)) {
			for _, f := range forbidden {
				if dep == f || strings.HasPrefix(dep, f+"/") {
					t.Errorf("%s imports %s", p, dep)
				}
			}
		}
	}
}

// forbiddenPackages are packages the ARM binary must not link, although
// their modules are allowed, for what they cost (docs/performance.md,
// issue 37).
var forbiddenPackages = map[string]string{
	// text/template's MethodByName with a name known only at run time makes
	// the linker keep every exported method of every type: 3.5 MB.
	"text/template": "its reflection keeps every exported method in the binary",
	"html/template": "it brings text/template",
	// The client (influxdb2.NewClient) holds every API of InfluxDB 2 and
	// their generated types (0.06 MB once the linker prunes methods again);
	// the shipper needs WriteAPIBlocking alone.
	"github.com/influxdata/influxdb-client-go/v2": "the whole client; use api.NewWriteAPIBlocking",
}

func TestBinaryPackages(t *testing.T) {
	cmd := exec.Command("go", "list", "-deps", ".")
	cmd.Env = append(cmd.Environ(), "GOOS=linux", "GOARCH=arm", "GOARM=7", "CGO_ENABLED=0")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, p := range strings.Fields(string(out)) {
		if why, ok := forbiddenPackages[p]; ok {
			t.Errorf("the linux/arm binary links %s: %s", p, why)
		}
	}
}
