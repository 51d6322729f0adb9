package guest

import (
	"archive/tar"
	"bufio"
	"bytes"
	"context"
	"debug/elf"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strings"
	"syscall"
	"time"
)

// GPIOSimDebs names the Debian packages the gpio-sim build needs (paths to .deb files).
type GPIOSimDebs struct {
	HeadersArch, HeadersCommon, Kbuild, Source string
}

const (
	// gpioSimRecipe is part of the stamp: change it whenever the build
	// recipe (edits, Kbuild, checks) changes, so old modules are rebuilt.
	gpioSimRecipe = "gpio-sim recipe 7: gpio-sim, pps-ktimer, i2c-stub and no device tables (arm), iio_dummy with buffer, bursts and counters, iio-trig-hrtimer with counters, iio configfs, ina2xx"
	// gpioSimTimeout bounds a whole build, extraction included.
	gpioSimTimeout = 10 * time.Minute
	gpioSimStamp   = "gpio-sim.stamp"
	gpioSimKbuild  = "obj-m := gpio-sim.o pps-ktimer.o " + sensorKbuildObjs + "\ngpio-sim-y := gpio-sim-main.o irq_sim.o\n" + iioKbuild
	gpioSimTail    = 3000 // bytes of build output quoted in errors
)

// gpioSimEdit is one textual change to an extracted source file.
type gpioSimEdit struct{ old, new string }

// gpioSimMember is a file taken from the kernel source tarball (path below
// its top directory) and where it goes in the build directory.
type gpioSimMember struct {
	src, dst string
	edits    []gpioSimEdit
}

// gpioSimMembers returns the source files of the modules. irq_sim.c is built
// into gpio-sim because Debian's kernel lacks CONFIG_IRQ_SIM; irq_to_desc is
// not exported to modules, and generic_handle_irq does the same for the
// handle_simple_irq flow handler irq_sim installs on every interrupt.
// pps-ktimer (CONFIG_PPS_CLIENT_KTIMER, which Debian does not build) is a
// PPS source driven by a kernel timer: one assert edge a second, for the
// PPS tests.
func gpioSimMembers() []gpioSimMember {
	return append([]gpioSimMember{
		{src: "drivers/gpio/gpio-sim.c", dst: "gpio-sim-main.c"},
		{src: "drivers/gpio/gpiolib.h", dst: "gpiolib.h"},
		{src: "drivers/pps/clients/pps-ktimer.c", dst: "pps-ktimer.c"},
		{src: "kernel/irq/irq_sim.c", dst: "irq_sim.c", edits: []gpioSimEdit{
			{"handle_simple_irq(irq_to_desc(irqnum));", "generic_handle_irq(irqnum);"},
		}},
	}, sensorMembers()...)
}

// edit applies the member's edits to its text; each must find what it replaces.
func (m gpioSimMember) edit(text []byte) ([]byte, error) {
	for _, e := range m.edits {
		if !bytes.Contains(text, []byte(e.old)) {
			return nil, fmt.Errorf("gpio-sim build: %s: expected text %q not found; the source changed, revise the edit", m.src, e.old)
		}
		text = bytes.ReplaceAll(text, []byte(e.old), []byte(e.new))
	}
	return text, nil
}

// BuildGPIOSim builds gpio-sim.ko, and pps-ktimer.ko beside it
// (PPSKtimerModule), for kernel release rel (e.g. "6.1.0-50-amd64") in dir
// and returns gpio-sim's path. A module built earlier in dir from the same inputs
// (record a stamp file with the deb file names and sizes) is reused without building.
//
// The packages are unpacked with dpkg-deb under dir/root (absolute symlinks
// and the headers' Makefile are pointed into that copy), the three source
// files are streamed out of the source package's tarball, and the module is
// built in dir/build with the packages' kbuild, whose host tools must run on
// this machine. The module's vermagic must match the headers' configuration
// and every symbol it needs must be exported by the kernel or its modules
// (Module.symvers).
func BuildGPIOSim(ctx context.Context, dir, rel string, debs GPIOSimDebs) (string, error) {
	return buildModules(ctx, dir, rel, debs, modulePlan{
		kbuild: gpioSimKbuild, kos: append([]string{"gpio-sim.ko", "pps-ktimer.ko"}, sensorKOs...),
	})
}

// BuildPPSKtimerARM cross-builds pps-ktimer.ko for the 32-bit ARM kernel
// release rel (e.g. "6.1.0-50-armmp") in dir with Debian's
// arm-linux-gnueabihf cross compiler (package gcc-arm-linux-gnueabihf, the
// compiler Debian builds the kernel with), against debs (the armmp headers)
// and returns its path; gpio-sim (PPSKtimerARMGPIOSim), i2c-stub, which
// armmp lacks (I2CStubModule), and the sensor modules (SensorKernelModules)
// are built beside it, without their modules' device tables
// (armNoDeviceTables).
func BuildPPSKtimerARM(ctx context.Context, dir, rel string, debs GPIOSimDebs) (string, error) {
	if _, err := exec.LookPath(armCrossPrefix + "gcc"); err != nil {
		return "", fmt.Errorf("pps-ktimer for arm: no cross compiler (Debian package gcc-arm-linux-gnueabihf): %w", err)
	}
	return buildModules(ctx, dir, rel, debs, modulePlan{
		kbuild:   "obj-m := pps-ktimer.o i2c-stub.o " + sensorKbuildObjs + " gpio-sim.o\ngpio-sim-y := gpio-sim-main.o irq_sim.o\n" + iioKbuild,
		kos:      append([]string{"pps-ktimer.ko", "gpio-sim.ko", "i2c-stub.ko"}, sensorKOs...),
		makeArgs: []string{"ARCH=arm", "CROSS_COMPILE=" + armCrossPrefix},
		edits:    armNoDeviceTables,
	})
}

// BuildRigModules fetches the packages m's kernel's modules build against
// and builds the rig's out-of-tree modules for it under cache: BuildGPIOSim
// on amd64, BuildPPSKtimerARM on arm; it returns the first module's path
// (gpio-sim's, pps-ktimer's).
func BuildRigModules(ctx context.Context, cache string, m Machine) (string, error) {
	rel, fetch, build, dir := KernelABI+"-amd64", FetchGPIOSimDebs, BuildGPIOSim, "gpio-sim-"
	if m.Arch == "arm" {
		rel, fetch, build, dir = KernelABI+"-armmp", FetchARMModuleDebs, BuildPPSKtimerARM, "pps-ktimer-"
	}
	debs, err := fetch(ctx, cache)
	if err != nil {
		return "", err
	}
	return build(ctx, filepath.Join(cache, dir+rel), rel, debs)
}

// armCrossPrefix is Debian's ARMv7 hard-float cross toolchain.
const armCrossPrefix = "arm-linux-gnueabihf-"

// modulePlan is what buildModules builds: the Kbuild file, the modules it
// makes (the first is returned), make's extra arguments and edits of the
// source files beyond their members' own (by source path).
type modulePlan struct {
	kbuild   string
	kos      []string
	makeArgs []string
	edits    map[string][]gpioSimEdit
}

func buildModules(ctx context.Context, dir, rel string, debs GPIOSimDebs, plan modulePlan) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, gpioSimTimeout)
	defer cancel()

	dir, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("gpio-sim build: %w", err)
	}
	if strings.ContainsAny(dir, " :") {
		return "", fmt.Errorf("gpio-sim build: directory %q: kbuild cannot use a path with spaces or colons", dir)
	}
	stamp, err := gpioSimStampText(rel, debs)
	if err != nil {
		return "", err
	}
	stamp += "kbuild " + plan.kbuild + "make " + strings.Join(plan.makeArgs, " ") + "\n"
	root := filepath.Join(dir, "root")
	build := filepath.Join(dir, "build")
	var kos []string
	for _, k := range plan.kos {
		kos = append(kos, filepath.Join(build, k))
	}
	ko := kos[0]
	stampFile := filepath.Join(dir, gpioSimStamp)
	if old, err := os.ReadFile(stampFile); err == nil && string(old) == stamp {
		built := true
		for _, k := range kos {
			if _, err := os.Stat(k); err != nil {
				built = false
			}
		}
		if built {
			return ko, nil
		}
	}

	for _, p := range []string{stampFile, root, build} {
		if err := os.RemoveAll(p); err != nil {
			return "", fmt.Errorf("gpio-sim build: clean: %w", err)
		}
	}
	if err := os.MkdirAll(build, 0o755); err != nil {
		return "", fmt.Errorf("gpio-sim build: %w", err)
	}
	for _, deb := range []string{debs.HeadersArch, debs.HeadersCommon, debs.Kbuild} {
		if out, err := gpioSimRun(ctx, "dpkg-deb", "-x", deb, root); err != nil {
			return "", fmt.Errorf("gpio-sim build: dpkg-deb -x %s: %w\n%s", deb, err, gpioSimTailOf(out))
		}
	}
	headers := filepath.Join(root, "usr", "src", "linux-headers-"+rel)
	if err := gpioSimFixRoot(root, headers); err != nil {
		return "", err
	}
	if err := gpioSimHostTools(headers); err != nil {
		return "", err
	}
	if err := gpioSimExtract(ctx, debs.Source, build, plan.edits); err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(build, "Kbuild"), []byte(plan.kbuild), 0o644); err != nil {
		return "", fmt.Errorf("gpio-sim build: %w", err)
	}

	out, err := gpioSimRun(ctx, "make", append([]string{"-C", headers, "M=" + build}, append(plan.makeArgs, "modules")...)...)
	if err != nil {
		if ctx.Err() != nil {
			err = fmt.Errorf("%w (%w)", err, ctx.Err())
		}
		return "", fmt.Errorf("gpio-sim build: make: %w\n%s", err, gpioSimTailOf(out))
	}
	if bytes.Contains(out, []byte("undefined!")) {
		return "", fmt.Errorf("gpio-sim build: modpost found undefined symbols\n%s", gpioSimTailOf(out))
	}
	for _, m := range kos {
		if err := gpioSimCheck(m, rel, headers); err != nil {
			return "", fmt.Errorf("%w\n%s", err, gpioSimTailOf(out))
		}
	}
	if err := os.WriteFile(stampFile, []byte(stamp), 0o644); err != nil {
		return "", fmt.Errorf("gpio-sim build: %w", err)
	}
	return ko, nil
}

// PPSKtimerModule is the path of pps-ktimer.ko, built beside the gpio-sim
// module BuildGPIOSim returned.
func PPSKtimerModule(gpioSim string) string {
	return filepath.Join(filepath.Dir(gpioSim), "pps-ktimer.ko")
}

// gpioSimStampText identifies a build's inputs: the recipe, the release and
// each package's file name and size.
func gpioSimStampText(rel string, debs GPIOSimDebs) (string, error) {
	if rel == "" || strings.ContainsAny(rel, "/ ") {
		return "", fmt.Errorf("gpio-sim build: bad kernel release %q", rel)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s\nrelease %s\n", gpioSimRecipe, rel)
	for _, d := range []struct{ what, file string }{
		{"headers-arch", debs.HeadersArch},
		{"headers-common", debs.HeadersCommon},
		{"kbuild", debs.Kbuild},
		{"source", debs.Source},
	} {
		if d.file == "" {
			return "", fmt.Errorf("gpio-sim build: no %s package given", d.what)
		}
		fi, err := os.Stat(d.file)
		if err != nil {
			return "", fmt.Errorf("gpio-sim build: %s package: %w", d.what, err)
		}
		fmt.Fprintf(&b, "%s %s %d\n", d.what, filepath.Base(d.file), fi.Size())
	}
	return b.String(), nil
}

// gpioSimFixRoot makes the unpacked packages self-contained: absolute
// symlinks point into root instead of the host's /, and the headers'
// Makefile includes the common headers' Makefile from root. It then checks
// that the headers' scripts and tools resolve inside root.
func gpioSimFixRoot(root, headers string) error {
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.Type()&os.ModeSymlink == 0 {
			return err
		}
		target, err := os.Readlink(p)
		if err != nil || !filepath.IsAbs(target) {
			return err
		}
		rel, err := filepath.Rel(filepath.Dir(p), filepath.Join(root, target))
		if err != nil {
			return err
		}
		if err := os.Remove(p); err != nil {
			return err
		}
		return os.Symlink(rel, p)
	})
	if err != nil {
		return fmt.Errorf("gpio-sim build: fix symlinks: %w", err)
	}

	mk := filepath.Join(headers, "Makefile")
	text, err := os.ReadFile(mk)
	if err != nil {
		return fmt.Errorf("gpio-sim build: headers package: %w", err)
	}
	const include = "include /usr/src/"
	if !bytes.Contains(text, []byte(include)) {
		return fmt.Errorf("gpio-sim build: %s has no %q line to point into %s:\n%s", mk, include, root, text)
	}
	text = bytes.ReplaceAll(text, []byte(include), []byte("include "+filepath.Join(root, "usr", "src")+"/"))
	if err := os.WriteFile(mk, text, 0o644); err != nil {
		return fmt.Errorf("gpio-sim build: %w", err)
	}

	realRoot, err := filepath.EvalSymlinks(root)
	if err != nil {
		return fmt.Errorf("gpio-sim build: %w", err)
	}
	for _, name := range []string{"Makefile", ".config", "Module.symvers", "scripts/Makefile.build", "scripts/mod/modpost", "scripts/basic/fixdep"} {
		p, err := filepath.EvalSymlinks(filepath.Join(headers, name))
		if err != nil {
			return fmt.Errorf("gpio-sim build: headers incomplete: %w", err)
		}
		if !strings.HasPrefix(p, realRoot+string(filepath.Separator)) {
			return fmt.Errorf("gpio-sim build: %s resolves to %s, outside %s", filepath.Join(headers, name), p, root)
		}
	}
	return nil
}

// gpioSimHostTools checks that kbuild's prebuilt host tools (fixdep, modpost,
// objtool) are for this machine's architecture, so a mismatch is reported as
// such rather than as an "Exec format error" deep in the build output.
func gpioSimHostTools(headers string) error {
	want, ok := map[string]elf.Machine{
		"amd64": elf.EM_X86_64, "386": elf.EM_386, "arm": elf.EM_ARM, "arm64": elf.EM_AARCH64,
	}[runtime.GOARCH]
	if !ok {
		return nil
	}
	f, err := elf.Open(filepath.Join(headers, "scripts", "basic", "fixdep"))
	if err != nil {
		return fmt.Errorf("gpio-sim build: kbuild host tools: %w", err)
	}
	defer f.Close()
	if f.Machine != want {
		return fmt.Errorf("gpio-sim build: the kbuild package's host tools are %v binaries; this host (%s) needs %v", f.Machine, runtime.GOARCH, want)
	}
	return nil
}

// gpioSimExtract streams the kernel source tarball out of the source package
// (dpkg-deb --fsys-tarfile, then xz) and writes the module's members into
// build, edited. It stops reading as soon as it has them all.
func gpioSimExtract(ctx context.Context, deb, build string, more map[string][]gpioSimEdit) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	want := map[string]gpioSimMember{}
	for _, m := range gpioSimMembers() {
		m.edits = append(slices.Clip(m.edits), more[m.src]...)
		want[m.src] = m
	}

	var debErr bytes.Buffer
	dpkg := exec.CommandContext(ctx, "dpkg-deb", "--fsys-tarfile", deb)
	debOut, err := gpioSimStart(dpkg, &debErr)
	if err != nil {
		return err
	}
	defer func() { cancel(); _ = dpkg.Wait() }() // killed once the members are out; failures show as read errors

	outer := tar.NewReader(debOut)
	var srcName string
	for {
		h, err := outer.Next()
		if err == io.EOF {
			return fmt.Errorf("gpio-sim build: %s holds no usr/src/linux-source-*.tar.xz\n%s", deb, gpioSimTailOf(debErr.Bytes()))
		}
		if err != nil {
			return fmt.Errorf("gpio-sim build: read %s: %w\n%s", deb, err, gpioSimTailOf(debErr.Bytes()))
		}
		if ok, _ := path.Match("usr/src/linux-source-*.tar.xz", strings.TrimPrefix(h.Name, "./")); ok {
			srcName = h.Name
			break
		}
	}

	var xzErr bytes.Buffer
	xz := exec.CommandContext(ctx, "xz", "-dc")
	xz.Stdin = outer
	xzOut, err := gpioSimStart(xz, &xzErr)
	if err != nil {
		return err
	}
	defer func() { cancel(); _ = xz.Wait() }() // killed once all members are out; its error says nothing then

	inner := tar.NewReader(bufio.NewReaderSize(xzOut, 1<<20))
	for len(want) > 0 {
		h, err := inner.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return fmt.Errorf("gpio-sim build: read %s in %s: %w\n%s", srcName, deb, err, gpioSimTailOf(xzErr.Bytes()))
		}
		name := strings.TrimPrefix(h.Name, "./")
		if i := strings.IndexByte(name, '/'); i >= 0 {
			name = name[i+1:] // the tarball's top directory, linux-source-6.1/
		}
		m, ok := want[name]
		if !ok || h.Typeflag != tar.TypeReg {
			continue
		}
		text, err := io.ReadAll(inner)
		if err != nil {
			return fmt.Errorf("gpio-sim build: read %s in %s: %w", h.Name, srcName, err)
		}
		if text, err = m.edit(text); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(build, m.dst), text, 0o644); err != nil {
			return fmt.Errorf("gpio-sim build: %w", err)
		}
		delete(want, name)
	}
	if len(want) > 0 {
		var missing []string
		for name := range want {
			missing = append(missing, name)
		}
		sort.Strings(missing)
		return fmt.Errorf("gpio-sim build: %s in %s lacks %s", srcName, deb, strings.Join(missing, ", "))
	}
	return nil
}

// gpioSimStart starts cmd, one stage of gpioSimExtract's pipeline, keeping its
// standard error in stderr, and returns its standard output. Cancelling cmd's
// context kills it; Wait then returns within 5 s.
func gpioSimStart(cmd *exec.Cmd, stderr *bytes.Buffer) (io.Reader, error) {
	cmd.Stderr = stderr
	cmd.WaitDelay = 5 * time.Second
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("gpio-sim build: %w", err)
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("gpio-sim build: %s: %w", cmd.Args[0], err)
	}
	return out, nil
}

// gpioSimCheck verifies the built module: its vermagic is the one the
// headers' configuration gives (so the kernel accepts it), and every symbol
// it leaves undefined is exported by the kernel or one of its modules.
func gpioSimCheck(ko, rel, headers string) error {
	info, err := ModInfo(ko)
	if err != nil {
		return fmt.Errorf("gpio-sim build: %w", err)
	}
	config, err := os.ReadFile(filepath.Join(headers, ".config"))
	if err != nil {
		return fmt.Errorf("gpio-sim build: %w", err)
	}
	want := gpioSimVermagic(rel, config)
	if !strings.HasPrefix(info["vermagic"], want) {
		return fmt.Errorf("gpio-sim build: %s has vermagic %q, want %q...", ko, info["vermagic"], want)
	}

	// The kernel's and its modules' exports, and those of the modules
	// built beside this one (the IIO configfs core the dummy needs).
	exported := map[string]bool{}
	for _, sv := range []string{filepath.Join(headers, "Module.symvers"), filepath.Join(filepath.Dir(ko), "Module.symvers")} {
		symvers, err := os.ReadFile(sv)
		if err != nil {
			return fmt.Errorf("gpio-sim build: %w", err)
		}
		for _, line := range strings.Split(string(symvers), "\n") {
			if f := strings.Split(line, "\t"); len(f) >= 2 {
				exported[f[1]] = true
			}
		}
	}
	f, err := elf.Open(ko)
	if err != nil {
		return fmt.Errorf("gpio-sim build: %w", err)
	}
	defer f.Close()
	syms, err := f.Symbols()
	if err != nil {
		return fmt.Errorf("gpio-sim build: %s symbols: %w", ko, err)
	}
	var missing []string
	for _, s := range syms {
		if s.Section == elf.SHN_UNDEF && s.Name != "" && !exported[s.Name] {
			missing = append(missing, s.Name)
		}
	}
	if len(missing) > 0 {
		sort.Strings(missing)
		return fmt.Errorf("gpio-sim build: %s needs symbols the kernel does not export: %s", ko, strings.Join(missing, " "))
	}
	return nil
}

// gpioSimVermagic is the start of the vermagic a module built against the
// configuration config gets (include/linux/vermagic.h, before the
// architecture's part), e.g. "6.1.0-50-amd64 SMP preempt mod_unload modversions ".
func gpioSimVermagic(rel string, config []byte) string {
	set := map[string]bool{}
	for _, line := range strings.Split(string(config), "\n") {
		if k, v, ok := strings.Cut(line, "="); ok && v == "y" {
			set[k] = true
		}
	}
	s := rel + " "
	if set["CONFIG_SMP"] {
		s += "SMP "
	}
	if set["CONFIG_PREEMPT_BUILD"] {
		s += "preempt "
	} else if set["CONFIG_PREEMPT_RT"] {
		s += "preempt_rt "
	}
	if set["CONFIG_MODULE_UNLOAD"] {
		s += "mod_unload "
	}
	if set["CONFIG_MODVERSIONS"] {
		s += "modversions "
	}
	return s
}

// ModInfo reads a kernel module's .modinfo section (key -> value; repeated keys joined with ",").
func ModInfo(path string) (map[string]string, error) {
	f, err := elf.Open(path)
	if err != nil {
		return nil, fmt.Errorf("modinfo: %w", err)
	}
	defer f.Close()
	sec := f.Section(".modinfo")
	if sec == nil {
		return nil, fmt.Errorf("modinfo: %s has no .modinfo section", path)
	}
	data, err := sec.Data()
	if err != nil {
		return nil, fmt.Errorf("modinfo: %s: %w", path, err)
	}
	info := map[string]string{}
	for _, field := range bytes.Split(data, []byte{0}) {
		k, v, ok := strings.Cut(string(field), "=")
		if !ok {
			continue // padding between entries
		}
		if old, dup := info[k]; dup {
			v = old + "," + v
		}
		info[k] = v
	}
	return info, nil
}

// gpioSimRun runs a command in its own process group (killed whole when ctx
// ends, so make's children go too) with a clean kbuild environment, and
// returns its combined output.
func gpioSimRun(ctx context.Context, name string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = gpioSimEnv()
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	var out bytes.Buffer
	cmd.Stdout = &out
	cmd.Stderr = &out
	err := cmd.Run()
	return out.Bytes(), err
}

// gpioSimEnv is the environment without the variables that would change what
// kbuild builds or how (a caller's ARCH, CROSS_COMPILE, make flags...).
func gpioSimEnv() []string {
	drop := map[string]bool{
		"ARCH": true, "SUBARCH": true, "CROSS_COMPILE": true, "CC": true, "LD": true, "HOSTCC": true,
		"MAKEFLAGS": true, "MFLAGS": true, "MAKELEVEL": true, "MAKEFILES": true, "GNUMAKEFLAGS": true,
		"O": true, "M": true, "V": true, "W": true, "C": true, "LLVM": true, "INSTALL_MOD_PATH": true,
		"LC_ALL": true, "DEB_BUILD_ARCH": true, "DEB_HOST_ARCH": true, "DEB_HOST_GNU_TYPE": true,
	}
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if drop[k] || strings.HasPrefix(k, "KBUILD_") || strings.HasPrefix(k, "DEBIAN_KERNEL_") {
			continue
		}
		env = append(env, kv)
	}
	return append(env, "LC_ALL=C")
}

func gpioSimTailOf(b []byte) string {
	if len(b) > gpioSimTail {
		b = b[len(b)-gpioSimTail:]
	}
	return strings.TrimSpace(string(b))
}
