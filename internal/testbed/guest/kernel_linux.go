package guest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// The kernel every guest boots, pinned: one ABI of Debian bookworm's 6.1
// kernels, the same for both architectures and for the gpio-sim build.
const (
	KernelABI     = "6.1.0-50"
	KernelVersion = "6.1.176-1"
)

// Kernel is an unpacked Debian kernel package.
type Kernel struct {
	Arch    string // Go's name: arm or amd64
	Release string // uname -r, e.g. 6.1.0-50-armmp
	Vmlinuz string
	Root    string // where the package is unpacked (lib/modules/<Release> under it)
}

// debArch is Debian's name for a Go architecture, and flavour its kernel's.
func debArch(goarch string) (arch, flavour string, err error) {
	switch goarch {
	case "arm":
		return "armhf", "armmp", nil
	case "amd64":
		return "amd64", "amd64", nil
	}
	return "", "", fmt.Errorf("guest: no kernel for GOARCH %q (arm, amd64)", goarch)
}

// Deb downloads a Debian package (name, architecture, exact version; version ""
// takes the candidate) into dir once, and returns its path. It needs apt's
// index for that architecture (dpkg --add-architecture armhf; apt-get update).
func Deb(ctx context.Context, dir, name, arch, version string) (string, error) {
	file := filepath.Join(dir, fmt.Sprintf("%s_%s_%s.deb", name, strings.ReplaceAll(version, ":", "%3a"), arch))
	if _, err := os.Stat(file); err == nil {
		return file, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("guest: %w", err)
	}
	tmp, err := os.MkdirTemp(dir, ".download-")
	if err != nil {
		return "", fmt.Errorf("guest: %w", err)
	}
	defer os.RemoveAll(tmp)
	spec := name + ":" + arch
	if version != "" {
		spec += "=" + version
	}
	cmd := exec.CommandContext(ctx, "apt-get", "download", "-q", spec)
	cmd.Dir = tmp
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("guest: apt-get download %s: %w\n%s", spec, err, tail(out, 800))
	}
	got, _ := filepath.Glob(filepath.Join(tmp, "*.deb"))
	if len(got) != 1 {
		return "", fmt.Errorf("guest: apt-get download %s left %d .deb files", spec, len(got))
	}
	if err := os.Rename(got[0], file); err != nil {
		return "", fmt.Errorf("guest: %w", err)
	}
	return file, nil
}

// Unpack extracts a .deb into dir once (a stamp file marks it done).
func Unpack(ctx context.Context, deb, dir string) error {
	stamp := filepath.Join(dir, ".unpacked-"+filepath.Base(deb))
	if _, err := os.Stat(stamp); err == nil {
		return nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("guest: %w", err)
	}
	if out, err := exec.CommandContext(ctx, "dpkg-deb", "-x", deb, dir).CombinedOutput(); err != nil {
		return fmt.Errorf("guest: dpkg-deb -x %s: %w\n%s", deb, err, tail(out, 800))
	}
	return os.WriteFile(stamp, nil, 0o644)
}

// FetchKernel downloads and unpacks the pinned kernel for goarch under cache.
func FetchKernel(ctx context.Context, cache, goarch string) (*Kernel, error) {
	arch, flavour, err := debArch(goarch)
	if err != nil {
		return nil, err
	}
	rel := KernelABI + "-" + flavour
	deb, err := Deb(ctx, filepath.Join(cache, "deb"), "linux-image-"+rel, arch, KernelVersion)
	if err != nil {
		return nil, err
	}
	root := filepath.Join(cache, "kernel-"+rel)
	if err := Unpack(ctx, deb, root); err != nil {
		return nil, err
	}
	k := &Kernel{Arch: goarch, Release: rel, Vmlinuz: filepath.Join(root, "boot", "vmlinuz-"+rel), Root: root}
	if _, err := os.Stat(k.Vmlinuz); err != nil {
		return nil, fmt.Errorf("guest: kernel package %s has no vmlinuz: %w", deb, err)
	}
	return k, nil
}

// ModulesDir is lib/modules/<release> of the unpacked kernel.
func (k *Kernel) ModulesDir() string { return filepath.Join(k.Root, "lib", "modules", k.Release) }

// Modules finds the named modules (as modprobe names them: "e1000e",
// "configfs") and returns their files with every dependency first, read from
// each module's .modinfo "depends".
func (k *Kernel) Modules(names ...string) ([]string, error) {
	index := map[string]string{}
	err := filepath.WalkDir(k.ModulesDir(), func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if strings.HasSuffix(p, ".ko") {
			index[modName(filepath.Base(p))] = p
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("guest: modules of %s: %w", k.Release, err)
	}
	var order []string
	seen := map[string]bool{}
	var visit func(name string, from []string) error
	visit = func(name string, from []string) error {
		name = modName(name)
		if seen[name] {
			return nil
		}
		for _, f := range from {
			if f == name {
				return fmt.Errorf("guest: module dependency cycle: %s", strings.Join(append(from, name), " -> "))
			}
		}
		p, ok := index[name]
		if !ok {
			return fmt.Errorf("guest: kernel %s has no module %q", k.Release, name)
		}
		info, err := ModInfo(p)
		if err != nil {
			return err
		}
		for _, dep := range strings.Split(info["depends"], ",") {
			if dep == "" {
				continue
			}
			if err := visit(dep, append(from, name)); err != nil {
				return err
			}
		}
		seen[name] = true
		order = append(order, p)
		return nil
	}
	for _, n := range names {
		if err := visit(n, nil); err != nil {
			return nil, err
		}
	}
	return order, nil
}

func modName(file string) string {
	return strings.ReplaceAll(strings.TrimSuffix(file, ".ko"), "-", "_")
}

func tail(b []byte, n int) string {
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return strings.TrimSpace(string(b))
}

var errNoQEMU = errors.New("guest: QEMU is not installed")

// FetchGPIOSimDebs downloads what the gpio-sim build needs for the pinned
// amd64 kernel: its headers, kbuild and the kernel's source.
func FetchGPIOSimDebs(ctx context.Context, cache string) (GPIOSimDebs, error) {
	return fetchModuleDebs(ctx, cache, "amd64", "amd64")
}

// FetchARMModuleDebs fetches what building a module for the armmp kernel
// needs: its headers (armhf), the common headers, the kbuild host tools
// (this machine's) and the kernel source.
func FetchARMModuleDebs(ctx context.Context, cache string) (GPIOSimDebs, error) {
	return fetchModuleDebs(ctx, cache, "armmp", "armhf")
}

func fetchModuleDebs(ctx context.Context, cache, flavour, arch string) (GPIOSimDebs, error) {
	dir := filepath.Join(cache, "deb")
	var d GPIOSimDebs
	for _, p := range []struct {
		dst              *string
		name, arch, vers string
	}{
		{&d.HeadersArch, "linux-headers-" + KernelABI + "-" + flavour, arch, KernelVersion},
		{&d.HeadersCommon, "linux-headers-" + KernelABI + "-common", "all", KernelVersion},
		{&d.Kbuild, "linux-kbuild-6.1", "amd64", KernelVersion},
		{&d.Source, "linux-source-6.1", "all", KernelVersion},
	} {
		f, err := Deb(ctx, dir, p.name, p.arch, p.vers)
		if err != nil {
			return d, err
		}
		*p.dst = f
	}
	return d, nil
}
