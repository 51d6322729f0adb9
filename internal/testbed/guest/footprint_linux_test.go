package guest

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestGuestARMFootprint measures monagent's footprint on the 32-bit ARM
// kernel (issue 25): the real binary, cross-built here (GOARCH=arm GOARM=7,
// CGO_ENABLED=0) and shipped in the initramfs, runs `monagent run` while a
// gpio-sim line is pulled for a minute as fast as the guest takes, up to
// 10 kHz, and an iio_simple_dummy ADC is scanned at 1 kHz by
// iio-trig-hrtimer (both cross-built out of tree, Footprint);
// cmd/monagent's TestFootprintOnGuestKernel drives it and logs RSS,
// goroutines, CPU and the accounting of every edge and scan. One vCPU, as
// the BeagleBone has. With MONAGENT_FOOTPRINT_PPROF=20s the agent's CPU
// profile over 20 s of the edges is printed on the console, base64 on
// lines starting "##pprof " (Go's profiles carry their symbols: decode
// the lines and read them with `go tool pprof -top`; docs/performance.md).
func TestGuestARMFootprint(t *testing.T) { footprintGuest(t, ARM, "") }

// TestGuestAMD64Footprint is the same run on the amd64 kernel, for the
// figures beside ARM's: one CPU (maxcpus=1) as there.
func TestGuestAMD64Footprint(t *testing.T) { footprintGuest(t, AMD64, "maxcpus=1") }

func footprintGuest(t *testing.T, m Machine, cmdline string) {
	cache, root := requireRig(t, m)
	ctx, cancel := context.WithTimeout(context.Background(), 12*time.Minute)
	defer cancel()
	start := time.Now()
	dtb, kos, err := Footprint(ctx, cache, m)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("footprint modules for %s: %d (%v)", m.Arch, len(kos), time.Since(start).Round(time.Second))
	const guestBin = "/bin/monagent"
	spec := Spec{
		Machine: m, Cache: cache, ModuleRoot: root,
		Packages: []string{"cmd/monagent"},
		Run:      map[string]string{"cmd/monagent": "^TestFootprintOnGuestKernel$"},
		TestArgs: append(guestTestArgs(), "-test.timeout=5m"), // the last -test.timeout counts
		Modules:  IIOKernelDeps,
		ExtraKOs: kos,
		ConfigFS: true,
		Env:      []string{"MONAGENT_GUEST_FOOTPRINT=60s", "MONAGENT_GUEST_BIN=" + guestBin, "MONAGENT_FOOTPRINT_PPROF=" + os.Getenv("MONAGENT_FOOTPRINT_PPROF")},
		DTB:      dtb,
		Timeout:  5 * time.Minute,
	}
	work := t.TempDir()
	bin := filepath.Join(work, "monagent-"+m.Arch)
	if err := GoBinary(ctx, spec, "cmd/monagent", bin); err != nil {
		t.Fatal(err)
	}
	spec.Files = map[string]string{guestBin: bin}
	if fi, err := os.Stat(bin); err == nil {
		t.Logf("monagent for %s: %.1f MiB", m.Arch, float64(fi.Size())/(1<<20))
	}
	boot, err := Prepare(ctx, spec, work)
	if err != nil {
		t.Fatal(err)
	}
	boot.Out, boot.Timeout, boot.Append = os.Stdout, 8*time.Minute, cmdline
	start = time.Now()
	res, err := boot.Run(ctx)
	t.Logf("%s footprint guest: %v", m.Arch, time.Since(start).Round(time.Second))
	check(t, spec, res, err)
}
