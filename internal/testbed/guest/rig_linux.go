package guest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// Spec is what one guest runs: the project's packages whose tests it runs,
// the kernel modules it loads, and anything else its initramfs holds.
type Spec struct {
	Machine    Machine
	Cache      string            // the rig's cache directory (kernels, packages, images)
	ModuleRoot string            // the project's directory (go.mod)
	Packages   []string          // relative package directories: "gpio", "phc", ...
	Run        map[string]string // a package's tests to run (go test -run), if not all
	TestArgs   []string          // for every test binary, after -test.v (and -test.run of Run)
	Modules    []string          // kernel modules by name, dependencies resolved
	Params     map[string]string // a module's parameters by its name as in Modules ("i2c-stub")
	ExtraKOs   []string          // out-of-tree modules, loaded after Modules
	ConfigFS   bool
	Interfaces []string
	Env        []string
	Files      map[string]string // guest path -> host file
	DTB        string            // device tree (ARM)
	Timeout    time.Duration     // per test binary
}

// Prepare builds the guest's test binaries and init for its architecture,
// fetches its kernel and writes the initramfs under work; the Boot it returns
// is ready to Run (its Out, Timeout and Request still to be set).
func Prepare(ctx context.Context, spec Spec, work string) (*Boot, error) {
	k, err := FetchKernel(ctx, spec.Cache, spec.Machine.Arch)
	if err != nil {
		return nil, err
	}
	a := NewArchive()
	a.CharDevice("dev/console", 5, 1)
	a.Bytes("etc/hosts", 0o644, []byte("127.0.0.1 localhost\n::1 localhost ip6-localhost\n"))
	a.Bytes("etc/passwd", 0o644, []byte("root:x:0:0:root:/tmp:/bin/sh\n"))
	a.Bytes("etc/group", 0o644, []byte("root:x:0:\n"))
	a.Dir("tmp")

	bin := filepath.Join(work, "bin-"+spec.Machine.Arch)
	if err := goBuild(ctx, spec, bin); err != nil {
		return nil, err
	}
	if err := a.File("init", filepath.Join(bin, "guestinit")); err != nil {
		return nil, err
	}
	plan := &Plan{ConfigFS: spec.ConfigFS, Interfaces: spec.Interfaces,
		Env: append([]string{"MONAGENT_GUEST=" + spec.Machine.Arch}, spec.Env...)}
	mods, err := k.Modules(spec.Modules...)
	if err != nil {
		return nil, err
	}
	for _, m := range append(mods, spec.ExtraKOs...) {
		dst := "/lib/modules/" + k.Release + "/" + filepath.Base(m)
		if err := a.File(dst, m); err != nil {
			return nil, err
		}
		plan.Modules = append(plan.Modules, dst)
		if p := paramsOf(spec.Params, m); p != "" {
			if plan.Params == nil {
				plan.Params = map[string]string{}
			}
			plan.Params[dst] = p
		}
	}
	for name := range spec.Params {
		if !hasParams(plan, name) {
			return nil, fmt.Errorf("guest: parameters for module %q, which the guest does not load", name)
		}
	}
	for _, pkg := range spec.Packages {
		name := filepath.Base(pkg)
		dir := "/src/" + filepath.ToSlash(pkg)
		if err := a.File(dir+"/"+name+".test", filepath.Join(bin, name+".test")); err != nil {
			return nil, err
		}
		td := filepath.Join(spec.ModuleRoot, pkg, "testdata")
		if st, err := os.Stat(td); err == nil && st.IsDir() {
			if err := a.Tree(dir+"/testdata", td); err != nil {
				return nil, err
			}
		}
		args := []string{"-test.v", "-test.count=1"}
		if r := spec.Run[pkg]; r != "" {
			args = append(args, "-test.run="+r)
		}
		plan.Runs = append(plan.Runs, Run{Name: pkg, Dir: dir, Bin: dir + "/" + name + ".test",
			Args: append(args, spec.TestArgs...), Timeout: spec.Timeout})
	}
	for dst, src := range spec.Files {
		if err := a.File(dst, src); err != nil {
			return nil, err
		}
	}
	pb, err := plan.Encode()
	if err != nil {
		return nil, err
	}
	a.Bytes(PlanPath, 0o644, pb)
	initrd := filepath.Join(work, "initramfs-"+spec.Machine.Arch+".cpio")
	f, err := os.Create(initrd)
	if err != nil {
		return nil, err
	}
	if _, err := a.WriteTo(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("guest: writing %s: %w", initrd, err)
	}
	if err := f.Close(); err != nil {
		return nil, err
	}
	return &Boot{Machine: spec.Machine, Kernel: k.Vmlinuz, Initrd: initrd, DTB: spec.DTB}, nil
}

// goBuild builds the init and the packages' test binaries, static, for the
// guest's architecture (GOARM=7 on arm, like the board).
func goBuild(ctx context.Context, spec Spec, out string) error {
	env := append(os.Environ(), "GOOS=linux", "GOARCH="+spec.Machine.Arch, "GOARM=7", "CGO_ENABLED=0")
	run := func(args ...string) error {
		cmd := exec.CommandContext(ctx, "go", args...)
		cmd.Dir, cmd.Env = spec.ModuleRoot, env
		if b, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("guest: go %s: %w\n%s", strings.Join(args, " "), err, tail(b, 2000))
		}
		return nil
	}
	if err := run("build", "-trimpath", "-o", filepath.Join(out, "guestinit"), "./internal/testbed/guest/guestinit"); err != nil {
		return err
	}
	if len(spec.Packages) == 0 {
		return nil
	}
	args := []string{"test", "-c", "-trimpath", "-ldflags=-s -w", "-o", out + "/"}
	for _, p := range spec.Packages {
		args = append(args, "./"+filepath.ToSlash(p))
	}
	return run(args...)
}

// ModuleRoot finds the project's directory (the one with go.mod) from dir up.
func ModuleRoot(dir string) (string, error) {
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return d, nil
		}
		if filepath.Dir(d) == d {
			return "", fmt.Errorf("guest: no go.mod above %s", dir)
		}
	}
}

// HostProgram lists a dynamically linked host program and the shared
// libraries ldd says it loads (guest path -> host file, the same paths), for
// an amd64 guest: Debian's gpiomon, say.
func HostProgram(ctx context.Context, prog string) (map[string]string, error) {
	p, err := exec.LookPath(prog)
	if err != nil {
		return nil, fmt.Errorf("guest: %w", err)
	}
	files := map[string]string{p: p}
	out, err := exec.CommandContext(ctx, "ldd", p).Output()
	if err != nil {
		return nil, fmt.Errorf("guest: ldd %s: %w", p, err)
	}
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		switch {
		case len(f) >= 3 && f[1] == "=>" && strings.HasPrefix(f[2], "/"):
			files[f[2]] = f[2]
		case len(f) >= 1 && strings.HasPrefix(f[0], "/"):
			files[f[0]] = f[0]
		}
	}
	// The libraries as their real files: ldd names symlinks.
	for g, h := range files {
		r, err := filepath.EvalSymlinks(h)
		if err != nil {
			return nil, fmt.Errorf("guest: %w", err)
		}
		files[g] = r
	}
	return files, nil
}

// hasParams says whether the plan gives parameters to the module of that name.
func hasParams(plan *Plan, name string) bool {
	for path := range plan.Params {
		if modName(filepath.Base(path)) == modName(name) {
			return true
		}
	}
	return false
}

// paramsOf is the parameters params gives the module file ko, by its name
// with - or _.
func paramsOf(params map[string]string, ko string) string {
	for name, p := range params {
		if modName(name) == modName(filepath.Base(ko)) {
			return p
		}
	}
	return ""
}
