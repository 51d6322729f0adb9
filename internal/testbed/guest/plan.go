package guest

import (
	"encoding/json"
	"fmt"
	"os"
	"time"
)

// Marker starts every line the guest's init writes for the host.
const Marker = "##monagent-guest "

// PlanPath is where the init finds its plan inside the initramfs.
const PlanPath = "/etc/monagent-guest.json"

// Plan is what the guest's init does, in order: load modules, mount
// configfs, bring interfaces up, then run each test binary and report its
// exit status.
type Plan struct {
	Modules []string `json:"modules"` // .ko paths in the initramfs, loaded in this order
	// Params are a module's parameters ("chip_addr=0x48"), by its .ko path.
	Params     map[string]string `json:"params,omitempty"`
	ConfigFS   bool              `json:"configfs"`   // mount configfs on /sys/kernel/config
	Interfaces []string          `json:"interfaces"` // brought up (lo always is)
	Env        []string          `json:"env"`        // added to every run's environment
	Runs       []Run             `json:"runs"`
}

// Run is one test binary, run in Dir (its package's directory, with its
// testdata) with Args.
type Run struct {
	Name    string        `json:"name"`
	Dir     string        `json:"dir"`
	Bin     string        `json:"bin"`
	Args    []string      `json:"args"`
	Timeout time.Duration `json:"timeout"` // killed after this; 0: no limit but the boot's
}

// Encode is the plan as the init reads it.
func (p *Plan) Encode() ([]byte, error) { return json.MarshalIndent(p, "", "  ") }

// ReadPlan reads the plan at PlanPath, as the init does.
func ReadPlan() (*Plan, error) {
	b, err := os.ReadFile(PlanPath)
	if err != nil {
		return nil, err
	}
	return DecodePlan(b)
}

// DecodePlan parses a plan.
func DecodePlan(b []byte) (*Plan, error) {
	var p Plan
	if err := json.Unmarshal(b, &p); err != nil {
		return nil, fmt.Errorf("guest plan: %w", err)
	}
	for i, r := range p.Runs {
		if r.Name == "" || r.Bin == "" {
			return nil, fmt.Errorf("guest plan: run %d needs a name and a binary", i)
		}
	}
	return &p, nil
}
